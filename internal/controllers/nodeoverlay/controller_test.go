package nodeoverlay_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

func overlay(name string, weight int32, instanceType string, edit func(*v1alpha1.NodeOverlaySpec)) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{
		Requirements: []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}},
	}}
	if weight > 0 {
		o.Spec.Weight = ptr.To(weight)
	}
	edit(&o.Spec)
	return o
}

// An overlay that makes m5.large the cheapest of a NodePool's two types
// decides what is launched: the plan and the fleet request (prioritized
// by the overlaid prices) both take it, though EC2's own price for c5.large
// is lower. Each overlay's status says what it applies to, or why it is
// not Ready.
func TestOverlaidPriceDecidesTheLaunch(t *testing.T) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	price := map[string]float64{}
	for _, s := range specs {
		price[s.Name] = s.OnDemand
	}
	if price["c5.large"] >= price["m5.large"] {
		t.Fatalf("the catalog prices c5.large at %v and m5.large at %v; the test needs c5.large cheaper", price["c5.large"], price["m5.large"])
	}
	e := optest.Start(t, optest.Options{Scheduler: true})
	e.DefaultNodeClass(t)
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large", "m5.large"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
	}
	for _, o := range []*v1alpha1.NodeOverlay{
		overlay("cheap-m5", 0, "m5.large", func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To("0.001") }),
		overlay("a-tie", 5, "c5.large", func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("+10%") }),
		overlay("b-tie", 5, "c5.large", func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("+20%") }),
		overlay("fuse", 0, "m5.large", func(s *v1alpha1.NodeOverlaySpec) {
			s.Capacity = corev1.ResourceList{"example.com/fuse": resource.MustParse("1")}
		}),
		overlay("fpga", 0, "m5.large", func(s *v1alpha1.NodeOverlaySpec) {
			s.DynamicResources = &v1alpha1.DynamicResources{ResourceSliceTemplates: []v1alpha1.ResourceSliceTemplate{{
				Spec: v1alpha1.ResourceSliceTemplateSpec{Driver: "fpga.example.com", Devices: []v1alpha1.TemplateDevice{{Name: "fpga-0",
					Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("vu9p")}},
					Capacity:   map[resourcev1.QualifiedName]v1alpha1.DeviceCapacity{"memory": {Value: resource.MustParse("64Gi")}}}}}}}}
		}),
		overlay("broken-binding", 0, "m5.large", func(s *v1alpha1.NodeOverlaySpec) {
			s.DynamicResources = &v1alpha1.DynamicResources{
				ResourceSliceTemplates: []v1alpha1.ResourceSliceTemplate{{Metadata: v1alpha1.TemplateMetadata{Name: "gpus"},
					Spec: v1alpha1.ResourceSliceTemplateSpec{Driver: "gpu.example.com", Devices: []v1alpha1.TemplateDevice{{Name: "gpu-0"}}}}},
				AttributeBindings: []v1alpha1.AttributeBinding{{Attributes: []resourcev1.FullyQualifiedName{"resource.kubernetes.io/pcieRoot"},
					DeviceSelectors: []v1alpha1.DeviceSelector{{ResourceSliceTemplate: "gpus", Device: "gpu-0"}, {ResourceSliceTemplate: "nics", Device: "nic-0"}}}},
			}
		}),
	} {
		e.Create(t, o)
	}
	e.Create(t, np)
	e.Create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "web", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
	}}}})

	var launched string
	e.WaitFor(t, "a NodeClaim launched", func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := e.Kube.List(ctx, list); err != nil || len(list.Items) == 0 {
			return false, err
		}
		launched = list.Items[0].Labels[corev1.LabelInstanceTypeStable]
		return list.Items[0].Status.ProviderID != "", nil
	})
	if launched != "m5.large" {
		t.Errorf("launched %s; with m5.large overlaid to $0.001/h it is the cheapest", launched)
	}
	for _, inst := range e.Account.Instances() {
		if string(inst.InstanceType) != "m5.large" {
			t.Errorf("EC2 launched %s", inst.InstanceType)
		}
	}

	want := map[string]struct{ status, reason, message string }{
		"cheap-m5": {"True", "Ready", "applies to 1 instance type(s): m5.large"},
		"a-tie":    {"True", "Ready", "applies to 1 instance type(s): c5.large"},
		"b-tie":    {"False", "Conflict", "overlay a-tie of the same weight sets the price of c5.large differently and wins (by name); give the overlays different weights"},
		"fuse":     {"False", "UnsupportedCapacity", "capacity example.com/fuse is not a resource the scheduler accounts for"},
		"fpga":     {"True", "Ready", "applies to 1 instance type(s): m5.large"},
		"broken-binding": {"False", "InvalidDynamicResources",
			`spec.dynamicResources.attributeBindings[0].deviceSelectors[1].resourceSliceTemplate "nics": no template has this metadata.name`},
	}
	got := map[string]*metav1.Condition{}
	defer func() {
		if t.Failed() {
			for name, c := range got {
				t.Logf("NodeOverlay %s: %+v", name, c)
			}
		}
	}()
	e.WaitFor(t, "NodeOverlay status", func(ctx context.Context) (bool, error) {
		done := true
		for name, w := range want {
			o := &v1alpha1.NodeOverlay{}
			if err := e.Kube.Get(ctx, client.ObjectKey{Name: name}, o); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady)
			got[name] = c
			done = done && c != nil && string(c.Status) == w.status && c.Reason == w.reason && strings.HasPrefix(c.Message, w.message)
		}
		return done, nil
	})
}
