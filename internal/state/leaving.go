package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// leaving are the pods that will need room elsewhere because their node
// is being deleted: its pods that are neither a DaemonSet's nor static,
// and its StatefulSet pods already terminating (they come back with the
// same name and claims). Pods the drain cannot evict before the node's
// termination deadline stay where they are and get no room: one with
// karpenter.sh/do-not-disrupt, or one a budget never lets go
// (maxUnavailable 0 or 0%, minAvailable 100%). With a deadline (an
// interruption, a repair, a terminationGracePeriod) every pod leaves.
func (s *Snapshot) leaving(restarting map[string][]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range s.Nodes {
		if !n.Managed() || !n.Registered() || !n.Deleting() {
			continue
		}
		forced := n.NodeClaim != nil && (n.NodeClaim.Spec.TerminationGracePeriod != nil || n.NodeClaim.Annotations[v1.AnnotationTerminationTimestamp] != "")
		for _, p := range n.Reschedulable() {
			if forced || !s.staysOnDeletingNode(p) {
				out = append(out, p)
			}
		}
		out = append(out, restarting[n.Node.Name]...)
	}
	return out
}

// staysOnDeletingNode reports a pod no drain evicts without a deadline.
func (s *Snapshot) staysOnDeletingNode(p *corev1.Pod) bool {
	if _, blocked := doNotDisrupt(p, s.Now); blocked {
		return true
	}
	return slices.ContainsFunc(s.covering(p), neverAllows)
}

// neverAllows reports a budget that allows no voluntary disruption
// whatever the pods' health: maxUnavailable 0 or 0%, minAvailable 100%.
func neverAllows(pdb *policyv1.PodDisruptionBudget) bool {
	zero := func(v *intstr.IntOrString) bool {
		return v != nil && ((v.Type == intstr.Int && v.IntVal == 0) || (v.Type == intstr.String && v.StrVal == "0%"))
	}
	full := pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.String && pdb.Spec.MinAvailable.StrVal == "100%"
	return zero(pdb.Spec.MaxUnavailable) || full
}
