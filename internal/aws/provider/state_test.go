package provider_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// A simulation saves its account so another process (nodewright doctor
// --cloud sim) reads the same instances, console output, instance
// profiles and access entries through the SDK's calls.
func TestAccountStateIsSharedThroughAFile(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	inst, err := f.provider.Create(ctx, claim("general-abcde", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	f.account.SetConsoleOutput(inst.InstanceID, "kubelet: Unauthorized")
	nodeRoleARN := "arn:aws:iam::" + account.AccountID + ":role/" + account.NodeRole
	f.account.AddAccessEntry(nodeRoleARN, "EC2_LINUX")
	path := filepath.Join(t.TempDir(), simaws.StateFile)
	if err := f.account.SaveState(path); err != nil {
		t.Fatal(err)
	}

	other := simaws.NewAccount()
	other.Seed()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := other.LoadState(file); err != nil {
		t.Fatal(err)
	}
	described, err := other.EC2().DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.InstanceID}})
	if err != nil {
		t.Fatal(err)
	}
	got := described.Reservations[0].Instances[0]
	if got.InstanceType != "m5.large" || aws.ToString(got.PrivateDnsName) == "" || got.LaunchTime == nil {
		t.Errorf("loaded instance %+v", got)
	}
	console, err := other.EC2().GetConsoleOutput(ctx, &ec2.GetConsoleOutputInput{InstanceId: aws.String(inst.InstanceID)})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := base64.StdEncoding.DecodeString(aws.ToString(console.Output)); string(text) != "kubelet: Unauthorized" {
		t.Errorf("console output %q", text)
	}
	profile, err := other.IAM().GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(f.class.Status.InstanceProfile)})
	if err != nil || aws.ToString(profile.InstanceProfile.Roles[0].RoleName) != account.NodeRole {
		t.Errorf("instance profile %s after loading: %v %v", f.class.Status.InstanceProfile, profile, err)
	}
	entries, err := other.EKS().ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String(account.ClusterName)})
	if err != nil || len(entries.AccessEntries) != 1 || entries.AccessEntries[0] != nodeRoleARN {
		t.Fatalf("access entries %v %v", entries, err)
	}
	entry, err := other.EKS().DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{ClusterName: aws.String(account.ClusterName), PrincipalArn: aws.String(nodeRoleARN)})
	if err != nil || aws.ToString(entry.AccessEntry.Type) != "EC2_LINUX" {
		t.Errorf("access entry %v %v", entry, err)
	}
	if _, err := other.EC2().GetConsoleOutput(ctx, &ec2.GetConsoleOutputInput{InstanceId: aws.String("i-0000000000000dead")}); err == nil {
		t.Error("console output of an unknown instance did not fail")
	}
}
