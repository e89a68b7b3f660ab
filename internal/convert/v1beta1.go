package convert

import (
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
)

// The annotations the reference's v1.0 conversion writes on the v1
// objects it makes, and the one it reads on v1beta1 EC2NodeClasses.
const (
	// KubeletAnnotation holds a v1beta1 NodePool's (or NodeClaim's)
	// kubelet configuration, as JSON: v1 has it on the EC2NodeClass.
	// Karpenter v1.0 launched with it over the class's; later releases,
	// and nodewright, read only the class's.
	KubeletAnnotation = "compatibility.karpenter.sh/v1beta1-kubelet-conversion"
	// NodeClassRefAnnotation holds the v1beta1 nodeClassRef, for the
	// conversion back.
	NodeClassRefAnnotation = "compatibility.karpenter.sh/v1beta1-nodeclass-reference"
	// StoredVersionMigrated marks an object its migration controller
	// rewrote in the v1 storage version.
	StoredVersionMigrated = "karpenter.sh/stored-version-migrated"
	// UbuntuAnnotation marks an EC2NodeClass converted from the Ubuntu
	// family, which v1 does not have: "amiFamily" (AL2 stands in for it),
	// "blockDeviceMappings" (Ubuntu's root volume was written out) and
	// "incompatible" (no AMI selector terms: the class cannot launch).
	UbuntuAnnotation = "compatibility.karpenter.k8s.aws/v1beta1-ubuntu"
	// AliasVersionAnnotation pins the version of the alias a v1beta1
	// class without AMI selector terms converts to.
	AliasVersionAnnotation = "compatibility.karpenter.k8s.aws/v1-alias-version"
)

// Ubuntu compatibility specifiers.
const (
	ubuntuFamily       = "amiFamily"
	ubuntuDevices      = "blockDeviceMappings"
	ubuntuIncompatible = "incompatible"
)

// nodePoolFromV1beta1 converts a v1beta1 NodePool (defaulted, as stored)
// to v1 as the reference's v1.0 conversion webhook does.
func nodePoolFromV1beta1(in *nodePoolV1beta1) (*v1.NodePool, error) {
	out := &v1.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool"}, ObjectMeta: *in.DeepCopy()}
	out.Status.Resources = in.Status.Resources
	out.Status.Conditions = in.Status.Conditions
	out.Spec.Weight = in.Spec.Weight
	out.Spec.Limits = in.Spec.Limits
	d := ptr.Deref(in.Spec.Disruption, disruptionV1beta1{})
	out.Spec.Template.Spec.ExpireAfter = nillable(d.ExpireAfter)
	if d.ConsolidationPolicy == "WhenUnderutilized" {
		out.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
		out.Spec.Disruption.ConsolidateAfter = "0s"
	} else {
		out.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicy(d.ConsolidationPolicy)
		out.Spec.Disruption.ConsolidateAfter = nillable(d.ConsolidateAfter)
	}
	for _, b := range d.Budgets {
		out.Spec.Disruption.Budgets = append(out.Spec.Disruption.Budgets, v1.Budget{Nodes: b.Nodes, Schedule: b.Schedule, Duration: b.Duration})
	}
	t := in.Spec.Template
	out.Spec.Template.ObjectMeta = v1.TemplateObjectMeta{Labels: t.Metadata.Labels, Annotations: t.Metadata.Annotations}
	out.Spec.Template.Spec.Taints = t.Spec.Taints
	out.Spec.Template.Spec.StartupTaints = t.Spec.StartupTaints
	out.Spec.Template.Spec.Requirements = requirements(t.Spec.Requirements)
	out.Spec.Template.Spec.NodeClassRef = nodeClassRef(t.Spec.NodeClassRef)
	return out, annotate(&out.ObjectMeta, t.Spec.Kubelet, t.Spec.NodeClassRef)
}

// nodeClaimFromV1beta1 converts a v1beta1 NodeClaim; its expireAfter is
// its NodePool's, set once the NodePools are read (Settle).
func nodeClaimFromV1beta1(in *nodeClaimV1beta1) (*v1.NodeClaim, error) {
	out := &v1.NodeClaim{TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim"}, ObjectMeta: *in.DeepCopy()}
	s := in.Status
	out.Status = v1.NodeClaimStatus{NodeName: s.NodeName, ProviderID: s.ProviderID, ImageID: s.ImageID, Capacity: s.Capacity, Allocatable: s.Allocatable, Conditions: s.Conditions}
	out.Spec.Taints = in.Spec.Taints
	out.Spec.StartupTaints = in.Spec.StartupTaints
	if r := in.Spec.Resources; r != nil {
		out.Spec.Resources = v1.ResourceRequirements{Requests: r.Requests}
	}
	out.Spec.Requirements = requirements(in.Spec.Requirements)
	out.Spec.NodeClassRef = nodeClassRef(in.Spec.NodeClassRef)
	out.Spec.ExpireAfter = v1.Never // unless its NodePool is found (Settle), as the reference's
	return out, annotate(&out.ObjectMeta, in.Spec.Kubelet, in.Spec.NodeClassRef)
}

// annotate writes the kubelet and nodeClassRef annotations the
// reference's conversion writes.
func annotate(meta *metav1.ObjectMeta, kubelet *kubeletV1beta1, ref *nodeClassRefV1beta1) error {
	delete(meta.Annotations, KubeletAnnotation)
	if kubelet != nil {
		data, err := json.Marshal(kubelet)
		if err != nil {
			return err
		}
		setAnnotation(meta, KubeletAnnotation, string(data))
	}
	data, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	setAnnotation(meta, NodeClassRefAnnotation, string(data))
	return nil
}

func setAnnotation(meta *metav1.ObjectMeta, key, value string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value
}

// nillable is a v1beta1 duration (unset: Never) in v1.
func nillable(d *string) v1.NillableDuration {
	if d == nil {
		return v1.Never
	}
	return v1.NillableDuration(*d)
}

func requirements(in []requirementV1beta1) []v1.NodeSelectorRequirementWithMinValues {
	out := make([]v1.NodeSelectorRequirementWithMinValues, 0, len(in))
	for _, r := range in {
		out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: r.MinValues})
	}
	return out
}

