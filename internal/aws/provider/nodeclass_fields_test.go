package provider_test

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// An EBS volume made from a snapshot is launched with the initialization
// rate the EC2NodeClass asks for.
func TestVolumeInitializationRateIsLaunched(t *testing.T) {
	f := setup(t)
	f.class.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{
		DeviceName: ptr.To("/dev/xvdb"),
		EBS:        &awsv1.BlockDevice{SnapshotID: ptr.To("snap-0123456789abcdef0"), VolumeInitializationRate: ptr.To[int32](200)},
	}}
	if _, err := f.provider.Create(context.Background(), claim("rate", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err != nil {
		t.Fatal(err)
	}
	insts := f.account.Instances()
	if len(insts) != 1 || len(insts[0].Launched.BlockDeviceMappings) != 1 {
		t.Fatalf("instances %d; want one with the volume", len(insts))
	}
	ebs := insts[0].Launched.BlockDeviceMappings[0].Ebs
	if ebs == nil || ptr.Deref(ebs.VolumeInitializationRate, 0) != 200 || ptr.Deref(ebs.SnapshotId, "") != "snap-0123456789abcdef0" {
		t.Errorf("launched volume %+v; want the snapshot filled at 200 MiB/s", ebs)
	}
}
