// Package nodepoolhealth is the health of each NodePool's nodes, which
// several controllers and doctor read: whether its nodes register (the
// relaunch backoff after registration timeouts), and which of its nodes
// are unhealthy and whether repairing them is held.
//
// A node is unhealthy when its Ready condition is False or Unknown, or its
// node monitoring agent reports a failing kernel, container runtime,
// storage, network or accelerator, for longer than the condition's
// toleration. Repair is held while more than a fifth of a NodePool is
// unhealthy at once: a failure that wide is the cluster's or the zone's,
// and replacing nodes would not mend it.
package nodepoolhealth

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Policy makes a node unhealthy: its condition in the status (and, with
// a Reason pattern, a reason it matches) for longer than the toleration.
// Action is what repair does about it; DrainBound how long the drain
// waits for pods whose eviction is refused (a PodDisruptionBudget,
// do-not-disrupt) before it goes on without them. Without a bound the
// NodeClaim's terminationGracePeriod is the bound, and without either
// such pods hold repair back.
//
// A set of policies has one fallback, the policy without a Reason: a
// failing condition of a type and status some policy names, whose reason
// no policy of that type and status matches, is judged by the fallback
// (with the fallback's toleration, action and bound). Priority (0 to 100)
// decides, of two policies eligible at once with the same action, which
// one governs; and it ranks nodes for repair, the higher first, each
// half hour past its toleration worth one rank.
type Policy struct {
	Condition corev1.NodeConditionType
	Status    corev1.ConditionStatus
	// Reason is a regular expression (Go's RE2 syntax, unanchored) the
	// condition's reason must match; empty makes the fallback.
	Reason     string
	Toleration time.Duration
	Action     Action
	DrainBound *time.Duration
	Priority   int
}

// Action is what node repair does to a node a policy matches.
type Action string

const (
	// Replace launches a replacement and deletes the NodeClaim.
	Replace Action = "ReplaceNode"
	// Reboot drains the node and reboots its instance; a node rebooted
	// RebootsBeforeReplacement times within RebootWindow is replaced
	// instead.
	Reboot Action = "RebootNode"
)

// RebootWindow is how long a reboot repair requested counts towards
// RebootsBeforeReplacement.
const RebootWindow = 24 * time.Hour

// RepairDrain is how long, by default, the drain of a node repair
// replaces or reboots waits for pods whose eviction is refused: long
// enough for a kubelet that still runs to stop its pods in order, never
// the wait for ever that no bound would allow.
const RepairDrain = 10 * time.Minute

// Conditions the EKS node monitoring agent sets on nodes.
const (
	ConditionAcceleratedHardwareReady corev1.NodeConditionType = "AcceleratedHardwareReady"
	ConditionStorageReady             corev1.NodeConditionType = "StorageReady"
	ConditionNetworkingReady          corev1.NodeConditionType = "NetworkingReady"
	ConditionKernelReady              corev1.NodeConditionType = "KernelReady"
	ConditionContainerRuntimeReady    corev1.NodeConditionType = "ContainerRuntimeReady"
)

// Tolerations are how long each kind of failure is borne before the node
// is replaced.
type Tolerations struct {
	// Ready: the kubelet's Ready condition False or Unknown.
	Ready time.Duration
	// Accelerator: AcceleratedHardwareReady False.
	Accelerator time.Duration
	// Agent: the node monitoring agent's other conditions False.
	Agent time.Duration
	// Drain bounds the drain of a node whose pods still run (a failing
	// agent or accelerator condition): how long it waits for pods whose
	// eviction is refused.
	Drain time.Duration
	// Reboot: an accelerator fault a reboot clears (the GPU XIDs of
	// RebootXIDs in the node monitoring agent's AcceleratedHardwareReady
	// reason) is repaired by rebooting the node, twice a day at most,
	// before it is replaced.
	Reboot bool
}

// DefaultTolerations are the reference's: 30 minutes, 10 for the
// accelerator faults the agent names.
func DefaultTolerations() Tolerations {
	return Tolerations{Ready: 30 * time.Minute, Accelerator: 10 * time.Minute, Agent: 30 * time.Minute, Drain: RepairDrain}
}

// The GPU XIDs (NVIDIA's error codes) in an AcceleratedHardwareReady
// reason that decide how the node is repaired: those a reboot clears, and
// those of hardware that is gone.
const (
	RebootXIDs = `.*XID(46|48|54|62|63|95|109|110|136|140|143|155|156|158).*`
	FatalXIDs  = `.*XID(64|74|79|119|120).*`
)

// AcceleratorDrain bounds the drain of a node whose GPU fault the agent
// names: the node is of little use meanwhile.
const AcceleratorDrain = 5 * time.Minute

// Policies are the policies the tolerations make: those of the
// reference's AWS provider, with the tolerations and drain bound
// configured. Any reason of a failing Ready, storage, network, kernel or
// container runtime replaces the node; of the accelerator's, a named XID
// soon (rebooting first when it is one a reboot clears and Reboot is
// set), another later (the fallback).
func (t Tolerations) Policies() []Policy {
	drain, gpu := t.Drain, min(t.Drain, AcceleratorDrain)
	rebootable := Replace
	if t.Reboot {
		rebootable = Reboot
	}
	anyReason := func(c corev1.NodeConditionType, s corev1.ConditionStatus, tol time.Duration) Policy {
		return Policy{Condition: c, Status: s, Reason: ".*", Toleration: tol, Action: Replace, DrainBound: &drain}
	}
	return []Policy{
		anyReason(corev1.NodeReady, corev1.ConditionFalse, t.Ready),
		anyReason(corev1.NodeReady, corev1.ConditionUnknown, t.Ready),
		{Condition: ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse, Reason: RebootXIDs, Toleration: t.Accelerator, Action: rebootable, DrainBound: &gpu},
		{Condition: ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse, Reason: FatalXIDs, Toleration: t.Accelerator, Action: Replace, DrainBound: &gpu},
		{Condition: ConditionAcceleratedHardwareReady, Status: corev1.ConditionFalse, Toleration: t.Agent, Action: Replace, DrainBound: &drain},
		anyReason(ConditionStorageReady, corev1.ConditionFalse, t.Agent),
		anyReason(ConditionNetworkingReady, corev1.ConditionFalse, t.Agent),
		anyReason(ConditionKernelReady, corev1.ConditionFalse, t.Agent),
		anyReason(ConditionContainerRuntimeReady, corev1.ConditionFalse, t.Agent),
	}
}

// Validate refuses tolerations that are not positive.
func (t Tolerations) Validate() error {
	for name, d := range map[string]time.Duration{"--node-repair-ready-after": t.Ready, "--node-repair-accelerator-after": t.Accelerator, "--node-repair-agent-after": t.Agent} {
		if d <= 0 {
			return fmt.Errorf("%s must be a positive duration, got %s", name, d)
		}
	}
	if t.Drain < 0 {
		return fmt.Errorf("--node-repair-drain must be a duration of zero or more, got %s", t.Drain)
	}
	return ValidatePolicies(t.Policies())
}

// ValidatePolicies refuses a set of policies a repair could not follow:
// a policy without a condition type, of a status other than True, False
// or Unknown, with a negative toleration or drain bound, a priority
// outside 0 to 100, an action other than ReplaceNode or RebootNode, or a
// reason pattern that is not a regular expression; and a set without
// exactly one fallback (a policy without a reason pattern), or whose
// fallback does not replace.
func ValidatePolicies(policies []Policy) error {
	var errs []error
	fallbacks := 0
	for i, p := range policies {
		name := fmt.Sprintf("repair policy %d (%s=%s)", i, p.Condition, p.Status)
		if p.Condition == "" {
			errs = append(errs, fmt.Errorf("%s has no condition type", name))
		}
		if p.Status != corev1.ConditionTrue && p.Status != corev1.ConditionFalse && p.Status != corev1.ConditionUnknown {
			errs = append(errs, fmt.Errorf("%s: the status must be True, False or Unknown", name))
		}
		if p.Toleration < 0 || p.DrainBound != nil && *p.DrainBound < 0 {
			errs = append(errs, fmt.Errorf("%s: its toleration and drain bound must not be negative", name))
		}
		if p.Priority < 0 || p.Priority > MaxPriority {
			errs = append(errs, fmt.Errorf("%s: priority %d is outside 0 to %d", name, p.Priority, MaxPriority))
		}
		if p.Action != Replace && p.Action != Reboot {
			errs = append(errs, fmt.Errorf("%s: action %q is neither %s nor %s", name, p.Action, Replace, Reboot))
		}
		if p.Reason == "" {
			fallbacks++
			if p.Action != Replace {
				errs = append(errs, fmt.Errorf("%s is the fallback (it has no reason pattern): it must replace the node, not %s", name, p.Action))
			}
		} else if _, err := regexp.Compile(p.Reason); err != nil {
			errs = append(errs, fmt.Errorf("%s: reason pattern: %w", name, err))
		}
	}
	if fallbacks != 1 {
		errs = append(errs, fmt.Errorf("repair policies need exactly one fallback (a policy without a reason pattern), not %d", fallbacks))
	}
	return errors.Join(errs...)
}

// MaxPriority is the highest priority of a repair policy.
const MaxPriority = 100

// RebootsBeforeReplacement reboots of a node within RebootWindow, and the
// next repair that would reboot it replaces it instead.
const RebootsBeforeReplacement = 2

// MaxUnhealthy is the share of a NodePool's nodes that may be unhealthy
// at once for repair to act (rounded up).
var MaxUnhealthy = intstr.FromString("20%")

// Unhealthy is a node with a failing condition some policy matches,
// whether or not its toleration has passed.
type Unhealthy struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// Condition is the failing condition that governs the repair (its
	// policy's, Policy): of the policies whose toleration has passed,
	// the most disruptive action, then the highest priority, then the
	// earliest due. Before any has, the condition that comes due first.
	Condition corev1.NodeCondition
	Policy    Policy
	// Due is when the first policy's toleration ends, measured from the
	// condition's last transition, but no earlier than the node's
	// creation nor the end of its last reboot.
	Due time.Time
	// Eligible: a policy's toleration had passed at the assessment.
	// Action is then what repair does (a reboot becomes a replacement
	// once the node was rebooted RebootsBeforeReplacement times within
	// RebootWindow: Escalated); DrainBound the shortest drain bound of
	// the policies whose toleration passed (nil: none bounds it); Score
	// ranks the node for repair: the highest of those policies' priority
	// rank plus one for each half hour past its toleration.
	Eligible   bool
	Action     Action
	Escalated  bool
	DrainBound *time.Duration
	Score      float64
	// DoNotRepair: the Node or its NodeClaim is annotated
	// karpenter.sh/do-not-repair=true; it still counts as unhealthy.
	DoNotRepair bool
}

