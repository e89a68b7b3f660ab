package cloudprovider

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// AnnotationDecidedPrices carries, on a NodeClaim, the prices NodeOverlays
// gave its offerings when it was decided: the launch asks the cloud for
// the offerings in that order, without deciding again (an overlay changed
// or deleted since does not change a NodeClaim already made). Absent when
// no overlay priced any of its offerings.
const AnnotationDecidedPrices = "nodewright.dev/decided-prices"

// DecidedPrices are overlaid prices by instance type, capacity type and
// zone.
type DecidedPrices map[string]map[string]map[string]float64

// PricesOf are the overlaid prices among the instance types' offerings;
// nil when none is overlaid.
func PricesOf(types []*scheduling.InstanceType) DecidedPrices {
	var out DecidedPrices
	for _, it := range types {
		for _, o := range it.Offerings {
			if !o.Overlaid {
				continue
			}
			if out == nil {
				out = DecidedPrices{}
			}
			if out[it.Name] == nil {
				out[it.Name] = map[string]map[string]float64{}
			}
			if out[it.Name][o.CapacityType] == nil {
				out[it.Name][o.CapacityType] = map[string]float64{}
			}
			out[it.Name][o.CapacityType][o.Zone] = o.Price
		}
	}
	return out
}

// Encode is the annotation's value.
func (p DecidedPrices) Encode() string {
	b, err := json.Marshal(p)
	if err != nil {
		// Maps of strings to numbers always marshal.
		panic(err)
	}
	return string(b)
}

// DecodePrices reads the annotation's value of the named NodeClaim.
func DecodePrices(claim, value string) (DecidedPrices, error) {
	var p DecidedPrices
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return nil, fmt.Errorf("NodeClaim %s: annotation %s is not the prices nodewright writes; delete the NodeClaim and nodewright decides anew: %w", claim, AnnotationDecidedPrices, err)
	}
	return p, nil
}

// Apply gives the instance types' offerings the decided prices (marked
// overlaid), on copies of the types it changes; the others are returned
// as they are.
func (p DecidedPrices) Apply(types []*scheduling.InstanceType) []*scheduling.InstanceType {
	if len(p) == 0 {
		return types
	}
	out := slices.Clone(types)
	for i, it := range out {
		byCapacity, ok := p[it.Name]
		if !ok {
			continue
		}
		cp := *it
		cp.Offerings = slices.Clone(it.Offerings)
		for j, o := range cp.Offerings {
			if price, ok := byCapacity[o.CapacityType][o.Zone]; ok {
				cp.Offerings[j].Price, cp.Offerings[j].Overlaid = price, true
			}
		}
		out[i] = &cp
	}
	return out
}
