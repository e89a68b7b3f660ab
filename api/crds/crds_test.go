package crds_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/nodewright/nodewright/api/crds"
)

// The CRDs use Karpenter's group, version, names and scope, so they can
// replace Karpenter's in place and existing manifests keep working.
func TestCRDNamesMatchKarpenter(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	type identity struct {
		Group, Version string
		Names          apiextensionsv1.CustomResourceDefinitionNames
		Scope          apiextensionsv1.ResourceScope
		Status         bool
	}
	got := map[string]identity{}
	for _, crd := range all {
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("%s serves %d versions, want one", crd.Name, len(crd.Spec.Versions))
		}
		v := crd.Spec.Versions[0]
		got[crd.Name] = identity{crd.Spec.Group, v.Name, crd.Spec.Names, crd.Spec.Scope, v.Subresources != nil && v.Subresources.Status != nil}
	}
	karpenter := []string{"karpenter"}
	want := map[string]identity{
		"nodepools.karpenter.sh": {"karpenter.sh", "v1", apiextensionsv1.CustomResourceDefinitionNames{
			Plural: "nodepools", Singular: "nodepool", Kind: "NodePool", ListKind: "NodePoolList", Categories: karpenter,
		}, apiextensionsv1.ClusterScoped, true},
		"nodeclaims.karpenter.sh": {"karpenter.sh", "v1", apiextensionsv1.CustomResourceDefinitionNames{
			Plural: "nodeclaims", Singular: "nodeclaim", Kind: "NodeClaim", ListKind: "NodeClaimList", Categories: karpenter,
		}, apiextensionsv1.ClusterScoped, true},
		"ec2nodeclasses.karpenter.k8s.aws": {"karpenter.k8s.aws", "v1", apiextensionsv1.CustomResourceDefinitionNames{
			Plural: "ec2nodeclasses", Singular: "ec2nodeclass", Kind: "EC2NodeClass", ListKind: "EC2NodeClassList",
			ShortNames: []string{"ec2nc", "ec2ncs"}, Categories: karpenter,
		}, apiextensionsv1.ClusterScoped, true},
		"nodeoverlays.karpenter.sh": {"karpenter.sh", "v1alpha1", apiextensionsv1.CustomResourceDefinitionNames{
			Plural: "nodeoverlays", Singular: "nodeoverlay", Kind: "NodeOverlay", ListKind: "NodeOverlayList",
			ShortNames: []string{"overlays"}, Categories: karpenter,
		}, apiextensionsv1.ClusterScoped, true},
		"capacitybuffers.autoscaling.x-k8s.io": {"autoscaling.x-k8s.io", "v1beta1", apiextensionsv1.CustomResourceDefinitionNames{
			Plural: "capacitybuffers", Singular: "capacitybuffer", Kind: "CapacityBuffer", ListKind: "CapacityBufferList",
			ShortNames: []string{"cb"}, Categories: []string{"autoscaling"},
		}, apiextensionsv1.NamespaceScoped, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRD identities (-want +got):\n%s", diff)
	}
}
