package whatif

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/budget"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// PlanReport is what a change does to a cluster (JSON schema in the
// docs/tools/plan.md): the nodes that drift and why, the rollout in rounds under the
// NodePools' disruption budgets, what holds nodes back, the pods that
// would have no place, an estimate of how long it takes and the price
// before, during and after.
type PlanReport struct {
	Changes  []ChangedObject    `json:"changes"`
	Nodes    []PlanNode         `json:"nodes"`
	Rounds   []Round            `json:"rounds"`
	Blocked  []PlanBlocked      `json:"blocked"`
	Unplaced []UnplacedWorkload `json:"unplaced"`
	Duration Estimate           `json:"duration"`
	Price    PriceSummary       `json:"pricePerHour"`
	Warnings []string           `json:"warnings"`
}

// PlanNode is a NodePool's node after the change: drifted, and why, or
// not.
type PlanNode struct {
	Node      string `json:"node"`
	NodeClaim string `json:"nodeClaim,omitempty"`
	NodePool  string `json:"nodePool"`
	Drifted   bool   `json:"drifted"`
	// Reason is the Drifted condition's reason, Message what it says.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Fields are the changed fields behind the drift.
	Fields []string `json:"fields,omitempty"`
	// DriftedBefore: the node had drifted already without the change.
	DriftedBefore bool `json:"driftedBefore,omitempty"`
	// Unknown says, for a node not drifted, what the change may do to it
	// that only the account can tell.
	Unknown string `json:"unknown,omitempty"`
}

// Round is nodes replaced at once: each replacement launches and
// initializes, then the node it replaces is drained and terminated.
type Round struct {
	Round int `json:"round"`
	// StartsAt is estimated (see the plan's duration).
	StartsAt time.Time `json:"startsAt"`
	// WaitsFor says why the round waits before it starts (a budget
	// window), when it does.
	WaitsFor     string        `json:"waitsFor,omitempty"`
	Nodes        []RoundNode   `json:"nodes"`
	Replacements []Replacement `json:"replacements"`
	// SurplusReplacements are replacements left without pods (launched
	// for the pods of a command in flight, which a later command placed
	// too); emptiness consolidation removes them afterwards unless their
	// NodePool's consolidateAfter is Never.
	SurplusReplacements int `json:"surplusReplacements,omitempty"`
	PodsMoved           int `json:"podsMoved"`
	// PricePerHour is what the NodePools' nodes cost while the round's
	// replacements run beside the nodes they replace.
	PricePerHour float64 `json:"pricePerHour"`
	Seconds      float64 `json:"seconds"`
}

// RoundNode is a node a round replaces.
type RoundNode struct {
	Node     string `json:"node"`
	NodePool string `json:"nodePool"`
	Pods     int    `json:"pods"`
	// Devices are the devices (DRA) its pods' claims hold, by driver:
	// they move with the pods.
	Devices map[string]int64 `json:"devices,omitempty"`
}

// PlanBlocked is a drifted node the rollout does not replace, why, and
// when that changes if a time says.
type PlanBlocked struct {
	Node   string     `json:"node"`
	Reason string     `json:"reason"`
	Until  *time.Time `json:"until,omitempty"`
}

// UnplacedWorkload is a workload whose pods would have no place after the
// change.
type UnplacedWorkload struct {
	Workload string `json:"workload"`
	Pods     int    `json:"pods"`
	Reason   string `json:"reason"`
}

// Estimate is how long the rollout takes, by the assumptions it lists.
type Estimate struct {
	Seconds     float64  `json:"seconds"`
	Assumptions []string `json:"assumptions"`
}

// PriceSummary is what the NodePools' nodes cost an hour before the
// change, during the rollout's dearest round, and after it.
type PriceSummary struct {
	Before     float64 `json:"before"`
	WorstRound float64 `json:"worstRound"`
	After      float64 `json:"after"`
}

// Timings are what a rollout's estimate assumes: the disruption
// controller's own (its poll and validation delay) and the cloud's
// (launch to initialized node, instance termination).
type Timings struct {
	Poll, ValidationDelay, Launch, Termination time.Duration
}

