package disruption

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/state"
)

// AnnotationDisruptionCost on a pod weighs how much moving it costs
// (an int32; higher keeps its node longer), as the reference's v1.15.
const AnnotationDisruptionCost = "karpenter.sh/disruption-cost"

// annotationPodDeletionCost is the ReplicaSet controller's annotation,
// read when a pod has no disruption cost of its own.
const annotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// evictionCost is what moving one pod costs: 1, plus its disruption cost
// (else its pod deletion cost) scaled so the whole int32 range moves it
// by 16, plus its priority scaled so the whole range moves it by 64,
// bounded to [-10, 10].
func evictionCost(pod *corev1.Pod) float64 {
	cost := 1.0
	annotation, ok := pod.Annotations[AnnotationDisruptionCost]
	if !ok {
		annotation, ok = pod.Annotations[annotationPodDeletionCost]
	}
	if ok {
		if v, err := strconv.ParseInt(annotation, 10, 32); err == nil {
			cost += float64(v) / math.Exp2(27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / math.Exp2(25)
	}
	return min(max(cost, -10), 10)
}

// disruptionCost is what disrupting a node costs: its pods' eviction
// costs, times the share of its lifetime left (a node about to expire
// costs little to move off now).
func disruptionCost(n *state.Node, now time.Time) float64 {
	cost := 0.0
	for _, pod := range n.Reschedulable() {
		cost += evictionCost(pod)
	}
	if expires, ok := n.ExpiresAt(); ok {
		if life := expires.Sub(n.CreatedAt()); life > 0 {
			cost *= min(max(float64(expires.Sub(now))/float64(life), 0), 1)
		}
	}
	return cost
}
