// Package disruption decides, purely, which nodes go and what replaces
// them: expired and drifted NodeClaims are replaced, empty nodes deleted,
// and underutilized ones consolidated onto the rest of the cluster or onto
// one cheaper node, within the NodePools' budgets, never against a
// PodDisruptionBudget or a do-not-disrupt annotation. Decide reads a
// state.Snapshot and Options, plain values; the disruption controller
// (internal/controllers/disruption), plan and simulate call it.
package disruption

import (
	"cmp"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/budget"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Options tune a decision.
type Options struct {
	// InFlight are the nodes that commands already being carried out
	// disrupt; they count against budgets and are not chosen again.
	InFlight map[string]bool
	// ConsolidationInFlight holds consolidation back while a consolidation
	// command is being carried out: its simulation assumes the rest of the
	// cluster stays as it is.
	ConsolidationInFlight bool
	// MaxMultiNode caps the nodes one consolidation command removes.
	MaxMultiNode int
	// Unreached are the NodePools none of whose candidates single-node
	// consolidation reached last round (its Decision.Unreached): their
	// candidates come first this round, so a NodePool whose nodes rank
	// after the first MaxSingleNode is not passed over round after round.
	Unreached map[string]bool
	// MaxSingleNode caps how many nodes single-node consolidation looks at
	// in one decision.
	MaxSingleNode int
	// SpotToSpot is the SpotToSpotConsolidation feature gate: spot nodes
	// may be replaced by cheaper spot nodes (without it they are only
	// deleted).
	SpotToSpot bool
	// SpotToSpotMinTypes is how many cheaper spot instance types a spot
	// node's spot replacement needs, to stay diverse; the replacement
	// lists that many of the cheapest (or the NodePool's minValues for
	// instance types, if more), so it does not land on a type barely
	// cheaper and get replaced again.
	SpotToSpotMinTypes int
	// DriftPaused are the NodePools whose drifted nodes are not replaced
	// (their replacements kept failing), with why.
	DriftPaused map[string]string
	// Methods are the disruption methods that decide (Expired, Drifted,
	// Empty, Underutilized); all when empty. A plan of a rollout asks
	// for the methods a change sets off.
	Methods []v1.DisruptionReason
	// Repair are node repair's policies: a node one matches past its
	// toleration is repaired first of all methods. None: no repair (or
	// repair of its own, outside disruption).
	Repair []nodepoolhealth.Policy
	// PodDeletionCostManagement: nodewright writes pods' pod deletion cost
	// (the feature gate), so it does not weigh consolidation by it.
	PodDeletionCostManagement bool
	// Planned is the room the commands in flight planned for the pods of
	// the nodes they remove (InFlight names those nodes too): their
	// replacements not yet initialized, and the pods they place on nodes
	// that stay (an initialized replacement among them). Later decisions
	// keep that room for those pods and never place them again.
	Planned []Room
	// Measure, when set, runs each method's decision (run) and measures it
	// as the caller sees fit: the decision reads no clock of its own.
	Measure func(method v1.DisruptionReason, run func())
}

// Cadence is when decisions are made and carried out: one every Poll,
// each checked again against the cluster after ValidationDelay (pods that
// were just scheduled or deleted settle) before it acts.
type Cadence struct {
	Poll, ValidationDelay time.Duration
}

// DefaultCadence is the reference's: a decision every 10 s, validated
// after 15 s.
func DefaultCadence() Cadence {
	return Cadence{Poll: 10 * time.Second, ValidationDelay: 15 * time.Second}
}

// Room is what one command planned for the pods of its nodes.
type Room struct {
	// Nodes are the command's nodes, whose pods the room is for.
	Nodes []string
	// Replacements are its replacements not yet initialized, with the
	// pods planned onto each.
	Replacements []*scheduling.PlannedNodeClaim
	// Moves are the pods it places on nodes that stay.
	Moves []*scheduling.ExistingPlacement
}

// RoomOf is the room a command planned: its replacements and moves.
func RoomOf(c *Command) Room {
	return Room{Nodes: c.NodeNames(), Replacements: c.Replacements, Moves: c.Moves}
}

// runs reports whether a method decides.
func (o Options) runs(method v1.DisruptionReason) bool {
	return len(o.Methods) == 0 || slices.Contains(o.Methods, method)
}

// DefaultOptions are the reference's limits.
func DefaultOptions() Options {
	return Options{MaxMultiNode: 100, MaxSingleNode: 25, SpotToSpotMinTypes: 15}
}

// Command disrupts nodes for one reason: they are deleted once their
// replacements (if any) are initialized.
type Command struct {
	Reason       v1.DisruptionReason
	Nodes        []*state.Node
	Replacements []*scheduling.PlannedNodeClaim
	// PricePerHour is what the nodes cost; ReplacementPrice what the
	// replacements cost; Savings the difference.
	PricePerHour, ReplacementPrice, Savings float64
	// Pods is how many pods move.
	Pods int
	// Unplaced are pods that have no place once the nodes go: only an
	// expiration goes ahead with them.
	Unplaced []*scheduling.UnschedulablePod
	// Moves are the pods the plan puts on nodes that stay.
	Moves []*scheduling.ExistingPlacement
	// Scores are how the Balanced policy weighed the command, for each
	// of its Balanced NodePools.
	Scores []Score
	// Repair is what node repair found and does, for an Unhealthy command.
	Repair *Repair
	// TerminateFirst marks a static NodePool's command whose replacement
	// can launch only into the slot the node frees (the pool launches
	// only into full capacity reservations): the node goes first.
	TerminateFirst bool
	// Static marks a command on a static NodePool's node: once the node
	// is tainted it no longer counts as one of the pool's replicas, so the
	// static controller launches its replacement from the template; the
	// command deletes the node once the pool has its replicas again.
	Static bool
}

// NodeNames are the names of the command's nodes.
func (c *Command) NodeNames() []string {
	out := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// Decision is what disruption does now, and why every other candidate
// stays.
type Decision struct {
	Commands []*Command
	Blocked  []Blocked
	// Allowances are the budgets per NodePool and reason.
	Allowances []budget.Allowance
	// Eligible counts, per NodePool, the nodes a method could act on now;
	// EligibleBy per method.
	Eligible   map[string]int
	EligibleBy map[v1.DisruptionReason]int
	// PricePerHour is what the NodePools' nodes cost now;
	// PricePerHourAfter what they will cost once the commands are done.
	PricePerHour, PricePerHourAfter float64
	// Health is each NodePool's unhealthy nodes, by the repair policies.
	Health map[string]*nodepoolhealth.Pool
	// CostPerHour is what each NodePool's nodes cost now.
	CostPerHour map[string]float64
	// Scores are the consolidation commands the Balanced policy weighed.
	Scores []Score
	// Unreached are the NodePools none of whose candidates single-node
	// consolidation reached (MaxSingleNode): the next round's
	// Options.Unreached.
	Unreached map[string]bool
}

// decider holds one decision's working state.
type decider struct {
	s        *state.Snapshot
	opts     Options
	now      time.Time
	prices   map[string]map[string]*scheduling.InstanceType // NodePool → instance type
	taken    map[string]bool
	nodes    map[string]int // NodePool → its nodes
	disrupt  map[string]int // NodePool → nodes being disrupted
	unready  map[string]int // NodePool → candidates whose kubelet says NotReady
	used     map[string]map[v1.DisruptionReason]int
	out      *Decision
	blocked  map[string]bool
	allowSet map[string]map[v1.DisruptionReason]budget.Allowance
	// next are nodes a method could take but leaves to a later round.
	next map[string]v1.DisruptionReason
	// pools is the NodePools' health by the repair policies (health()).
	pools map[string]*nodepoolhealth.Pool
	// totals are each NodePool's hourly cost and disruption cost, for
	// the Balanced policy (poolTotals).
	totals map[string][2]float64
	// doomed are the nodes drift (its budget letting any go now) or
	// expiration replaces, in this round or a later one: pods are not
	// moved onto them, to be evicted again.
	doomed map[string]bool
}

// Decide chooses what to disrupt now: an unhealthy node (one per
// decision, the repair policies in opts), expired NodeClaims (one per
// decision, budgets do not apply), drifted ones (one per decision, empty
// and oldest first), every empty node the budgets allow (one command),
// then the consolidation command with the best savings per moved pod.
func Decide(s *state.Snapshot, opts Options) *Decision {
	d, candidates := newDecider(s, opts)
	if opts.runs(v1.DisruptionReasonUnhealthy) {
		d.timed(v1.DisruptionReasonUnhealthy, func() { d.repair(candidates) })
		if len(opts.Repair) > 0 {
			d.out.Health = d.health()
		}
	}
	if opts.runs(v1.DisruptionReasonExpired) {
		d.timed(v1.DisruptionReasonExpired, func() { d.expiration(candidates) })
	}
	if opts.runs(v1.DisruptionReasonDrifted) {
		d.timed(v1.DisruptionReasonDrifted, func() { d.drift(candidates) })
	}
	d.consolidate(d.leaveStatic(candidates))
	d.explainRest(s)
	// Every NodePool's allowance for every method that ran, whether or
	// not the round looked at its nodes: the allowed disruptions gauge
	// has a series for each.
	for pool := range s.Pools {
		for _, reason := range []v1.DisruptionReason{v1.DisruptionReasonUnhealthy, v1.DisruptionReasonDrifted, v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized} {
			if opts.runs(reason) {
				d.allowance(pool, reason)
			}
		}
	}
	for _, pools := range d.allowSet {
		for _, a := range pools {
			d.out.Allowances = append(d.out.Allowances, a)
		}
	}
	slices.SortFunc(d.out.Allowances, func(a, b budget.Allowance) int {
		return cmp.Or(cmp.Compare(a.NodePool, b.NodePool), cmp.Compare(a.Reason, b.Reason))
	})
	slices.SortFunc(d.out.Blocked, func(a, b Blocked) int { return cmp.Compare(a.Node, b.Node) })
	return d.out
}

// scalingUp counts the pods of a scale-up in progress: pods counted as
// launching nodes' and pending pods kube-scheduler has not tried yet (it
// places them on a node, or nodewright launches one); when there are
// none, the pending pods the scheduler places on nodes or new NodeClaims.
// At tens of thousands of pending pods, planning them all in every round
// to learn what their count already says would cost more than the round.
func scalingUp(s *state.Snapshot) int {
	pods := s.Expecting() + untried(s.Pending)
	if pods > 0 || len(s.Pending) == 0 {
		return pods // a scale-up is under way: no need to plan the rest to know
	}
	plan := scheduling.Solve(s.Input(nil))
	for _, nc := range plan.NodeClaims {
		pods += len(nc.Pods)
	}
	for _, e := range plan.Existing {
		pods += len(e.Pods)
	}
	return pods
}

// untried counts the pods kube-scheduler has not tried to place yet
// (a CapacityBuffer's pods are never tried).
func untried(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if !state.MarkedUnschedulable(p) && !state.Virtual(p) {
			n++
		}
	}
	return n
}

// explainRest gives every candidate no command takes and no blocker
// holds a reason, and totals the prices.
func (d *decider) explainRest(s *state.Snapshot) {
	inCommand := map[string]bool{}
	for _, c := range d.out.Commands {
		for _, n := range c.Nodes {
			inCommand[n.Name] = true
		}
		d.out.PricePerHourAfter += c.ReplacementPrice - c.PricePerHour
	}
	d.out.CostPerHour = map[string]float64{}
	for _, n := range s.Candidates() {
		p, _ := d.price(n)
		d.out.PricePerHour += p
		d.out.CostPerHour[n.NodePool] += p
		if inCommand[n.Name] || d.blocked[n.Name] {
			continue
		}
		switch {
		case n.Deleting() || n.Disrupted() || n.Rebooting() || d.opts.InFlight[n.Name]:
			d.block(n, Blocked{Reason: BlockedInProgress})
		case d.next[n.Name] != "":
			d.block(n, Blocked{Reason: BlockedNextRound, Method: d.next[n.Name]})
		default:
			d.block(n, Blocked{Reason: BlockedNotEvaluated, Limit: d.opts.MaxSingleNode, Method: v1.DisruptionReasonUnderutilized})
		}
	}
	d.out.PricePerHourAfter += d.out.PricePerHour
}

// newDecider prepares a decision: prices by NodePool and instance type,
// nodes per NodePool and those being disrupted, and the candidates that
// are not.
func newDecider(s *state.Snapshot, opts Options) (*decider, []*state.Node) {
	d := &decider{s: s, opts: opts, now: s.Now, prices: map[string]map[string]*scheduling.InstanceType{}, taken: map[string]bool{},
		nodes: map[string]int{}, disrupt: map[string]int{}, used: map[string]map[v1.DisruptionReason]int{},
		out: &Decision{Eligible: map[string]int{}, EligibleBy: map[v1.DisruptionReason]int{}}, blocked: map[string]bool{}, allowSet: map[string]map[v1.DisruptionReason]budget.Allowance{},
		next: map[string]v1.DisruptionReason{}, unready: map[string]int{}}
	for _, np := range s.NodePools {
		d.prices[np.Name] = map[string]*scheduling.InstanceType{}
		for _, it := range np.InstanceTypes {
			d.prices[np.Name][it.Name] = it
		}
	}
	var candidates []*state.Node
	for _, n := range s.Candidates() {
		// Budgets count the nodes that initialized (and those rebooting):
		// a percentage does not grow with the nodes of a scale-up, nor
		// shrink by nodes that never served.
		counted := n.Initialized() || n.Rebooting()
		if counted {
			d.nodes[n.NodePool]++
		}
		// A node being rebooted is out of service like one being
		// replaced, and no other method takes it meanwhile.
		if n.Deleting() || n.Disrupted() || n.Rebooting() || opts.InFlight[n.Name] {
			if counted {
				d.disrupt[n.NodePool]++
			}
			continue
		}
		if n.Unready() {
			d.unready[n.NodePool]++
		}
		candidates = append(candidates, n)
	}
	d.blockWithoutNodePool()
	d.doomed = map[string]bool{}
	for _, n := range candidates {
		_, paused := opts.DriftPaused[n.NodePool]
		at, expires := n.ExpiresAt()
		drifts := n.Drift().Drifted() && !paused && budget.For(s.Pools[n.NodePool], v1.DisruptionReasonDrifted, d.nodes[n.NodePool], d.disrupting(n.NodePool, v1.DisruptionReasonDrifted), s.Now).Limit > 0
		if drifts || expires && !s.Now.Before(at) {
			d.doomed[n.Name] = true
		}
	}
	return d, candidates
}

// blockWithoutNodePool leaves alone, saying why, the NodeClaims of no
// NodePool or of one that is gone.
func (d *decider) blockWithoutNodePool() {
	for _, n := range d.s.Nodes {
		if n.NodeClaim != nil && n.Node != nil && n.Registered() && !n.Deleting() && (n.NodePool == "" || d.s.Pools[n.NodePool] == nil) {
			d.block(n, Blocked{Reason: BlockedNoNodePool, Message: n.NodePool})
		}
	}
}

// allowance is the NodePool's budget for a reason, less what this
// decision already used.
func (d *decider) allowance(pool string, reason v1.DisruptionReason) budget.Allowance {
	if _, ok := d.allowSet[pool]; !ok {
		d.allowSet[pool] = map[v1.DisruptionReason]budget.Allowance{}
	}
	a, ok := d.allowSet[pool][reason]
	if !ok {
		a = budget.For(d.s.Pools[pool], reason, d.nodes[pool], d.disrupting(pool, reason), d.now)
		d.allowSet[pool][reason] = a
	}
	a.Allowed = max(a.Allowed-d.used[pool][reason], 0)
	a.Disrupting = d.disrupting(pool, reason)
	return a
}

// disrupting counts the NodePool's nodes out of service for a reason's
// budget: those being disrupted, and the unready ones but for repair's.
func (d *decider) disrupting(pool string, reason v1.DisruptionReason) int {
	if reason == v1.DisruptionReasonUnhealthy {
		return d.disrupt[pool]
	}
	return d.disrupt[pool] + d.unready[pool]
}

func (d *decider) use(n *state.Node, reason v1.DisruptionReason) {
	if !n.Initialized() && !n.Rebooting() {
		// Budgets count the nodes that initialized: one that never did
		// takes none of them (repair takes such nodes).
		d.taken[n.Name] = true
		return
	}
	if d.used[n.NodePool] == nil {
		d.used[n.NodePool] = map[v1.DisruptionReason]int{}
	}
	// Every reason's budget counts every node disrupted, but an unready
	// node already counts against every budget but repair's.
	unready := n.Unready()
	for r := range d.allowSet[n.NodePool] {
		if r != reason && (!unready || r == v1.DisruptionReasonUnhealthy) {
			d.used[n.NodePool][r]++
		}
	}
	if !unready || reason == v1.DisruptionReasonUnhealthy {
		d.used[n.NodePool][reason]++
	}
	if unready {
		d.unready[n.NodePool]--
	}
	d.disrupt[n.NodePool]++
	d.taken[n.Name] = true
}

// timed runs a method, under the caller's measurement if it asked for
// one (the decision itself reads no clock).
func (d *decider) timed(method v1.DisruptionReason, run func()) {
	if d.opts.Measure == nil {
		run()
		return
	}
	d.opts.Measure(method, run)
}

// eligible counts a node a method could act on now.
func (d *decider) eligible(n *state.Node, method v1.DisruptionReason) {
	if d.out.Eligible == nil {
		d.out.Eligible, d.out.EligibleBy = map[string]int{}, map[v1.DisruptionReason]int{}
	}
	d.out.Eligible[n.NodePool]++
	d.out.EligibleBy[method]++
}

// block records why a node stays (the first reason found for it).
func (d *decider) block(n *state.Node, b Blocked) {
	if d.blocked[n.Name] {
		return
	}
	d.blocked[n.Name] = true
	b.Node = n.Name
	d.out.Blocked = append(d.out.Blocked, b)
}

// price is what a node costs per hour, from its instance type, zone and
// capacity type among its NodePool's offerings.
func (d *decider) price(n *state.Node) (float64, bool) {
	it := d.prices[n.NodePool][n.Label(corev1.LabelInstanceTypeStable)]
	if it == nil {
		return 0, false
	}
	zone, ct := n.Label(corev1.LabelTopologyZone), n.Label(v1.LabelCapacityType)
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == ct {
			// A price that is not a number is no price: it would make
			// every sum it joins one.
			if math.IsNaN(o.Price) || math.IsInf(o.Price, 0) || o.Price < 0 {
				return 0, false
			}
			return o.Price, true
		}
	}
	return 0, false
}

