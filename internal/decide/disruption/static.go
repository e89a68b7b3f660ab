package disruption

import (
	"slices"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// staticCannotLaunch says why a static NodePool's node is not replaced
// for a reason: the NodePool's controller cannot launch its replacement
// now (the NodePool is being deleted, or the snapshot skips it: it or its
// EC2NodeClass is not ready, its registrations back off, ...).
func (d *decider) staticCannotLaunch(n *state.Node, reason v1.DisruptionReason) (Blocked, bool) {
	if np := d.s.Pools[n.NodePool]; np != nil && !np.DeletionTimestamp.IsZero() {
		// A NodePool being deleted launches nothing: its nodes go with it.
		return Blocked{Reason: BlockedStaticCannotLaunch, Method: reason, Message: "NodePool " + n.NodePool + " is being deleted, and its nodes with it"}, true
	}
	if d.s.Static[n.NodePool] != nil {
		return Blocked{}, false
	}
	why := "NodePool " + n.NodePool + " cannot launch"
	for _, sk := range d.s.Skipped {
		if sk.NodePool == n.NodePool {
			why = sk.String()
		}
	}
	return Blocked{Reason: BlockedStaticCannotLaunch, Method: reason, Message: why}, true
}

// static reports a node of a static NodePool.
func (d *decider) static(n *state.Node) bool {
	np := d.s.Pools[n.NodePool]
	return np != nil && np.Spec.Replicas != nil
}

// staticCommand replaces a static NodePool's node: no plan, as the pool's
// controller launches the replacement from the template.
func (d *decider) staticCommand(reason v1.DisruptionReason, n *state.Node) {
	c := d.command(reason, []*state.Node{n}, &scheduling.Plan{}, len(n.Reschedulable()))
	c.Static = true
	c.ReplacementPrice, c.Savings = c.PricePerHour, 0
}

// leaveStatic takes the static NodePools' nodes out of consolidation:
// their number is the user's, not a matter of cost.
func (d *decider) leaveStatic(candidates []*state.Node) []*state.Node {
	return slices.DeleteFunc(candidates, func(n *state.Node) bool {
		if !d.static(n) {
			return false
		}
		if !d.taken[n.Name] {
			d.block(n, Blocked{Reason: BlockedStatic, Method: v1.DisruptionReasonUnderutilized})
		}
		return true
	})
}