// Pool is one NodePool's health.
type Pool struct {
	Name string
	// Nodes counts the NodePool's nodes; Allowed how many of them may be
	// unhealthy for repair to act; Disrupting how many are being deleted
	// or disrupted (they count against its budgets).
	Nodes, Allowed, Disrupting int
	Unhealthy                  []Unhealthy
}

// Held reports whether repair waits: more of the NodePool's nodes are
// unhealthy than allowed.
func (p *Pool) Held() bool { return len(p.Unhealthy) > p.Allowed }

// HeldReason says why repair waits, for events and conditions.
func (p *Pool) HeldReason() string {
	return fmt.Sprintf("%d of the %d nodes of NodePool %s are unhealthy, more than %s (%d): nodewright replaces none of them while so many fail at once",
		len(p.Unhealthy), p.Nodes, p.Name, MaxUnhealthy.String(), p.Allowed)
}

// Assess finds the unhealthy nodes of every NodePool at now. Nodes pair
// with their NodeClaims by provider ID; nodes without one, or being
// deleted, are not nodewright's to repair.
func Assess(claims []*v1.NodeClaim, nodes []*corev1.Node, policies []Policy, now time.Time) map[string]*Pool {
	m := compile(policies)
	byProvider := make(map[string]*v1.NodeClaim, len(claims))
	for _, nc := range claims {
		if nc.Status.ProviderID != "" {
			byProvider[nc.Status.ProviderID] = nc
		}
	}
	pools := map[string]*Pool{}
	for _, n := range nodes {
		name := n.Labels[v1.LabelNodePool]
		nc := byProvider[n.Spec.ProviderID]
		if name == "" || nc == nil {
			continue
		}
		p := pools[name]
		if p == nil {
			p = &Pool{Name: name}
			pools[name] = p
		}
		p.Nodes++
		if !n.DeletionTimestamp.IsZero() || !nc.DeletionTimestamp.IsZero() {
			p.Disrupting++
			continue
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyDisrupted }) {
			p.Disrupting++
		}
		if u, ok := m.assess(n, nc, now); ok {
			p.Unhealthy = append(p.Unhealthy, u)
		}
	}
	for _, p := range pools {
		p.Allowed, _ = intstr.GetScaledValueFromIntOrPercent(&MaxUnhealthy, p.Nodes, true)
		slices.SortFunc(p.Unhealthy, func(a, b Unhealthy) int { return a.Due.Compare(b.Due) })
	}
	return pools
}

