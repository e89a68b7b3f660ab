package disruption

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// candidate is a node consolidation may act on.
type candidate struct {
	node  *state.Node
	price float64
	pods  int
	// cost is what disrupting it costs (disruptionCost).
	cost float64
	// used is the larger of the CPU and memory shares its pods request.
	used float64
	// ratio is its price over what moving its pods costs (rescheduleCost).
	ratio float64
}

// consolidation finds the command with the best savings per moved pod
// among: removing the largest set of nodes (cheapest to disrupt first)
// whose pods the rest of the cluster, plus at most one new cheaper node,
// can hold — every repack is the scheduler's, which packs interchangeable
// pods with its configuration LP — and removing or replacing single nodes.
func (d *decider) consolidation(nodes []*state.Node) {
	cands := d.consolidationCandidates(nodes)
	var options []*Command
	if len(cands) >= 2 {
		if c := d.multiNode(cands); c != nil {
			options = append(options, c)
		}
		if c := d.repack(cands); c != nil {
			options = append(options, c)
		}
	}
	options = append(options, d.singleNodes(cands, options)...)
	best := choose(options)
	if best == nil {
		return
	}
	if len(best.Nodes) > 1 {
		for _, n := range best.Nodes {
			delete(d.next, n.Name)
		}
	}
	for _, n := range best.Nodes {
		d.use(n, v1.DisruptionReasonUnderutilized)
	}
	d.out.Commands = append(d.out.Commands, best)
}

// consolidationCandidates are the nodes with pods that consolidation may
// move, cheapest to disrupt first (their pods' eviction costs, weighed by
// karpenter.sh/disruption-cost and priority, times the share of the
// node's lifetime left), then the most expensive, then by name; the
// others are blocked with why.
func (d *decider) consolidationCandidates(nodes []*state.Node) []candidate {
	var cands []candidate
	for _, n := range nodes {
		if d.taken[n.Name] || len(n.Reschedulable()) == 0 {
			continue
		}
		price, why := d.consolidationPrice(n)
		if why != nil {
			why.Method = v1.DisruptionReasonUnderutilized
			d.block(n, *why)
			continue
		}
		d.eligible(n, v1.DisruptionReasonUnderutilized)
		cands = append(cands, candidate{node: n, price: price, pods: len(n.Reschedulable()), used: used(n), cost: n.DisruptionCost(d.now, !d.opts.PodDeletionCostManagement),
			ratio: price / d.rescheduleCost(n)})
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.ratio, a.ratio), cmp.Compare(a.cost, b.cost), cmp.Compare(a.node.Name, b.node.Name))
	})
	return cands
}

// consolidationPrice is what the node costs, or why consolidation leaves
// it: a blocker, its NodePool's policy, consolidateAfter, or a price it
// cannot know.
func (d *decider) consolidationPrice(n *state.Node) (float64, *Blocked) {
	if bs := n.Blockers(); len(bs) > 0 {
		return 0, &Blocked{Reason: BlockedByNode, Blocker: bs[0]}
	}
	if policy := d.s.Pools[n.NodePool].Spec.Disruption.ConsolidationPolicy; policy == v1.ConsolidationPolicyWhenEmpty {
		return 0, &Blocked{Reason: BlockedPolicy, Policy: policy}
	}
	if ok, why := d.consolidatable(n); !ok {
		return 0, &why
	}
	price, ok := d.price(n)
	if !ok {
		return 0, &Blocked{Reason: BlockedPriceUnknown}
	}
	return price, nil
}

