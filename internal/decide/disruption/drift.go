package disruption

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// drift replaces one drifted NodeClaim: empty ones first, then the one
// that drifted first, then the oldest.
func (d *decider) drift(candidates []*state.Node) {
	var found []*state.Node
	for _, n := range candidates {
		if d.taken[n.Name] || !n.Drift().Drifted() {
			continue
		}
		if why, paused := d.opts.DriftPaused[n.NodePool]; paused {
			d.block(n, Blocked{Reason: BlockedDriftPaused, Method: v1.DisruptionReasonDrifted, Message: why})
			continue
		}
		if bs := hardBlockers(n, n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil); len(bs) > 0 {
			d.block(n, Blocked{Reason: BlockedByNode, Blocker: bs[0], Method: v1.DisruptionReasonDrifted})
			continue
		}
		d.eligible(n, v1.DisruptionReasonDrifted)
		found = append(found, n)
	}
	slices.SortFunc(found, func(a, b *state.Node) int {
		return cmp.Or(cmp.Compare(len(a.Reschedulable()), len(b.Reschedulable())), driftedAt(a, d.s.Now).Compare(driftedAt(b, d.s.Now)), oldestFirst(a, b))
	})
	for _, n := range found {
		if a := d.allowance(n.NodePool, v1.DisruptionReasonDrifted); a.Allowed < 1 {
			d.block(n, Blocked{Reason: BlockedByBudget, Allowance: a, Method: v1.DisruptionReasonDrifted})
			continue
		}
		if d.static(n) {
			if why, cannot := d.staticCannotLaunch(n, v1.DisruptionReasonDrifted); cannot {
				d.block(n, why)
				continue
			}
			d.staticCommand(v1.DisruptionReasonDrifted, n)
			d.leaveNext(found, v1.DisruptionReasonDrifted)
			return
		}
		plan, pods := d.reschedule([]*state.Node{n})
		if len(plan.Unschedulable) > 0 && d.fitsFreedSlot(n) {
			// Its NodePool launches only into full reservations, and its
			// pods fit in the slot it frees: it goes first.
			d.command(v1.DisruptionReasonDrifted, []*state.Node{n}, &scheduling.Plan{}, pods).TerminateFirst = true
			d.leaveNext(found, v1.DisruptionReasonDrifted)
			return
		}
		if len(plan.Unschedulable) > 0 {
			d.block(n, Blocked{Reason: BlockedPodsDoNotFit, Pod: plan.Unschedulable[0], Method: v1.DisruptionReasonDrifted})
			continue
		}
		d.command(v1.DisruptionReasonDrifted, []*state.Node{n}, plan, pods)
		d.leaveNext(found, v1.DisruptionReasonDrifted)
		return
	}
}

// driftedAt is when the NodeClaim's Drifted condition turned True; now
// for drift not written on it yet.
func driftedAt(n *state.Node, now time.Time) time.Time {
	if n.NodeClaim != nil {
		if c := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionDrifted); c != nil && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return now
}

// fitsFreedSlot reports a node of a NodePool that launches only into
// full capacity reservations, holding one of their slots, whose pods
// (and the others placed again with them) all find a place once its slot
// is free: deleted first, its pods go to a node launched into the slot.
func (d *decider) fitsFreedSlot(n *state.Node) bool {
	var np *scheduling.NodePool
	for _, p := range d.s.NodePools {
		if p.Name == n.NodePool {
			np = p
		}
	}
	full, offered := reservationsFull(np)
	if !full || !holdsSlot(n, offered) {
		return false
	}
	typ, zone := n.Node.Labels[corev1.LabelInstanceTypeStable], n.Node.Labels[corev1.LabelTopologyZone]
	in, _ := d.rescheduleInput([]*state.Node{n})
	pools := make([]*scheduling.NodePool, 0, len(in.NodePools))
	for _, p := range in.NodePools {
		if p.Name != n.NodePool {
			pools = append(pools, p)
			continue
		}
		cp := *p
		cp.InstanceTypes = slices.Clone(p.InstanceTypes)
		for i, it := range cp.InstanceTypes {
			if it.Name != typ {
				continue
			}
			freed := *it
			freed.Offerings = slices.Clone(it.Offerings)
			for j, o := range freed.Offerings {
				if o.CapacityType == v1.CapacityTypeReserved && o.Zone == zone && o.ReservationCapacity == 0 {
					freed.Offerings[j].Available, freed.Offerings[j].ReservationCapacity = true, 1
				}
			}
			cp.InstanceTypes[i] = &freed
		}
		pools = append(pools, &cp)
	}
	in.NodePools = pools
	return len(scheduling.Solve(in).Unschedulable) == 0
}
