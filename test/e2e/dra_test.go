package e2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// TestGPUsByDRA: pods that claim one GPU and two through
// ResourceClaimTemplates get the cheapest nodes whose GPUs satisfy the
// claims, as simulate plans them; the simulated NVIDIA driver publishes
// the nodes' devices, kube-scheduler allocates every claim and every pod
// runs. Scaled down, consolidation leaves one node that still holds
// every claim. A claim no instance type can satisfy launches nothing and
// is explained.
func TestGPUsByDRA(t *testing.T) {
	var planned []string
	for _, c := range harness.Plan(t, "dra-gpu").NodeClaims {
		planned = append(planned, c.InstanceType)
	}
	slices.Sort(planned)
	sim, steps := harness.RunSteps(t, "dra-gpu", 4*time.Minute, nil)
	if len(steps) != 2 {
		t.Fatalf("%d steps", len(steps))
	}
	ctx := context.Background()
	up := steps[0].Snapshot
	if !up.Done() {
		t.Fatalf("the GPU pods did not all run: %v", up.Problems)
	}
	// The provisioner's decision: the first instances launched. (Which
	// node each pod then lands on is kube-scheduler's choice: a pod goes
	// to the first node whose devices are published, and consolidation
	// takes away what that leaves surplus.)
	instances := sim.Account.Instances()
	slices.SortStableFunc(instances, func(a, b simaws.Instance) int { return aws.ToTime(a.LaunchTime).Compare(aws.ToTime(b.LaunchTime)) })
	var launched []string
	for i, inst := range instances {
		if !strings.HasPrefix(string(inst.InstanceType), "g") && !strings.HasPrefix(string(inst.InstanceType), "p") {
			t.Errorf("instance %s is a %s, which has no GPU", aws.ToString(inst.InstanceId), inst.InstanceType)
		}
		if i < len(planned) {
			launched = append(launched, string(inst.InstanceType))
		}
	}
	slices.Sort(launched)
	if !slices.Equal(launched, planned) {
		t.Errorf("launched %v first, simulate planned %v", launched, planned)
	}
	if !slices.Equal(planned, []string{"g4dn.12xlarge", "g4dn.xlarge", "g4dn.xlarge", "g4dn.xlarge"}) {
		t.Errorf("planned %v, want the two training pods (2 GPUs each) on one g4dn.12xlarge and each inference pod on a g4dn.xlarge", planned)
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		if nc.Annotations[v1.AnnotationRequestedDRADrivers] != "gpu.nvidia.com" {
			t.Errorf("NodeClaim %s: requested DRA drivers %q", nc.Name, nc.Annotations[v1.AnnotationRequestedDRADrivers])
		}
	}
	allocatedOnTheirNodes(t, sim)

	// Three GPUs claimed: one g4dn.12xlarge ($3.912/h) holds them, for
	// less than any pair of nodes.
	down := steps[1].Snapshot
	if !down.Done() || down.Nodes != 1 || len(down.NodeClaims) != 1 || down.NodeClaims[0].InstanceType != "g4dn.12xlarge" {
		t.Errorf("after the scale-down: %d nodes %+v ($%.4f/h), problems %v; want the two pods on one g4dn.12xlarge", down.Nodes, down.NodeClaims, down.PricePerHour, down.Problems)
	}
	allocatedOnTheirNodes(t, sim)

	// Sixteen GPUs in one claim: no instance type has them.
	tooMany := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "sixteen-gpus", Namespace: "default"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 16}}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "giant", Namespace: "default"}, Spec: corev1.PodSpec{
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: ptr.To("sixteen-gpus")}},
		Containers:     []corev1.Container{{Name: "c", Image: "public.ecr.aws/example/train:1", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpus"}}}}}}}
	for _, o := range []client.Object{tooMany, pod} {
		if err := sim.Kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	explained := ""
	harness.WaitFor(t, "nodewright to explain the sixteen-GPU claim", 2*time.Minute, func() bool {
		events := &corev1.EventList{}
		if err := sim.Kube.List(ctx, events, client.InNamespace("default")); err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "giant" && strings.Contains(e.Message, "asks for 16 devices") {
				explained = e.Message
				return true
			}
		}
		return false
	})
	if !strings.Contains(explained, "g4dn.metal") && !strings.Contains(explained, "most any instance type the NodePools admit has that match is 8") {
		t.Errorf("explanation %q names neither the most GPUs an admitted type has nor the type", explained)
	}
	time.Sleep(10 * time.Second) // a launch would be on its way by now
	after := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, after); err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != 1 {
		t.Errorf("%d NodeClaims after the sixteen-GPU pod; want the one before it, no launch for it", len(after.Items))
	}
}

