package nodeclass

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// The EC2NodeClass hash a NodeClaim carries, with the version of the
// hashing (nodewright's, distinct from every version the reference
// stamps, so NodeClaims it made are restamped when taken over).
const (
	AnnotationHash        = awsv1.Group + "/ec2nodeclass-hash"
	AnnotationHashVersion = awsv1.Group + "/ec2nodeclass-hash-version"
	// HashVersion is bumped whenever the hash of an unchanged
	// EC2NodeClass changes (nodewright-v2: spec.kubelet became an open
	// map, hashed by its JSON; nodewright-v3: the family as resolved,
	// ipPrefixCount left out; nodewright-v4: hashed as the reference
	// hashes, lists as sets and quantities by value): NodeClaims stamped
	// before are restamped, not drifted.
	HashVersion = "nodewright-v4"
)

// Kind is the kind NodePools name in their nodeClassRef.
const Kind = "EC2NodeClass"

// Hash hashes the EC2NodeClass fields that shape an instance directly,
// as the reference's hash takes them: the selector terms are not hashed
// (what they select, AMIs, subnets and security groups, is compared with
// what the instance has), nor is ipPrefixCount; the AMI family is hashed
// as resolved, so writing out the family an alias implies (amiFamily:
// AL2023 beside alias al2023@latest) or leaving it out drifts nothing.
func Hash(class *awsv1.EC2NodeClass) string {
	spec := class.Spec.DeepCopy()
	spec.SubnetSelectorTerms, spec.SecurityGroupSelectorTerms, spec.AMISelectorTerms, spec.CapacityReservationSelectorTerms = nil, nil, nil, nil
	spec.AMIFamily, spec.IPPrefixCount = nil, nil
	// A volume's size is hashed as the quantity it is, in its canonical
	// form (the reference hashes its String()): 102400Mi is 100Gi.
	for _, bdm := range spec.BlockDeviceMappings {
		if bdm == nil || bdm.EBS == nil || bdm.EBS.VolumeSize == nil {
			continue
		}
		if q, err := resource.ParseQuantity(*bdm.EBS.VolumeSize); err == nil {
			bdm.EBS.VolumeSize = ptr.To(q.String())
		}
	}
	// The kubelet configuration is hashed by its JSON (keys sorted), as
	// the reference hashes its String(): "null" when empty.
	kubelet := []byte("null")
	if len(spec.Kubelet) > 0 {
		var err error
		if kubelet, err = json.Marshal(spec.Kubelet); err != nil {
			panic(err) // raw JSON values always marshal
		}
	}
	spec.Kubelet = nil
	return state.DriftHash([]any{spec, Family(class), string(kubelet)})
}

// Stamp is the EC2NodeClass hash its NodeClaims carry.
func Stamp(class *awsv1.EC2NodeClass) cloudprovider.Stamp {
	return cloudprovider.Stamp{HashAnnotation: AnnotationHash, VersionAnnotation: AnnotationHashVersion, Hash: Hash(class), Version: HashVersion}
}

// Resolved is an EC2NodeClass as every decision reads it, from its
// status (what its controller resolved): its AMIs, or why it is not
// ready; its stamp and drift rules; and the instance types given (nil
// where only drift matters).
func Resolved(class *awsv1.EC2NodeClass, types []*scheduling.InstanceType) *cloudprovider.NodeClass {
	out := Rules(class)
	if out.NotReady = NotReady(class); out.NotReady != nil {
		return out
	}
	out.InstanceTypes, out.AMIs = types, AMIsOf(class)
	return out
}

// Rules is an EC2NodeClass's stamp and drift rules alone: what the
// offline tools start from, resolving its instance types and AMIs their
// own way.
func Rules(class *awsv1.EC2NodeClass) *cloudprovider.NodeClass {
	return &cloudprovider.NodeClass{Kind: Kind, Name: class.Name, Generation: class.Generation, Stamp: Stamp(class), Drift: Drift{Class: class},
		RegistrationTaints: userdata.ExtraTaints(Family(class), ptr.Deref(class.Spec.UserData, ""))}
}

// AMIsOf are the EC2NodeClass's resolved AMIs (its status) as the
// scheduler needs them.
func AMIsOf(class *awsv1.EC2NodeClass) []scheduling.AMI {
	out := make([]scheduling.AMI, 0, len(class.Status.AMIs))
	for _, a := range class.Status.AMIs {
		out = append(out, scheduling.AMI{ID: a.ID, Requirements: scheduling.NewRequirements(a.Requirements...)})
	}
	return out
}

// NotReady reads an EC2NodeClass's status: nil when it is Ready, else
// why not (its first failing condition).
func NotReady(class *awsv1.EC2NodeClass) *cloudprovider.NotReady {
	c := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionReady)
	if c != nil && c.Status == metav1.ConditionTrue {
		return nil
	}
	if c == nil {
		return &cloudprovider.NotReady{Message: "has not been resolved yet"}
	}
	for _, cc := range class.Status.Conditions {
		if cc.Type != awsv1.ConditionReady && cc.Status == metav1.ConditionFalse {
			return &cloudprovider.NotReady{Condition: cc.Type, Reason: cc.Reason, Message: fmt.Sprintf("is not ready (%s: %s)", cc.Reason, cc.Message)}
		}
	}
	return &cloudprovider.NotReady{Condition: awsv1.ConditionReady, Reason: c.Reason, Message: "is not ready: " + c.Message}
}

