package state_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/state"
)

// classFor is a DeviceClass selecting every device of a driver, as
// drivers' charts install them.
func classFor(driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == '" + driver + "'"}}}}}
}

// overlayYAML reads a NodeOverlay as a user writes it.
func overlayYAML(t *testing.T, manifest string) *v1alpha1.NodeOverlay {
	t.Helper()
	o := &v1alpha1.NodeOverlay{}
	if err := yaml.UnmarshalStrict([]byte(manifest), o); err != nil {
		t.Fatal(err)
	}
	return o
}

// Two families get devices of a driver the catalog does not know, with
// different counts and models: claims go to the cheapest type whose
// declared devices satisfy them.
func TestOverlayDeclaresDevices(t *testing.T) {
	slow := overlayYAML(t, `
metadata: {name: fpga-c7i}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [c7i]}]
  dynamicResources:
    resourceSliceTemplates:
    - spec:
        driver: fpga.example.com
        devices:
        - name: fpga-0
          attributes: {model: {string: slow}}
          capacity: {memory: {value: 8Gi}}
`)
	fast := overlayYAML(t, `
metadata: {name: fpga-m7i}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}]
  dynamicResources:
    resourceSliceTemplates:
    - spec:
        driver: fpga.example.com
        devices:
        - {name: fpga-0, attributes: {model: {string: fast}}}
        - {name: fpga-1, attributes: {model: {string: fast}}}
`)
	for name, tc := range map[string]struct {
		request resourcev1.DeviceRequest
		want    []string
		refused string
	}{
		"any one device: the cheapest type declaring one":  {request: request("fpga", "fpga.example.com", 1), want: []string{"c7i.large:1"}},
		"a fast one: the family declaring fast ones":       {request: request("fpga", "fpga.example.com", 1, "device.attributes['fpga.example.com'].model == 'fast'"), want: []string{"m7i.large:1"}},
		"two: the family declaring two":                    {request: request("fpga", "fpga.example.com", 2), want: []string{"m7i.large:1"}},
		"declared capacity, read by a selector":            {request: request("fpga", "fpga.example.com", 1, "device.capacity['fpga.example.com'].memory.compareTo(quantity('4Gi')) >= 0"), want: []string{"c7i.large:1"}},
		"three: no type declares three":                    {request: request("fpga", "fpga.example.com", 3), refused: "the most any instance type the NodePools admit has that match is 2"},
		"a driver no overlay declares: still no such type": {request: request("gpu", "gpu.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].productName == 'fast'"), refused: "its selectors match no device"},
	} {
		t.Run(name, func(t *testing.T) {
			np := nodePool("default", "default")
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c7i", "m7i", "g5"}}}
			o := state.Objects{NodePools: []*v1.NodePool{np}, Overlays: []*v1alpha1.NodeOverlay{slow, fast},
				DeviceClasses:          []*resourcev1.DeviceClass{classFor("fpga.example.com"), gpuClass},
				ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", tc.request)},
				Pods:                   []*corev1.Pod{pod("p", claiming("devices"))}}
			plan := planDevices(t, o, state.Options{})
			if got := placed(plan); !slices.Equal(got, tc.want) {
				t.Errorf("planned %v, want %v (unschedulable: %v)", got, tc.want, reasons(plan))
			}
			if tc.refused != "" && (len(plan.Unschedulable) != 1 || !strings.Contains(plan.Unschedulable[0].Reason, tc.refused)) {
				t.Errorf("unschedulable %v, want %q", reasons(plan), tc.refused)
			}
			if tc.want != nil {
				if got := plan.NodeClaims[0].Requests.Devices(); got["fpga.example.com"] != tc.request.Exactly.Count {
					t.Errorf("the node is planned with devices %v, want %d of fpga.example.com", got, tc.request.Exactly.Count)
				}
			}
		})
	}
}

