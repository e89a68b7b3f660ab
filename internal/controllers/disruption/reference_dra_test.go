package disruption_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// The reference's consolidation_dra_test.go: consolidation of nodes whose
// pods hold devices through Dynamic Resource Allocation (ResourceClaims
// allocated from ResourceSlices). nodewright does not read
// ResourceClaims, ResourceSlices or DeviceClasses at all: a pod's
// spec.resourceClaims are ignored when its node's consolidation is
// planned, so the pod is placed by its CPU and memory alone, on any node
// or new instance type, device or not.

const rbDRA = "Consolidation/DRA > "

// rbNoDRA is what nodewright lacks for every case here.
const rbNoDRA = "nodewright has no Dynamic Resource Allocation: it reads no ResourceClaim, ResourceSlice or DeviceClass, so consolidation neither frees the devices a candidate's pods hold nor allocates their claims anywhere; "

var _ = restate("consolidation_dra_test.go",
	refCase{ref: rbDRA + "re-allocates a candidate pod's device onto a replacement (B, positive)",
		gap: rbNoDRA + "a g4dn.xlarge whose pod holds the node's GPU through a claim is replaced by the cheapest node for the pod's CPU and memory, an instance type without a GPU, where the claim cannot be allocated",
		run: func(t *testing.T) {
			c := rbDRACluster(t)
			c.node("gpu", "g4dn.xlarge", onDemand)
			c.pods("gpu", 1, "100m", "128Mi", rbClaim("gpu-claim"))
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
				t.Fatalf("commands %q, want the node replaced", commands(d))
			}
			for _, it := range d.Commands[0].Replacements[0].InstanceTypes {
				if !rbHasGPU(it.Requirements.Labels()) {
					t.Fatalf("replacement may be %s, which has no GPU for the pod's claim", it.Name)
				}
			}
		}},
	refCase{ref: rbDRA + "does not target a candidate node's published device (A, positive)",
		gap: rbNoDRA + "no node's published devices are known, so there is nothing to keep the candidate's own device from; its pod's replacement is planned without a GPU (as in \"re-allocates a candidate pod's device onto a replacement (B, positive)\")"},
	refCase{ref: rbDRA + "does not consolidate when the candidate's claim cannot be satisfied elsewhere (B, negative)",
		gap: rbNoDRA + "when no instance type of the NodePool has a GPU any more, the g4dn.xlarge whose pod holds its GPU through a claim is still replaced (here as drifted, its labels no longer admitted) by a t3a.micro, where the evicted pod's claim cannot be allocated; the claim never holds a node back",
		run: func(t *testing.T) {
			c := rbDRACluster(t)
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpIn, Values: []string{"0"}})
			c.node("gpu", "g4dn.xlarge", onDemand)
			c.pods("gpu", 1, "100m", "128Mi", rbClaim("gpu-claim"))
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("commands %q, want none: the claim has no device elsewhere", commands(d))
			}
		}},
	refCase{ref: rbDRA + "does not free a device held by a live pod on a non-candidate node (A, negative)",
		gap: rbNoDRA + "a candidate whose pod needs the only cluster-wide device, held by a live pod elsewhere, is consolidated all the same (its pod is placed by CPU and memory)",
		run: func(t *testing.T) {
			c := rbDRACluster(t)
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpIn, Values: []string{"0"}})
			c.node("live", "m7i.xlarge", onDemand)
			c.pods("live", 1, "100m", "128Mi", rbClaim("held-claim"))
			c.node("cand", "m7i.xlarge", onDemand)
			c.pods("cand", 1, "100m", "128Mi", rbClaim("candidate-claim"))
			d := c.decide()
			for _, cmd := range d.Commands {
				if slices.Contains(cmd.NodeNames(), "cand") {
					t.Errorf("commands %q, want cand kept: its claim has no device free", commands(d))
				}
			}
		}},
	refCase{ref: rbDRA + "re-allocates devices from multiple candidate nodes onto one replacement (B, multi-candidate)",
		gap: rbNoDRA + "two GPU nodes' pods are moved together onto whatever node their CPU and memory need, not onto one instance type with two GPUs"},
	refCase{ref: rbDRA + "reclaims only the candidate's share of a shared device, leaving the live pod's share (B, partial)",
		gap: rbNoDRA + "shares of a multi-allocatable device (consumable capacity) are not modelled at all"},
)

// rbDRACluster: a WhenEmptyOrUnderutilized NodePool of on-demand nodes
// of any amd64 type.
func rbDRACluster(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	return c
}

// rbClaim gives a pod a ResourceClaim (a GPU) for its container.
func rbClaim(name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
}

func rbHasGPU(labels map[string]string) bool {
	n := labels["karpenter.k8s.aws/instance-gpu-count"]
	return n != "" && n != "0"
}
