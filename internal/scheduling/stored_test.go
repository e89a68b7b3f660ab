package scheduling_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// storedPod generates a pod as users write them: containers, sidecars and
// init containers giving requests, limits, both or neither for CPU,
// memory, ephemeral storage and GPUs, and half of them pod-level
// CPU and memory limits, with or without requests.
func storedPod(seed uint64) *corev1.Pod {
	r := rand.New(rand.NewPCG(seed, 61))
	resources := func() corev1.ResourceRequirements {
		var rr corev1.ResourceRequirements
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "nvidia.com/gpu"} {
			limit := map[corev1.ResourceName]string{corev1.ResourceCPU: fmt.Sprintf("%dm", 100*(1+r.IntN(40))), corev1.ResourceMemory: fmt.Sprintf("%dMi", 64*(1+r.IntN(64))),
				corev1.ResourceEphemeralStorage: fmt.Sprintf("%dGi", 1+r.IntN(50)), "nvidia.com/gpu": fmt.Sprint(1 + r.IntN(4))}[name]
			switch r.IntN(4) {
			case 0: // neither
			case 1: // the limit only
				rr.Limits = set(rr.Limits, name, limit)
			case 2: // both; a GPU's must be equal, others at most the limit
				rr.Limits = set(rr.Limits, name, limit)
				q := resource.MustParse(limit)
				if name != "nvidia.com/gpu" {
					q = *resource.NewMilliQuantity(q.MilliValue()/int64(1+r.IntN(3)), q.Format)
				}
				rr.Requests = set(rr.Requests, name, q.String())
			case 3: // the request only (not for a GPU: the API server refuses it)
				if name != "nvidia.com/gpu" {
					rr.Requests = set(rr.Requests, name, limit)
				}
			}
		}
		return rr
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", seed), Namespace: "default"}}
	for i := range 1 + r.IntN(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("app-%d", i), Image: "registry.example/app:1", Resources: resources()})
	}
	for i := range r.IntN(3) {
		c := corev1.Container{Name: fmt.Sprintf("init-%d", i), Image: "registry.example/init:1", Resources: resources()}
		if r.IntN(2) == 0 {
			c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways) // a sidecar
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	if r.IntN(2) == 0 { // pod-level resources: CPU and memory, above what the containers take
		var rr corev1.ResourceRequirements
		for name, limit := range map[corev1.ResourceName]string{corev1.ResourceCPU: fmt.Sprint(20 + r.IntN(20)), corev1.ResourceMemory: fmt.Sprintf("%dGi", 20+r.IntN(40))} {
			switch r.IntN(3) {
			case 0:
				rr.Limits = set(rr.Limits, name, limit)
			case 1:
				rr.Limits = set(rr.Limits, name, limit)
				rr.Requests = set(rr.Requests, name, limit)
			}
		}
		pod.Spec.Resources = &rr
	}
	return pod
}

func set(list corev1.ResourceList, name corev1.ResourceName, q string) corev1.ResourceList {
	if list == nil {
		list = corev1.ResourceList{}
	}
	list[name] = resource.MustParse(q)
	return list
}

func ptrTo[T any](v T) *T { return &v }

// TestRequestsAsTheAPIServerStoresThem: generated pods, created (dry
// run) in a real kube-apiserver, come back requesting what
// RequestsAsStored says — each container's and init container's requests
// the API server stores — and so PodRequests reads a manifest as it reads
// the stored pod.
func TestRequestsAsTheAPIServerStoresThem(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	direct, _ := optest.Direct(t, plane)
	ctx := context.Background()
	n, refused, defaulted := 300, 0, 0 // make stored runs more
	if v, err := strconv.Atoi(os.Getenv("NODEWRIGHT_STORED_PODS")); err == nil && v > 0 {
		n = v
	}
	for seed := range uint64(n) {
		written := storedPod(seed)
		stored := written.DeepCopy()
		if err := direct.Create(ctx, stored, client.DryRunAll); err != nil {
			refused++
			t.Logf("seed %d: the API server refuses the generated pod: %v", seed, err)
			continue
		}
		ours := scheduling.RequestsAsStored(written)
		if ours != written {
			defaulted++
		}
		for i := range stored.Spec.Containers {
			if !equality.Semantic.DeepEqual(ours.Spec.Containers[i].Resources.Requests, stored.Spec.Containers[i].Resources.Requests) {
				t.Errorf("seed %d container %d: the API server stores requests %v, RequestsAsStored %v", seed, i, stored.Spec.Containers[i].Resources.Requests, ours.Spec.Containers[i].Resources.Requests)
			}
		}
		for i := range stored.Spec.InitContainers {
			if !equality.Semantic.DeepEqual(ours.Spec.InitContainers[i].Resources.Requests, stored.Spec.InitContainers[i].Resources.Requests) {
				t.Errorf("seed %d init container %d: the API server stores requests %v, RequestsAsStored %v", seed, i, stored.Spec.InitContainers[i].Resources.Requests, ours.Spec.InitContainers[i].Resources.Requests)
			}
		}
		if stored.Spec.Resources != nil && !equality.Semantic.DeepEqual(ours.Spec.Resources.Requests, stored.Spec.Resources.Requests) {
			t.Errorf("seed %d: the API server stores pod-level requests %v, RequestsAsStored %v", seed, stored.Spec.Resources.Requests, ours.Spec.Resources.Requests)
		}
		fromWritten, _ := scheduling.PodRequests(written)
		fromStored, _ := scheduling.PodRequests(stored)
		if fromWritten != fromStored {
			t.Errorf("seed %d: PodRequests of the manifest %s, of the stored pod %s", seed, fromWritten, fromStored)
		}
	}
	if refused > n/10 {
		t.Errorf("the API server refused %d of %d generated pods: the generator writes pods users cannot create", refused, n)
	}
	t.Logf("%d generated pods: %d created, %d of them defaulted from their limits, all as the API server stores them", n, n-refused, defaulted)
}