// DefaultTimings are the controller's defaults and typical EC2 times.
func DefaultTimings() Timings {
	cadence := decide.DefaultCadence()
	return Timings{Poll: cadence.Poll, ValidationDelay: cadence.ValidationDelay, Launch: 90 * time.Second, Termination: 45 * time.Second}
}

// defaultGrace is a pod's termination grace period when it sets none.
const defaultGrace = 30 * time.Second

// planMethods are the disruption methods a change sets off.
var planMethods = []v1.DisruptionReason{v1.DisruptionReasonDrifted, v1.DisruptionReasonExpired}

// Plan works out what the change does to the objects' cluster, as the
// controller would carry it out: each round is what its disruption
// decides with the rounds before it done, at the time they are done.
func Plan(o *Objects, change *Change, resolver *nodeclass.Resolver, timings Timings) (*PlanReport, error) {
	o, restamped := Restamped(o)
	before, warnings, err := Snapshot(o, resolver)
	if err != nil {
		return nil, err
	}
	if restamped > 0 {
		warnings = append(warnings, fmt.Sprintf("%d NodeClaim(s) carry drift hashes of another hashing (the reference's, an earlier nodewright's) or none: planned as restamped from the NodePools and EC2NodeClasses as they are now, as nodewright does when it takes them over, so the change is what drifts them", restamped))
	}
	after, changed, more := change.apply(o)
	warnings = append(warnings, more...)
	p := &planner{timings: timings, resolver: resolver, objs: working(after), pods: map[string][]*corev1.Pod{}, changed: changed}
	snap, _, err := p.snapshot()
	if err != nil {
		return nil, err
	}
	r := &PlanReport{Changes: changed, Nodes: drifted(before, snap, changed), Rounds: []Round{}, Blocked: []PlanBlocked{}, Warnings: append([]string{}, warnings...)}
	r.Price.Before = priceOf(before)
	if r.Unplaced, err = p.unplaced(r.Nodes); err != nil {
		return nil, err
	}
	if err := p.rollout(r, snap); err != nil {
		return nil, err
	}
	r.Duration.Assumptions = timings.assumptions()
	if n := len(r.Rounds); n > 0 {
		last := r.Rounds[n-1]
		r.Duration.Seconds = last.StartsAt.Add(seconds(last.Seconds)).Sub(o.now()).Seconds()
	}
	return r, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func (t Timings) assumptions() []string {
	return []string{
		fmt.Sprintf("the disruption controller decides every %s and checks each decision again after %s (its defaults)", t.Poll, t.ValidationDelay),
		fmt.Sprintf("a replacement takes %s from launch to an initialized node (--launch-time)", t.Launch),
		fmt.Sprintf("a node drains in its pods' longest termination grace period (%s when a pod sets none), PodDisruptionBudgets allowing", defaultGrace),
		fmt.Sprintf("an instance takes %s to terminate (--termination-time)", t.Termination),
		"the nodes of a round are replaced at once, as many as the budgets allow; the next round starts when they are gone",
	}
}

// Restamped are the objects with their NodeClaims restamped as the
// controller restamps them when it takes a cluster over (state.Restamp:
// hashes of another hashing, or none, become those of the NodePool and
// EC2NodeClass as they are; a NodeClaim already drifted keeps its
// drift), and how many were.
func Restamped(o *Objects) (*Objects, int) {
	pools := map[string]*v1.NodePool{}
	for _, np := range o.NodePools {
		pools[np.Name] = np
	}
	classes := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range o.EC2NodeClasses {
		classes[nc.Name] = nc
	}
	out := *o
	out.NodeClaims = make([]*v1.NodeClaim, len(o.NodeClaims))
	n := 0
	for i, claim := range o.NodeClaims {
		out.NodeClaims[i] = claim
		np := pools[claim.Labels[v1.LabelNodePool]]
		if np == nil || !claim.DeletionTimestamp.IsZero() {
			continue
		}
		var class *cloudprovider.NodeClass
		if ref := claim.Spec.NodeClassRef; ref != nil && classes[ref.Name] != nil && ref.Kind == nodeclass.Kind {
			class = nodeclass.Rules(classes[ref.Name])
		}
		c := claim.DeepCopy()
		if state.Restamp(c, np, class) {
			out.NodeClaims[i] = c
			n++
		}
	}
	return &out, n
}

// working is a copy of the objects a plan changes as rounds go by.
func working(o *Objects) *Objects {
	out := *o
	out.Nodes = deepCopies(o.Nodes)
	out.NodeClaims = deepCopies(o.NodeClaims)
	out.Pods = deepCopies(o.Pods)
	return &out
}

func deepCopies[T interface{ DeepCopy() T }](in []T) []T {
	out := make([]T, len(in))
	for i, x := range in {
		out[i] = x.DeepCopy()
	}
	return out
}

// planner carries a rollout out on a copy of the objects.
type planner struct {
	timings  Timings
	resolver *nodeclass.Resolver
	objs     *Objects
	made     int
	// changed are the objects the change changes.
	changed []ChangedObject
	// launched are the replacements in flight, pods the pods each takes.
	launched []*v1.NodeClaim
	pods     map[string][]*corev1.Pod
}

func (p *planner) snapshot() (*state.Snapshot, []string, error) {
	return Snapshot(p.objs, p.resolver)
}

// drifted is every NodePool node's drift after the change, and whether it
// had drifted before.
func drifted(before, after *state.Snapshot, changed []ChangedObject) []PlanNode {
	was := map[string]bool{}
	for _, n := range before.Nodes {
		was[n.Name] = n.Drift().Drifted()
	}
	fields, unresolved := map[string][]string{}, map[string][]string{}
	for _, c := range changed {
		fields[c.Kind+"/"+c.Name] = c.Fields
		unresolved[c.Kind+"/"+c.Name] = c.Unresolved
	}
	out := []PlanNode{}
	for _, n := range after.Nodes {
		if !n.Managed() || n.Deleting() {
			continue
		}
		pn := PlanNode{Node: n.Name, NodePool: n.NodePool, DriftedBefore: was[n.Name]}
		if n.NodeClaim != nil {
			pn.NodeClaim = n.NodeClaim.Name
		}
		if d := n.Drift(); d.Drifted() {
			pn.Drifted, pn.Reason, pn.Message = true, d.Reason, d.Message
			pn.Fields = fieldsBehind(d.Reason, after, n, fields)
		} else if np := after.Pools[n.NodePool]; np != nil && np.Spec.Template.Spec.NodeClassRef != nil {
			ref := np.Spec.Template.Spec.NodeClassRef
			if u := unresolved[ref.Kind+"/"+ref.Name]; len(u) > 0 {
				pn.Unknown = "may drift: " + strings.Join(u, " and ") + " select what only the account resolves (plan with --cloud to know)"
			}
		}
		out = append(out, pn)
	}
	return out
}

// fieldsBehind are the changed fields a drift reason points at.
func fieldsBehind(reason string, snap *state.Snapshot, n *state.Node, fields map[string][]string) []string {
	np := snap.Pools[n.NodePool]
	if np == nil {
		return nil
	}
	pool := fields["NodePool/"+np.Name]
	var class []string
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		class = fields[ref.Kind+"/"+ref.Name]
	}
	switch reason {
	case v1.ReasonRequirementsDrifted:
		return filtered(pool, func(f string) bool { return strings.HasPrefix(f, "spec.template.spec.requirements") })
	case v1.ReasonNodePoolDrifted:
		return filtered(pool, func(f string) bool {
			return strings.HasPrefix(f, "spec.template") && !strings.HasPrefix(f, "spec.template.spec.requirements")
		})
	case v1.ReasonNodeClassDrifted:
		return class
	}
	// The cloud's rules: AMI, subnet, security groups, capacity
	// reservations, placement group.
	key := map[string]string{"AMIDrift": "spec.amiSelectorTerms", "SubnetDrift": "spec.subnetSelectorTerms",
		"SecurityGroupDrift": "spec.securityGroupSelectorTerms", "CapacityReservationDrift": "spec.capacityReservationSelectorTerms",
		"PlacementGroupDrift": "spec.placementGroupSelector"}[reason]
	return filtered(class, func(f string) bool { return key != "" && strings.HasPrefix(f, key) })
}

