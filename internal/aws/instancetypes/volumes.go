package instancetypes

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// DefaultVolume is the EBS volume nodes get where the EC2NodeClass lists
// no blockDeviceMappings: 20Gi of gp3, encrypted (the reference's
// default, whatever the account's default encryption).
const DefaultVolume = "20Gi"

func defaultEBS(size string) *awsv1.BlockDevice {
	return &awsv1.BlockDevice{Encrypted: ptr.To(true), VolumeType: ptr.To("gp3"), VolumeSize: ptr.To(size), DeleteOnTermination: ptr.To(true)}
}

// DefaultBlockDeviceMappings are the volumes a node of the AMI family
// launches with when its EC2NodeClass lists none, as the reference
// launches them: AL2 and AL2023 a 20Gi root volume; Bottlerocket a 6Gi
// root volume (at least its AMI's snapshot) and a 20Gi data volume;
// Windows a 50Gi root volume, all encrypted gp3. A Custom AMI's own
// volumes are its: none.
func DefaultBlockDeviceMappings(family string) []*awsv1.BlockDeviceMapping {
	switch {
	case family == awsv1.AMIFamilyBottlerocket:
		return []*awsv1.BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: defaultEBS("6Gi")},
			{DeviceName: ptr.To("/dev/xvdb"), EBS: defaultEBS(DefaultVolume)},
		}
	case awsv1.IsWindows(family):
		return []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/sda1"), EBS: defaultEBS("50Gi")}}
	case family == awsv1.AMIFamilyCustom:
		return nil
	}
	return []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: defaultEBS(DefaultVolume)}}
}

// EphemeralDevice is the device the kubelet's root directory (and so the
// node's ephemeral storage) is on for the AMI family: Bottlerocket's data
// volume, the others' root volume; "" for Custom, which nodewright cannot
// know.
func EphemeralDevice(family string) string {
	switch {
	case family == awsv1.AMIFamilyBottlerocket:
		return "/dev/xvdb"
	case awsv1.IsWindows(family):
		return "/dev/sda1"
	case family == awsv1.AMIFamilyCustom:
		return ""
	}
	return "/dev/xvda"
}

// BlockDeviceMappingsOf are the volumes nodes of the EC2NodeClass launch
// with: its blockDeviceMappings, else its family's defaults.
func BlockDeviceMappingsOf(class *awsv1.EC2NodeClass) []*awsv1.BlockDeviceMapping {
	if len(class.Spec.BlockDeviceMappings) > 0 {
		return class.Spec.BlockDeviceMappings
	}
	return DefaultBlockDeviceMappings(awsv1.FamilyOf(class))
}

// VolumeGiB is a volumeSize as EC2 takes it: in GiB, rounded up (100G is
// 94 GiB); nil when the size is absent or not a quantity.
func VolumeGiB(size *string) *int32 {
	if size == nil {
		return nil
	}
	q, err := resource.ParseQuantity(*size)
	if err != nil || q.Sign() <= 0 {
		return nil
	}
	gib := math.Ceil(q.AsApproximateFloat64() / (1 << 30))
	if gib > math.MaxInt32 {
		return nil
	}
	return ptr.To(int32(gib))
}

// EphemeralStorageOf is the ephemeral storage nodes of the EC2NodeClass
// report, as the reference works it out: the size of the mapping marked
// rootVolume; else, for Custom, of the last mapping; else of the mapping
// of the family's ephemeral device; else of the family's default volume
// for it (20Gi where none is known). The size is the volume's, in whole
// GiB as EC2 makes it.
func EphemeralStorageOf(class *awsv1.EC2NodeClass) resource.Quantity {
	family := awsv1.FamilyOf(class)
	size := func(m *awsv1.BlockDeviceMapping) *int32 {
		if m == nil || m.EBS == nil {
			return nil
		}
		return VolumeGiB(m.EBS.VolumeSize)
	}
	gib := func(n int32) resource.Quantity { return *resource.NewQuantity(int64(n)<<30, resource.BinarySI) }
	mappings := class.Spec.BlockDeviceMappings
	for _, m := range mappings {
		if m != nil && m.RootVolume {
			if s := size(m); s != nil {
				return gib(*s)
			}
		}
	}
	if len(mappings) > 0 && family == awsv1.AMIFamilyCustom {
		if s := size(mappings[len(mappings)-1]); s != nil {
			return gib(*s)
		}
		return resource.MustParse(DefaultVolume)
	}
	device := EphemeralDevice(family)
	for _, set := range [][]*awsv1.BlockDeviceMapping{mappings, DefaultBlockDeviceMappings(family)} {
		for _, m := range set {
			if m != nil && device != "" && ptr.Deref(m.DeviceName, "") == device {
				if s := size(m); s != nil {
					return gib(*s)
				}
			}
		}
	}
	return resource.MustParse(DefaultVolume)
}
