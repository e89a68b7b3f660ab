package scheduling

import (
	corev1 "k8s.io/api/core/v1"

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
