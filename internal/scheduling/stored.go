package scheduling

import corev1 "k8s.io/api/core/v1"

// RequestsAsStored is the pod as the API server stores it, as far as what
// it requests goes: a container (or init container) that gives a limit
// but no request for a resource requests its limit, and so does the pod's
// own spec.resources. A pod read from the API server has them already; a
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
	if r := out.Spec.Resources; r != nil {
		r.Requests = withLimits(r.Requests, r.Limits)
	}
	return out
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
	return spec.Resources != nil && lacks(spec.Resources.Requests, spec.Resources.Limits)
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
