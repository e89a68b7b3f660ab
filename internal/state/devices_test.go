package state_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// The DeviceClasses the NVIDIA and Neuron drivers' charts install.
var (
	gpuClass = &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}}}
	efaClass = &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "dra.net"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'dra.net'"}}}}}
	neuronClass = &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "neuron.aws.com"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'neuron.aws.com'"}}}}}
)

// catalogClass is a ready EC2NodeClass offering the whole built-in
// catalog on demand in two zones.
func catalogClass(t testing.TB) map[string]*cloudprovider.NodeClass {
	t.Helper()
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	types := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"}, ExcludeSpot: true})
	amis := []scheduling.AMI{
		{ID: "ami-amd64", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})},
		{ID: "ami-arm64", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}})},
	}
	return map[string]*cloudprovider.NodeClass{"default": {Kind: "EC2NodeClass", Name: "default", InstanceTypes: types, AMIs: amis}}
}

// request is one ExactCount request of a claim.
func request(name, class string, count int64, selectors ...string) resourcev1.DeviceRequest {
	r := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, Count: count}}
	for _, s := range selectors {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return r
}

func template(name string, requests ...resourcev1.DeviceRequest) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: requests}}}}
}

// claiming gives a pod a claim from the template.
func claiming(templateName string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "devices", ResourceClaimTemplateName: ptr.To(templateName)})
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "devices"}}
	}
}

func planDevices(t *testing.T, o state.Objects, opts state.Options) *scheduling.Plan {
	t.Helper()
	if opts.NodeClasses == nil {
		opts.NodeClasses = catalogClass(t)
	}
	opts.Now = now
	return scheduling.Solve(state.Build(o, opts).Input(nil))
}

// placed names each planned node's instance type with its pods, sorted.
func placed(plan *scheduling.Plan) []string {
	var out []string
	for _, c := range plan.NodeClaims {
		out = append(out, fmt.Sprintf("%s:%d", c.InstanceType.Name, len(c.Pods)))
	}
	slices.Sort(out)
	return out
}

func reasons(plan *scheduling.Plan) []string {
	var out []string
	for _, u := range plan.Unschedulable {
		out = append(out, u.Reason)
	}
	return out
}

func TestClaimsPlannedOntoTypesWithTheDevices(t *testing.T) {
	a10g := "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A10G'"
	bigMemory := "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
	hopper := "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"
	for name, tc := range map[string]struct {
		requests []resourcev1.DeviceRequest
		pods     int
		families []string
		want     []string // instance type:pods of each planned node
		refused  string   // a fragment of the reason, when nothing fits
	}{
		"one GPU: the cheapest GPU type, not the cheapest type (g6f's fractional L4s are not published as GPUs)": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1)}, pods: 1, want: []string{"g5g.xlarge:1"}},
		"one whole GPU: the cheapest with one": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1, "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('15Gi')) >= 0")}, pods: 1,
			want: []string{"g5g.xlarge:1"}},
		"an EFA interface": {
			requests: []resourcev1.DeviceRequest{request("efa", "dra.net", 1, "device.attributes['dra.net'].rdma")}, pods: 1, want: []string{"hpc7g.16xlarge:1"}},
		"two GPUs: a type with two": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 2)}, pods: 1, want: []string{"g5g.16xlarge:1"}},
		"three two-GPU pods: two share a four-GPU node": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 2)}, pods: 3, families: []string{"g5"},
			want: []string{"g5.12xlarge:1", "g5.12xlarge:2"}},
		"a product name": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1, a10g)}, pods: 1, want: []string{"g5.xlarge:1"}},
		"GPU memory of 40Gi or more": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1, bigMemory)}, pods: 1, want: []string{"g6e.xlarge:1"}},
		"a Neuron device": {
			requests: []resourcev1.DeviceRequest{request("neuron", "neuron.aws.com", 1)}, pods: 1, want: []string{"inf1.xlarge:1"}},
		"two requests of one claim": {
			requests: []resourcev1.DeviceRequest{request("a", "gpu.nvidia.com", 1, a10g), request("b", "gpu.nvidia.com", 1, a10g)}, pods: 1,
			want: []string{"g5.12xlarge:1"}},
		"sixteen GPUs: no type has them": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 16)}, pods: 1,
			refused: `request "gpu": it asks for 16 devices and the most any instance type the NodePools admit has that match is 8`},
		"a selector no device matches": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100X'")}, pods: 1,
			refused: "its selectors match no device of DeviceClass gpu.nvidia.com on any instance type the NodePools admit"},
		"a DeviceClass that does not exist": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.example.com", 1)}, pods: 1,
			refused: `DeviceClass "gpu.example.com" does not exist`},
		"a NodePool without GPU families": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1)}, pods: 1, families: []string{"t4g", "m7g", "c7i"},
			refused: "no instance type the NodePools admit has any device DeviceClass gpu.nvidia.com selects"},
		"Hopper, excluded by the NodePool": {
			requests: []resourcev1.DeviceRequest{request("gpu", "gpu.nvidia.com", 1, hopper)}, pods: 1, families: []string{"g5", "g6"},
			refused: "its selectors match no device"},
	} {
		t.Run(name, func(t *testing.T) {
			np := nodePool("gpu", "default")
			if tc.families != nil {
				np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: tc.families}}
			}
			o := state.Objects{NodePools: []*v1.NodePool{np}, DeviceClasses: []*resourcev1.DeviceClass{gpuClass, neuronClass, efaClass},
				ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", tc.requests...)}}
			for i := range tc.pods {
				o.Pods = append(o.Pods, pod(fmt.Sprintf("p%d", i), claiming("devices")))
			}
			plan := planDevices(t, o, state.Options{})
			if got := placed(plan); !slices.Equal(got, tc.want) {
				t.Errorf("planned %v, want %v (unschedulable: %v)", got, tc.want, reasons(plan))
			}
			if tc.refused != "" {
				if len(plan.Unschedulable) != tc.pods || !strings.Contains(plan.Unschedulable[0].Reason, tc.refused) {
					t.Errorf("unschedulable %v, want %d pods with %q", reasons(plan), tc.pods, tc.refused)
				}
			} else if len(plan.Unschedulable) > 0 {
				t.Errorf("unschedulable: %v", reasons(plan))
			}
		})
	}
}

