package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// RequestsAsStored is the pod as the API server stores it, as far as what
// it requests goes: a container (or init container) that gives a limit
// but no request for a resource requests its limit; pod-level
// spec.resources with limits request, for each resource a pod may set
// there (CPU, memory, huge pages) and does not request, what its
// containers request together (its effective request, sidecars and init
// containers counted as kube-scheduler counts them) or, when none of them
// requests it, the pod-level limit. A pod read from the API server has them already; a
// pod written in a manifest or made from a workload's template (a
// DaemonSet's pods, a Deployment's) gets them when it is created. The pod
// is returned as it is when nothing changes, else a copy.
func RequestsAsStored(pod *corev1.Pod) *corev1.Pod {
	if !missingRequests(&pod.Spec) {
		return pod
	}
	out := pod.DeepCopy()
	for _, list := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range list {
			list[i].Resources.Requests = withLimits(list[i].Resources.Requests, list[i].Resources.Limits)
		}
	}
	if r := out.Spec.Resources; r != nil && len(r.Limits) > 0 {
		requests := make(corev1.ResourceList, len(r.Limits))
		for name, q := range r.Requests {
			requests[name] = q
		}
		for name, q := range resourcehelper.AggregateContainerRequests(out, resourcehelper.PodResourcesOptions{}) {
			if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && !hugePages(name) {
				requests[name] = q.DeepCopy()
			}
		}
		for name, q := range r.Limits {
			if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
				requests[name] = q.DeepCopy()
			}
		}
		r.Requests = requests
	}
	return out
}

// hugePages reports a huge pages resource: its pod-level request is its
// limit, never what the containers take.
func hugePages(name corev1.ResourceName) bool {
	return len(name) > len(corev1.ResourceHugePagesPrefix) && name[:len(corev1.ResourceHugePagesPrefix)] == corev1.ResourceHugePagesPrefix
}

// missingRequests reports a limit without its request.
func missingRequests(spec *corev1.PodSpec) bool {
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if lacks(list[i].Resources.Requests, list[i].Resources.Limits) {
				return true
			}
		}
	}
	if spec.Resources == nil || len(spec.Resources.Limits) == 0 {
		return false
	}
	// Pod-level requests default from the containers' too, for a
	// resource the pod-level limits may not name.
	for name := range resourcehelper.SupportedPodLevelResources() {
		if _, ok := spec.Resources.Requests[name]; !ok && !hugePages(name) {
			return true
		}
	}
	return lacks(spec.Resources.Requests, spec.Resources.Limits)
}

func lacks(requests, limits corev1.ResourceList) bool {
	for name := range limits {
		if _, ok := requests[name]; !ok {
			return true
		}
	}
	return false
}

// withLimits are requests with each limit's resource they lack.
func withLimits(requests, limits corev1.ResourceList) corev1.ResourceList {
	if !lacks(requests, limits) {
		return requests
	}
	out := make(corev1.ResourceList, len(requests)+len(limits))
	for name, q := range requests {
		out[name] = q
	}
	for name, q := range limits {
		if _, ok := out[name]; !ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}