// singleNodes evaluates removing or replacing each candidate alone, up to
// MaxSingleNode of them within their budgets; a candidate that cannot go
// alone, and is in no other option, is blocked with why.
func (d *decider) singleNodes(cands []candidate, others []*Command) []*Command {
	var out []*Command
	evaluated := 0
	if len(d.opts.Unreached) > 0 {
		cands = slices.Clone(cands)
		slices.SortStableFunc(cands, func(a, b candidate) int {
			return cmp.Compare(boolRank(!d.opts.Unreached[a.node.NodePool]), boolRank(!d.opts.Unreached[b.node.NodePool]))
		})
	}
	reached := map[string]bool{}
	for i, c := range cands {
		if evaluated >= d.opts.MaxSingleNode {
			d.unreached(cands[i:], reached)
			break
		}
		reached[c.node.NodePool] = true
		if a := d.allowance(c.node.NodePool, v1.DisruptionReasonUnderutilized); a.Allowed < 1 {
			d.block(c.node, Blocked{Reason: BlockedByBudget, Allowance: a, Method: v1.DisruptionReasonUnderutilized})
			continue
		}
		evaluated++
		cmd, why := d.evaluate([]candidate{c})
		if cmd == nil {
			if !slices.ContainsFunc(others, func(o *Command) bool { return slices.Contains(o.Nodes, c.node) }) {
				d.block(c.node, why)
			}
			continue
		}
		d.next[c.node.Name] = v1.DisruptionReasonUnderutilized
		out = append(out, cmd)
	}
	return out
}

// unreached records the NodePools of the candidates single-node
// consolidation did not reach, none of whose candidates it did.
func (d *decider) unreached(rest []candidate, reached map[string]bool) {
	for _, c := range rest {
		if !reached[c.node.NodePool] {
			if d.out.Unreached == nil {
				d.out.Unreached = map[string]bool{}
			}
			d.out.Unreached[c.node.NodePool] = true
		}
	}
}

// boolRank orders false before true.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// score is a command's savings per moved pod.
func score(c *Command) float64 { return c.Savings / float64(max(c.Pods, 1)) }

// choose picks, among the commands that save at least half as much as
// the one that saves most, the one with the best savings per moved pod:
// disruption is spent where it buys most, without trading a large saving
// for the quiet of moving one pod.
func choose(options []*Command) *Command {
	most := 0.0
	for _, c := range options {
		most = max(most, c.Savings)
	}
	var best *Command
	for _, c := range options {
		if c.Savings >= most/2 && (best == nil || score(c) > score(best)) {
			best = c
		}
	}
	return best
}

// used is the larger of the CPU and memory shares of a node's allocatable
// that its pods request.
func used(n *state.Node) float64 {
	sn := n.Scheduling()
	if sn == nil {
		return 1
	}
	var req scheduling.Resources
	for _, p := range n.Pods {
		r, _ := scheduling.PodRequests(p)
		req = req.Add(r)
	}
	return max(share(req.CPU(), sn.Allocatable.CPU()), share(req.Memory(), sn.Allocatable.Memory()))
}

