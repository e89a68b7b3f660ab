package aws_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// The simulated EC2 refuses launch templates whose volumes EC2 refuses:
// an initialization rate without a snapshot, or outside 100-300 MiB/s.
func TestLaunchTemplateVolumeInitializationRate(t *testing.T) {
	a := simaws.NewAccount()
	a.Seed()
	create := func(name string, ebs ec2types.LaunchTemplateEbsBlockDeviceRequest) error {
		_, err := a.EC2().CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{
				{DeviceName: aws.String("/dev/xvdb"), Ebs: &ebs},
			}},
		})
		return err
	}
	code := func(err error) string {
		var api smithy.APIError
		if errors.As(err, &api) {
			return api.ErrorCode()
		}
		return ""
	}
	if err := create("no-snapshot", ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeInitializationRate: aws.Int32(200)}); code(err) != "InvalidParameterCombination" {
		t.Errorf("a rate without a snapshot: %v", err)
	}
	if err := create("too-fast", ec2types.LaunchTemplateEbsBlockDeviceRequest{SnapshotId: aws.String("snap-1"), VolumeInitializationRate: aws.Int32(400)}); code(err) != "InvalidParameterValue" {
		t.Errorf("a rate of 400 MiB/s: %v", err)
	}
	if err := create("ok", ec2types.LaunchTemplateEbsBlockDeviceRequest{SnapshotId: aws.String("snap-1"), VolumeInitializationRate: aws.Int32(300)}); err != nil {
		t.Errorf("a rate of 300 MiB/s from a snapshot: %v", err)
	}
}
