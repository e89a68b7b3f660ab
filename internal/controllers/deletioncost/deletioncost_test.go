package deletioncost_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/controllers/deletioncost"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// cluster is a NodePool's nodes, each with its NodeClaim (initialized) and
// ReplicaSet pods: a disrupted node, one annotated do-not-disrupt, a
// drifted one, and two that differ in what their pods cost to move.
func cluster() state.Objects {
	ref := &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	reqs := []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef, pool.Spec.Template.Spec.Requirements = ref, reqs
	objs := state.Objects{NodePools: []*v1.NodePool{pool}}
	for _, n := range []struct {
		name                       string
		pods                       int
		disrupted, pinned, drifted bool
	}{{"a-cheap", 1, false, false, false}, {"b-dear", 3, false, false, false}, {"c-drifted", 3, false, false, true}, {"d-disrupted", 2, true, false, false}, {"e-pinned", 1, false, true, false}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{v1.LabelNodePool: "default"}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		node.Spec.ProviderID = "aws:///us-east-1a/i-" + n.name
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("20")}
		node.Status.Allocatable = node.Status.Capacity
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{v1.LabelNodePool: "default"}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		claim.Spec.NodeClassRef, claim.Spec.Requirements = ref, reqs
		claim.Status.ProviderID, claim.Status.NodeName = node.Spec.ProviderID, n.name
		claim.Status.Capacity, claim.Status.Allocatable = node.Status.Capacity, node.Status.Capacity
		claim.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		if n.drifted {
			claim.Status.Conditions = append(claim.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(now)})
		}
		if n.disrupted {
			node.Spec.Taints = []corev1.Taint{{Key: v1.TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}}
		}
		if n.pinned {
			node.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}
		objs.Nodes, objs.NodeClaims = append(objs.Nodes, node), append(objs.NodeClaims, claim)
		for i := range n.pods {
			objs.Pods = append(objs.Pods, pod(n.name+"-"+strconv.Itoa(i), n.name))
		}
	}
	return objs
}

func pod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs-uid", Controller: ptr.To(true),
		}}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// Nodes being disrupted get the lowest cost; the others disruption may
// take are ranked drifted first, then cheapest to disrupt; a node that
// may not be disrupted gets none.
func TestRank(t *testing.T) {
	ranks := deletioncost.Rank(state.Build(cluster(), state.Options{Now: now}), now)
	want := map[string]*int32{"c-drifted": ptr.To[int32](-3), "a-cheap": ptr.To[int32](-2), "b-dear": ptr.To[int32](-1), "d-disrupted": ptr.To[int32](deletioncost.Disrupting), "e-pinned": nil}
	if len(ranks) != len(want) {
		t.Fatalf("ranks %v", ranks)
	}
	for name, w := range want {
		got, ok := ranks[name]
		if !ok || (w == nil) != (got == nil) || (w != nil && *w != *got) {
			t.Errorf("%s: rank %v, want %v", name, deref(got), deref(w))
		}
	}
}

func deref(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}

// Against the API server, a pass writes each ReplicaSet pod's rank and
// removes the annotation from the pods of a node that may not be
// disrupted; pods of other owners are left alone.
func TestReconcileWritesTheRanks(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, cp)
	ctx := context.Background()
	objs := cluster()
	objs.Pods[len(objs.Pods)-1].Annotations = map[string]string{v1.AnnotationPodDeletionCost: "-5"} // e-pinned's, written before it was pinned
	lone := pod("lone", "a-cheap")
	lone.OwnerReferences = nil
	objs.Pods = append(objs.Pods, lone)
	for _, o := range objs.NodePools {
		create(t, kube, o)
	}
	for _, n := range objs.Nodes {
		create(t, kube, n)
	}
	for _, nc := range objs.NodeClaims {
		status := nc.Status
		create(t, kube, nc)
		nc.Status = status
		if err := kube.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range objs.Pods {
		create(t, kube, p)
	}
	c := &deletioncost.Controller{Client: kube, Clock: clock.RealClock{}, Interval: time.Minute, MaxNodes: 50}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := kube.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a-cheap": "-2", "b-dear": "-1", "c-drifted": "-3", "d-disrupted": "-2147483648", "e-pinned": ""}
	for _, p := range pods.Items {
		got, ok := p.Annotations[v1.AnnotationPodDeletionCost]
		switch {
		case p.Name == "lone":
			if ok {
				t.Errorf("pod lone (no ReplicaSet) got %q", got)
			}
		case got != want[p.Spec.NodeName] || ok != (want[p.Spec.NodeName] != ""):
			t.Errorf("pod %s on %s: pod-deletion-cost %q (set %v), want %q", p.Name, p.Spec.NodeName, got, ok, want[p.Spec.NodeName])
		}
	}
}

func create(t *testing.T, kube client.Client, o client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}