// A prioritized list (firstAvailable) takes what the cheapest type offers.
func TestFirstAvailableAlternatives(t *testing.T) {
	req := resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "h100s", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2,
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"}}}},
		{Name: "l4", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"}}}},
	}}
	np := nodePool("gpu", "default")
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"g6", "p5"}}}
	o := state.Objects{NodePools: []*v1.NodePool{np}, DeviceClasses: []*resourcev1.DeviceClass{gpuClass},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", req)}, Pods: []*corev1.Pod{pod("p", claiming("devices"))}}
	if got := placed(planDevices(t, o, state.Options{})); !slices.Equal(got, []string{"g6.xlarge:1"}) {
		t.Errorf("planned %v, want the L4 alternative on g6.xlarge", got)
	}
	np.Spec.Template.Spec.Requirements[0].Values = []string{"p5"}
	if got := placed(planDevices(t, o, state.Options{})); !slices.Equal(got, []string{"p5.48xlarge:1"}) {
		t.Errorf("planned %v, want the H100 alternative on p5.48xlarge", got)
	}
}

func TestIgnoreDRARequests(t *testing.T) {
	o := state.Objects{NodePools: []*v1.NodePool{nodePool("gpu", "default")}, DeviceClasses: []*resourcev1.DeviceClass{gpuClass},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", request("gpu", "gpu.nvidia.com", 1))},
		Pods:                   []*corev1.Pod{pod("gpu", claiming("devices")), pod("web")}}
	plan := planDevices(t, o, state.Options{IgnoreDRARequests: true})
	if len(plan.NodeClaims) != 1 || len(plan.NodeClaims[0].Pods) != 1 || plan.NodeClaims[0].Pods[0].Name != "web" {
		t.Errorf("planned %v, want a node for web alone", placed(plan))
	}
	if got := reasons(plan); len(got) != 1 || got[0] != state.IgnoredReason {
		t.Errorf("unschedulable %v, want the GPU pod ignored", got)
	}
}

