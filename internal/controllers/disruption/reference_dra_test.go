package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The reference's consolidation_dra_test.go: consolidation of nodes whose
// pods hold devices through Dynamic Resource Allocation (ResourceClaims
// allocated from ResourceSlices). The cluster has the NVIDIA driver's
// DeviceClass, each GPU node's ResourceSlice (its instance type's GPUs)
// and the pods' claims allocated on their nodes.

const rbDRA = "Consolidation/DRA > "

var _ = restate("consolidation_dra_test.go",
	refCase{ref: rbDRA + "re-allocates a candidate pod's device onto a replacement (B, positive)",
		run: func(t *testing.T) {
			c := rbDRACluster(t)
			c.node("gpu", "g5.xlarge", onDemand)
			c.pods("gpu", 1, "100m", "128Mi", c.rbClaim("gpu", "gpu-claim"))
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
				t.Fatalf("commands %q, want the g5.xlarge replaced by a cheaper GPU node", commands(d))
			}
			for _, it := range d.Commands[0].Replacements[0].InstanceTypes {
				if !rbHasGPU(it) {
					t.Fatalf("replacement may be %s, which has no GPU for the pod's claim", it.Name)
				}
			}
		}},
	refCase{ref: rbDRA + "does not target a candidate node's published device (A, positive)",
		gap: "the reference's fake provider publishes cluster-wide devices its candidate node also lists; nodewright counts a node's own ResourceSlices only, and plans a moving pod's claim on the devices of the instance types it may launch (see \"re-allocates a candidate pod's device onto a replacement (B, positive)\")"},
	refCase{ref: rbDRA + "does not consolidate when the candidate's claim cannot be satisfied elsewhere (B, negative)",
		run: func(t *testing.T) {
			c := rbDRACluster(t)
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}})
			c.node("gpu", "g4dn.xlarge", onDemand)
			c.pods("gpu", 1, "100m", "128Mi", c.rbClaim("gpu", "gpu-claim"))
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("commands %q, want none: the claim has no device elsewhere", commands(d))
			}
		}},
	refCase{ref: rbDRA + "does not free a device held by a live pod on a non-candidate node (A, negative)",
		gap: "the reference's case is a cluster-wide device (a ResourceSlice for all nodes) held by a live pod; nodewright's catalog and planning know node-local devices only"},
	refCase{ref: rbDRA + "re-allocates devices from multiple candidate nodes onto one replacement (B, multi-candidate)",
		run: func(t *testing.T) {
			c := rbDRACluster(t)
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"g4dn"}})
			c.node("a", "g4dn.12xlarge", onDemand)
			c.pods("a", 1, "100m", "128Mi", c.rbClaim("a", "claim-a"))
			c.node("b", "g4dn.12xlarge", onDemand)
			c.pods("b", 1, "100m", "128Mi", c.rbClaim("b", "claim-b"))
			d := c.decide()
			removed := 0
			for _, cmd := range d.Commands {
				removed += len(cmd.NodeNames())
				for _, r := range cmd.Replacements {
					for _, it := range r.InstanceTypes {
						if !rbHasGPU(it) {
							t.Fatalf("replacement may be %s, which has no GPU", it.Name)
						}
					}
				}
			}
			if removed == 0 {
				t.Fatalf("commands %q, want the two four-GPU nodes, one GPU used on each, consolidated", commands(d))
			}
		}},
	refCase{ref: rbDRA + "reclaims only the candidate's share of a shared device, leaving the live pod's share (B, partial)",
		gap: "shares of a multi-allocatable device (consumable capacity) are not modelled: a shared device counts as taken"},
)

// rbDRACluster: a WhenEmptyOrUnderutilized NodePool of on-demand nodes
// of any amd64 type.
func rbDRACluster(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	return c
}

// rbClaim gives a pod a ResourceClaim of one GPU of its node, allocated
// there; the node's driver has published its GPUs.
func (c *cluster) rbClaim(node, name string) func(*corev1.Pod) {
	if !slices.ContainsFunc(c.objs.DeviceClasses, func(dc *resourcev1.DeviceClass) bool { return dc.Name == "gpu.nvidia.com" }) {
		c.objs.DeviceClasses = append(c.objs.DeviceClasses, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'gpu.nvidia.com'"}}}}})
	}
	if !slices.ContainsFunc(c.objs.ResourceSlices, func(s *resourcev1.ResourceSlice) bool { return *s.Spec.NodeName == node }) {
		var typ string
		for _, n := range c.objs.Nodes {
			if n.Name == node {
				typ = n.Labels[corev1.LabelInstanceTypeStable]
			}
		}
		for _, set := range c.types[typ].Devices {
			c.objs.ResourceSlices = append(c.objs.ResourceSlices, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + set.Driver},
				Spec: resourcev1.ResourceSliceSpec{Driver: set.Driver, NodeName: ptr.To(node), Devices: set.Devices, Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}})
		}
	}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}
	claim.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: node, Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	c.objs.ResourceClaims = append(c.objs.ResourceClaims, claim)
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: p.Name, UID: p.UID}}
	}
}

// rbHasGPU reports whether an instance type has a GPU the NVIDIA driver
// publishes.
func rbHasGPU(it *scheduling.InstanceType) bool {
	return slices.ContainsFunc(it.Devices, func(s scheduling.DeviceSet) bool { return s.Driver == "gpu.nvidia.com" && len(s.Devices) > 0 })
}
