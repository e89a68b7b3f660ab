package scheduling

import (
	"math"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Offering is one way to buy an instance type: a zone and capacity type at
// an hourly price.
type Offering struct {
	Zone         string
	CapacityType string
	Price        float64
	Available    bool
	// ReservationID and ReservationCapacity describe a reserved offering:
	// the capacity reservation and how many more instances it takes.
	ReservationID       string
	ReservationCapacity int
	// ReservationInterruptible marks a reservation that lends another
	// account's unused capacity; EC2 launches into it only when asked for
	// interruptible reserved capacity.
	ReservationInterruptible bool
	// Overlaid marks a price a NodeOverlay set: launches then ask EC2 for
	// the offerings in this price order rather than EC2's own.
	Overlaid bool
}

// InstanceType is a kind of node with its labels, resources and offerings.
type InstanceType struct {
	Name string
	// Requirements are the labels the instance type provides (one value
	// each) and the zones and capacity types it is offered in.
	Requirements Requirements
	Capacity     Resources
	// Allocatable is capacity less kubelet reservations and eviction
	// thresholds: what pods can use.
	Allocatable Resources
	Offerings   []Offering
	// Devices are what the node's DRA drivers publish, one set per
	// driver; Allocatable counts them.
	Devices []DeviceSet
}

// CheapestOffering returns the cheapest available offering whose zone and
// capacity type the requirements allow. Reserved offerings count only for
// requirements that allow nothing but reserved capacity: reservations are
// finite, and the solver hands them out to NodeClaims it pins to them.
func (it *InstanceType) CheapestOffering(reqs Requirements) (Offering, bool) {
	zones, capacityTypes := reqs[LabelZone], reqs[v1.LabelCapacityType]
	reservedOnly := onlyReserved(capacityTypes)
	best, found := Offering{Price: math.Inf(1)}, false
	for _, o := range it.Offerings {
		if !o.Available || o.Price >= best.Price || (o.CapacityType == v1.CapacityTypeReserved) != reservedOnly {
			continue
		}
		if zones != nil && !zones.Has(o.Zone) {
			continue
		}
		if capacityTypes != nil && !capacityTypes.Has(o.CapacityType) {
			continue
		}
		best, found = o, true
	}
	return best, found
}

// WorstLaunchPrice is the highest price a launch of the type may pay
// under the requirements: of the offerings of the capacity type its
// cheapest offering has (a launch that may use spot uses spot), the
// dearest in the zones allowed. A launch is free to take any of those
// zones, so a consolidation saves money only where even that price is
// below what it removes.
func (it *InstanceType) WorstLaunchPrice(reqs Requirements) (float64, bool) {
	cheapest, ok := it.CheapestOffering(reqs)
	if !ok {
		return 0, false
	}
	zones, worst := reqs[LabelZone], cheapest.Price
	for _, o := range it.Offerings {
		if o.Available && o.CapacityType == cheapest.CapacityType && o.ReservationID == cheapest.ReservationID && (zones == nil || zones.Has(o.Zone)) {
			worst = max(worst, o.Price)
		}
	}
	return worst, true
}

// onlyReserved reports whether a capacity type requirement allows reserved
// capacity and nothing else.
func onlyReserved(r *Requirement) bool {
	return r != nil && r.Has(v1.CapacityTypeReserved) && !r.Has(v1.CapacityTypeSpot) && !r.Has(v1.CapacityTypeOnDemand)
}

// Well-known node labels the scheduler reads.
const (
	LabelZone         = "topology.kubernetes.io/zone"
	LabelRegion       = "topology.kubernetes.io/region"
	LabelInstanceType = "node.kubernetes.io/instance-type"
	LabelArch         = "kubernetes.io/arch"
	LabelOS           = "kubernetes.io/os"
	LabelHostname     = "kubernetes.io/hostname"
)