// An overlay replaces the catalog's devices of a driver: g5.xlarge
// declared with two A10Gs takes a two-GPU claim the catalog would put on
// a g5.12xlarge.
func TestOverlayReplacesCatalogDevices(t *testing.T) {
	two := overlayYAML(t, `
metadata: {name: two-gpus}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge]}]
  dynamicResources:
    resourceSliceTemplates:
    - spec:
        driver: gpu.nvidia.com
        devices:
        - {name: gpu-0, attributes: {type: {string: gpu}, productName: {string: NVIDIA A10G}}}
        - {name: gpu-1, attributes: {type: {string: gpu}, productName: {string: NVIDIA A10G}}}
`)
	np := nodePool("default", "default")
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"g5"}}}
	o := state.Objects{NodePools: []*v1.NodePool{np}, DeviceClasses: []*resourcev1.DeviceClass{gpuClass},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", request("gpu", "gpu.nvidia.com", 2))},
		Pods:                   []*corev1.Pod{pod("p", claiming("devices"))}}
	if got := placed(planDevices(t, o, state.Options{})); !slices.Equal(got, []string{"g5.12xlarge:1"}) {
		t.Fatalf("without the overlay planned %v, want g5.12xlarge (the catalog's cheapest g5 with two GPUs)", got)
	}
	o.Overlays = []*v1alpha1.NodeOverlay{two}
	if got := placed(planDevices(t, o, state.Options{})); !slices.Equal(got, []string{"g5.xlarge:1"}) {
		t.Errorf("with the overlay planned %v, want g5.xlarge", got)
	}
}

// An overlay scoped to one NodePool gives its types devices there only:
// the pod goes to that NodePool though the other weighs more and offers
// the same types.
func TestOverlayDevicesPerNodePool(t *testing.T) {
	ov := overlayYAML(t, `
metadata: {name: fpga-in-a}
spec:
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [a]}
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}
  dynamicResources:
    resourceSliceTemplates:
    - spec:
        driver: fpga.example.com
        devices: [{name: fpga-0}]
`)
	a, b := nodePool("a", "default"), nodePool("b", "default")
	b.Spec.Weight = ptr.To[int32](50)
	for _, np := range []*v1.NodePool{a, b} {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i"}}}
	}
	o := state.Objects{NodePools: []*v1.NodePool{a, b}, Overlays: []*v1alpha1.NodeOverlay{ov}, DeviceClasses: []*resourcev1.DeviceClass{classFor("fpga.example.com")},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", request("fpga", "fpga.example.com", 1))},
		Pods:                   []*corev1.Pod{pod("p", claiming("devices")), pod("web")}}
	plan := planDevices(t, o, state.Options{})
	pools := map[string]string{}
	for _, c := range plan.NodeClaims {
		for _, p := range c.Pods {
			pools[p.Name] = c.NodePool
		}
	}
	if pools["p"] != "a" {
		t.Errorf("pods went to NodePools %v, want p to a (where m7i has the device), not b (the heavier)", pools)
	}
}

