package state

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Virtual reports a pod that stands for a CapacityBuffer's room: it is
// never created in the cluster, and decisions place it as a pending pod
// of the lowest priority.
func Virtual(p *corev1.Pod) bool { return p.Annotations[v1beta1.AnnotationVirtualPod] == "true" }

// BufferOf is the namespace/name of the CapacityBuffer a virtual pod
// stands for.
func BufferOf(p *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Annotations[v1beta1.AnnotationBufferNamespace], Name: p.Annotations[v1beta1.AnnotationBufferName]}
}

// BufferRoom is where a CapacityBuffer's pods are: on nodes there (or
// NodeClaims in flight), or still to be found room for.
type BufferRoom struct {
	Buffer types.NamespacedName
	// Pods is how many pods the buffer keeps room for; Hosted how many
	// have it on nodes or NodeClaims there.
	Pods, Hosted int
}

// virtualPods are the pods of the CapacityBuffers ready for provisioning:
// status.replicas copies of the PodTemplate their status names, without
// a node, volumes that would need claims, or a priority above any pod's.
func virtualPods(buffers []*v1beta1.CapacityBuffer, templates []*corev1.PodTemplate) []*corev1.Pod {
	byKey := make(map[types.NamespacedName]*corev1.PodTemplate, len(templates))
	for _, t := range templates {
		byKey[types.NamespacedName{Namespace: t.Namespace, Name: t.Name}] = t
	}
	var out []*corev1.Pod
	for _, b := range buffers {
		if !meta.IsStatusConditionTrue(b.Status.Conditions, v1beta1.ConditionReadyForProvisioning) || b.Status.Replicas == nil ||
			b.Status.PodTemplateRef == nil || !b.DeletionTimestamp.IsZero() {
			continue
		}
		t := byKey[types.NamespacedName{Namespace: b.Namespace, Name: b.Status.PodTemplateRef.Name}]
		if t == nil {
			continue
		}
		for i := range *b.Status.Replicas {
			out = append(out, virtualPod(b, t, int(i)))
		}
	}
	return out
}

// virtualPod is a buffer's i-th pod.
func virtualPod(b *v1beta1.CapacityBuffer, t *corev1.PodTemplate, i int) *corev1.Pod {
	spec := *t.Template.Spec.DeepCopy()
	spec.NodeName = ""
	spec.Priority = ptr.To(int32(math.MinInt32))
	claimed := map[string]bool{}
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		drop := v.PersistentVolumeClaim != nil || v.Ephemeral != nil
		claimed[v.Name] = drop
		return drop
	})
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for j := range cs {
			cs[j].VolumeMounts = slices.DeleteFunc(cs[j].VolumeMounts, func(m corev1.VolumeMount) bool { return claimed[m.Name] })
		}
	}
	labels := make(map[string]string, len(t.Template.Labels))
	for k, v := range t.Template.Labels {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("capacity-buffer-%s-%d", b.Name, i), Namespace: b.Namespace, UID: types.UID(fmt.Sprintf("%s-%d", b.UID, i)),
			Labels: labels,
			Annotations: map[string]string{v1beta1.AnnotationVirtualPod: "true", v1beta1.AnnotationBufferName: b.Name,
				v1beta1.AnnotationBufferNamespace: b.Namespace},
		},
		Spec: spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
}

// hostBuffers finds room for the buffers' pods on the nodes there and the
// NodeClaims in flight, beside the pending pods: a buffer pod placed on a
// node counts as that node's pod (the node is not empty, and its pods
// would need room elsewhere should it go), one placed on a NodeClaim in
// flight as a pod the NodeClaim is expected to take; the others stay
// pending, for the provisioner to launch for.
func (s *Snapshot) hostBuffers(virtual []*corev1.Pod) {
	pending := slices.DeleteFunc(slices.Clone(s.Pending), Virtual)
	waiting := slices.DeleteFunc(slices.Clone(s.Pending), func(p *corev1.Pod) bool { return !Virtual(p) })
	rooms := map[types.NamespacedName]*BufferRoom{}
	for _, p := range virtual {
		key := BufferOf(p)
		if rooms[key] == nil {
			rooms[key] = &BufferRoom{Buffer: key}
		}
		rooms[key].Pods++
	}
	// Buffer pods already expected on a NodeClaim in flight (planned onto
	// it) have their room.
	for _, n := range s.Nodes {
		for _, p := range n.Expected {
			if r := rooms[BufferOf(p)]; r != nil && Virtual(p) {
				r.Hosted++
			}
		}
	}
	byName := make(map[string]*Node, len(s.Nodes))
	for _, n := range s.Nodes {
		byName[n.Name] = n
	}
	plan := scheduling.Solve(s.input(nil, slices.Concat(pending, s.Leaving, waiting), false))
	hosted := map[*corev1.Pod]bool{}
	for _, e := range plan.Existing {
		n := byName[e.Node]
		if n == nil {
			continue
		}
		for _, p := range e.Pods {
			if !Virtual(p) {
				continue
			}
			hosted[p] = true
			rooms[BufferOf(p)].Hosted++
			if n.Registered() {
				n.Pods = append(n.Pods, p)
			} else {
				n.Expected = append(n.Expected, p)
				s.expected++
				s.rechecks++
			}
		}
	}
	s.Pending = slices.DeleteFunc(s.Pending, func(p *corev1.Pod) bool { return hosted[p] })
	for _, r := range rooms {
		s.Buffers = append(s.Buffers, *r)
	}
	slices.SortFunc(s.Buffers, func(a, b BufferRoom) int { return strings.Compare(a.Buffer.String(), b.Buffer.String()) })
}

// BufferReplicas is how many pods a CapacityBuffer keeps room for:
// spec.replicas, or a percentage of its workload's replicas (rounded up,
// at least one), the larger of the two; no more than fit in spec.limits;
// with limits alone, as many as fit. workloadReplicas is -1 without a
// workload. Limits that bound none of the resources the pod requests are
// an error.
func BufferReplicas(spec v1beta1.CapacityBufferSpec, pod *corev1.PodSpec, workloadReplicas int32) (int32, error) {
	n := int64(-1)
	if spec.Replicas != nil {
		n = int64(*spec.Replicas)
	}
	if pct := spec.Percentage; pct != nil && workloadReplicas >= 0 {
		share := int64(math.Ceil(float64(*pct) * float64(workloadReplicas) / 100))
		if *pct > 0 && workloadReplicas > 0 {
			share = max(share, 1)
		}
		n = max(n, share)
	}
	if len(spec.Limits) > 0 {
		fit, ok := fitting(spec.Limits, pod)
		if !ok {
			return 0, errors.New("spec.limits bound none of the resources its pod requests")
		}
		if n < 0 {
			n = fit
		}
		n = min(n, fit)
	}
	return int32(min(max(n, 0), math.MaxInt32)), nil
}

// fitting is how many of the pod fit in the limits; false when no limit
// bounds a resource the pod requests.
func fitting(limits corev1.ResourceList, pod *corev1.PodSpec) (int64, bool) {
	requests := resourcehelper.PodRequests(&corev1.Pod{Spec: *pod}, resourcehelper.PodResourcesOptions{})
	fit, bounded := int64(math.MaxInt32), false
	for name, limit := range limits {
		req, ok := requests[name]
		if !ok || req.IsZero() {
			continue
		}
		bounded = true
		fit = min(fit, limit.MilliValue()/req.MilliValue())
	}
	return fit, bounded
}