// nodeClassRef is a v1beta1 reference in v1: the kind and group default
// to the EC2NodeClass's, the group is the apiVersion's.
func nodeClassRef(ref *nodeClassRefV1beta1) *v1.NodeClassReference {
	if ref == nil {
		return &v1.NodeClassReference{}
	}
	out := &v1.NodeClassReference{Name: ref.Name, Kind: ref.Kind, Group: strings.Split(ref.APIVersion, "/")[0]}
	if out.Kind == "" {
		out.Kind = "EC2NodeClass"
	}
	if ref.APIVersion == "" {
		out.Group = awsv1.Group
	}
	return out
}

// nodeClassFromV1beta1 converts a v1beta1 EC2NodeClass as the
// reference's v1.0 conversion does: a stock family without AMI selector
// terms becomes its alias, Ubuntu becomes AL2 with Ubuntu's root volume
// (and, without AMI selector terms, a placeholder: it cannot launch),
// anything else Custom.
func nodeClassFromV1beta1(in *nodeClassV1beta1) *awsv1.EC2NodeClass {
	out := &awsv1.EC2NodeClass{TypeMeta: metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"}, ObjectMeta: *in.DeepCopy()}
	delete(out.Annotations, AliasVersionAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	spec := in.Spec
	switch family := ptr.Deref(spec.AMIFamily, ""); family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022:
		if len(spec.AMISelectorTerms) == 0 {
			version := "latest"
			if v, ok := in.Annotations[AliasVersionAnnotation]; ok {
				version = v
			}
			out.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: strings.ToLower(family) + "@" + version}}
		} else {
			out.Spec.AMIFamily = ptr.To(family)
		}
	case "Ubuntu":
		specifiers := []string{ubuntuFamily}
		out.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
		if spec.BlockDeviceMappings == nil {
			specifiers = append(specifiers, ubuntuDevices)
			out.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/sda1"), RootVolume: true,
				EBS: &awsv1.BlockDevice{Encrypted: ptr.To(true), VolumeType: ptr.To("gp3"), VolumeSize: ptr.To("20Gi")}}}
		}
		if len(spec.AMISelectorTerms) == 0 {
			specifiers = append(specifiers, ubuntuIncompatible)
			out.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-placeholder"}}
		}
		setAnnotation(&out.ObjectMeta, UbuntuAnnotation, strings.Join(specifiers, ","))
	default:
		out.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
	}
	if out.Spec.AMISelectorTerms == nil {
		for _, t := range spec.AMISelectorTerms {
			out.Spec.AMISelectorTerms = append(out.Spec.AMISelectorTerms, awsv1.AMISelectorTerm{ID: t.ID, Name: t.Name, Owner: t.Owner, Tags: t.Tags})
		}
	}
	if out.Spec.BlockDeviceMappings == nil {
		for _, b := range spec.BlockDeviceMappings {
			out.Spec.BlockDeviceMappings = append(out.Spec.BlockDeviceMappings, &awsv1.BlockDeviceMapping{DeviceName: b.DeviceName, RootVolume: b.RootVolume, EBS: device(b.EBS)})
		}
	}
	out.Spec.SubnetSelectorTerms = spec.SubnetSelectorTerms
	out.Spec.SecurityGroupSelectorTerms = spec.SecurityGroupSelectorTerms
	out.Spec.AssociatePublicIPAddress = spec.AssociatePublicIPAddress
	out.Spec.Context = spec.Context
	out.Spec.DetailedMonitoring = spec.DetailedMonitoring
	out.Spec.Role = spec.Role
	out.Spec.InstanceProfile = spec.InstanceProfile
	out.Spec.InstanceStorePolicy = spec.InstanceStorePolicy
	out.Spec.Tags = spec.Tags
	out.Spec.UserData = spec.UserData
	out.Spec.MetadataOptions = spec.MetadataOptions
	st := in.Status
	out.Status.Subnets, out.Status.SecurityGroups = st.Subnets, st.SecurityGroups
	for _, a := range st.AMIs {
		out.Status.AMIs = append(out.Status.AMIs, awsv1.AMI{ID: a.ID, Name: a.Name, Requirements: a.Requirements})
	}
	out.Status.InstanceProfile = st.InstanceProfile
	out.Status.Conditions = st.Conditions
	return out
}

func device(in *blockDevice) *awsv1.BlockDevice {
	if in == nil {
		return nil
	}
	out := &awsv1.BlockDevice{DeleteOnTermination: in.DeleteOnTermination, Encrypted: in.Encrypted, IOPS: in.IOPS, KMSKeyID: in.KMSKeyID,
		SnapshotID: in.SnapshotID, Throughput: in.Throughput, VolumeType: in.VolumeType}
	if in.VolumeSize != nil {
		out.VolumeSize = ptr.To(in.VolumeSize.String())
	}
	return out
}

// kubeletJSON is a v1beta1 kubelet configuration as an EC2NodeClass's.
func kubeletJSON(annotation string) (awsv1.KubeletConfiguration, error) {
	var k kubeletV1beta1
	if err := json.Unmarshal([]byte(annotation), &k); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", KubeletAnnotation, err)
	}
	data, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	out := awsv1.KubeletConfiguration{}
	for key, raw := range fields {
		out[key] = apiextensionsv1.JSON{Raw: raw}
	}
	return out, nil
}