func filtered(in []string, keep func(string) bool) []string {
	var out []string
	for _, f := range in {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}

// priceOf is what the NodePools' nodes cost an hour.
func priceOf(snap *state.Snapshot) float64 {
	return round(decide.Decide(snap, decide.Options{Methods: []v1.DisruptionReason{}, MaxMultiNode: 1}).PricePerHour)
}

// unplaced are the workloads whose pods, now on drifted nodes, would
// have no place once every drifted node is gone.
func (p *planner) unplaced(nodes []PlanNode) ([]UnplacedWorkload, error) {
	gone := map[string]bool{}
	for _, n := range nodes {
		if n.Drifted {
			gone[n.Node] = true
		}
	}
	out := []UnplacedWorkload{}
	if len(gone) == 0 {
		return out, nil
	}
	trial := working(p.objs)
	moved := map[string]bool{}
	trial.Nodes = slices.DeleteFunc(trial.Nodes, func(n *corev1.Node) bool { return gone[n.Name] })
	trial.NodeClaims = slices.DeleteFunc(trial.NodeClaims, func(nc *v1.NodeClaim) bool { return gone[nc.Status.NodeName] || gone[nc.Name] })
	trial.Pods = slices.DeleteFunc(trial.Pods, func(pod *corev1.Pod) bool {
		if !gone[pod.Spec.NodeName] {
			return false
		}
		if state.OwnedByDaemonSet(pod) {
			return true
		}
		pod.Spec.NodeName, pod.Status = "", corev1.PodStatus{}
		moved[pod.Namespace+"/"+pod.Name] = true
		return false
	})
	tsnap, _, err := Snapshot(trial, p.resolver)
	if err != nil {
		return nil, err
	}
	plan, _ := solveWithStatic(tsnap)
	byWorkload := map[string]*UnplacedWorkload{}
	for _, u := range plan.Unschedulable {
		if !moved[u.Pod.Namespace+"/"+u.Pod.Name] {
			continue
		}
		w := workloadOf(u.Pod)
		if byWorkload[w] == nil {
			byWorkload[w] = &UnplacedWorkload{Workload: w, Reason: u.Reason}
		}
		byWorkload[w].Pods++
	}
	for _, w := range slices.Sorted(maps.Keys(byWorkload)) {
		out = append(out, *byWorkload[w])
	}
	return out, nil
}

// workloadOf names the workload a pod belongs to: its Deployment (through
// its ReplicaSet), else its owner, else the pod.
func workloadOf(pod *corev1.Pod) string {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return "Pod " + pod.Namespace + "/" + pod.Name
	}
	if hash := pod.Labels["pod-template-hash"]; owner.Kind == "ReplicaSet" && hash != "" {
		if name, ok := strings.CutSuffix(owner.Name, "-"+hash); ok {
			return "Deployment " + pod.Namespace + "/" + name
		}
	}
	return owner.Kind + " " + pod.Namespace + "/" + owner.Name
}

