package state

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// lifetimes works out, for every node, what disruption acts on besides
// its pods: whether it has drifted from its NodePool and node class, and
// when it expires. A NodeClaim gives both; with nodesWithoutClaims (a
// cluster dump of Nodes only), a node without one is measured by its
// labels and its NodePool's template, as its NodeClaim would have been
// made from it.
func (s *Snapshot) lifetimes(pools []*v1.NodePool, classes map[string]*cloudprovider.NodeClass, nodesWithoutClaims bool) {
	byName := make(map[string]*v1.NodePool, len(pools))
	drifts := make(map[string]*poolDrift, len(pools))
	for _, np := range pools {
		byName[np.Name] = np
	}
	for _, n := range s.Nodes {
		np := byName[n.NodePool]
		if np == nil || (n.NodeClaim == nil && !nodesWithoutClaims) {
			continue
		}
		n.expireAfter = np.Spec.Template.Spec.ExpireAfter
		if n.NodeClaim != nil {
			n.expireAfter = n.NodeClaim.Spec.ExpireAfter
		}
		// Drift is measured once the instance is launched, as the
		// reference measures it: a NodeClaim launched from an old
		// template is drifted before its node initializes.
		if !n.Launched() || n.Deleting() {
			continue
		}
		pd := drifts[np.Name]
		if pd == nil {
			pd = newPoolDrift(np)
			drifts[np.Name] = pd
		}
		var class *cloudprovider.NodeClass
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			class = classes[ref.Name]
		}
		if n.NodeClaim != nil && n.NodeClaim.Spec.NodeClassRef != nil {
			class = classes[n.NodeClaim.Spec.NodeClassRef.Name]
		}
		n.drift = pd.drifted(n.NodeClaim, NodeLabels(n.NodeClaim, n.Node), class, nil, s.Now)
	}
}

// Drift is why the node has drifted: what the objects say now (its
// NodePool's template, requirements, node class), or else what its
// NodeClaim's Drifted condition says (the lifecycle also compares the
// instance itself, which the objects do not show). Zero when it has not.
func (n *Node) Drift() cloudprovider.Drift {
	if n.drift.Drifted() {
		return n.drift
	}
	if n.NodeClaim == nil {
		return cloudprovider.Drift{}
	}
	if c := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionDrifted); c != nil && c.Status == "True" {
		return cloudprovider.Drift{Reason: c.Reason, Message: c.Message}
	}
	return cloudprovider.Drift{}
}

// CreatedAt is when the node's NodeClaim was made, or the node when it
// has none.
func (n *Node) CreatedAt() time.Time {
	if n.NodeClaim != nil {
		return n.NodeClaim.CreationTimestamp.Time
	}
	if n.Node != nil {
		return n.Node.CreationTimestamp.Time
	}
	return time.Time{}
}

// ExpiresAt is when the node expires: its NodeClaim's expireAfter (its
// NodePool's for a node without one) after it was made. False when it
// never does, or its NodePool is not known.
func (n *Node) ExpiresAt() (time.Time, bool) {
	if n.expireAfter == "" {
		return time.Time{}, false
	}
	after, never, err := n.expireAfter.Parse()
	if err != nil || never {
		return time.Time{}, false
	}
	return n.CreatedAt().Add(after), true
}
