package state

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workload is what a pod belongs to: the object that made it, as a person
// would name it (a ReplicaSet's pods belong to its Deployment), or the
// pod itself when nothing made it.
type Workload struct {
	Kind, Namespace, Name string
}

func (w Workload) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// Object is the workload as "Kind/namespace/name".
func (w Workload) Object() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// WorkloadOf names the workload of a pod.
func WorkloadOf(p *corev1.Pod) Workload {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return Workload{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}
	}
	w := Workload{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}
	// A Deployment's ReplicaSets are named <deployment>-<pod-template-hash>.
	if ref.Kind == "ReplicaSet" {
		if hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; hash != "" {
			if name, ok := strings.CutSuffix(ref.Name, "-"+hash); ok {
				w.Kind, w.Name = "Deployment", name
			}
		}
	}
	return w
}

// PodGroup is pods of one workload that share one account of what is
// wrong with them.
type PodGroup struct {
	Workload Workload
	Pods     []*corev1.Pod
}

// Describe is "pod ns/name" for one pod, else "3 pods of Deployment ns/web".
func (g PodGroup) Describe() string {
	if len(g.Pods) == 1 && g.Workload.Kind == "Pod" {
		return "pod " + g.Workload.Namespace + "/" + g.Workload.Name
	}
	if len(g.Pods) == 1 {
		return fmt.Sprintf("pod %s/%s of %s", g.Pods[0].Namespace, g.Pods[0].Name, g.Workload)
	}
	return fmt.Sprintf("%d pods of %s", len(g.Pods), g.Workload)
}

// GroupPods groups pods by workload and by key (an account of what is
// wrong with them), in the order each group first appears.
func GroupPods[T any](items []T, pod func(T) *corev1.Pod, key func(T) string) []PodGroup {
	type id struct {
		w   Workload
		key string
	}
	index := map[id]int{}
	var out []PodGroup
	for _, it := range items {
		p := pod(it)
		k := id{WorkloadOf(p), key(it)}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, PodGroup{Workload: k.w})
		}
		out[i].Pods = append(out[i].Pods, p)
	}
	return out
}
