package state

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Drift says whether a node no longer matches what its NodePool and node
// class would launch now, and why: the NodePool's template or the node
// class changed since its NodeClaim was made (the hashes stamped on it),
// the NodePool's requirements no longer admit its labels, or the cloud's
// rules for the class say so (AMI, subnet, security groups, ...); and,
// an hour after the NodeClaim was made, when the class no longer offers
// its instance type where and as it runs. The rules apply in the
// reference's order, so the reason is the one it gives. claim is nil for
// a node without a NodeClaim, class nil when it does not exist, inst nil
// when the instance is not known. np is nil when the node has no NodePool
// (no label) or it does not exist: such a node is not drifted, as the
// reference drifts only NodeClaims of a NodePool. Build computes every node's
// drift with it; the NodeClaim lifecycle writes the Drifted condition
// from it.
func Drift(claim *v1.NodeClaim, labels map[string]string, np *v1.NodePool, class *cloudprovider.NodeClass, inst *cloudprovider.Instance, now time.Time) cloudprovider.Drift {
	return newPoolDrift(np).drifted(claim, labels, class, inst, now)
}

// InstanceTypeNotFoundAfter is how long after its NodeClaim was made a
// node is checked against the instance types its class offers now.
const InstanceTypeNotFoundAfter = time.Hour

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
	reqs := make([]corev1.NodeSelectorRequirement, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, r.NodeSelectorRequirement())
	}
	return &poolDrift{np: np, hash: NodePoolHash(np), reqs: scheduling.NewRequirements(reqs...)}
}

func (p *poolDrift) drifted(claim *v1.NodeClaim, labels map[string]string, class *cloudprovider.NodeClass, inst *cloudprovider.Instance, now time.Time) cloudprovider.Drift {
	if p.np == nil {
		return cloudprovider.Drift{}
	}
	if claim != nil {
		// The NodeClaim's labels are what it was launched as; a label
		// put on the node by hand does not drift it.
		labels = claim.Labels
	}
	if d := p.nodePool(claim, labels); d.Drifted() {
		return d
	}
	if class == nil {
		return cloudprovider.Drift{}
	}
	// The class's stamp before its instance types: a class's types leave
	// out those its settings exclude (Nitro Enclaves, nested
	// virtualization), which the reference keeps without an offering, so
	// a change of those settings is the class's change, as the
	// reference says, not a type gone.
	if same, equal := class.Stamp.Stamped(claim); same && !equal {
		return cloudprovider.Drift{Reason: v1.ReasonNodeClassDrifted, Message: fmt.Sprintf("%s %s changed since the NodeClaim was made", class.Kind, class.Name)}
	}
	if d := typeNotFound(claim, labels, class, now); d.Drifted() {
		return d
	}
	if class.Drift == nil {
		return cloudprovider.Drift{}
	}
	return class.Drift.Drifted(claim, labels, inst)
}

func (p *poolDrift) nodePool(claim *v1.NodeClaim, labels map[string]string) cloudprovider.Drift {
	if claim != nil && claim.Annotations[AnnotationNodePoolHashVersion] == HashVersion && claim.Annotations[AnnotationNodePoolHash] != p.hash {
		return cloudprovider.Drift{Reason: v1.ReasonNodePoolDrifted, Message: fmt.Sprintf("NodePool %s's template changed since the NodeClaim was made", p.np.Name)}
	}
	if bad := scheduling.LabelRequirements(labels).Compatible(p.reqs, nil); bad != nil {
		value, ok := labels[bad.Key]
		if !ok {
			return cloudprovider.Drift{Reason: v1.ReasonRequirementsDrifted,
				Message: fmt.Sprintf("NodePool %s's requirements need a %s label the NodeClaim does not have (they require %s)", p.np.Name, bad.Key, bad.Pod)}
		}
		return cloudprovider.Drift{Reason: v1.ReasonRequirementsDrifted,
			Message: fmt.Sprintf("NodePool %s's requirements no longer admit %s=%s (they require %s)", p.np.Name, bad.Key, value, bad.Pod)}
	}
	return cloudprovider.Drift{}
}

// typeNotFound: a NodeClaim made over an hour ago whose instance type
// the class no longer offers, or offers nowhere it could run as it does
// (its zone and capacity type), has drifted. Unknown (no drift) when the
// class's instance types are not known.
func typeNotFound(claim *v1.NodeClaim, labels map[string]string, class *cloudprovider.NodeClass, now time.Time) cloudprovider.Drift {
	if claim == nil || class.InstanceTypes == nil || now.Sub(claim.CreationTimestamp.Time) <= InstanceTypeNotFoundAfter {
		return cloudprovider.Drift{}
	}
	name := labels[corev1.LabelInstanceTypeStable]
	for _, it := range class.InstanceTypes {
		if it.Name != name {
			continue
		}
		if offersAsRunning(it, labels) {
			return cloudprovider.Drift{}
		}
		return cloudprovider.Drift{Reason: v1.ReasonInstanceTypeNotFound,
			Message: fmt.Sprintf("%s %s no longer offers %s in %s as %s", class.Kind, class.Name, name, labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType])}
	}
	return cloudprovider.Drift{Reason: v1.ReasonInstanceTypeNotFound, Message: fmt.Sprintf("%s %s no longer offers instance type %s", class.Kind, class.Name, name)}
}

// offersAsRunning: one of the type's offerings, available or not, is in
// the node's zone and of its capacity type; a reserved node's may be an
// on-demand one (its reservation may end).
func offersAsRunning(it *scheduling.InstanceType, labels map[string]string) bool {
	zone, zoneSet := labels[corev1.LabelTopologyZone]
	ct, ctSet := labels[v1.LabelCapacityType]
	for _, o := range it.Offerings {
		if zoneSet && o.Zone != zone {
			continue
		}
		if ctSet && o.CapacityType != ct && (ct != v1.CapacityTypeReserved || o.CapacityType != v1.CapacityTypeOnDemand) {
			continue
		}
		return true
	}
	return false
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
