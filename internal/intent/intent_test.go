package intent_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/controlplane"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/operator/optest"
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