// rollout plans the rounds: each decides with the budgets as the
// controller would, replaces what it decided, and the next starts when
// it is done; a budget window that holds everything back is waited for.
func (p *planner) rollout(r *PlanReport, snap *state.Snapshot) error {
	now := p.objs.now()
	waits, waited := "", 0
	for n := 1; n <= len(snap.Nodes)+1; n++ {
		cmds, last, err := p.decideRound(snap)
		if err != nil {
			return err
		}
		if len(cmds) == 0 {
			next, why, ok := nextWindow(snap, last)
			if waited++; !ok || waited > len(snap.Nodes)+1 {
				r.Blocked = blockedOf(snap, last)
				break
			}
			now, waits = next, why
			p.objs.Now = now
			var err error
			if snap, _, err = p.snapshot(); err != nil {
				return err
			}
			n--
			continue
		}
		rd := Round{Round: n, StartsAt: now, WaitsFor: waits, Nodes: []RoundNode{}, Replacements: []Replacement{}, PricePerHour: priceOf(snap)}
		waits = ""
		grace := time.Duration(0)
		for _, c := range cmds {
			for _, n := range c.Nodes {
				rn := RoundNode{Node: n.Name, NodePool: n.NodePool, Pods: len(n.Reschedulable())}
				if sn := n.Scheduling(); sn != nil {
					rn.Devices = sn.DevicesAllocated.Devices()
				}
				rd.Nodes = append(rd.Nodes, rn)
				grace = max(grace, longestGrace(n))
			}
			rd.PodsMoved += c.Pods
			for _, pl := range c.Replacements {
				rd.Replacements = append(rd.Replacements, Replacement{InstanceType: pl.InstanceType.Name, CapacityType: pl.Offering.CapacityType, Zone: pl.Offering.Zone, PricePerHour: round(pl.Offering.Price),
					Devices: pl.Requests.Devices()})
				rd.PricePerHour += pl.Offering.Price
			}
		}
		rd.PricePerHour = round(rd.PricePerHour)
		took := p.timings.ValidationDelay + grace + p.timings.Termination
		if len(rd.Replacements) > 0 {
			took += p.timings.Launch
		}
		rd.Seconds = took.Seconds()
		r.Rounds = append(r.Rounds, rd)
		r.Price.WorstRound = max(r.Price.WorstRound, rd.PricePerHour)
		now = now.Add(took + p.timings.Poll)
		p.objs.Now = now
		rd.SurplusReplacements = p.carryOut(cmds, now)
		r.Rounds[len(r.Rounds)-1] = rd
		if snap, _, err = p.snapshot(); err != nil {
			return err
		}
	}
	r.Price.After = priceOf(snap)
	r.Price.WorstRound = max(r.Price.WorstRound, r.Price.Before, r.Price.After)
	return nil
}

