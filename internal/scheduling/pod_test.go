package scheduling_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// A pod's requests are what Kubernetes sums for it (containers, init
// containers and sidecars, overhead, pod-level resources), plus the pod
// itself, whichever way they are computed.
func TestPodRequestsAreKubernetesOwn(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	container := func(requests corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}
	}
	always := corev1.ContainerRestartPolicyAlways
	for name, spec := range map[string]corev1.PodSpec{
		"one container":                {Containers: []corev1.Container{container(list("cpu", "250m", "memory", "512Mi"))}},
		"one container, fractional":    {Containers: []corev1.Container{container(list("cpu", "0.0001", "memory", "100.5"))}},
		"one container, unknown":       {Containers: []corev1.Container{container(list("cpu", "1", "example.com/dongle", "2"))}},
		"one container, no requests":   {Containers: []corev1.Container{container(nil)}},
		"two containers, fractional":   {Containers: []corev1.Container{container(list("cpu", "0.0001")), container(list("cpu", "0.0001", "memory", "1Gi"))}},
		"an init container larger":     {InitContainers: []corev1.Container{container(list("cpu", "2"))}, Containers: []corev1.Container{container(list("cpu", "500m"))}},
		"a sidecar":                    {InitContainers: []corev1.Container{{Name: "s", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: list("cpu", "100m")}}}, Containers: []corev1.Container{container(list("cpu", "500m"))}},
		"overhead":                     {Overhead: list("cpu", "50m", "memory", "64Mi"), Containers: []corev1.Container{container(list("cpu", "500m"))}},
		"pod-level resources":          {Resources: &corev1.ResourceRequirements{Requests: list("cpu", "3", "memory", "4Gi")}, Containers: []corev1.Container{container(list("cpu", "500m"))}},
		"one container, local storage": {Containers: []corev1.Container{container(list("ephemeral-storage", "10Gi"))}},
	} {
		pod := &corev1.Pod{Spec: spec}
		got, gotUnknown := scheduling.PodRequests(pod)
		want, wantUnknown := scheduling.ParseResources(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
		want = want.Add(scheduling.MustParseResources("pods=1"))
		if got != want || !slices.Equal(gotUnknown, wantUnknown) {
			t.Errorf("%s: requests %s (unknown %v), want Kubernetes' %s (unknown %v)", name, got, gotUnknown, want, wantUnknown)
		}
	}
}