func share(a, b int64) float64 {
	if b <= 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// MinSavings is the least a consolidation must save per hour, in US
// dollars: moving pods off a node that costs (next to) nothing, such as a
// capacity reservation's, saves nothing worth the disruption.
const MinSavings = 0.001

// RepackMinSavings is the least share of its nodes' price a repack must
// save: a repack moves many pods, and small savings are not worth them.
const RepackMinSavings = 0.10

// repack takes the candidates that pay most for what their pods use
// (price over the share of the node requested), as many as the budgets
// allow (at most MaxMultiNode), and asks the scheduler to place their
// pods on the rest of the cluster and on new nodes — interchangeable pods
// packed as a whole by its configuration LP, into as many nodes of
// whatever types cost least — trying halves of the set until one saves
// at least RepackMinSavings of its price.
func (d *decider) repack(cands []candidate) *Command {
	wasteful := slices.Clone(cands)
	slices.SortStableFunc(wasteful, func(a, b candidate) int {
		return cmp.Compare(b.price/max(b.used, 0.01), a.price/max(a.used, 0.01))
	})
	set := d.withinBudget(wasteful)
	for k := len(set); k >= 2; k /= 2 {
		if cmd, _ := d.evaluateUpTo(set[:k], math.MaxInt); cmd != nil && cmd.Savings >= RepackMinSavings*cmd.PricePerHour {
			return cmd
		}
	}
	return nil
}

// withinBudget is the longest prefix of the candidates, skipping those
// whose NodePool's budget is used up, of at most MaxMultiNode nodes.
func (d *decider) withinBudget(cands []candidate) []candidate {
	var out []candidate
	room := map[string]int{}
	for _, c := range cands {
		if len(out) >= d.opts.MaxMultiNode {
			break
		}
		if _, ok := room[c.node.NodePool]; !ok {
			room[c.node.NodePool] = d.allowance(c.node.NodePool, v1.DisruptionReasonUnderutilized).Allowed
		}
		if room[c.node.NodePool] < 1 {
			continue
		}
		room[c.node.NodePool]--
		out = append(out, c)
	}
	return out
}

// multiNode finds the longest prefix of the candidates (within budgets)
// that can go together, by binary search: if k nodes cannot, more will
// not either, as a rule.
func (d *decider) multiNode(cands []candidate) *Command {
	prefix := d.withinBudget(cands)
	var best *Command
	lo, hi := 2, len(prefix)
	for lo <= hi {
		mid := (lo + hi) / 2
		if cmd, _ := d.evaluate(prefix[:mid]); cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// evaluate checks whether the nodes can go: their pods fit on the rest of
// the cluster and at most one new node that costs less than they do.
func (d *decider) evaluate(cands []candidate) (*Command, Blocked) {
	return d.evaluateUpTo(cands, 1)
}

// evaluateUpTo is evaluate allowing up to most new nodes that together
// cost less than the nodes (most > 1: a repack).
func (d *decider) evaluateUpTo(cands []candidate, most int) (*Command, Blocked) {
	nodes := make([]*state.Node, 0, len(cands))
	price := 0.0
	allSpot := true
	for _, c := range cands {
		nodes = append(nodes, c.node)
		price += c.price
		allSpot = allSpot && c.node.Label(v1.LabelCapacityType) == v1.CapacityTypeSpot
	}
	plan, pods := d.consolidationPlan(nodes, most)
	if len(plan.Unschedulable) > 0 {
		return nil, Blocked{Reason: BlockedPodsDoNotFit, Pod: plan.Unschedulable[0], Method: v1.DisruptionReasonUnderutilized}
	}
	cmd := &Command{Reason: v1.DisruptionReasonUnderutilized, Nodes: nodes, PricePerHour: price, Pods: pods, Moves: plan.Existing}
	if allSpot && !d.opts.SpotToSpot && slices.ContainsFunc(plan.NodeClaims, mayBeSpot) {
		return nil, Blocked{Reason: BlockedSpotDiversity, Method: v1.DisruptionReasonUnderutilized}
	}
	switch len(plan.NodeClaims) {
	case 0:
	case 1:
		repl, types, short := cheaper(plan.NodeClaims[0], price)
		if repl == nil {
			return nil, Blocked{Reason: BlockedNoCheaperPlacement, Now: price, Replacement: plan.NodeClaims[0].Offering.Price, Method: v1.DisruptionReasonUnderutilized, Message: short}
		}
		if allSpot && repl.Offering.CapacityType == v1.CapacityTypeSpot {
			if types < d.opts.SpotToSpotMinTypes {
				return nil, Blocked{Reason: BlockedSpotDiversity, Types: types, MinTypes: d.opts.SpotToSpotMinTypes, Method: v1.DisruptionReasonUnderutilized}
			}
			repl = cheapestTypes(repl, max(d.opts.SpotToSpotMinTypes, minInstanceTypes(repl)))
		}
		cmd.Replacements = []*scheduling.PlannedNodeClaim{repl}
		cmd.ReplacementPrice = repl.Offering.Price
	default:
		if len(plan.NodeClaims) > most {
			return nil, Blocked{Reason: BlockedNoCheaperPlacement, Now: price, Replacement: plan.Price(), Method: v1.DisruptionReasonUnderutilized}
		}
		cmd.Replacements = plan.NodeClaims
		cmd.ReplacementPrice = plan.Price()
	}
	cmd.Savings = cmd.PricePerHour - cmd.ReplacementPrice
	if cmd.Savings < MinSavings {
		return nil, Blocked{Reason: BlockedNoCheaperPlacement, Now: price, Replacement: cmd.ReplacementPrice, Method: v1.DisruptionReasonUnderutilized}
	}
	if scores := d.balanced(cmd); len(scores) > 0 {
		d.out.Scores = append(d.out.Scores, scores...)
		for _, sc := range scores {
			if !sc.Approved {
				return nil, Blocked{Reason: BlockedPolicy, Policy: v1.ConsolidationPolicyBalanced, Score: sc.Score, Method: v1.DisruptionReasonUnderutilized}
			}
		}
		cmd.Scores = scores
	}
	return cmd, Blocked{}
}

// consolidationPlan places the nodes' pods elsewhere: the cheapest plan,
// or for a single node whose cheapest plan is several small nodes, one
// node that holds them all (which may still cost less than it).
func (d *decider) consolidationPlan(nodes []*state.Node, most int) (*scheduling.Plan, int) {
	plan, pods := d.reschedule(nodes)
	if len(nodes) == 1 && most == 1 && len(plan.Unschedulable) == 0 && len(plan.NodeClaims) > 1 && onlyPodsOf(plan, nodes[0]) {
		if one := d.rescheduleOnto(nodes, plan); len(one.Unschedulable) == 0 && len(one.NodeClaims) == 1 {
			return one, pods
		}
	}
	return plan, pods
}

// onlyPodsOf reports a plan whose new nodes hold only the node's own
// pods (none that other commands' room left to place again).
func onlyPodsOf(plan *scheduling.Plan, n *state.Node) bool {
	own := map[*corev1.Pod]bool{}
	for _, p := range n.Reschedulable() {
		own[p] = true
	}
	for _, c := range plan.NodeClaims {
		for _, p := range c.Pods {
			if !own[p] {
				return false
			}
		}
	}
	return true
}

// Score is a consolidation command the Balanced policy weighed, for one
// of its NodePools: its score, whether that approved it (BalancedThreshold
// or more), and the pods it moves.
type Score struct {
	NodePool string
	Score    float64
	Approved bool
	Moves    int
	// Savings and Disruption are the shares (0 to 1) of the NodePool's
	// cost the command saves and of its disruption cost it takes.
	Savings, Disruption float64
}

// Describe says how the Balanced policy weighed a command, for events.
func (s Score) Describe() string {
	return fmt.Sprintf("Balanced NodePool %s: the command saves %.1f%% of its cost for %.1f%% of its disruption cost, a score of %.2f, at least %.2f (k %d)",
		s.NodePool, s.Savings*100, s.Disruption*100, s.Score, BalancedThreshold, BalancedK)
}

// BalancedK is the Balanced policy's k: a command is approved when the
// share of a NodePool's cost it saves is at least 1/k of the share of
// the NodePool's disruption cost it takes.
const BalancedK = 2

// BalancedThreshold is the least score the Balanced policy approves.
const BalancedThreshold = 1.0 / BalancedK

// balanced scores a command for each of its NodePools with the Balanced
// policy, as the reference does: the share of the NodePool's hourly cost
// the command saves (its savings, shared among its NodePools by the
// price of their nodes), divided by the share of the NodePool's
// disruption cost it takes (each node 1, plus each pod to move its
// eviction cost, never below 0). A command that moves no pod is not
// weighed.
func (d *decider) balanced(c *Command) []Score {
	if c.Pods == 0 {
		return nil
	}
	source := 0.0
	byPool := map[string][]*state.Node{}
	for _, n := range c.Nodes {
		p, _ := d.price(n)
		source += p
		byPool[n.NodePool] = append(byPool[n.NodePool], n)
	}
	var out []Score
	for _, pool := range slices.Sorted(maps.Keys(byPool)) {
		if d.s.Pools[pool].Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyBalanced {
			continue
		}
		totalCost, totalDisruption := d.poolTotals(pool)
		poolCost, moved, pods := 0.0, 0.0, 0
		for _, n := range byPool[pool] {
			p, _ := d.price(n)
			poolCost += p
			moved += d.rescheduleCost(n)
			pods += len(n.Reschedulable())
		}
		savings := c.Savings
		if len(byPool) > 1 && source > 0 {
			savings *= poolCost / source
		}
		if totalCost <= 0 || totalDisruption <= 0 {
			continue
		}
		score, share, taken := 0.0, savings/totalCost, moved/totalDisruption
		if savings > 0 {
			score = share / taken
		}
		out = append(out, Score{NodePool: pool, Score: score, Approved: score >= BalancedThreshold, Moves: pods, Savings: share, Disruption: taken})
	}
	return out
}

// poolTotals are a NodePool's hourly cost and disruption cost (the sum of
// its nodes' rescheduleCost), worked out once a decision.
func (d *decider) poolTotals(pool string) (float64, float64) {
	if d.totals == nil {
		d.totals = map[string][2]float64{}
		for _, n := range d.s.Candidates() {
			p, _ := d.price(n)
			t := d.totals[n.NodePool]
			d.totals[n.NodePool] = [2]float64{t[0] + p, t[1] + d.rescheduleCost(n)}
		}
	}
	t := d.totals[pool]
	return t[0], t[1]
}

// rescheduleCost is what moving a node's pods off it costs the Balanced
// policy: 1 for the node, and each pod's eviction cost, never below 0.
func (d *decider) rescheduleCost(n *state.Node) float64 {
	cost := 1.0
	for _, p := range n.Reschedulable() {
		cost += max(0, state.EvictionCost(p, !d.opts.PodDeletionCostManagement))
	}
	return cost
}

// cheaper narrows a planned replacement to the instance types that cost
// less than price wherever the launch lands (their worst launch price:
// the dearest zone the replacement may take); nil when none does, or when
// they offer fewer values than the replacement's minValues ask (its
// NodePool's, or as few as it was opened with under
// --min-values-policy=BestEffort: consolidation never relaxes them
// further), with what they lack. It also returns how many types remain.
func cheaper(planned *scheduling.PlannedNodeClaim, price float64) (*scheduling.PlannedNodeClaim, int, string) {
	var types []*scheduling.InstanceType
	var names []string
	var first scheduling.Offering
	for _, it := range planned.InstanceTypes {
		o, ok := it.CheapestOffering(planned.Requirements)
		worst, _ := it.WorstLaunchPrice(planned.Requirements)
		if !ok || worst >= price {
			continue
		}
		if len(types) == 0 {
			first = o
		}
		types = append(types, it)
		names = append(names, it.Name)
	}
	if len(types) == 0 {
		return nil, 0, ""
	}
	if !scheduling.MinValuesMet(types, planned.Requirements) {
		return nil, len(types), scheduling.DescribeMinValues(types, planned.Requirements)
	}
	out := *planned
	out.Requirements = planned.Requirements.Copy()
	out.Requirements[scheduling.LabelInstanceType] = instanceTypesIn(planned, names)
	out.InstanceTypes, out.InstanceType, out.Offering = types, types[0], first
	return &out, len(types), ""
}

// mayBeSpot reports whether a replacement may launch as spot.
func mayBeSpot(c *scheduling.PlannedNodeClaim) bool {
	r := c.Requirements[v1.LabelCapacityType]
	return r == nil || r.Has(v1.CapacityTypeSpot)
}

// cheapestTypes keeps a replacement's n cheapest instance types (by their
// cheapest offering under its requirements).
func cheapestTypes(planned *scheduling.PlannedNodeClaim, n int) *scheduling.PlannedNodeClaim {
	if n <= 0 || len(planned.InstanceTypes) <= n {
		return planned
	}
	types := slices.Clone(planned.InstanceTypes)
	price := func(it *scheduling.InstanceType) float64 {
		o, _ := it.CheapestOffering(planned.Requirements)
		return o.Price
	}
	slices.SortStableFunc(types, func(a, b *scheduling.InstanceType) int { return cmp.Compare(price(a), price(b)) })
	types = types[:n]
	names := make([]string, len(types))
	for i, it := range types {
		names[i] = it.Name
	}
	out := *planned
	out.Requirements = planned.Requirements.Copy()
	out.Requirements[scheduling.LabelInstanceType] = instanceTypesIn(planned, names)
	out.InstanceTypes = types
	if !slices.Contains(types, out.InstanceType) {
		out.InstanceType = types[0]
		out.Offering, _ = types[0].CheapestOffering(out.Requirements)
	}
	return &out
}

// instanceTypesIn is a replacement's instance-type requirement narrowed
// to names, with its minValues.
func instanceTypesIn(c *scheduling.PlannedNodeClaim, names []string) *scheduling.Requirement {
	r := scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, names...)
	r.MinValues = minInstanceTypes(c)
	return r
}

// minInstanceTypes is the minValues of a replacement's instance types.
func minInstanceTypes(c *scheduling.PlannedNodeClaim) int {
	if r := c.Requirements[scheduling.LabelInstanceType]; r != nil {
		return r.MinValues
	}
	return 0
}

// consolidate removes empty nodes and consolidates underutilized ones
// (the methods the options run), unless pending pods are being placed.
func (d *decider) consolidate(candidates []*state.Node) {
	empty, under := d.opts.runs(v1.DisruptionReasonEmpty), d.opts.runs(v1.DisruptionReasonUnderutilized)
	switch pods := scalingUp(d.s); {
	case !empty && !under:
	case pods > 0:
		d.consolidationWaits(candidates, Blocked{Reason: BlockedScaleUp, Pods: pods})
	case d.opts.ConsolidationInFlight:
		if empty {
			d.emptiness(candidates)
		}
		d.consolidationWaits(candidates, Blocked{Reason: BlockedConsolidationInFlight})
	default:
		if empty {
			d.timed(v1.DisruptionReasonEmpty, func() { d.emptiness(candidates) })
		}
		if under {
			d.timed(v1.DisruptionReasonUnderutilized, func() { d.consolidation(candidates) })
		}
	}
}

// consolidationWaits explains the nodes consolidation would look at while
// it waits (why: a consolidation carried out, a scale-up).
func (d *decider) consolidationWaits(candidates []*state.Node, why Blocked) {
	for _, n := range candidates {
		if d.taken[n.Name] {
			continue
		}
		why.Method = v1.DisruptionReasonUnderutilized
		if len(n.Reschedulable()) == 0 {
			why.Method = v1.DisruptionReasonEmpty
		}
		if bs := n.Blockers(); len(bs) > 0 {
			d.block(n, Blocked{Reason: BlockedByNode, Blocker: bs[0], Method: why.Method})
			continue
		}
		d.block(n, why)
	}
}

// consolidatable reports whether consolidateAfter has passed since the
// node's last pod event or its initialization; else why not.
func (d *decider) consolidatable(n *state.Node) (bool, Blocked) {
	np := d.s.Pools[n.NodePool]
	after, never, err := np.Spec.Disruption.ConsolidateAfter.Parse()
	if np.Spec.Disruption.ConsolidateAfter == "" {
		after, never, err = 0, false, nil
	}
	switch {
	case err != nil:
		return false, Blocked{Reason: BlockedConsolidateAfter, Err: err}
	case never:
		return false, Blocked{Reason: BlockedConsolidateAfter, Never: true}
	}
	since := n.InitializedAt()
	if last := n.LastPodEvent(); last.After(since) {
		since = last
	}
	if until := since.Add(after); d.now.Before(until) {
		return false, Blocked{Reason: BlockedConsolidateAfter, Until: until}
	}
	return true, Blocked{}
}
