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
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Policy makes a node unhealthy: its condition in the status for longer
// than the toleration. Action is what repair does about it; DrainBound
// how long the drain waits for pods whose eviction is refused (a
// PodDisruptionBudget, do-not-disrupt) before it goes on without them.
// Without a bound the NodeClaim's terminationGracePeriod is the bound,
// and without either such pods hold repair back.
type Policy struct {
	Condition  corev1.NodeConditionType
	Status     corev1.ConditionStatus
	Toleration time.Duration
	Action     Action
	DrainBound *time.Duration
}

// Action is what node repair does to a node a policy matches.
type Action string

const (
	// Replace launches a replacement and deletes the NodeClaim.
	Replace Action = "ReplaceNode"
	// Reboot drains the node and reboots its instance; a node rebooted
	// within RebootWindow is replaced instead.
	Reboot Action = "RebootNode"
)

// RebootWindow is how long after a reboot that worked another failure
// of the node is repaired by replacing it: a reboot is tried once a day.
const RebootWindow = 24 * time.Hour

// RepairDrain is how long, by default, the drain of a node repair
// replaces or reboots waits for pods whose eviction is refused, when the
// failure leaves its pods running (a failing agent condition); a node
// whose kubelet is not Ready runs no pods, and its drain does not wait
// for them.
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
	// Reboot: a failing kernel, container runtime or network (the node
	// monitoring agent's KernelReady, ContainerRuntimeReady and
	// NetworkingReady False) is repaired by rebooting the node first.
	Reboot bool
}

// DefaultTolerations are the reference's: 30 minutes, 10 for accelerators.
func DefaultTolerations() Tolerations {
	return Tolerations{Ready: 30 * time.Minute, Accelerator: 10 * time.Minute, Agent: 30 * time.Minute, Drain: RepairDrain}
}

// Policies are the policies the tolerations make.
func (t Tolerations) Policies() []Policy {
	none, drain := new(time.Duration), new(time.Duration)
	*drain = t.Drain
	rebootable := Replace
	if t.Reboot {
		rebootable = Reboot
	}
	return []Policy{
		{corev1.NodeReady, corev1.ConditionFalse, t.Ready, Replace, none},
		{corev1.NodeReady, corev1.ConditionUnknown, t.Ready, Replace, none},
		{ConditionAcceleratedHardwareReady, corev1.ConditionFalse, t.Accelerator, Replace, drain},
		{ConditionStorageReady, corev1.ConditionFalse, t.Agent, Replace, drain},
		{ConditionNetworkingReady, corev1.ConditionFalse, t.Agent, rebootable, drain},
		{ConditionKernelReady, corev1.ConditionFalse, t.Agent, rebootable, drain},
		{ConditionContainerRuntimeReady, corev1.ConditionFalse, t.Agent, rebootable, drain},
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
	return nil
}

// MaxUnhealthy is the share of a NodePool's nodes that may be unhealthy
// at once for repair to act (rounded up).
var MaxUnhealthy = intstr.FromString("20%")

// Unhealthy is a node a policy matches.
type Unhealthy struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// Condition is the failing condition; Due is when its toleration
	// ends and the node is replaced.
	Condition corev1.NodeCondition
	Due       time.Time
	// Policy is the policy that matched.
	Policy Policy
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

// Assess finds the unhealthy nodes of every NodePool. Nodes pair with
// their NodeClaims by provider ID; nodes without one, or being deleted,
// are not nodewright's to repair.
func Assess(claims []*v1.NodeClaim, nodes []*corev1.Node, policies []Policy) map[string]*Pool {
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
		if u, ok := unhealthy(n, policies); ok {
			u.NodeClaim = nc
			u.DoNotRepair = n.Annotations[v1.AnnotationDoNotRepair] == "true" || nc.Annotations[v1.AnnotationDoNotRepair] == "true"
			p.Unhealthy = append(p.Unhealthy, u)
		}
	}
	for _, p := range pools {
		p.Allowed, _ = intstr.GetScaledValueFromIntOrPercent(&MaxUnhealthy, p.Nodes, true)
		slices.SortFunc(p.Unhealthy, func(a, b Unhealthy) int { return a.Due.Compare(b.Due) })
	}
	return pools
}

// unhealthy is the node's failing condition that comes due first.
func unhealthy(n *corev1.Node, policies []Policy) (Unhealthy, bool) {
	var out Unhealthy
	found := false
	for _, pol := range policies {
		for _, c := range n.Status.Conditions {
			if c.Type != pol.Condition || c.Status != pol.Status {
				continue
			}
			due := c.LastTransitionTime.Add(pol.Toleration)
			if !found || due.Before(out.Due) {
				out, found = Unhealthy{Node: n, Condition: c, Due: due, Policy: pol}, true
			}
		}
	}
	return out, found
}

// Describe says what is wrong with a node, for events and doctor.
func (u Unhealthy) Describe() string {
	msg := fmt.Sprintf("node %s has been %s=%s since %s", u.Node.Name, u.Condition.Type, u.Condition.Status, u.Condition.LastTransitionTime.UTC().Format(time.RFC3339))
	if u.Condition.Reason != "" {
		msg += " (" + u.Condition.Reason + ")"
	}
	return msg
}
