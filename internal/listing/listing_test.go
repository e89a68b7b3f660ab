package listing_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// Listing through a Cached client gives the pods the informer holds (the
// very objects, not copies), the same pods a plain List gives.
func TestCachedListsTheInformersPods(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	direct, scheme := optest.Direct(t, plane)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"a", "b", "c"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if err := direct.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.New(plane.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	reader, err := client.New(plane.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	cached := listing.Cached{Client: reader, Cache: c}
	var names []string
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		listed, err := listing.List(ctx, cached)
		if err != nil {
			return false, nil //nolint:nilerr // the cache is starting
		}
		names = names[:0]
		for _, p := range listed.Pods {
			names = append(names, p.Name)
		}
		return len(names) == 3, nil
	}); err != nil {
		t.Fatalf("pods listed through the cache: %v (%v)", names, err)
	}
	slices.Sort(names)
	plain, err := listing.List(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range plain.Pods {
		want = append(want, p.Name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("through the informer %v, through List %v", names, want)
	}
	// The informer's own objects: the same pointer twice.
	again, err := listing.List(ctx, cached)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := listing.List(ctx, cached)
	if again.Pods[0] != first.Pods[0] && again.Pods[0] != first.Pods[1] && again.Pods[0] != first.Pods[2] {
		t.Error("listing twice gave copies of the pods, want the informer's objects")
	}
}

// CapacityBuffers are read with the PodTemplates they name when the
// client knows the kind (the CapacityBuffer feature gate on); a client
// whose scheme leaves it out (the gate off) reads none, and no
// PodTemplate either, though the cluster has them.
func TestCapacityBuffersAreReadOnlyWithTheGate(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	direct, _ := optest.Direct(t, plane)
	ctx := context.Background()
	template := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	template.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	buffer := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1beta1.CapacityBufferSpec{PodTemplateRef: &v1beta1.LocalObjectRef{Name: "web"}, Replicas: ptr.To[int32](2)}}
	for _, obj := range []client.Object{template, buffer} {
		if err := direct.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	listed, err := listing.List(ctx, direct)
	if err != nil || len(listed.CapacityBuffers) != 1 || len(listed.PodTemplates) != 1 {
		t.Fatalf("with CapacityBuffer known: %v, %d buffers, %d PodTemplates", err, len(listed.CapacityBuffers), len(listed.PodTemplates))
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	gateOff, err := client.New(plane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	listed, err = listing.List(ctx, gateOff)
	if err != nil || len(listed.CapacityBuffers) != 0 || len(listed.PodTemplates) != 0 {
		t.Errorf("with CapacityBuffer unknown: %v, %d buffers, %d PodTemplates", err, len(listed.CapacityBuffers), len(listed.PodTemplates))
	}
}
