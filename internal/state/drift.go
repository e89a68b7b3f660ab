package state

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Drift says whether a node no longer matches what its NodePool and node
// class would launch now, and why: the NodePool's template or the node
// class changed since its NodeClaim was made (the hashes stamped on it),
// the NodePool's requirements no longer admit its labels, or the cloud's
// rules for the class say so (AMI, subnet, security groups, ...). claim
// is nil for a node without a NodeClaim, np and class nil when they do
// not exist, inst nil when the instance is not known. Build computes
// every node's drift with it; the NodeClaim lifecycle writes the Drifted
// condition from it.
func Drift(claim *v1.NodeClaim, labels map[string]string, np *v1.NodePool, class *cloudprovider.NodeClass, inst *cloudprovider.Instance) cloudprovider.Drift {
	return newPoolDrift(np).drifted(claim, labels, class, inst)
}

// poolDrift is what drift reads of a NodePool, computed once for all its
// nodes.
type poolDrift struct {
	np   *v1.NodePool
	hash string
	reqs scheduling.Requirements
}

func newPoolDrift(np *v1.NodePool) *poolDrift {
	if np == nil {
		return &poolDrift{}
	}
	return &poolDrift{np: np, hash: NodePoolHash(np), reqs: scheduling.NodePoolFromObject(np, nil, nil, nil).Requirements}
}

func (p *poolDrift) drifted(claim *v1.NodeClaim, labels map[string]string, class *cloudprovider.NodeClass, inst *cloudprovider.Instance) cloudprovider.Drift {
	if d := p.nodePool(claim, labels); d.Drifted() {
		return d
	}
	if class == nil {
		return cloudprovider.Drift{}
	}
	if same, equal := class.Stamp.Stamped(claim); same && !equal {
		return cloudprovider.Drift{Reason: v1.ReasonNodeClassDrifted, Message: fmt.Sprintf("%s %s changed since the NodeClaim was made", class.Kind, class.Name)}
	}
	if class.Drift == nil {
		return cloudprovider.Drift{}
	}
	return class.Drift.Drifted(claim, labels, inst)
}

func (p *poolDrift) nodePool(claim *v1.NodeClaim, labels map[string]string) cloudprovider.Drift {
	if p.np == nil {
		return cloudprovider.Drift{}
	}
	if claim != nil && claim.Annotations[AnnotationNodePoolHashVersion] == HashVersion && claim.Annotations[AnnotationNodePoolHash] != p.hash {
		return cloudprovider.Drift{Reason: v1.ReasonNodePoolDrifted, Message: fmt.Sprintf("NodePool %s's template changed since the NodeClaim was made", p.np.Name)}
	}
	for _, key := range p.reqs.Keys() {
		if value, ok := labels[key]; ok && !p.reqs[key].Has(value) {
			return cloudprovider.Drift{Reason: v1.ReasonRequirementsDrifted,
				Message: fmt.Sprintf("NodePool %s's requirements no longer admit %s=%s (they require %s)", p.np.Name, key, value, p.reqs[key])}
		}
	}
	return cloudprovider.Drift{}
}

// NodeLabels are a node's labels over its NodeClaim's.
func NodeLabels(nc *v1.NodeClaim, node *corev1.Node) map[string]string {
	out := map[string]string{}
	if nc != nil {
		for k, v := range nc.Labels {
			out[k] = v
		}
	}
	if node != nil {
		for k, v := range node.Labels {
			out[k] = v
		}
	}
	return out
}
