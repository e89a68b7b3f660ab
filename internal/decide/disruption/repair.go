package disruption

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Repair is what node repair found wrong with a command's node and what
// it does about it.
type Repair struct {
	nodepoolhealth.Unhealthy
	// Action is Replace, or Reboot when the governing policy reboots and
	// the node was not rebooted nodepoolhealth.RebootsBeforeReplacement
	// times within nodepoolhealth.RebootWindow.
	Action nodepoolhealth.Action
	// DrainBound is how long the drain waits for pods whose eviction is
	// refused: the policies' bound or the NodeClaim's
	// terminationGracePeriod, the shorter; nil waits for them.
	DrainBound *time.Duration
}

// Describe says what repair found and does, for events and logs.
func (r *Repair) Describe() string {
	what := "replacing it"
	switch {
	case r.Action == nodepoolhealth.Reboot:
		what = "rebooting it"
	case r.Escalated:
		what = fmt.Sprintf("replacing it: it was rebooted %d times within %s", nodepoolhealth.RebootsBeforeReplacement, nodepoolhealth.RebootWindow)
	}
	switch {
	case r.DrainBound == nil:
		what += "; its drain waits for every pod"
	case *r.DrainBound == 0:
		what += "; its drain does not wait for pods whose eviction is refused"
	default:
		what += fmt.Sprintf("; its drain waits up to %s for pods whose eviction is refused", *r.DrainBound)
	}
	return r.Unhealthy.Describe() + "; " + what
}

// health is the health of every NodePool's nodes, by the repair policies.
func (d *decider) health() map[string]*nodepoolhealth.Pool {
	if d.pools == nil {
		var claims []*v1.NodeClaim
		var nodes []*corev1.Node
		for _, n := range d.s.Candidates() {
			if n.NodeClaim != nil {
				claims, nodes = append(claims, n.NodeClaim), append(nodes, n.Node)
			}
		}
		d.pools = nodepoolhealth.Assess(claims, nodes, d.opts.Repair, d.now)
	}
	return d.pools
}

// unhealthy is the node's failure past its toleration, if it has one. A
// node that registered is repaired whether or not it initialized: one
// that never does is as broken as one that stopped working.
func (d *decider) unhealthy(n *state.Node) (nodepoolhealth.Unhealthy, *nodepoolhealth.Pool, bool) {
	p := d.health()[n.NodePool]
	if p == nil {
		return nodepoolhealth.Unhealthy{}, nil, false
	}
	for _, u := range p.Unhealthy {
		if u.Node.Name == n.Name && u.Eligible {
			return u, p, true
		}
	}
	return nodepoolhealth.Unhealthy{}, nil, false
}

// repair takes one node unhealthy past its toleration, the one of
// highest score first (its policy's priority, and how long past its
// toleration it is), within the NodePool's budget for Unhealthy: it is
// rebooted, or replaced (its replacements launched first, and it goes
// even when some of its pods have no place: they do not run well on it
// anyway). A node that never initialized is repaired outside the budget:
// it never served. A node or NodeClaim annotated do-not-repair stays, as
// do the nodes of a NodePool too much of which fails at once, and a node
// whose drain would wait forever for pods that may not be evicted.
func (d *decider) repair(candidates []*state.Node) {
	if len(d.opts.Repair) == 0 {
		return
	}
	var found []*state.Node
	score := map[string]float64{}
	for _, n := range candidates {
		u, p, ok := d.unhealthy(n)
		if !ok {
			continue
		}
		if why, blocked := d.unrepairable(n, u, p); blocked {
			d.block(n, why)
			continue
		}
		d.eligible(n, v1.DisruptionReasonUnhealthy)
		score[n.Name] = u.Score
		found = append(found, n)
	}
	slices.SortFunc(found, func(a, b *state.Node) int {
		return cmp.Or(cmp.Compare(score[b.Name], score[a.Name]),
			cmp.Compare(a.DisruptionCost(d.now, !d.opts.PodDeletionCostManagement), b.DisruptionCost(d.now, !d.opts.PodDeletionCostManagement)),
			cmp.Compare(a.Name, b.Name))
	})
	for _, n := range found {
		if a := d.allowance(n.NodePool, v1.DisruptionReasonUnhealthy); n.Initialized() && a.Allowed < 1 {
			d.block(n, Blocked{Reason: BlockedByBudget, Allowance: a, Method: v1.DisruptionReasonUnhealthy})
			continue
		}
		u, _, _ := d.unhealthy(n)
		d.repairCommand(n, u)
		d.leaveNext(found, v1.DisruptionReasonUnhealthy)
		return
	}
}

