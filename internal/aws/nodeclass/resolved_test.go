package nodeclass_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

func pool() *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: nodeclass.Kind, Name: "default"}
	return np
}

// The EC2NodeClass hash changes with what shapes an instance directly,
// not with the selector terms (what they select is compared instead) nor
// with the family written out where the alias implies it, as the
// reference's hash.
func TestHash(t *testing.T) {
	class := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{Role: "r", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	h := nodeclass.Hash(class)
	class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20251110"}}
	if nodeclass.Hash(class) != h {
		t.Error("AMI selector terms changed the EC2NodeClass hash (what they select is compared instead)")
	}
	class.Spec.AMIFamily = new(awsv1.AMIFamilyAL2023)
	if nodeclass.Hash(class) != h {
		t.Error("amiFamily AL2023 written out beside alias al2023 changed the EC2NodeClass hash")
	}
	class.Spec.IPPrefixCount = new(int32(2))
	if nodeclass.Hash(class) != h {
		t.Error("ipPrefixCount changed the EC2NodeClass hash (the reference's leaves it out)")
	}
	class.Spec.AMIFamily, class.Spec.IPPrefixCount = nil, nil
	bottlerocket := class.DeepCopy()
	bottlerocket.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	if nodeclass.Hash(bottlerocket) == h {
		t.Error("a change of family (al2023 to bottlerocket) did not change the EC2NodeClass hash")
	}
	class.Spec.UserData = new(string)
	if nodeclass.Hash(class) == h {
		t.Error("userData did not change the EC2NodeClass hash")
	}
	// Any kubelet field takes part, those nodewright does not read too.
	kubelet := nodeclass.Hash(class)
	class.Spec.Kubelet = awsv1.KubeletConfiguration{"serializeImagePulls": {Raw: []byte("false")}}
	if nodeclass.Hash(class) == kubelet {
		t.Error("spec.kubelet.serializeImagePulls did not change the EC2NodeClass hash")
	}
	class.Spec.Kubelet, class.Spec.UserData = nil, nil
	// A field left out hashes as before it existed: an upgrade drifts
	// nothing.
	if got := nodeclass.Hash(&awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{Role: "r", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, EnclaveOptions: nil}}); got != h {
		t.Errorf("an EC2NodeClass without enclaveOptions hashes %s, not %s", got, h)
	}
}

// Each launch setting of the EC2NodeClass drifts nodes made before it
// changed; a node outside the placement group the EC2NodeClass resolves
// now has drifted too, naming both groups.
func TestLaunchSettingsDrift(t *testing.T) {
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{Role: "r"}}
	nc := state.NodeClaimFor(pool(), nodeclass.Rules(class), &scheduling.PlannedNodeClaim{})
	for name, change := range map[string]func(*awsv1.EC2NodeClassSpec){
		"cpuOptions":     func(s *awsv1.EC2NodeClassSpec) { s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: new(string)} },
		"enclaveOptions": func(s *awsv1.EC2NodeClassSpec) { s.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true} },
		"networkInterfaces": func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []*awsv1.NetworkInterface{{InterfaceType: "interface"}}
		},
		"connectionTracking": func(s *awsv1.EC2NodeClassSpec) {
			s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: new(int32)}
		},
		"placementGroupSelector": func(s *awsv1.EC2NodeClassSpec) {
			s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{ID: new(string)}
		},
	} {
		changed := class.DeepCopy()
		change(&changed.Spec)
		if d := state.Drift(nc, nil, pool(), nodeclass.Rules(changed), nil, time.Time{}); d.Reason != v1.ReasonNodeClassDrifted || !strings.Contains(d.Message, "EC2NodeClass default changed") {
			t.Errorf("%s set: drift %+v, want %s", name, d, v1.ReasonNodeClassDrifted)
		}
	}
	class.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: new(string)}
	class.Status.PlacementGroup = &awsv1.PlacementGroup{ID: "pg-0new", Name: "training", Strategy: "cluster"}
	nc = state.NodeClaimFor(pool(), nodeclass.Rules(class), &scheduling.PlannedNodeClaim{})
	nc.Labels[awsv1.LabelPlacementGroupID] = "pg-0new" // as its launch labels it
	// The AMI rule comes first; until it can tell, nothing else is told.
	class.Status.AMIs = []awsv1.AMI{{ID: "ami-0cur"}}
	nc.Status.ImageID = "ami-0cur"
	if d := state.Drift(nc, nil, pool(), nodeclass.Rules(class), nil, time.Time{}); d.Drifted() {
		t.Errorf("a node in the selected group drifted: %+v", d)
	}
	// The NodeClaim's labels are read, not the node's.
	nc.Labels[awsv1.LabelPlacementGroupID] = "pg-0old"
	d := state.Drift(nc, map[string]string{awsv1.LabelPlacementGroupID: "pg-0new"}, pool(), nodeclass.Rules(class), nil, time.Time{})
	if d.Reason != awsv1.ReasonPlacementGroupDrifted || !strings.Contains(d.Message, "pg-0old") || !strings.Contains(d.Message, "pg-0new") {
		t.Errorf("a node in another group: %+v; want %s naming both groups", d, awsv1.ReasonPlacementGroupDrifted)
	}
}

// What an instance has (AMI, subnet, security groups) drifts it when the
// EC2NodeClass no longer selects it; what the status does not know yet
// (nothing resolved) drifts nothing.
func TestInstanceDrift(t *testing.T) {
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	class.Status.AMIs = []awsv1.AMI{{ID: "ami-new"}}
	class.Status.Subnets = []awsv1.Subnet{{ID: "subnet-a"}}
	class.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}}
	unresolved := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	withImage := func(id string) *v1.NodeClaim { return &v1.NodeClaim{Status: v1.NodeClaimStatus{ImageID: id}} }
	for name, tc := range map[string]struct {
		class *awsv1.EC2NodeClass
		claim *v1.NodeClaim
		inst  *cloudprovider.Instance
		want  string
	}{
		"matches":                   {class: class, claim: withImage("ami-new"), inst: &cloudprovider.Instance{SubnetID: "subnet-a", SecurityGroupIDs: []string{"sg-2", "sg-1"}}},
		"old AMI":                   {class: class, claim: withImage("ami-old"), want: awsv1.ReasonAMIDrifted},
		"old AMI, no NodeClaim":     {class: class, inst: &cloudprovider.Instance{ImageID: "ami-old"}, want: awsv1.ReasonAMIDrifted},
		"subnet no longer selected": {class: class, claim: withImage("ami-new"), inst: &cloudprovider.Instance{SubnetID: "subnet-b", SecurityGroupIDs: []string{"sg-1", "sg-2"}}, want: awsv1.ReasonSubnetDrifted},
		"a security group less":     {class: class, claim: withImage("ami-new"), inst: &cloudprovider.Instance{SecurityGroupIDs: []string{"sg-1"}}, want: awsv1.ReasonSecurityGroupsDrifted},
		"instance not known":        {class: class, claim: withImage("ami-new")},
		"nothing resolved yet":      {class: unresolved, claim: withImage("ami-old"), inst: &cloudprovider.Instance{SubnetID: "subnet-b", SecurityGroupIDs: []string{"sg-9"}}},
	} {
		if got := (nodeclass.Drift{Class: tc.class}).Drifted(tc.claim, nil, tc.inst); got.Reason != tc.want {
			t.Errorf("%s: drift %+v, want %q", name, got, tc.want)
		}
	}
}