// TestDevicesDeclaredByOverlays: NodeOverlays declare the EFA interfaces
// DRANET publishes on three EFA types with the names (ifName) this
// cluster selects them by, which the catalog cannot know. Pods claiming
// one each get the cheapest of those types, as simulate plans them,
// launched with their EFA interfaces, and nothing else does; the
// simulated driver publishes what the overlays declare, kube-scheduler
// allocates every claim there and every pod runs.
func TestDevicesDeclaredByOverlays(t *testing.T) {
	planned := map[string]int{}
	for _, c := range harness.Plan(t, "dra-overlay").NodeClaims {
		planned[c.InstanceType]++
	}
	if planned["c5n.9xlarge"] != 3 || len(planned) != 2 {
		t.Errorf("simulate planned %v, want each MPI pod on a c5n.9xlarge (the cheapest type an overlay gives an RDMA NIC) and the web pods on one general node", planned)
	}
	sim, steps := harness.RunSteps(t, "dra-overlay", 4*time.Minute, nil)
	if snap := steps[0].Snapshot; !snap.Done() {
		t.Fatalf("the pods did not all run: %v", snap.Problems)
	}
	launched := map[string]int{}
	for _, inst := range sim.Account.Instances() {
		launched[string(inst.InstanceType)]++
		efa := 0
		for _, ni := range inst.Launched.NetworkInterfaces {
			if aws.ToString(ni.InterfaceType) == "efa" {
				efa++
			}
		}
		if want := map[bool]int{true: 1}[inst.InstanceType == "c5n.9xlarge"]; efa != want {
			t.Errorf("instance %s (%s) launched with %d EFA interfaces, want %d (its pods claim them or not)", aws.ToString(inst.InstanceId), inst.InstanceType, efa, want)
		}
	}
	if !maps.Equal(launched, planned) {
		t.Errorf("launched %v, simulate planned %v", launched, planned)
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		want := map[bool]string{true: "dra.net"}[nc.Labels[corev1.LabelInstanceTypeStable] == "c5n.9xlarge"]
		if got := nc.Annotations[v1.AnnotationRequestedDRADrivers]; got != want {
			t.Errorf("NodeClaim %s (%s): requested DRA drivers %q, want %q", nc.Name, nc.Labels[corev1.LabelInstanceTypeStable], got, want)
		}
	}
	published := &resourcev1.ResourceSliceList{}
	if err := sim.Kube.List(context.Background(), published); err != nil {
		t.Fatal(err)
	}
	for _, sl := range published.Items {
		if sl.Spec.Driver != "dra.net" || len(sl.Spec.Devices) != 1 || sl.Spec.Devices[0].Name != "efa0" {
			t.Errorf("ResourceSlice %s: driver %s, devices %+v; want the overlay's one RDMA NIC", sl.Name, sl.Spec.Driver, sl.Spec.Devices)
		}
	}
	if len(published.Items) != 3 {
		t.Errorf("%d ResourceSlices, want one per c5n.9xlarge node", len(published.Items))
	}
	allocatedOnTheirNodes(t, sim)
}

// allocatedOnTheirNodes checks that every pod of the default namespace runs
// with its claim allocated on its own node.
func allocatedOnTheirNodes(t *testing.T, sim *runner.Sim) {
	t.Helper()
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := sim.Kube.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	rcs := &resourcev1.ResourceClaimList{}
	if err := sim.Kube.List(ctx, rcs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*resourcev1.ResourceClaim{}
	for i := range rcs.Items {
		byName[rcs.Items[i].Name] = &rcs.Items[i]
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || len(p.Spec.ResourceClaims) == 0 {
			continue
		}
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			t.Errorf("pod %s runs without its generated claim: %+v", p.Name, p.Status.ResourceClaimStatuses)
			continue
		}
		rc := byName[*p.Status.ResourceClaimStatuses[0].ResourceClaimName]
		if rc == nil || rc.Status.Allocation == nil {
			t.Errorf("pod %s runs on %s with claim %v not allocated", p.Name, p.Spec.NodeName, rc)
			continue
		}
		on := ""
		for _, term := range rc.Status.Allocation.NodeSelector.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				on = strings.Join(f.Values, ",")
			}
		}
		if on != p.Spec.NodeName {
			t.Errorf("pod %s runs on %s, its claim %s is allocated on %q", p.Name, p.Spec.NodeName, rc.Name, on)
		}
		if want := map[string]int{"infer": 1, "train": 2, "mpi": 1}[p.Labels["app"]]; len(rc.Status.Allocation.Devices.Results) != want {
			t.Errorf("pod %s: %d devices allocated, want %d", p.Name, len(rc.Status.Allocation.Devices.Results), want)
		}
	}
}
