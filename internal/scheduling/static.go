package scheduling

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Static opens up to n NodeClaims from a static NodePool (one with
// replicas), for no pod in particular. Each meets the pool's requirements,
// lists every instance type that also fits the DaemonSets that would run
// on it (cheapest first), and takes a place in one of the pool's capacity
// reservations first when the pool allows reserved capacity and one has
// room. nodes are the cluster's nodes and NodeClaims in flight: their
// reservation places are taken. Static returns the NodeClaims it opened
// and, when fewer than n, why it could open no more (the pool's node
// limit, or no instance type).
func Static(np *NodePool, nodes []*Node, daemonSets []*appsv1.DaemonSet, n int, policy Policy) ([]*PlannedNodeClaim, string) {
	opened := *np
	opened.Static = false
	s := newSolver(Input{NodePools: []*NodePool{&opened}, Nodes: nodes, DaemonSets: daemonSets, Policy: policy})
	pl := s.pools[0]
	// The NodeClaims are opened as if for a pod that asks for nothing and
	// tolerates every taint, so reservations, minValues, limits and the
	// DaemonSet overhead count exactly as for pods.
	anyPod := newPodInfo(&corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}, false)
	why := ""
	for range n {
		t, c, reason := s.newClaim(anyPod, pl)
		if t == nil {
			why = reason.Reason
			break
		}
		s.commit(anyPod, t, c)
		t.requests = t.requests.Sub(anyPod.requests) // the pod count it added
		// Sized for nothing, the NodeClaim keeps every type that fits,
		// not only those of the shape a pod would choose.
		if types, _ := pl.candidatesByKey(fingerprint(t.reqs), t.reqs, Resources{}); len(types) > 0 {
			t.setTypes(types)
		}
	}
	plan := s.finish()
	for _, c := range plan.NodeClaims {
		c.Pods = nil
	}
	return plan.NodeClaims, why
}

// InFlight is a planned NodeClaim as a decision sees one in flight: its
// requirements, the taints its nodes get, and the least allocatable any
// of its instance types offers (whichever launches, the pods must fit).
func (c *PlannedNodeClaim) InFlight(taints []corev1.Taint) *Node {
	var alloc Resources
	for i, it := range c.InstanceTypes {
		if i == 0 {
			alloc = it.Allocatable
			continue
		}
		for r := range alloc {
			alloc[r] = min(alloc[r], it.Allocatable[r])
		}
	}
	return &Node{Name: c.Name, Requirements: c.Requirements, Taints: taints, Allocatable: alloc, Launching: true, Starting: 2}
}