// decideRound is what the controller starts at once: a decision at a
// time, each with those before it in flight (their replacements
// launching), until the budgets or the candidates run out. last is the
// final decision, with why the rest stay.
func (p *planner) decideRound(snap *state.Snapshot) (cmds []*decide.Command, last *decide.Decision, err error) {
	opts := decide.DefaultOptions()
	opts.Methods, opts.InFlight = planMethods, map[string]bool{}
	// A NodePool whose status says its drift is paused stays paused: the
	// change resumes it only if it changes the NodePool or its class.
	opts.DriftPaused = pausedUnlessChanged(snap, p.changed)
	for {
		d := decide.Decide(snap, opts)
		if len(d.Commands) == 0 {
			return cmds, d, nil
		}
		for _, c := range d.Commands {
			cmds = append(cmds, c)
			for _, n := range c.Nodes {
				opts.InFlight[n.Name] = true
			}
			if !c.Static {
				opts.Planned = append(opts.Planned, decide.RoomOf(c))
			}
			p.launch(snap, c)
		}
		if snap, _, err = p.snapshot(); err != nil {
			return nil, nil, err
		}
	}
}

// pausedUnlessChanged are the NodePools whose status says their drift is
// paused and that the change leaves as they are, with their node class.
func pausedUnlessChanged(snap *state.Snapshot, changed []ChangedObject) map[string]string {
	touched := map[string]bool{}
	for _, c := range changed {
		if len(c.Fields) > 0 || c.New {
			touched[c.Kind+"/"+c.Name] = true
		}
	}
	out := nodepoolhealth.PausedDrift(snap.Pools, nil, 0)
	for name := range out {
		np := snap.Pools[name]
		ref := np.Spec.Template.Spec.NodeClassRef
		if touched["NodePool/"+name] || (ref != nil && touched[ref.Kind+"/"+ref.Name]) {
			delete(out, name)
		}
	}
	return out
}