// gpuNodeObjects are an initialized g5.12xlarge node whose driver
// published four GPUs (each given to attrs), three of them allocated to
// running pods, and a NodePool of g5s; pending pods claim from template.
func gpuNodeObjects(attrs func(i int) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, tmpl *resourcev1.ResourceClaimTemplate, pending ...*corev1.Pod) state.Objects {
	gpuNode := node("gpu-node", "gpu", func(n *corev1.Node) {
		n.Labels[corev1.LabelInstanceTypeStable] = "g5.12xlarge"
		n.Labels[corev1.LabelHostname] = "gpu-node"
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("47"), corev1.ResourceMemory: resource.MustParse("180Gi"), corev1.ResourcePods: resource.MustParse("200")}
	})
	nc := claim("gpu-node", "gpu", launchedAs("gpu-node"), initialized(now.Add(-30*time.Minute)))
	nc.Status.NodeName = "gpu-node"
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "gpu-node-gpu.nvidia.com"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "gpu.nvidia.com", NodeName: ptr.To("gpu-node"), Pool: resourcev1.ResourcePool{Name: "gpu-node", ResourceSliceCount: 1}}}
	for i := range 4 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: attrs(i)})
	}
	var claims []*resourcev1.ResourceClaim
	var pods []*corev1.Pod
	for i := range 3 {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("run%d-devices", i), Namespace: "default"}}
		c.Status.Allocation = &resourcev1.AllocationResult{
			Devices:      resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "gpu-node", Device: fmt.Sprintf("gpu-%d", i)}}},
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-node"}}}}}}}
		claims = append(claims, c)
		pods = append(pods, pod(fmt.Sprintf("run%d", i), claiming("devices"), on("gpu-node")))
	}
	np := nodePool("gpu", "default")
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"g5"}}}
	return state.Objects{NodePools: []*v1.NodePool{np}, Nodes: []*corev1.Node{gpuNode}, NodeClaims: []*v1.NodeClaim{nc},
		DeviceClasses: []*resourcev1.DeviceClass{gpuClass}, ResourceClaims: claims, ResourceSlices: []*resourcev1.ResourceSlice{slice},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{tmpl}, Pods: append(pods, pending...)}
}

// a10g are the attributes the NVIDIA driver gives a g5's GPU.
func a10g(int) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"type": {StringValue: ptr.To("gpu")}, "productName": {StringValue: ptr.To("NVIDIA A10G")}}
}

// podsOn counts the pods the plan puts on an existing node.
func podsOn(plan *scheduling.Plan, name string) int {
	for _, e := range plan.Existing {
		if e.Node == name {
			return len(e.Pods)
		}
	}
	return 0
}

// A node's published devices and its allocated claims: a pending pod
// takes a free GPU there, the next needs a new node.
func TestExistingNodesDevices(t *testing.T) {
	o := gpuNodeObjects(a10g, template("devices", request("gpu", "gpu.nvidia.com", 1)), pod("new0", claiming("devices")), pod("new1", claiming("devices")))
	plan := planDevices(t, o, state.Options{})
	if onNode := podsOn(plan, "gpu-node"); onNode != 1 || !slices.Equal(placed(plan), []string{"g5.xlarge:1"}) {
		t.Errorf("%d pods onto gpu-node (one GPU free) and new nodes %v; want 1 and one g5.xlarge (unschedulable %v)", onNode, placed(plan), reasons(plan))
	}
}

// What kube-scheduler does not count on a node is not counted: devices
// allocated for admin access (a monitoring agent's claim on every GPU),
// and the slices of a pool's older generation (left while the driver
// republishes), even ones a selector would fail on.
func TestExistingNodesAsTheSchedulerCountsThem(t *testing.T) {
	tmpl := template("devices", request("gpu", "gpu.nvidia.com", 1))
	o := gpuNodeObjects(a10g, tmpl, pod("new0", claiming("devices")))
	monitor := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "dcgm-exporter-gpus", Namespace: "monitoring"}}
	monitor.Status.Allocation = &resourcev1.AllocationResult{NodeSelector: o.ResourceClaims[0].Status.Allocation.NodeSelector}
	for i := range 4 {
		monitor.Status.Allocation.Devices.Results = append(monitor.Status.Allocation.Devices.Results, resourcev1.DeviceRequestAllocationResult{
			Request: "all", Driver: "gpu.nvidia.com", Pool: "gpu-node", Device: fmt.Sprintf("gpu-%d", i), AdminAccess: ptr.To(true)})
	}
	o.ResourceClaims = append(o.ResourceClaims, monitor)
	stale := o.ResourceSlices[0].DeepCopy()
	stale.Name += "-old"
	stale.Spec.Devices = []resourcev1.Device{{Name: "gpu-0"}} // no attributes: the class's selector fails on it
	o.ResourceSlices[0].Spec.Pool.Generation = 2
	stale.Spec.Pool.Generation = 1
	o.ResourceSlices = append(o.ResourceSlices, stale)
	plan := planDevices(t, o, state.Options{})
	if onNode := podsOn(plan, "gpu-node"); onNode != 1 || len(plan.NodeClaims) != 0 {
		t.Errorf("%d pods onto gpu-node and new nodes %v (unschedulable %v); want the pod on its free GPU", onNode, placed(plan), reasons(plan))
	}
}