// Reboots are the reboots of the NodeClaim's node repair requested within
// RebootWindow before now (its AnnotationReboots).
func Reboots(nc *v1.NodeClaim, now time.Time) []time.Time {
	var out []time.Time
	for _, s := range strings.Split(nc.Annotations[v1.AnnotationReboots], ",") {
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
		if err == nil && at.After(now.Add(-RebootWindow)) && !at.After(now) {
			out = append(out, at)
		}
	}
	return out
}

// RecordReboot is the NodeClaim's AnnotationReboots with a reboot at now
// added: the reboots within RebootWindow, at most
// RebootsBeforeReplacement of them.
func RecordReboot(nc *v1.NodeClaim, now time.Time) string {
	times := append(Reboots(nc, now), now)
	slices.SortFunc(times, time.Time.Compare)
	times = times[max(len(times)-RebootsBeforeReplacement, 0):]
	out := make([]string, len(times))
	for i, at := range times {
		out[i] = at.UTC().Format(time.RFC3339)
	}
	return strings.Join(out, ",")
}

type key struct {
	condition corev1.NodeConditionType
	status    corev1.ConditionStatus
}

type compiled struct {
	Policy
	reason *regexp.Regexp
	rank   int
}

// matcher is a set of policies ready to match node conditions.
type matcher struct {
	// specific are the policies with a reason pattern of each condition
	// type and status any policy names (the key is there without them).
	specific map[key][]*compiled
	// fallback is the set's policy without a reason pattern. (A set
	// ValidatePolicies refuses may have several: a condition's own is
	// its fallback, else the first.)
	fallback map[key]*compiled
	first    *compiled
}