// nextWindow is when a budget next lets a drifted node held back by it
// go, the earliest over the NodePools, and what the wait is for.
func nextWindow(snap *state.Snapshot, d *decide.Decision) (time.Time, string, bool) {
	var best time.Time
	why := ""
	for _, b := range d.Blocked {
		if b.Reason != decide.BlockedByBudget || b.Allowance.Err != nil {
			continue
		}
		np := snap.Pools[b.Allowance.NodePool]
		if np == nil {
			continue
		}
		t, ok := budget.Next(np, b.Method, b.Allowance.Nodes, b.Allowance.Disrupting, snap.Now)
		if ok && (best.IsZero() || t.Before(best)) {
			best, why = t, fmt.Sprintf("%s; its budgets allow %s disruption from %s", b.Allowance, b.Method, t.Format(time.RFC3339))
		}
	}
	return best, why, !best.IsZero()
}

// blockedOf are the drifted or expired nodes that stay, and why.
func blockedOf(snap *state.Snapshot, d *decide.Decision) []PlanBlocked {
	out := []PlanBlocked{}
	if d == nil {
		return out
	}
	for _, b := range d.Blocked {
		if !slices.Contains(planMethods, b.Method) {
			continue
		}
		pb := PlanBlocked{Node: b.Node, Reason: b.String()}
		if b.Reason == decide.BlockedByBudget && b.Allowance.Err == nil {
			if np := snap.Pools[b.Allowance.NodePool]; np != nil {
				if t, ok := budget.Next(np, b.Method, b.Allowance.Nodes, b.Allowance.Disrupting, snap.Now); ok {
					pb.Until = &t
				}
			}
		}
		out = append(out, pb)
	}
	slices.SortFunc(out, func(a, b PlanBlocked) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// longestGrace is how long the node's drain may take: its pods' longest
// termination grace period.
func longestGrace(n *state.Node) time.Duration {
	longest := time.Duration(0)
	for _, pod := range n.Reschedulable() {
		g := defaultGrace
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			g = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
		}
		longest = max(longest, g)
	}
	return longest
}

// launch puts a command's replacements on the working objects as
// NodeClaims in flight, made from the NodePool and node class as they are
// now (a static NodePool's: a node like the one it replaces).
func (p *planner) launch(snap *state.Snapshot, c *decide.Command) {
	for _, pl := range c.Replacements {
		np := snap.Pools[pl.NodePool]
		class := snap.NodeClassOf(np)
		it := pl.InstanceType
		labels := it.Requirements.Labels()
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			labels[k] = v
		}
		labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType] = pl.Offering.Zone, pl.Offering.CapacityType
		image := ""
		if class != nil {
			for _, ami := range class.AMIs {
				if ami.Requirements.Compatible(it.Requirements, nil) == nil {
					image = ami.ID
					break
				}
			}
		}
		name := p.claim(state.NodeClaimFor(np, class, pl), labels, image, it.Capacity.List(), it.Allocatable.List())
		p.pods[name] = pl.Pods
	}
	if !c.Static {
		return
	}
	for _, old := range c.Nodes {
		np := snap.Pools[old.NodePool]
		if np == nil || old.Node == nil {
			continue
		}
		class := snap.NodeClassOf(np)
		image := ""
		if class != nil && len(class.AMIs) > 0 {
			image = class.AMIs[0].ID
		}
		nc := state.NodeClaimFor(np, class, &scheduling.PlannedNodeClaim{NodePool: np.Name, Requirements: scheduling.Requirements{}})
		p.claim(nc, maps.Clone(old.Node.Labels), image, old.Node.Status.Capacity, old.Node.Status.Allocatable)
	}
}