// unrepairable says why an unhealthy node stays, if it does.
func (d *decider) unrepairable(n *state.Node, u nodepoolhealth.Unhealthy, p *nodepoolhealth.Pool) (Blocked, bool) {
	why := Blocked{Method: v1.DisruptionReasonUnhealthy, Message: u.Describe()}
	launch, cannot := Blocked{}, false
	if d.static(n) {
		launch, cannot = d.staticCannotLaunch(n, v1.DisruptionReasonUnhealthy)
	}
	switch {
	case u.DoNotRepair:
		why.Reason = BlockedDoNotRepair
	case p.Held():
		why.Reason, why.Message = BlockedRepairHeld, u.Describe()+"; "+p.HeldReason()
	case cannot:
		why = launch
	case drainBound(u, n) == nil:
		for _, b := range n.Blockers() {
			if b.Graceful() {
				why.Reason, why.Blocker = BlockedRepairUnbounded, b
				return why, true
			}
		}
		return why, false
	default:
		return why, false
	}
	return why, true
}

// drainBound is how long the repair drain waits for pods whose eviction
// is refused: the shorter of the policies' bound and the NodeClaim's
// terminationGracePeriod; nil when neither bounds it.
func drainBound(u nodepoolhealth.Unhealthy, n *state.Node) *time.Duration {
	var tgp *time.Duration
	if n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil {
		tgp = &n.NodeClaim.Spec.TerminationGracePeriod.Duration
	}
	switch {
	case u.DrainBound == nil:
		return tgp
	case tgp == nil || *u.DrainBound < *tgp:
		return u.DrainBound
	}
	return tgp
}

// repairCommand records the command that repairs an unhealthy node.
func (d *decider) repairCommand(n *state.Node, u nodepoolhealth.Unhealthy) *Command {
	r := &Repair{Unhealthy: u, Action: u.Action, DrainBound: drainBound(u, n)}
	var c *Command
	switch {
	case r.Action == nodepoolhealth.Reboot:
		price, _ := d.price(n)
		c = &Command{Reason: v1.DisruptionReasonUnhealthy, Nodes: []*state.Node{n}, PricePerHour: price, ReplacementPrice: price, Pods: len(n.Reschedulable())}
		d.use(n, v1.DisruptionReasonUnhealthy)
		d.out.Commands = append(d.out.Commands, c)
	case d.static(n):
		d.staticCommand(v1.DisruptionReasonUnhealthy, n)
		c = d.out.Commands[len(d.out.Commands)-1]
	default:
		plan, pods := d.reschedule([]*state.Node{n})
		c = d.command(v1.DisruptionReasonUnhealthy, []*state.Node{n}, plan, pods)
	}
	c.Repair = r
	return c
}

// stillUnhealthy repairs a command's node again, or says why not.
func (d *decider) stillUnhealthy(n *state.Node) (*Command, string) {
	u, p, ok := d.unhealthy(n)
	if !ok {
		return nil, fmt.Sprintf("node %s is no longer unhealthy", n.Name)
	}
	if why, blocked := d.unrepairable(n, u, p); blocked {
		return nil, why.String()
	}
	d.out = &Decision{}
	return d.repairCommand(n, u), ""
}
