package state

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Overlays are the NodeOverlays in the order they take precedence:
// highest weight first, then by name.
type Overlays []*v1alpha1.NodeOverlay

// SortOverlays orders overlays by precedence.
func SortOverlays(list []*v1alpha1.NodeOverlay) Overlays {
	out := slices.Clone(list)
	slices.SortStableFunc(out, func(a, b *v1alpha1.NodeOverlay) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func weight(o *v1alpha1.NodeOverlay) int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// OverlayEffect is what an overlay did to a NodePool's instance types.
type OverlayEffect struct {
	// Types are the instance types whose price or capacity it set.
	Types []string
	// Conflicts name, for each field it lost to an overlay of the same
	// weight that sets it otherwise, that overlay and an instance type.
	Conflicts []OverlayConflict
	// Unsupported are capacity resources the scheduler does not account
	// for: pods requesting them stay pending.
	Unsupported []string
	// InvalidDevices says what is wrong with its dynamicResources, which
	// then do not apply; empty when they are valid or absent.
	InvalidDevices string
}

// OverlayConflict is a field two overlays of one weight set differently
// for an instance type.
type OverlayConflict struct {
	With, InstanceType, Field string
}

func (c OverlayConflict) String() string {
	return fmt.Sprintf("overlay %s of the same weight sets %s of %s differently and wins (by name)", c.With, c.Field, c.InstanceType)
}

// ApplyOverlays returns a NodePool's instance types as its overlays make
// them: each offering's price from the overlay of highest precedence that
// matches it and sets a price, and each extended resource from the one
// that matches the instance type and sets it. Instance types no overlay
// changes are returned as they are (shared, read-only); changed ones are
// copies. effects says, per overlay name, what it did.
func ApplyOverlays(np *v1.NodePool, types []*scheduling.InstanceType, overlays Overlays, effects map[string]*OverlayEffect) []*scheduling.InstanceType {
	if len(overlays) == 0 {
		return types
	}
	reqs := make([]scheduling.Requirements, len(overlays))
	for i, o := range overlays {
		reqs[i] = overlayRequirements(o)
		if effects[o.Name] == nil {
			effects[o.Name] = &OverlayEffect{}
		}
		overlayDeviceEffects(o, effects[o.Name])
		for name := range o.Spec.Capacity {
			if _, unknown := scheduling.ParseResources(corev1.ResourceList{name: o.Spec.Capacity[name]}); len(unknown) > 0 && !slices.Contains(effects[o.Name].Unsupported, string(name)) {
				effects[o.Name].Unsupported = append(effects[o.Name].Unsupported, string(name))
			}
		}
	}
	poolLabels := map[string]string{v1.LabelNodePool: np.Name}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		poolLabels[k] = v
	}
	out := make([]*scheduling.InstanceType, 0, len(types))
	for _, it := range types {
		out = append(out, overlayType(it, poolLabels, overlays, reqs, effects))
	}
	return out
}

// overlayRequirements are an overlay's requirements.
func overlayRequirements(o *v1alpha1.NodeOverlay) scheduling.Requirements {
	reqs := scheduling.Requirements{}
	for _, r := range o.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return reqs
}

// overlayType applies the overlays to one instance type.
func overlayType(it *scheduling.InstanceType, poolLabels map[string]string, overlays Overlays, reqs []scheduling.Requirements, effects map[string]*OverlayEffect) *scheduling.InstanceType {
	o := &overlaying{it: it, poolLabels: poolLabels, overlays: overlays, reqs: reqs, effects: effects, touched: map[string]bool{}}
	for oi := range it.Offerings {
		o.price(oi)
	}
	o.capacity()
	o.devices()
	for name := range o.touched {
		effects[name].Types = append(effects[name].Types, it.Name)
	}
	if o.changed == nil {
		return it
	}
	return o.changed
}

// overlaying is one instance type as the overlays change it: a copy made
// at the first change, and the overlays that changed it.
type overlaying struct {
	it         *scheduling.InstanceType
	poolLabels map[string]string
	overlays   Overlays
	reqs       []scheduling.Requirements
	effects    map[string]*OverlayEffect
	changed    *scheduling.InstanceType
	touched    map[string]bool
}

func (o *overlaying) copyOnce() *scheduling.InstanceType {
	if o.changed == nil {
		c := *o.it
		c.Offerings = slices.Clone(o.it.Offerings)
		o.changed = &c
	}
	return o.changed
}

// price sets an offering's price by the heaviest overlay that sets one
// and meets it; overlays of the same weight that disagree conflict.
func (o *overlaying) price(oi int) {
	offering := o.it.Offerings[oi]
	winner := -1
	for i, ov := range o.overlays {
		if (ov.Spec.Price == nil && ov.Spec.PriceAdjustment == nil) || !matches(o.reqs[i], o.it, o.poolLabels, &offering) {
			continue
		}
		if winner < 0 {
			winner = i
			continue
		}
		if weight(ov) == weight(o.overlays[winner]) && priceOf(ov) != priceOf(o.overlays[winner]) {
			conflict(o.effects, ov.Name, o.overlays[winner].Name, o.it.Name, "the price")
		}
	}
	if winner < 0 {
		return
	}
	c := o.copyOnce()
	c.Offerings[oi].Price, c.Offerings[oi].Overlaid = adjusted(offering.Price, o.overlays[winner].Spec), true
	o.touched[o.overlays[winner].Name] = true
}

// capacity sets extended resources, per instance type: an overlay applies
// when one of the type's offerings meets its requirements, the heaviest
// first for each resource.
func (o *overlaying) capacity() {
	set := map[corev1.ResourceName]int{}
	for i, ov := range o.overlays {
		if len(ov.Spec.Capacity) == 0 || !slices.ContainsFunc(o.it.Offerings, func(off scheduling.Offering) bool { return matches(o.reqs[i], o.it, o.poolLabels, &off) }) {
			continue
		}
		for name, q := range ov.Spec.Capacity {
			if prev, seen := set[name]; seen {
				if kept := o.overlays[prev].Spec.Capacity[name]; weight(o.overlays[prev]) == weight(ov) && kept.Cmp(q) != 0 {
					conflict(o.effects, ov.Name, o.overlays[prev].Name, o.it.Name, string(name))
				}
				continue
			}
			set[name] = i
			o.setResource(ov.Name, name, q)
		}
	}
}

// setResource gives the type an overlay's quantity of a resource the
// scheduler accounts for.
func (o *overlaying) setResource(overlay string, name corev1.ResourceName, q resource.Quantity) {
	add, unknown := scheduling.ParseResources(corev1.ResourceList{name: q})
	if len(unknown) > 0 {
		return
	}
	c := o.copyOnce()
	for r := range add {
		if add[r] != 0 {
			c.Capacity[r], c.Allocatable[r] = add[r], add[r]
		}
	}
	o.touched[overlay] = true
}

func conflict(effects map[string]*OverlayEffect, loser, winner, instanceType, field string) {
	e := effects[loser]
	c := OverlayConflict{With: winner, InstanceType: instanceType, Field: field}
	if len(e.Conflicts) < 5 && !slices.Contains(e.Conflicts, c) { // a few examples say enough
		e.Conflicts = append(e.Conflicts, c)
	}
}

// matches reports whether an offering of an instance type, in a NodePool,
// meets an overlay's requirements.
func matches(reqs scheduling.Requirements, it *scheduling.InstanceType, poolLabels map[string]string, o *scheduling.Offering) bool {
	for key, r := range reqs {
		var value string
		present := true
		switch key {
		case scheduling.LabelZone:
			value = o.Zone
		case v1.LabelCapacityType:
			value = o.CapacityType
		default:
			if v, ok := poolLabels[key]; ok {
				value = v
			} else if t := it.Requirements[key]; t != nil {
				value, present = t.Single()
			} else {
				present = false
			}
		}
		if !r.Matches(value, present) {
			return false
		}
	}
	return true
}

// priceOf is how an overlay sets the price, to compare two overlays.
func priceOf(o *v1alpha1.NodeOverlay) string {
	if o.Spec.Price != nil {
		return "=" + *o.Spec.Price
	}
	return *o.Spec.PriceAdjustment
}

// ValidateOverlayPrice checks the forms of an overlay's price and
// adjustment as the CRD does, for manifests no API server has seen.
func ValidateOverlayPrice(spec v1alpha1.NodeOverlaySpec) error {
	if spec.Price != nil {
		if v, err := strconv.ParseFloat(*spec.Price, 64); err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(*spec.Price, "+-eE") {
			return fmt.Errorf("spec.price %q: use a decimal number of 0 or more, such as 0.10", *spec.Price)
		}
	}
	if adj := spec.PriceAdjustment; adj != nil {
		num, pct := strings.CutSuffix(*adj, "%")
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || !strings.HasPrefix(num, "+") && !strings.HasPrefix(num, "-") || strings.ContainsAny(num, "eE") || (pct && v < -100) {
			return fmt.Errorf("spec.priceAdjustment %q: use a signed amount such as +0.05 or -0.02, or a signed percentage such as +10%% or -15%% (at most -100%%)", *adj)
		}
	}
	return nil
}

// adjusted is a price after an overlay's price or adjustment (never below
// zero). The CRD has checked the forms.
func adjusted(price float64, spec v1alpha1.NodeOverlaySpec) float64 {
	if spec.Price != nil {
		v, _ := strconv.ParseFloat(*spec.Price, 64)
		return v
	}
	adj := *spec.PriceAdjustment
	if pct, ok := strings.CutSuffix(adj, "%"); ok {
		v, _ := strconv.ParseFloat(pct, 64)
		return math.Max(0, price*(1+v/100))
	}
	v, _ := strconv.ParseFloat(adj, 64)
	return math.Max(0, price+v)
}
