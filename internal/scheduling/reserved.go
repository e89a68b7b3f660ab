package scheduling

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Reserved capacity. A capacity reservation holds a number of instances of
// one type in one zone, already paid for. Before a pool opens a spot or
// on-demand NodeClaim for a pod, it opens one in a reservation that still
// has room and fits the pod: pinned to reserved capacity, the zone and the
// instance type, so the launch uses exactly that place. Each such NodeClaim
// takes one instance of the reservation; when none is left the pool goes
// on with spot and on-demand, whose NodeClaims exclude reserved capacity.

// reservedSlot is one reservation a pool can launch into.
type reservedSlot struct {
	it   *InstanceType
	zone string
	id   string
}

// reservedSlots lists a pool's reservations: the reserved offerings of
// instance types that have an AMI (reservedClaim checks the requirements).
func reservedSlots(np *NodePool) []reservedSlot {
	var out []reservedSlot
	for _, it := range np.InstanceTypes {
		if !hasAMI(it, np.AMIs) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType != v1.CapacityTypeReserved || o.ReservationID == "" {
				continue
			}
			out = append(out, reservedSlot{it: it, zone: o.Zone, id: o.ReservationID})
		}
	}
	return out
}

// initReservations records how many instances each reservation takes:
// its count, less the NodeClaims pinned to it that are still launching
// (the count shows an instance once it runs).
func (s *solver) initReservations(nodes []*Node) {
	s.reservations = map[string]int{}
	where := map[[2]string]string{} // instance type, zone → reservation
	for _, pl := range s.pools {
		for _, it := range pl.InstanceTypes {
			for _, o := range it.Offerings {
				if o.CapacityType == v1.CapacityTypeReserved && o.ReservationID != "" && o.Available {
					s.reservations[o.ReservationID] = o.ReservationCapacity
					where[[2]string{it.Name, o.Zone}] = o.ReservationID
				}
			}
		}
	}
	for _, n := range nodes {
		if !n.Launching || !onlyReserved(n.Requirements[v1.LabelCapacityType]) {
			continue
		}
		typ, _ := n.Requirements[LabelInstanceType].Single()
		zone, _ := n.Requirements[LabelZone].Single()
		if id, ok := where[[2]string{typ, zone}]; ok && s.reservations[id] > 0 {
			s.reservations[id]--
		}
	}
}

// reservedClaim opens a NodeClaim for p in one of the pool's reservations
// with room, or reports that none fits. podReqs are the pod's
// requirements (for topology), merged the pool's and the pod's.
func (s *solver) reservedClaim(p *podInfo, pl *pool, podReqs, merged Requirements) (*target, change, bool) {
	if len(pl.reserved) == 0 {
		return nil, change{}, false
	}
	if r, ok := merged[v1.LabelCapacityType]; ok && !r.Has(v1.CapacityTypeReserved) {
		return nil, change{}, false
	}
	need := pl.daemon.Add(p.requests)
	for _, slot := range s.orderSlots(pl.reserved, s.remaining.Max(p.requests)) {
		if s.reservations[slot.id] <= 0 || !need.Fits(slot.it.Allocatable) || !pl.withinLimits(slot.it.Capacity) {
			continue
		}
		reqs := merged.Copy()
		reqs.Add(NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))
		reqs.Add(NewRequirement(LabelZone, corev1.NodeSelectorOpIn, slot.zone))
		if !typeCompatible(slot.it, reqs) {
			continue
		}
		t := &target{name: fmt.Sprintf("%s-%d", pl.Name, pl.claims+1), pool: pl, reqs: reqs, requests: pl.daemon, daemon: pl.daemon, ports: slices.Clone(pl.daemonPorts)}
		t.setTypes([]*InstanceType{slot.it})
		pins, _, ok := s.domains(p, t, podReqs, false)
		if !ok {
			continue
		}
		reqs.AddAll(pins)
		types, ok := pl.narrow(t.types, reqs, need, len(pins) > 0, true)
		if !ok {
			continue
		}
		s.reservations[slot.id]--
		pl.claims++
		pl.nodes++
		t.reqs = reqs
		s.addTarget(t)
		return t, change{reqs: reqs, types: types}, true
	}
	return nil, change{}, false
}

// orderSlots puts the reservations that cover most of the demand still to
// place first; among those covering it all, the smallest; then by name and
// zone.
func (s *solver) orderSlots(slots []reservedSlot, demand Resources) []reservedSlot {
	out := make([]reservedSlot, 0, len(slots))
	for _, slot := range slots {
		if s.reservations[slot.id] > 0 {
			out = append(out, slot)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		ca, cb := coverage(a.it.Allocatable, demand), coverage(b.it.Allocatable, demand)
		if ca != cb {
			return ca > cb
		}
		if a.it.Capacity[cpuIndex] != b.it.Capacity[cpuIndex] {
			return a.it.Capacity[cpuIndex] < b.it.Capacity[cpuIndex]
		}
		if a.it.Name != b.it.Name {
			return a.it.Name < b.it.Name
		}
		if a.zone != b.zone {
			return a.zone < b.zone
		}
		return a.id < b.id
	})
	return out
}

// excludeReserved keeps a spot or on-demand NodeClaim of a pool with
// reservations out of them: its launch must match the plan.
func excludeReserved(pl *pool, reqs Requirements) {
	if len(pl.reserved) > 0 {
		reqs.Add(NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpNotIn, v1.CapacityTypeReserved))
	}
}

// reservedOnlyReason says why a pod that allows only reserved capacity
// got no NodeClaim from a pool.
func reservedOnlyReason(pl *pool, need Resources) string {
	if len(pl.reserved) == 0 {
		return fmt.Sprintf("only reserved capacity is allowed and EC2NodeClass %s selects no capacity reservation (spec.capacityReservationSelectorTerms)", pl.NodeClass)
	}
	return fmt.Sprintf("only reserved capacity is allowed and no capacity reservation of EC2NodeClass %s has room for %s", pl.NodeClass, describeNeed(need, pl.daemon))
}