// claim adds a launched NodeClaim (no node yet) and returns its name.
func (p *planner) claim(nc *v1.NodeClaim, labels map[string]string, image string, capacity, allocatable corev1.ResourceList) string {
	p.made++
	name := fmt.Sprintf("%s-planned-%d", nc.Labels[v1.LabelNodePool], p.made)
	labels[v1.LabelNodePool], labels[corev1.LabelHostname] = nc.Labels[v1.LabelNodePool], name
	created := metav1.NewTime(p.objs.now())
	nc.Name, nc.GenerateName, nc.CreationTimestamp, nc.Labels = name, "", created, labels
	nc.Status = v1.NodeClaimStatus{ProviderID: "aws:///" + labels[corev1.LabelTopologyZone] + "/" + name, ImageID: image, Capacity: capacity, Allocatable: allocatable}
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionLaunched, Status: metav1.ConditionTrue, Reason: v1.ConditionLaunched, LastTransitionTime: created}}
	p.objs.NodeClaims = append(p.objs.NodeClaims, nc)
	p.launched = append(p.launched, nc)
	return name
}

// carryOut finishes a round on the working objects: the replacements in
// flight join as initialized nodes and take the pods the decisions gave
// them, pods moved to nodes that stay go there, and the replaced nodes
// go with the rest of their pods (DaemonSets').
func (p *planner) carryOut(cmds []*decide.Command, at time.Time) int {
	gone := map[string]bool{}
	to := map[string]string{}
	for _, c := range cmds {
		for _, n := range c.Nodes {
			gone[n.Name] = true
			if n.NodeClaim != nil {
				gone["claim/"+n.NodeClaim.Name] = true
			}
		}
		for _, e := range c.Moves {
			for _, pod := range e.Pods {
				to[pod.Namespace+"/"+pod.Name] = e.Node
			}
		}
	}
	for _, nc := range p.launched {
		p.register(nc, at)
		for _, pod := range p.pods[nc.Name] {
			to[pod.Namespace+"/"+pod.Name] = nc.Name
		}
	}
	surplus := p.empty(to)
	for name, removed := range surplus {
		if removed {
			gone[name], gone["claim/"+name] = true, true
		}
	}
	p.launched, p.pods = nil, map[string][]*corev1.Pod{}
	p.objs.Nodes = slices.DeleteFunc(p.objs.Nodes, func(n *corev1.Node) bool { return gone[n.Name] })
	p.objs.NodeClaims = slices.DeleteFunc(p.objs.NodeClaims, func(nc *v1.NodeClaim) bool { return gone["claim/"+nc.Name] })
	p.objs.Pods = slices.DeleteFunc(p.objs.Pods, func(pod *corev1.Pod) bool {
		if !gone[pod.Spec.NodeName] {
			return false
		}
		dest, ok := to[pod.Namespace+"/"+pod.Name]
		pod.Spec.NodeName = dest
		return !ok
	})
	return len(surplus)
}

// empty are the replacements of the round that no pod goes to (the
// controller launches one for the pods of a command in flight, placed
// again by a later command), each true when emptiness consolidation
// removes it (its NodePool consolidates at all).
func (p *planner) empty(to map[string]string) map[string]bool {
	used := map[string]bool{}
	for _, node := range to {
		used[node] = true
	}
	consolidates := map[string]bool{}
	for _, np := range p.objs.NodePools {
		consolidates[np.Name] = np.Spec.Disruption.ConsolidateAfter != "Never"
	}
	out := map[string]bool{}
	for _, nc := range p.launched {
		if !used[nc.Name] {
			out[nc.Name] = consolidates[nc.Labels[v1.LabelNodePool]]
		}
	}
	return out
}

// register makes a launched NodeClaim an initialized node.
func (p *planner) register(nc *v1.NodeClaim, at time.Time) {
	created := metav1.NewTime(at)
	nc.Status.NodeName = nc.Name
	for _, t := range []string{v1.ConditionRegistered, v1.ConditionInitialized} {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: created})
	}
	labels := maps.Clone(nc.Labels)
	labels[v1.LabelInitialized], labels[v1.LabelRegistered] = "true", "true"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels, CreationTimestamp: created},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: nc.Spec.Taints}}
	node.Status.Capacity, node.Status.Allocatable = nc.Status.Capacity, nc.Status.Allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: created}}
	p.objs.Nodes = append(p.objs.Nodes, node)
}