// Drift holds the EC2NodeClass's drift rules: a NodeClaim has drifted
// when its node is in another placement group than the class selects,
// or its instance runs an AMI, in a subnet or with security groups the
// class no longer selects. Rules the class's status cannot check (not
// resolved yet) do not apply.
type Drift struct {
	Class *awsv1.EC2NodeClass
}

// Drifted implements cloudprovider.Drifter.
func (d Drift) Drifted(claim *v1.NodeClaim, labels map[string]string, inst *cloudprovider.Instance) cloudprovider.Drift {
	for _, rule := range []func(*v1.NodeClaim, map[string]string, *cloudprovider.Instance) cloudprovider.Drift{d.placementGroup, d.ami, d.subnet, d.securityGroups} {
		if out := rule(claim, labels, inst); out.Drifted() {
			return out
		}
	}
	return cloudprovider.Drift{}
}

func (d Drift) placementGroup(_ *v1.NodeClaim, labels map[string]string, _ *cloudprovider.Instance) cloudprovider.Drift {
	pg, have := d.Class.Status.PlacementGroup, labels[awsv1.LabelPlacementGroupID]
	if pg == nil || d.Class.Spec.PlacementGroupSelector == nil || have == "" || have == pg.ID {
		return cloudprovider.Drift{}
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonPlacementGroupDrifted,
		Message: fmt.Sprintf("the node is in placement group %s, not %s (%s) that EC2NodeClass %s selects now", have, pg.ID, pg.Name, d.Class.Name)}
}

func (d Drift) ami(claim *v1.NodeClaim, _ map[string]string, inst *cloudprovider.Instance) cloudprovider.Drift {
	img := ""
	switch {
	case claim != nil && claim.Status.ImageID != "":
		img = claim.Status.ImageID
	case inst != nil:
		img = inst.ImageID
	}
	amis := d.Class.Status.AMIs
	if img == "" || len(amis) == 0 || slices.ContainsFunc(amis, func(a awsv1.AMI) bool { return a.ID == img }) {
		return cloudprovider.Drift{}
	}
	ids := make([]string, 0, len(amis))
	for _, a := range amis {
		ids = append(ids, a.ID)
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonAMIDrifted,
		Message: fmt.Sprintf("AMI %s is no longer selected by EC2NodeClass %s (it selects %s)", img, d.Class.Name, strings.Join(ids, ", "))}
}

func (d Drift) subnet(_ *v1.NodeClaim, labels map[string]string, inst *cloudprovider.Instance) cloudprovider.Drift {
	subnets := d.Class.Status.Subnets
	if len(subnets) == 0 {
		return cloudprovider.Drift{}
	}
	if inst == nil || inst.SubnetID == "" {
		// Without the instance (offline, from a dump): a node in a zone
		// where the class selects no subnet runs in one it does not select.
		zone := labels[corev1.LabelTopologyZone]
		if zone == "" || slices.ContainsFunc(subnets, func(s awsv1.Subnet) bool { return s.Zone == zone }) {
			return cloudprovider.Drift{}
		}
		return cloudprovider.Drift{Reason: awsv1.ReasonSubnetDrifted, Message: fmt.Sprintf("EC2NodeClass %s selects no subnet in %s, the node's zone", d.Class.Name, zone)}
	}
	if slices.ContainsFunc(subnets, func(s awsv1.Subnet) bool { return s.ID == inst.SubnetID }) {
		return cloudprovider.Drift{}
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonSubnetDrifted, Message: fmt.Sprintf("subnet %s is no longer selected by EC2NodeClass %s", inst.SubnetID, d.Class.Name)}
}

func (d Drift) securityGroups(_ *v1.NodeClaim, _ map[string]string, inst *cloudprovider.Instance) cloudprovider.Drift {
	if inst == nil || len(inst.SecurityGroupIDs) == 0 || len(d.Class.Status.SecurityGroups) == 0 {
		return cloudprovider.Drift{}
	}
	want := make([]string, 0, len(d.Class.Status.SecurityGroups))
	for _, g := range d.Class.Status.SecurityGroups {
		want = append(want, g.ID)
	}
	have := slices.Clone(inst.SecurityGroupIDs)
	slices.Sort(want)
	slices.Sort(have)
	if slices.Equal(want, have) {
		return cloudprovider.Drift{}
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonSecurityGroupsDrifted,
		Message: fmt.Sprintf("the instance's security groups %s are not the ones EC2NodeClass %s selects (%s)", strings.Join(have, ", "), d.Class.Name, strings.Join(want, ", "))}
}