// An existing node is judged by the devices its driver published, as
// kube-scheduler judges it, not by what its instance type's devices
// would be: a selector its free GPU does not meet sends the pod to a new
// node, one that only its devices meet keeps the pod there.
func TestExistingNodesJudgedByTheirDevices(t *testing.T) {
	relabelled := func(i int) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
		a := a10g(i)
		if i == 3 { // the free one
			a["productName"] = resourcev1.DeviceAttribute{StringValue: ptr.To("NVIDIA A10G (MIG)")}
			a["example.com/rack"] = resourcev1.DeviceAttribute{StringValue: ptr.To("r7")}
		}
		return a
	}
	wantA10G := template("devices", request("gpu", "gpu.nvidia.com", 1, "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A10G'"))
	plan := planDevices(t, gpuNodeObjects(relabelled, wantA10G, pod("new0", claiming("devices"))), state.Options{})
	if onNode := podsOn(plan, "gpu-node"); onNode != 0 || !slices.Equal(placed(plan), []string{"g5.xlarge:1"}) {
		t.Fatalf("%d pods onto gpu-node (its free GPU is not an A10G by name) and new nodes %v; want none there and one g5.xlarge (unschedulable %v)", onNode, placed(plan), reasons(plan))
	}
	if r, ok := plan.NodeClaims[0].Requirements[scheduling.LabelHostname]; ok {
		t.Errorf("the new NodeClaim requires %s: the API refuses a hostname requirement", r)
	}
	wantRack := template("devices", request("gpu", "gpu.nvidia.com", 1, "has(device.attributes['example.com'].rack) && device.attributes['example.com'].rack == 'r7'"))
	plan = planDevices(t, gpuNodeObjects(relabelled, wantRack, pod("new0", claiming("devices")), pod("new1", claiming("devices"))), state.Options{})
	if onNode := podsOn(plan, "gpu-node"); onNode != 1 || len(plan.NodeClaims) != 0 {
		t.Errorf("%d pods onto gpu-node (only its free GPU is in rack r7) and new nodes %v; want 1 there and nothing launched", onNode, placed(plan))
	}
	if got := reasons(plan); len(got) != 1 {
		t.Errorf("unschedulable %v, want the second pod (no other device is in r7)", got)
	}
}

// A selector that fails on an existing node's devices (an attribute they
// lack) stops kube-scheduler's attempt for the pod wherever else it could
// go, so launching helps nothing: the pod is reported with the node and
// the error; a node the pod's taints or selectors keep it off is never
// reached, and does not count.
func TestSelectorFailingOnAnExistingNode(t *testing.T) {
	noType := func(int) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
		return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"productName": {StringValue: ptr.To("NVIDIA A10G")}}
	}
	tmpl := template("devices", request("gpu", "gpu.nvidia.com", 1))
	plan := planDevices(t, gpuNodeObjects(noType, tmpl, pod("new0", claiming("devices"))), state.Options{})
	got := reasons(plan)
	if len(plan.NodeClaims) != 0 || len(got) != 1 || !strings.Contains(got[0], "node gpu-node's devices") || !strings.Contains(got[0], "no such key: type") {
		t.Errorf("planned %v, unschedulable %v; want nothing launched and the pod reported with gpu-node's selector error", placed(plan), got)
	}
	o := gpuNodeObjects(noType, tmpl, pod("new0", claiming("devices")))
	o.Nodes[0].Spec.Taints = []corev1.Taint{{Key: "team", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	plan = planDevices(t, o, state.Options{})
	if !slices.Equal(placed(plan), []string{"g5.xlarge:1"}) {
		t.Errorf("planned %v, unschedulable %v; want a g5.xlarge (the failing node's taint keeps kube-scheduler's DRA filter off it)", placed(plan), reasons(plan))
	}
	big := pod("big", claiming("devices"), func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("50")
	})
	plan = planDevices(t, gpuNodeObjects(noType, tmpl, big), state.Options{})
	if !slices.Equal(placed(plan), []string{"g5.16xlarge:1"}) {
		t.Errorf("planned %v, unschedulable %v; want a g5.16xlarge (the failing node has no room for 50 CPUs: kube-scheduler's resource filter stops first)", placed(plan), reasons(plan))
	}
}