func compile(policies []Policy) *matcher {
	priorities := map[int]bool{}
	for _, p := range policies {
		priorities[p.Priority] = true
	}
	ranks := slices.Sorted(maps.Keys(priorities))
	m := &matcher{specific: map[key][]*compiled{}, fallback: map[key]*compiled{}}
	for _, p := range policies {
		k := key{p.Condition, p.Status}
		c := &compiled{Policy: p, rank: slices.Index(ranks, p.Priority)}
		if _, ok := m.specific[k]; !ok {
			m.specific[k] = nil
		}
		if p.Reason == "" {
			if m.fallback[k] == nil {
				m.fallback[k] = c
			}
			if m.first == nil {
				m.first = c
			}
			continue
		}
		if re, err := regexp.Compile(p.Reason); err == nil {
			// A pattern that does not compile matches nothing
			// (ValidatePolicies refuses it).
			c.reason = re
		}
		m.specific[k] = append(m.specific[k], c)
	}
	return m
}

// match is a policy that matches one of a node's conditions.
type match struct {
	policy    *compiled
	condition corev1.NodeCondition
	due       time.Time
}

// matches are the policies that match the node's conditions: for each
// condition, every policy of its type and status whose reason pattern
// matches its reason, else the fallback.
func (m *matcher) matches(n *corev1.Node, nc *v1.NodeClaim, now time.Time) []match {
	var notBefore time.Time
	if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting); c != nil && c.Status == metav1.ConditionFalse {
		notBefore = c.LastTransitionTime.Time
	}
	// A condition is no older than its node (a creation after now is
	// the API server's clock ahead of this one's: it bounds nothing).
	if created := n.CreationTimestamp.Time; created.After(notBefore) && !created.After(now) {
		notBefore = created
	}
	var out []match
	for _, c := range n.Status.Conditions {
		k := key{c.Type, c.Status}
		specific, ok := m.specific[k]
		if !ok {
			continue
		}
		since := c.LastTransitionTime.Time
		if since.Before(notBefore) {
			since = notBefore
		}
		found := false
		for _, p := range specific {
			if p.reason != nil && p.reason.MatchString(c.Reason) {
				found = true
				out = append(out, match{p, c, since.Add(p.Toleration)})
			}
		}
		if fb := cmp.Or(m.fallback[k], m.first); !found && fb != nil {
			out = append(out, match{fb, c, since.Add(fb.Toleration)})
		}
	}
	return out
}

