package capacitybuffer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
)

// How many pods a buffer keeps room for: replicas; a share of its
// workload's replicas rounded up (at least one), the larger of the two;
// never more than fit in its limits; with limits alone, as many as fit.
func TestCount(t *testing.T) {
	template := &corev1.PodTemplate{}
	template.Template.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	for name, tc := range map[string]struct {
		spec     v1beta1.CapacityBufferSpec
		workload int32
		want     int32
		fails    bool
	}{
		"replicas":                         {spec: v1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3)}, workload: -1, want: 3},
		"a share rounded up":               {spec: v1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](25)}, workload: 10, want: 3},
		"a small share is one pod":         {spec: v1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](1)}, workload: 10, want: 1},
		"a share of nothing is nothing":    {spec: v1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50)}, workload: 0, want: 0},
		"the larger of replicas and share": {spec: v1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](2), Percentage: ptr.To[int32](50)}, workload: 10, want: 5},
		"capped by limits": {spec: v1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10), Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("3Gi")}}, workload: -1, want: 3},
		"limits alone": {spec: v1beta1.CapacityBufferSpec{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}, workload: -1, want: 4},
		"limits on nothing the pod requests": {spec: v1beta1.CapacityBufferSpec{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}},
			workload: -1, fails: true},
	} {
		t.Run(name, func(t *testing.T) {
			got := count(&v1beta1.CapacityBuffer{Spec: tc.spec}, template, tc.workload)
			if tc.fails != (got.template == nil) || (!tc.fails && got.replicas != tc.want) {
				t.Errorf("count = %d (%s: %s), want %d (fails: %v)", got.replicas, got.reason, got.message, tc.want, tc.fails)
			}
		})
	}
}
