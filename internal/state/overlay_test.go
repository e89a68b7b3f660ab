package state_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

func instanceType(name, family string, offerings ...scheduling.Offering) *scheduling.InstanceType {
	return &scheduling.InstanceType{
		Name: name,
		Requirements: scheduling.LabelRequirements(map[string]string{
			scheduling.LabelInstanceType: name, "karpenter.k8s.aws/instance-family": family,
		}),
		Capacity:    scheduling.MustParseResources("cpu=2,memory=8Gi,pods=29"),
		Allocatable: scheduling.MustParseResources("cpu=1930m,memory=7Gi,pods=29"),
		Offerings:   offerings,
	}
}

func offering(zone, capacityType string, price float64) scheduling.Offering {
	return scheduling.Offering{Zone: zone, CapacityType: capacityType, Price: price, Available: true}
}

func overlay(name string, weight int32, reqs []v1alpha1.NodeSelectorRequirement, edit func(*v1alpha1.NodeOverlaySpec)) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{Requirements: reqs}}
	if weight > 0 {
		o.Spec.Weight = ptr.To(weight)
	}
	edit(&o.Spec)
	return o
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func priceOf(types []*scheduling.InstanceType, name, zone, capacityType string) float64 {
	for _, it := range types {
		for _, o := range it.Offerings {
			if it.Name == name && o.Zone == zone && o.CapacityType == capacityType {
				return o.Price
			}
		}
	}
	return math.NaN()
}

// Overlays set prices per offering, the highest weight first, by an
// amount, a percentage or a new price, and say which types they changed;
// equal weights that disagree are a conflict the later name loses.
func TestOverlaysSetPrices(t *testing.T) {
	types := []*scheduling.InstanceType{
		instanceType("m5.large", "m5", offering("us-east-1a", "on-demand", 0.096), offering("us-east-1a", "spot", 0.04)),
		instanceType("c5.large", "c5", offering("us-east-1a", "on-demand", 0.085), offering("us-east-1b", "on-demand", 0.085)),
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "web"}
	overlays := state.SortOverlays([]*v1alpha1.NodeOverlay{
		overlay("savings-plan", 10, []v1alpha1.NodeSelectorRequirement{req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand")},
			func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("-50%") }),
		overlay("c5-in-b", 20, []v1alpha1.NodeSelectorRequirement{req(scheduling.LabelZone, corev1.NodeSelectorOpIn, "us-east-1b"), req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "c5")},
			func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("0.01") }),
		overlay("licence", 10, []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "web"), req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, "spot")},
			func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("+0.01") }),
		overlay("other-pool", 30, []v1alpha1.NodeSelectorRequirement{req(v1.LabelNodePool, corev1.NodeSelectorOpIn, "batch")},
			func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("9") }),
		overlay("zz-same-weight", 10, []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5")},
			func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("-10%") }),
	})
	effects := map[string]*state.OverlayEffect{}
	got := state.ApplyOverlays(np, types, overlays, effects)
	for _, c := range []struct {
		name, zone, capacityType string
		want                     float64
	}{
		{"m5.large", "us-east-1a", "on-demand", 0.048}, // savings-plan (zz-same-weight loses by name)
		{"m5.large", "us-east-1a", "spot", 0.05},       // licence; zz-same-weight, -10%, loses by name
		{"c5.large", "us-east-1a", "on-demand", 0.0425},
		{"c5.large", "us-east-1b", "on-demand", 0.01}, // c5-in-b outweighs the savings plan
	} {
		if p := priceOf(got, c.name, c.zone, c.capacityType); math.Abs(p-c.want) > 1e-9 {
			t.Errorf("%s %s %s: $%v, want $%v", c.name, c.zone, c.capacityType, p, c.want)
		}
	}
	if p := priceOf(types, "m5.large", "us-east-1a", "on-demand"); p != 0.096 {
		t.Errorf("the shared instance type was changed: $%v", p)
	}
	if e := effects["other-pool"]; len(e.Types) != 0 {
		t.Errorf("an overlay for NodePool batch changed %v of NodePool general", e.Types)
	}
	if e := effects["savings-plan"]; !slices.Equal(e.Types, []string{"m5.large", "c5.large"}) {
		t.Errorf("savings-plan applied to %v", e.Types)
	}
	e := effects["zz-same-weight"]
	if len(e.Conflicts) == 0 || !strings.Contains(e.Conflicts[0].String(), "overlay savings-plan of the same weight sets the price of m5.large differently") {
		t.Errorf("zz-same-weight conflicts: %v", e.Conflicts)
	}
	if len(effects["savings-plan"].Conflicts) != 0 {
		t.Errorf("the winner reports conflicts: %v", effects["savings-plan"].Conflicts)
	}
}

// Capacity adds extended resources to the types selected; resources the
// scheduler does not account for are reported, not silently dropped.
func TestOverlaysAddCapacity(t *testing.T) {
	types := []*scheduling.InstanceType{
		instanceType("m5.large", "m5", offering("us-east-1a", "on-demand", 0.096)),
		instanceType("c5.large", "c5", offering("us-east-1a", "on-demand", 0.085)),
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	overlays := state.SortOverlays([]*v1alpha1.NodeOverlay{
		overlay("hugepages", 0, []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5")},
			func(s *v1alpha1.NodeOverlaySpec) {
				s.Capacity = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("100Mi"), "example.com/fuse": resource.MustParse("1")}
			}),
	})
	effects := map[string]*state.OverlayEffect{}
	got := state.ApplyOverlays(np, types, overlays, effects)
	want, _ := scheduling.ParseResources(corev1.ResourceList{"hugepages-2Mi": resource.MustParse("100Mi")})
	for _, it := range got {
		if fits := want.Fits(it.Allocatable); fits != (it.Name == "m5.large") {
			t.Errorf("%s: 100Mi of hugepages-2Mi fits %v", it.Name, fits)
		}
	}
	if e := effects["hugepages"]; !slices.Equal(e.Unsupported, []string{"example.com/fuse"}) || !slices.Equal(e.Types, []string{"m5.large"}) {
		t.Errorf("effect %+v", e)
	}
}