// assess is the node's health at now, if a policy matches it.
func (m *matcher) assess(n *corev1.Node, nc *v1.NodeClaim, now time.Time) (Unhealthy, bool) {
	matches := m.matches(n, nc, now)
	if len(matches) == 0 {
		return Unhealthy{}, false
	}
	u := Unhealthy{Node: n, NodeClaim: nc,
		DoNotRepair: n.Annotations[v1.AnnotationDoNotRepair] == "true" || nc.Annotations[v1.AnnotationDoNotRepair] == "true"}
	var first, governs, bound *match
	for i := range matches {
		x := &matches[i]
		if first == nil || dueBefore(x, first) {
			first = x
		}
		if x.due.After(now) {
			continue
		}
		u.Score = max(u.Score, float64(x.policy.rank)+now.Sub(x.due).Minutes()/30)
		if x.policy.DrainBound != nil && (bound == nil || boundsShorter(x, bound)) {
			bound = x
		}
		if governs == nil || governsOver(x, governs) {
			governs = x
		}
	}
	u.Due = first.due
	u.Condition, u.Policy = first.condition, first.policy.Policy
	if governs == nil {
		return u, true
	}
	u.Eligible, u.Condition, u.Policy, u.Action = true, governs.condition, governs.policy.Policy, governs.policy.Action
	if bound != nil {
		u.DrainBound = bound.policy.DrainBound
	}
	if u.Action == Reboot && len(Reboots(nc, now)) >= RebootsBeforeReplacement {
		u.Action, u.Escalated = Replace, true
	}
	return u, true
}

// dueBefore orders matches by when they come due, then by condition type.
func dueBefore(x, than *match) bool {
	return x.due.Before(than.due) || x.due.Equal(than.due) && x.condition.Type < than.condition.Type
}

// boundsShorter reports whether a match's drain bound (not nil) is the
// drain's over another's: the shorter, then the one due first.
func boundsShorter(x, than *match) bool {
	if *x.policy.DrainBound != *than.policy.DrainBound {
		return *x.policy.DrainBound < *than.policy.DrainBound
	}
	return dueBefore(x, than)
}

// governsOver reports whether an eligible match governs the repair over
// another: the more disruptive action, then the higher priority, then the
// earlier due, then the lower condition type.
func governsOver(x, than *match) bool {
	if x.policy.Action != than.policy.Action {
		return x.policy.Action == Replace
	}
	switch {
	case x.policy.Priority != than.policy.Priority:
		return x.policy.Priority > than.policy.Priority
	case !x.due.Equal(than.due):
		return x.due.Before(than.due)
	}
	return x.condition.Type < than.condition.Type
}

// Describe says what is wrong with a node, for events and doctor.
func (u Unhealthy) Describe() string {
	msg := fmt.Sprintf("node %s has been %s=%s since %s", u.Node.Name, u.Condition.Type, u.Condition.Status, u.Condition.LastTransitionTime.UTC().Format(time.RFC3339))
	if u.Condition.Reason != "" {
		msg += " (" + u.Condition.Reason + ")"
	}
	return msg
}