func oldestFirst(a, b *state.Node) int {
	return cmp.Or(a.CreatedAt().Compare(b.CreatedAt()), cmp.Compare(a.Name, b.Name))
}

// command records a command and takes its nodes.
func (d *decider) command(reason v1.DisruptionReason, nodes []*state.Node, plan *scheduling.Plan, pods int) *Command {
	c := &Command{Reason: reason, Nodes: nodes, Replacements: plan.NodeClaims, Pods: pods, Unplaced: plan.Unschedulable, Moves: plan.Existing}
	for _, n := range nodes {
		p, _ := d.price(n)
		c.PricePerHour += p
		d.use(n, reason)
	}
	c.ReplacementPrice = plan.Price()
	c.Savings = c.PricePerHour - c.ReplacementPrice
	d.out.Commands = append(d.out.Commands, c)
	return c
}

// hardBlockers are the blockers that hold a method back: all of them for
// graceful methods; for drift of a NodeClaim with a
// terminationGracePeriod, only those that are not about pods (the drain
// waits for those pods up to the deadline).
func hardBlockers(n *state.Node, forceful bool) []state.Blocker {
	var out []state.Blocker
	for _, b := range n.Blockers() {
		if forceful && b.Graceful() {
			continue
		}
		out = append(out, b)
	}
	return out
}

// leaveNext leaves the nodes a method found and did not take to a later
// round.
func (d *decider) leaveNext(found []*state.Node, reason v1.DisruptionReason) {
	for _, later := range found {
		if !d.taken[later.Name] {
			d.next[later.Name] = reason
		}
	}
}
