package whatif

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
)

// admitted are the pods as RuntimeClass admission leaves them when they
// are created: a pod naming a RuntimeClass gets its pod overhead, which
// its node must hold beside its containers' requests, and the class's
// node selector and tolerations. Pods read from a cluster were admitted
// already (their overhead is set) and are left as they are.
func (o *Objects) admitted() []*corev1.Pod {
	if len(o.RuntimeClasses) == 0 {
		return o.Pods
	}
	classes := map[string]*nodev1.RuntimeClass{}
	for _, rc := range o.RuntimeClasses {
		classes[rc.Name] = rc
	}
	out := make([]*corev1.Pod, len(o.Pods))
	for i, pod := range o.Pods {
		out[i] = pod
		rc := classes[ptrString(pod.Spec.RuntimeClassName)]
		if rc == nil || pod.Spec.Overhead != nil {
			continue
		}
		p := pod.DeepCopy()
		if rc.Overhead != nil {
			p.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
		}
		if s := rc.Scheduling; s != nil {
			if len(s.NodeSelector) > 0 {
				if p.Spec.NodeSelector == nil {
					p.Spec.NodeSelector = map[string]string{}
				}
				maps.Copy(p.Spec.NodeSelector, s.NodeSelector)
			}
			for _, t := range s.Tolerations {
				if !slices.ContainsFunc(p.Spec.Tolerations, func(have corev1.Toleration) bool { return have.MatchToleration(&t) }) {
					p.Spec.Tolerations = append(p.Spec.Tolerations, t)
				}
			}
		}
		out[i] = p
	}
	return out
}

// runtimeClassWarnings name the RuntimeClasses pods name that are not
// among the inputs (their overhead and scheduling are not counted), and
// the pods whose node selector conflicts with their RuntimeClass's: the
// API server refuses either pod when it is created.
func (o *Objects) runtimeClassWarnings() []string {
	known := map[string]*nodev1.RuntimeClass{}
	for _, rc := range o.RuntimeClasses {
		known[rc.Name] = rc
	}
	missing := map[string]int{}
	var conflicts []string
	for _, pod := range o.Pods {
		name := ptrString(pod.Spec.RuntimeClassName)
		if name == "" || pod.Spec.Overhead != nil {
			continue
		}
		rc := known[name]
		if rc == nil {
			missing[name]++
			continue
		}
		if rc.Scheduling == nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(rc.Scheduling.NodeSelector)) {
			if v, ok := pod.Spec.NodeSelector[k]; ok && v != rc.Scheduling.NodeSelector[k] {
				conflicts = append(conflicts, fmt.Sprintf("pod %s/%s selects %s=%s, and its RuntimeClass %s %s=%s: the API server refuses it; it is planned with the RuntimeClass's",
					pod.Namespace, pod.Name, k, v, name, k, rc.Scheduling.NodeSelector[k]))
			}
		}
	}
	out := make([]string, 0, len(missing)+len(conflicts))
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		out = append(out, fmt.Sprintf("%d pods name RuntimeClass %s, which is not among the inputs: its pod overhead, node selector and tolerations are not counted (add it: kubectl get runtimeclass %s -o yaml)", missing[name], name, name))
	}
	return append(out, conflicts...)
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
