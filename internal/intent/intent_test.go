package intent_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// The disrupted taint follows what the caller asks whatever its copy of
// the node says: a copy read before the taint was added still removes
// it (a rollback in the same round as the taint), and other taints stay.
func TestSetDisruptedReadsTheNodeAfresh(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}}}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	stale := node.DeepCopy()
	taints := func() []corev1.Taint {
		t.Helper()
		got := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		return got.Spec.Taints
	}
	has := func(ts []corev1.Taint, key string) bool {
		return slices.ContainsFunc(ts, func(tt corev1.Taint) bool { return tt.Key == key })
	}
	if err := intent.SetDisrupted(ctx, kube, stale, true); err != nil {
		t.Fatal(err)
	}
	if ts := taints(); !has(ts, v1.TaintKeyDisrupted) || !has(ts, "team") {
		t.Fatalf("after tainting: %v", ts)
	}
	if err := intent.SetDisrupted(ctx, kube, stale, false); err != nil {
		t.Fatal(err)
	}
	if ts := taints(); has(ts, v1.TaintKeyDisrupted) || !has(ts, "team") {
		t.Fatalf("after untainting through a copy read before the taint: %v", ts)
	}
	if err := intent.SetDisrupted(ctx, kube, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, true); err != nil {
		t.Errorf("a node that is gone: %v", err)
	}
}

// The NodeClaims of a plan that would launch identically share a launch
// batch (at most cloudprovider.MaxLaunchBatch each), written when they
// are created; a NodeClaim unlike the others, one that may launch into a
// capacity reservation (its requirements admit reserved capacity and an
// instance type has a reserved offering), and every NodeClaim of a writer
// without Batch have none.
func TestNodeClaimsOfAPlanShareLaunchBatches(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	pool := func(name string) *v1.NodePool {
		np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
		if err := kube.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
		return np
	}
	snap := &state.Snapshot{Pools: map[string]*v1.NodePool{"general": pool("general"), "reserved": pool("reserved")}}
	reservable := []*scheduling.InstanceType{{Name: "m5.large", Offerings: []scheduling.Offering{
		{Zone: "us-east-1a", CapacityType: v1.CapacityTypeReserved, ReservationID: "cr-1", ReservationCapacity: 2},
		{Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand},
	}}}
	planned := func(pool, typ string, types []*scheduling.InstanceType, capacityTypes ...string) *scheduling.PlannedNodeClaim {
		reqs := scheduling.Requirements{}
		reqs.Add(scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, typ))
		if len(capacityTypes) > 0 {
			reqs.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, capacityTypes...))
		}
		return &scheduling.PlannedNodeClaim{NodePool: pool, Requirements: reqs, Requests: scheduling.Resources{int64(1000 + len(typ))}, InstanceTypes: types}
	}
	var plan []*scheduling.PlannedNodeClaim
	for range 150 {
		plan = append(plan, planned("general", "m5.large", reservable, "spot", "on-demand"))
	}
	plan = append(plan, planned("general", "c5.large", nil, "spot", "on-demand"),
		planned("reserved", "m5.large", reservable, "reserved", "on-demand"), planned("reserved", "m5.large", reservable, "reserved", "on-demand"),
		planned("reserved", "m5.large", reservable), planned("reserved", "m5.large", reservable),
		planned("reserved", "c5.large", nil), planned("reserved", "c5.large", nil))
	names, err := (&intent.NodeClaims{Client: kube, Batch: true}).Create(ctx, snap, plan, nil)
	if err != nil || len(names) != len(plan) {
		t.Fatalf("created %d of %d: %v", len(names), len(plan), err)
	}
	list := &v1.NodeClaimList{}
	if err := kube.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, nc := range list.Items {
		if !slices.Contains(nc.Finalizers, v1.TerminationFinalizer) {
			t.Errorf("%s was created without %s: the lifecycle would write it before launching", nc.Name, v1.TerminationFinalizer)
		}
		b, ok, err := cloudprovider.LaunchBatchOf(nc.Name, nc.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		typ := nc.Spec.Requirements[slices.IndexFunc(nc.Spec.Requirements, func(r v1.NodeSelectorRequirementWithMinValues) bool {
			return r.Key == scheduling.LabelInstanceType
		})].Values[0]
		if wantBatch := typ == "m5.large" && nc.Labels[v1.LabelNodePool] == "general" || typ == "c5.large" && nc.Labels[v1.LabelNodePool] == "reserved"; ok != wantBatch {
			t.Errorf("%s (%s, %s): batch %v, want a batch: %v", nc.Name, nc.Labels[v1.LabelNodePool], typ, b, wantBatch)
		}
		if ok {
			sizes[b.ID]++
			if b.Size > cloudprovider.MaxLaunchBatch {
				t.Errorf("%s: batch of %d", nc.Name, b.Size)
			}
		}
	}
	counts := slices.Sorted(maps.Values(sizes))
	if !slices.Equal(counts, []int{2, 50, 100}) {
		t.Errorf("batches of %v NodeClaims, want 2 (the c5.large that cannot reserve), 50 and 100", counts)
	}

	names, err = (&intent.NodeClaims{Client: kube}).Create(ctx, snap, plan[:3], nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		nc := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		if _, ok := nc.Annotations[cloudprovider.AnnotationLaunchBatch]; ok {
			t.Errorf("%s has a launch batch from a writer without Batch", name)
		}
	}
}

// A reboot request whose Rebooting condition failed to be written, made
// again, records one reboot in the NodeClaim's history, not two; a
// request after that reboot ended records the next.
func TestRebootRequestMadeAgainRecordsOnce(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "flaky"}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	watching, err := client.NewWithWatch(plane.Config, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	fail := 1
	flaky := interceptor.NewClient(watching, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if fail > 0 && sub == "status" {
				fail--
				return apierrors.NewServiceUnavailable("injected status write failure")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if err := intent.RequestReboot(ctx, flaky, nc, nil, "test", at); err == nil {
		t.Fatal("the failed status write was not reported")
	}
	if err := intent.RequestReboot(ctx, flaky, nc, nil, "test", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if n := len(nodepoolhealth.Reboots(got, at.Add(time.Minute))); n != 1 {
		t.Fatalf("history %q after one request made twice, want 1 reboot", got.Annotations[v1.AnnotationReboots])
	}
	meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse, Reason: v1.ReasonRebootSucceeded, LastTransitionTime: metav1.NewTime(at.Add(10 * time.Minute))})
	if err := kube.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := intent.RequestReboot(ctx, kube, got, nil, "test", at.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if n := len(nodepoolhealth.Reboots(got, at.Add(20*time.Minute))); n != 2 {
		t.Errorf("history %q after a second reboot, want 2", got.Annotations[v1.AnnotationReboots])
	}
}
