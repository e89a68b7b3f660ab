package disruption

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

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
		if full, offered := d.staticReservations(n.NodePool); full && !holdsSlot(n, offered) {
			return Blocked{Reason: BlockedStaticCannotLaunch, Method: reason,
				Message: "its nodes launch only into capacity reservations, which are full, and this node holds none of their slots"}, true
		}
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
// controller launches the replacement from the template. When the pool
// launches only into capacity reservations that are full, the node (which
// holds one of their slots) goes first: its replacement takes its slot.
func (d *decider) staticCommand(reason v1.DisruptionReason, n *state.Node) {
	c := d.command(reason, []*state.Node{n}, &scheduling.Plan{}, len(n.Reschedulable()))
	c.Static = true
	c.ReplacementPrice, c.Savings = c.PricePerHour, 0
	c.TerminateFirst, _ = d.staticReservations(n.NodePool)
}

// staticReservations reports whether every offering a NodePool's
// template may launch is a capacity reservation without room, and which
// of them are still offered (instance type and zone): a replacement can
// then launch only into a slot a node of the pool frees.
func (d *decider) staticReservations(pool string) (bool, map[[2]string]bool) {
	return reservationsFull(d.s.Static[pool])
}

// reservationsFull reports whether every offering a NodePool may launch
// is a capacity reservation without room, and which of them are still
// offered (instance type and zone).
func reservationsFull(np *scheduling.NodePool) (bool, map[[2]string]bool) {
	if np == nil {
		return false, nil
	}
	zones, capacityTypes := np.Requirements[scheduling.LabelZone], np.Requirements[v1.LabelCapacityType]
	offered := map[[2]string]bool{}
	for _, it := range np.InstanceTypes {
		if !it.LabelsCompatible(np.Requirements) {
			continue
		}
		for _, o := range it.Offerings {
			if zones != nil && !zones.Has(o.Zone) || capacityTypes != nil && !capacityTypes.Has(o.CapacityType) {
				continue
			}
			if o.CapacityType != v1.CapacityTypeReserved || o.Available {
				return false, nil
			}
			// A reservation without room is still offered; one with room
			// that is unavailable is not.
			if o.ReservationCapacity == 0 {
				offered[[2]string{it.Name, o.Zone}] = true
			}
		}
	}
	return true, offered
}

// holdsSlot reports a reserved node in one of the offered reservations.
func holdsSlot(n *state.Node, offered map[[2]string]bool) bool {
	if n.Node == nil || n.Node.Labels[v1.LabelCapacityType] != v1.CapacityTypeReserved {
		return false
	}
	return offered[[2]string{n.Node.Labels[corev1.LabelInstanceTypeStable], n.Node.Labels[corev1.LabelTopologyZone]}]
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
