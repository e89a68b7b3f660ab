package operator

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// The cache keeps of a pod what decides where it fits and what the
// controllers read (requests, sidecars, host ports, volumes, affinity,
// labels, annotations, conditions) and drops the rest of its containers,
// their statuses and its managed fields.
func TestCacheTrimsPodsToWhatDecidesWhereTheyFit(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}
	full := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", Labels: map[string]string{"app": "web"},
				Annotations:   map[string]string{"karpenter.sh/do-not-disrupt": "true", corev1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &always, Resources: requests}},
				Containers: []corev1.Container{{Name: "app", Image: "web:1", Command: []string{"serve"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
					Resources: requests, Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9100, HostPort: 9100}},
					ReadinessProbe: &corev1.Probe{}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
					{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
					{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}}},
				NodeSelector: map[string]string{"kubernetes.io/arch": "arm64"},
				Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "n",
				Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "web:1"}}},
		}
	}
	got, err := trim(full())
	if err != nil {
		t.Fatal(err)
	}
	pod := got.(*corev1.Pod)
	want := full()
	want.ManagedFields, want.Status.ContainerStatuses = nil, nil
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
	want.Spec.Volumes = slices.Delete(want.Spec.Volumes, 1, 2) // the claims' volumes stay
	want.Spec.InitContainers[0].Image = ""
	want.Spec.Containers[0] = corev1.Container{Name: "app", Resources: requests, Ports: []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}}
	if !equality.Semantic.DeepEqual(pod, want) {
		t.Errorf("trimmed pod:\n%+v\nwant:\n%+v", pod, want)
	}
	before, _ := scheduling.PodRequests(full())
	after, _ := scheduling.PodRequests(pod)
	if before.String() != after.String() {
		t.Errorf("requests %s after trimming, %s before", after, before)
	}
}
