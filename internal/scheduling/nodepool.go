package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// NodePoolFromObject converts a NodePool object, with the instance types
// and AMIs of its node class and the capacity its nodes use now.
func NodePoolFromObject(np *v1.NodePool, types []*InstanceType, amis []AMI, usage corev1.ResourceList) *NodePool {
	reqs := Requirements{}
	for _, r := range np.Spec.Template.Spec.Requirements {
		req := NewRequirement(r.Key, r.Operator, r.Values...)
		if r.MinValues != nil {
			req.MinValues = *r.MinValues
		}
		reqs.Add(req)
	}
	reqs.AddAll(LabelRequirements(np.Spec.Template.ObjectMeta.Labels))
	reqs.Add(NewRequirement(v1.LabelNodePool, corev1.NodeSelectorOpIn, np.Name))
	weight := int32(0)
	if np.Spec.Weight != nil {
		weight = *np.Spec.Weight
	}
	nodeClass := ""
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		nodeClass = ref.Name
	}
	return &NodePool{
		Name:          np.Name,
		Weight:        weight,
		Static:        np.Spec.Replicas != nil,
		Requirements:  reqs,
		Taints:        np.Spec.Template.Spec.Taints,
		StartupTaints: np.Spec.Template.Spec.StartupTaints,
		Limits:        np.Spec.Limits,
		Usage:         usage,
		NodeClass:     nodeClass,
		InstanceTypes: types,
		AMIs:          amis,
	}
}

// AddNodeUsage adds a node's (or NodeClaim's) capacity, and one to
// "nodes", to a NodePool's usage, which it returns (made when nil).
func AddNodeUsage(usage, capacity corev1.ResourceList) corev1.ResourceList {
	usage = AddCapacity(usage, capacity)
	nodes := usage["nodes"]
	nodes.Add(*resource.NewQuantity(1, resource.DecimalSI))
	usage["nodes"] = nodes
	return usage
}

// AddCapacity adds capacity to a NodePool's usage without counting a
// node, and returns the usage (made when nil).
func AddCapacity(usage, capacity corev1.ResourceList) corev1.ResourceList {
	if usage == nil {
		usage = corev1.ResourceList{}
	}
	for k, q := range capacity {
		sum := usage[k]
		sum.Add(q)
		usage[k] = sum
	}
	return usage
}
