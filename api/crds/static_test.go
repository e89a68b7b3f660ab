package crds_test

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// A NodePool is static or dynamic for its whole life: replicas can change,
// not appear or disappear.
func TestNodePoolCannotSwitchBetweenStaticAndDynamic(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ name, create, update string }{
		{"dynamic to static", `{}`, `spec: {replicas: 3}`},
		{"static to dynamic", `spec: {replicas: 3}`, `{}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := patched(t, validNodePool, c.create)
			obj.SetName("switch")
			if err := kube.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
			changed := patched(t, validNodePool, c.update)
			changed.SetName("switch")
			changed.SetResourceVersion(obj.GetResourceVersion())
			err := kube.Update(ctx, changed)
			if err == nil {
				t.Fatalf("the API server accepted the update %s", c.update)
			}
			assertRejection(t, err, "spec", "replicas cannot be set or unset on an existing NodePool")
		})
	}
}

// kubectl scale nodepool works: the scale subresource writes spec.replicas
// and reads status.nodes.
func TestStaticNodePoolScalesThroughTheScaleSubresource(t *testing.T) {
	ctx := context.Background()
	obj := patched(t, validNodePool, `spec: {replicas: 2}`)
	obj.SetName("scaled")
	if err := kube.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
	np := &v1.NodePool{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "scaled"}, np); err != nil {
		t.Fatal(err)
	}
	np.Status.Nodes = 2
	if err := kube.Status().Update(ctx, np); err != nil {
		t.Fatal(err)
	}

	scale := &autoscalingv1.Scale{}
	if err := kube.SubResource("scale").Get(ctx, np, scale); err != nil {
		t.Fatalf("reading the scale of NodePool scaled: %v", err)
	}
	if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 {
		t.Errorf("scale reads spec %d, status %d; want 2 and 2 (spec.replicas, status.nodes)", scale.Spec.Replicas, scale.Status.Replicas)
	}
	scale.Spec.Replicas = 7
	if err := kube.SubResource("scale").Update(ctx, np, client.WithSubResourceBody(scale)); err != nil {
		t.Fatalf("scaling NodePool scaled to 7: %v", err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: "scaled"}, np); err != nil {
		t.Fatal(err)
	}
	if np.Spec.Replicas == nil || *np.Spec.Replicas != 7 {
		t.Errorf("after scaling to 7, spec.replicas = %v", np.Spec.Replicas)
	}
}