// Devices of two drivers a claim wants on the same PCIe root: planned
// where an overlay binds the attribute across them, refused where it
// does not say so.
func TestOverlayAttributeBindings(t *testing.T) {
	manifest := `
metadata: {name: gpu-nic}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}]
  dynamicResources:
    resourceSliceTemplates:
    - metadata: {name: gpus}
      spec:
        driver: gpu.example.com
        devices: [{name: gpu-0}, {name: gpu-1}]
    - metadata: {name: nics}
      spec:
        driver: nic.example.com
        devices: [{name: nic-0}, {name: nic-1}]
`
	bindings := `    attributeBindings:
    - attributes: [resource.kubernetes.io/pcieRoot]
      deviceSelectors: [{resourceSliceTemplate: gpus, device: gpu-0}, {resourceSliceTemplate: nics, device: nic-0}]
    - attributes: [resource.kubernetes.io/pcieRoot]
      deviceSelectors: [{resourceSliceTemplate: gpus, device: gpu-1}, {resourceSliceTemplate: nics, device: nic-1}]
`
	claim := template("devices", request("gpu", "gpu.example.com", 2), request("nic", "nic.example.com", 2))
	claim.Spec.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"gpu", "nic"}, MatchAttribute: ptr.To[resourcev1.FullyQualifiedName]("resource.kubernetes.io/pcieRoot")}}
	plan := func(ov *v1alpha1.NodeOverlay) []string {
		np := nodePool("default", "default")
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i"}}}
		o := state.Objects{NodePools: []*v1.NodePool{np}, Overlays: []*v1alpha1.NodeOverlay{ov},
			DeviceClasses:          []*resourcev1.DeviceClass{classFor("gpu.example.com"), classFor("nic.example.com")},
			ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{claim}, Pods: []*corev1.Pod{pod("p", claiming("devices"))}}
		p := planDevices(t, o, state.Options{})
		return append(placed(p), reasons(p)...)
	}
	// Each device on its own root: the claim's constraint (all four on one
	// root) cannot hold; with one GPU and one NIC per request it could.
	const constraint = "none has devices that meet the claim's constraint that the devices of requests gpu, nic match (matchAttribute resource.kubernetes.io/pcieRoot)"
	if got := plan(overlayYAML(t, manifest+bindings)); len(got) != 1 || !strings.Contains(got[0], constraint) {
		t.Errorf("two GPUs and two NICs on one PCIe root, where each pair has its own: got %v, want refused", got)
	}
	claim.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{request("gpu", "gpu.example.com", 1), request("nic", "nic.example.com", 1)}
	if got := plan(overlayYAML(t, manifest+bindings)); !slices.Equal(got, []string{"m7i.large:1"}) {
		t.Errorf("a GPU and a NIC on one PCIe root, where pairs share one: got %v, want m7i.large", got)
	}
	if got := plan(overlayYAML(t, manifest)); len(got) != 1 || !strings.Contains(got[0], constraint) || !strings.Contains(got[0], "attributeBindings") {
		t.Errorf("a GPU and a NIC on one PCIe root, where nothing says they share one: got %v, want refused", got)
	}
}