// A node launching for other pods on an EFA type has no EFA interfaces
// (EC2 attaches them only when the launch asks): a pod claiming one gets
// a node of its own; a node launched for EFA claims takes it.
func TestEFAOnlyOnNodesLaunchedForIt(t *testing.T) {
	inflight := func(drivers string) *v1.NodeClaim {
		nc := claim("launching", "default", launchedAs("launching"))
		nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6in.32xlarge"}}}
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("128"), corev1.ResourceMemory: resource.MustParse("240Gi"), corev1.ResourcePods: resource.MustParse("200")}
		nc.Status.Allocatable = nc.Status.Capacity
		if drivers != "" {
			nc.Annotations = map[string]string{v1.AnnotationRequestedDRADrivers: drivers}
		}
		return nc
	}
	for _, tc := range []struct {
		drivers string
		onIt    bool
	}{{"", false}, {"gpu.nvidia.com", false}, {"dra.net", true}} {
		np := nodePool("default", "default")
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c6in"}}}
		o := state.Objects{NodePools: []*v1.NodePool{np}, NodeClaims: []*v1.NodeClaim{inflight(tc.drivers)}, DeviceClasses: []*resourcev1.DeviceClass{efaClass},
			ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", request("efa", "dra.net", 1, "device.attributes['dra.net'].rdma"))},
			Pods:                   []*corev1.Pod{pod("mpi", claiming("devices"))}}
		plan := planDevices(t, o, state.Options{})
		onIt := false
		for _, e := range plan.Existing {
			onIt = onIt || len(e.Pods) > 0
		}
		if onIt != tc.onIt || onIt == (len(plan.NodeClaims) > 0) {
			t.Errorf("NodeClaim launched for drivers %q: the EFA pod onto it %v, new nodes %v; want onto it %v", tc.drivers, onIt, placed(plan), tc.onIt)
		}
	}
}

// A selector that would fail on a type's EFA interfaces does not rule the
// type out when the claim takes no EFA interface: a node launched for it
// has none (EC2 attaches them only when asked).
func TestSelectorOnDevicesAttachedOnRequest(t *testing.T) {
	anyDevice := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "any"}}
	np := nodePool("gpu", "default")
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"p4d"}}}
	o := state.Objects{NodePools: []*v1.NodePool{np}, DeviceClasses: []*resourcev1.DeviceClass{anyDevice},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices",
			request("gpus", "any", 8, "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-40GB'"))},
		Pods: []*corev1.Pod{pod("train", claiming("devices"))}}
	plan := planDevices(t, o, state.Options{})
	if got := placed(plan); !slices.Equal(got, []string{"p4d.24xlarge:1"}) {
		t.Errorf("planned %v, want p4d.24xlarge (unschedulable %v)", got, reasons(plan))
	}
	if len(plan.NodeClaims) == 1 && plan.NodeClaims[0].Requests.Devices()["dra.net"] != 0 {
		t.Errorf("the node is planned with EFA interfaces %v, which the claim does not take", plan.NodeClaims[0].Requests.Devices())
	}
}

// BenchmarkImpossibleClaim plans a pod claiming sixteen GPUs, which no
// instance type has, against the whole catalog: what every provisioning
// and disruption round pays while such a pod is pending.
func BenchmarkImpossibleClaim(b *testing.B) {
	tooMany := resourcev1.DeviceRequest{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 16}}
	o := state.Objects{NodePools: []*v1.NodePool{nodePool("gpu", "default")}, DeviceClasses: []*resourcev1.DeviceClass{gpuClass},
		ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", tooMany)}, Pods: []*corev1.Pod{pod("giant", claiming("devices"))}}
	opts := state.Options{NodeClasses: catalogClass(b), Now: now}
	for b.Loop() {
		plan := scheduling.Solve(state.Build(o, opts).Input(nil))
		if len(plan.NodeClaims) != 0 || len(plan.Unschedulable) != 1 {
			b.Fatalf("planned %v", placed(plan))
		}
	}
}
