package instancetypes_test

import (
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// A root volume sized in decimal units is planned as the volume EC2
// makes of it, whole GiB rounded up (the size the launch asks for), not
// as written: docs/compatibility.md, Instance types.
func TestDecimalVolumeSizesArePlannedAsLaunched(t *testing.T) {
	for size, want := range map[string]string{"100G": "94Gi", "100Gi": "100Gi", "1T": "932Gi", "20Gi": "20Gi", "53687091200": "50Gi"} {
		class := &awsv1.EC2NodeClass{}
		class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
		class.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(size)}}}
		got := instancetypes.EphemeralStorageOf(class)
		if got.String() != want {
			t.Errorf("volumeSize %s: planned %s, want %s", size, got.String(), want)
		}
		launched := instancetypes.VolumeGiB(ptr.To(size))
		if launched == nil || int64(*launched)<<30 != got.Value() {
			t.Errorf("volumeSize %s: launched %v GiB, planned %s", size, launched, got.String())
		}
	}
}
