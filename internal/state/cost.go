package state

import (
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// EvictionCost is what moving one pod costs: 1, plus its disruption cost
// (else, when deletionCost, its pod deletion cost) scaled so the whole
// int32 range moves it by 16, plus its priority scaled so the whole range
// moves it by 64, bounded to [-10, 10]. With pod deletion cost management
// on, nodewright writes the pod deletion cost itself and does not read it
// back.
func EvictionCost(pod *corev1.Pod, deletionCost bool) float64 {
	cost := 1.0
	annotation, ok := pod.Annotations[v1.AnnotationDisruptionCost]
	if !ok && deletionCost {
		annotation, ok = pod.Annotations[v1.AnnotationPodDeletionCost]
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

// DisruptionCost is what disrupting the node costs: its pods' eviction
// costs, times the share of its lifetime left (a node about to expire
// costs little to move off now).
func (n *Node) DisruptionCost(now time.Time, deletionCost bool) float64 {
	cost := 0.0
	for _, pod := range n.Reschedulable() {
		cost += EvictionCost(pod, deletionCost)
	}
	if expires, ok := n.ExpiresAt(); ok {
		if life := expires.Sub(n.CreatedAt()); life > 0 {
			cost *= min(max(float64(expires.Sub(now))/float64(life), 0), 1)
		}
	}
	return cost
}
