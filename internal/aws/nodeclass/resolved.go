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
	out.Drift = Drift{Class: class, Types: types}
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

// Drift holds the EC2NodeClass's drift rules, in the reference's order:
// a NodeClaim has drifted when its image is not the AMI the class would
// launch its instance type with now; else when its instance has other
// security groups than the class selects, runs in a subnet or a capacity
// reservation it does not select, or its node is in another placement
// group. The rules read the class's status: while the status lacks what
// a rule needs (no AMIs, subnets or security groups resolved yet), or the
// NodeClaim its image or a known instance type, nothing is decided.
type Drift struct {
	Class *awsv1.EC2NodeClass
	// Types are the class's instance types now; nil when not known (the
	// AMI rule then reads the instance type's labels off the NodeClaim).
	Types []*scheduling.InstanceType
}

// Drifted implements cloudprovider.Drifter.
func (d Drift) Drifted(claim *v1.NodeClaim, labels map[string]string, inst *cloudprovider.Instance) cloudprovider.Drift {
	ami, known := d.ami(claim, labels, inst)
	if ami.Drifted() {
		return ami
	}
	if inst == nil {
		// Offline, from a dump: what the objects alone tell.
		return first(d.subnet(labels, nil), d.placementGroup(labels))
	}
	if !known {
		return cloudprovider.Drift{}
	}
	if len(d.Class.Status.SecurityGroups) == 0 || len(d.Class.Status.Subnets) == 0 {
		return cloudprovider.Drift{}
	}
	return first(d.securityGroups(inst), d.subnet(labels, inst), d.capacityReservation(inst), d.placementGroup(labels))
}

func first(ds ...cloudprovider.Drift) cloudprovider.Drift {
	for _, d := range ds {
		if d.Drifted() {
			return d
		}
	}
	return cloudprovider.Drift{}
}

// placementGroup: the node is in another placement group than the one
// the class selects now (or in one while the class selects none, or in
// none while it selects one). Unknown while the selected group is not
// resolved.
func (d Drift) placementGroup(labels map[string]string) cloudprovider.Drift {
	have, want := labels[awsv1.LabelPlacementGroupID], ""
	if d.Class.Spec.PlacementGroupSelector != nil {
		if d.Class.Status.PlacementGroup == nil {
			return cloudprovider.Drift{}
		}
		want = d.Class.Status.PlacementGroup.ID
	}
	if have == want {
		return cloudprovider.Drift{}
	}
	switch {
	case want == "":
		return cloudprovider.Drift{Reason: awsv1.ReasonPlacementGroupDrifted,
			Message: fmt.Sprintf("the node is in placement group %s and EC2NodeClass %s selects none now", have, d.Class.Name)}
	case have == "":
		return cloudprovider.Drift{Reason: awsv1.ReasonPlacementGroupDrifted,
			Message: fmt.Sprintf("the node is in no placement group and EC2NodeClass %s selects %s (%s) now", d.Class.Name, want, d.Class.Status.PlacementGroup.Name)}
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonPlacementGroupDrifted,
		Message: fmt.Sprintf("the node is in placement group %s, not %s (%s) that EC2NodeClass %s selects now", have, want, d.Class.Status.PlacementGroup.Name, d.Class.Name)}
}

// ami: the NodeClaim's image is not the AMI the class would launch its
// instance type with now (the first of its AMIs the type meets, as a
// launch picks). known is false when that cannot be told: the class has
// resolved no AMI, the NodeClaim has no image, or its instance type is
// not among the class's types.
func (d Drift) ami(claim *v1.NodeClaim, labels map[string]string, inst *cloudprovider.Instance) (_ cloudprovider.Drift, known bool) {
	img := ""
	switch {
	case claim != nil:
		img = claim.Status.ImageID
	case inst != nil:
		img = inst.ImageID
	}
	amis := d.Class.Status.AMIs
	if img == "" || len(amis) == 0 {
		return cloudprovider.Drift{}, false
	}
	name := labels[corev1.LabelInstanceTypeStable]
	typeReqs := scheduling.LabelRequirements(labels)
	if d.Types != nil {
		i := slices.IndexFunc(d.Types, func(it *scheduling.InstanceType) bool { return it.Name == name })
		if i < 0 {
			return cloudprovider.Drift{}, false
		}
		typeReqs = d.Types[i].Requirements
	}
	for _, a := range amis {
		if typeReqs.Compatible(scheduling.NewRequirements(a.Requirements...), nil) != nil {
			continue
		}
		if a.ID == img {
			return cloudprovider.Drift{}, true
		}
		return cloudprovider.Drift{Reason: awsv1.ReasonAMIDrifted,
			Message: fmt.Sprintf("AMI %s is not the one EC2NodeClass %s launches %s with now: %s (%s)", img, d.Class.Name, name, a.ID, a.Name)}, true
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonAMIDrifted,
		Message: fmt.Sprintf("AMI %s: EC2NodeClass %s selects no AMI for %s now (it selects %s)", img, d.Class.Name, name, amiIDs(amis))}, true
}

func amiIDs(amis []awsv1.AMI) string {
	ids := make([]string, 0, len(amis))
	for _, a := range amis {
		ids = append(ids, a.ID)
	}
	return strings.Join(ids, ", ")
}

func (d Drift) subnet(labels map[string]string, inst *cloudprovider.Instance) cloudprovider.Drift {
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

// securityGroups: the instance's security groups are not, as a set,
// those the class selects.
func (d Drift) securityGroups(inst *cloudprovider.Instance) cloudprovider.Drift {
	want := make([]string, 0, len(d.Class.Status.SecurityGroups))
	for _, g := range d.Class.Status.SecurityGroups {
		want = append(want, g.ID)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	have := slices.Clone(inst.SecurityGroupIDs)
	slices.Sort(have)
	have = slices.Compact(have)
	if slices.Equal(want, have) {
		return cloudprovider.Drift{}
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonSecurityGroupsDrifted,
		Message: fmt.Sprintf("the instance's security groups [%s] are not the ones EC2NodeClass %s selects (%s)", strings.Join(have, ", "), d.Class.Name, strings.Join(want, ", "))}
}

// capacityReservation: the instance runs in a capacity reservation the
// class no longer selects.
func (d Drift) capacityReservation(inst *cloudprovider.Instance) cloudprovider.Drift {
	id := inst.CapacityReservationID
	if id == "" || slices.ContainsFunc(d.Class.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.ID == id }) {
		return cloudprovider.Drift{}
	}
	return cloudprovider.Drift{Reason: awsv1.ReasonCapacityReservationDrifted,
		Message: fmt.Sprintf("the instance runs in capacity reservation %s, which EC2NodeClass %s no longer selects", id, d.Class.Name)}
}