// What the CRD cannot check is refused with the field and the fix, and
// an overlay with such dynamicResources applies without them.
func TestOverlayDevicesValidation(t *testing.T) {
	for name, tc := range map[string]struct{ manifest, want string }{
		"a binding naming no template": {`
spec:
  requirements: []
  dynamicResources:
    resourceSliceTemplates: [{metadata: {name: gpus}, spec: {driver: gpu.example.com, devices: [{name: gpu-0}]}}]
    attributeBindings: [{attributes: [example.com/root], deviceSelectors: [{resourceSliceTemplate: gpus, device: gpu-0}, {resourceSliceTemplate: nics, device: nic-0}]}]
`, `spec.dynamicResources.attributeBindings[0].deviceSelectors[1].resourceSliceTemplate "nics": no template has this metadata.name`},
		"a binding naming no device": {`
spec:
  requirements: []
  dynamicResources:
    resourceSliceTemplates: [{metadata: {name: gpus}, spec: {driver: gpu.example.com, devices: [{name: gpu-0}]}}]
    attributeBindings: [{attributes: [example.com/root], deviceSelectors: [{resourceSliceTemplate: gpus, device: gpu-0}, {resourceSliceTemplate: gpus, device: gpu-9}]}]
`, `deviceSelectors[1].device "gpu-9": template "gpus" has no such device`},
		"an attribute with two values": {`
spec:
  requirements: []
  dynamicResources:
    resourceSliceTemplates: [{spec: {driver: gpu.example.com, devices: [{name: gpu-0, attributes: {model: {string: a, int: 3}}}]}}]
`, `spec.dynamicResources.resourceSliceTemplates[0].spec.devices[0].attributes[model]: give exactly one of int, bool, string or version`},
		"two devices of one name": {`
spec:
  requirements: []
  dynamicResources:
    resourceSliceTemplates: [{spec: {driver: gpu.example.com, devices: [{name: gpu-0}, {name: gpu-0}]}}]
`, `devices[1].name "gpu-0": another device of the template has this name`},
		"devices for one zone": {`
spec:
  requirements: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]
  dynamicResources:
    resourceSliceTemplates: [{spec: {driver: gpu.example.com, devices: [{name: gpu-0}]}}]
`, `spec.requirements[0] (key topology.kubernetes.io/zone): devices belong to an instance type, not to a zone or capacity type`},
		"a version that is none": {`
spec:
  requirements: []
  dynamicResources:
    resourceSliceTemplates: [{spec: {driver: gpu.example.com, devices: [{name: gpu-0, attributes: {driverVersion: {version: "580"}}}]}}]
`, `attributes[driverVersion].version "580": use a semantic version`},
	} {
		t.Run(name, func(t *testing.T) {
			ov := overlayYAML(t, tc.manifest)
			err := state.ValidateOverlayDevices(ov.Spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	ov := overlayYAML(t, `
metadata: {name: half-right}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}]
  price: "0.01"
  dynamicResources:
    resourceSliceTemplates: [{spec: {driver: fpga.example.com, devices: [{name: fpga-0}, {name: fpga-0}]}}]
`)
	np := nodePool("default", "default")
	snap := state.Build(state.Objects{NodePools: []*v1.NodePool{np}, Overlays: []*v1alpha1.NodeOverlay{ov}}, state.Options{Now: now, NodeClasses: catalogClass(t)})
	e := snap.OverlayEffects["half-right"]
	if e == nil || !strings.Contains(e.InvalidDevices, "another device of the template has this name") || len(e.Types) == 0 {
		t.Fatalf("effect %+v, want the devices named invalid and the price applied", e)
	}
	for _, it := range snap.NodePools[0].InstanceTypes {
		for _, set := range it.Devices {
			if set.Driver == "fpga.example.com" {
				t.Fatalf("%s has the invalid overlay's devices", it.Name)
			}
		}
	}
}

// Two overlays of one weight declaring a driver's devices otherwise
// conflict; the heavier wins without conflict.
func TestOverlayDevicesConflict(t *testing.T) {
	mk := func(name, devices string, w int32) *v1alpha1.NodeOverlay {
		ov := overlayYAML(t, `
metadata: {name: `+name+`}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m7i.large]}]
  dynamicResources:
    resourceSliceTemplates: [{spec: {driver: fpga.example.com, devices: `+devices+`}}]
`)
		ov.Spec.Weight = ptr.To(w)
		return ov
	}
	build := func(overlays ...*v1alpha1.NodeOverlay) *state.Snapshot {
		return state.Build(state.Objects{NodePools: []*v1.NodePool{nodePool("default", "default")}, Overlays: overlays}, state.Options{Now: now, NodeClasses: catalogClass(t)})
	}
	snap := build(mk("one", "[{name: fpga-0}]", 10), mk("two", "[{name: fpga-0}, {name: fpga-1}]", 10))
	if c := snap.OverlayEffects["two"].Conflicts; len(c) != 1 || c[0].With != "one" || c[0].Field != "the devices of fpga.example.com" {
		t.Errorf("conflicts of two: %+v, want one with overlay one over the devices of fpga.example.com", c)
	}
	snap = build(mk("one", "[{name: fpga-0}]", 10), mk("two", "[{name: fpga-0}, {name: fpga-1}]", 20))
	if c1, c2 := snap.OverlayEffects["one"].Conflicts, snap.OverlayEffects["two"].Conflicts; len(c1)+len(c2) > 0 {
		t.Errorf("conflicts %+v %+v, want none between different weights", c1, c2)
	}
	for _, it := range snap.NodePools[0].InstanceTypes {
		if it.Name == "m7i.large" && (len(it.Devices) != 1 || len(it.Devices[0].Devices) != 2) {
			t.Errorf("m7i.large has devices %+v, want the heavier overlay's two", it.Devices)
		}
	}
}
