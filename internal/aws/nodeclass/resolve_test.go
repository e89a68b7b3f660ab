package nodeclass_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

func resolver() *nodeclass.Resolver {
	a := simaws.NewAccount()
	a.Seed()
	return &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion}
}

// The simulated APIs have the SDK's signatures: they satisfy the slices
// of sdk.SSM the resolver uses (sdk.SSM is all of SSM).
var _ sdk.SSM = (*simaws.SSM)(nil)

var discovery = map[string]string{"karpenter.sh/discovery": "nodewright-sim"}

func nodeClass(terms ...awsv1.AMISelectorTerm) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms:           terms,
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
	}}
}

func TestSubnetsAndSecurityGroups(t *testing.T) {
	r, ctx := resolver(), context.Background()
	nc := nodeClass()
	subnets, err := r.Subnets(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	zones := make([]string, 0, len(subnets))
	for _, s := range subnets {
		zones = append(zones, s.Zone+"/"+s.ZoneID)
		if s.FreeIPs <= 0 {
			t.Errorf("subnet %s has no free IP count", s.ID)
		}
	}
	if diff := cmp.Diff([]string{"us-east-1a/use1-az1", "us-east-1b/use1-az2", "us-east-1c/use1-az3"}, zones); diff != "" {
		t.Errorf("zones (-want +got):\n%s", diff)
	}
	groups, err := r.SecurityGroups(ctx, nc)
	if err != nil || len(groups) != 1 || groups[0].Name != "eks-cluster-sg-nodewright-sim" {
		t.Errorf("security groups %+v, %v", groups, err)
	}
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "other-cluster"}}, {ID: "subnet-021234567890abcd"}}
	nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "default"}, {Tags: map[string]string{"karpenter.sh/discovery": "*"}}}
	subnets, _ = r.Subnets(ctx, nc)
	groups, _ = r.SecurityGroups(ctx, nc)
	if len(subnets) != 1 || subnets[0].Zone != "us-east-1b" || len(groups) != 2 {
		t.Errorf("terms are ORed and \"*\" matches any value: subnets %+v, groups %+v", subnets, groups)
	}
}

// A security group name repeats across VPCs: a term of name selects
// the groups of that name in every VPC, as EC2's group-name filter does.
func TestSecurityGroupNameInEveryVPC(t *testing.T) {
	a := simaws.NewAccount()
	a.Seed()
	for _, vpc := range []string{"vpc-0aaa", "vpc-0bbb"} {
		a.AddSecurityGroup(ec2types.SecurityGroup{GroupId: aws.String("sg-0" + vpc[5:]), GroupName: aws.String("k8s-node"), VpcId: aws.String(vpc)})
	}
	r, ctx := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion}, context.Background()
	nc := nodeClass()
	nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "k8s-node"}}
	if groups, err := r.SecurityGroups(ctx, nc); err != nil || len(groups) != 2 {
		t.Errorf("k8s-node in any VPC: %+v, %v", groups, err)
	}
}

func TestAMIs(t *testing.T) {
	r, ctx := resolver(), context.Background()
	for _, tc := range []struct {
		name string
		term awsv1.AMISelectorTerm
		want map[string]string // arch → AMI id
	}{
		{"al2023 alias", awsv1.AMISelectorTerm{Alias: "al2023@latest"}, map[string]string{"amd64": "ami-al2023x8664", "arm64": "ami-al2023arm64"}},
		{"al2 alias", awsv1.AMISelectorTerm{Alias: "al2@latest"}, map[string]string{"amd64": "ami-al2x8664", "arm64": "ami-al2arm64"}},
		{"bottlerocket alias", awsv1.AMISelectorTerm{Alias: "bottlerocket@latest"}, map[string]string{"amd64": "ami-bottlerocketx8664", "arm64": "ami-bottlerocketarm64"}},
		{"pinned version not published", awsv1.AMISelectorTerm{Alias: "al2023@v20200101"}, map[string]string{}},
		{"custom id (S5: x86_64 only)", awsv1.AMISelectorTerm{ID: "ami-0a1b2c3d4e5f60001"}, map[string]string{"amd64": "ami-0a1b2c3d4e5f60001"}},
		{"name and owner", awsv1.AMISelectorTerm{Name: "custom-al2023-*", Owner: "111122223333"}, map[string]string{"arm64": "ami-0a1b2c3d4e5f60002"}},
		{"ssm parameter", awsv1.AMISelectorTerm{SSMParameter: "/aws/service/bottlerocket/aws-k8s-1.34/arm64/latest/image_id"}, map[string]string{"arm64": "ami-bottlerocketarm64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			amis, err := r.AMIs(ctx, nodeClass(tc.term))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, a := range amis {
				got[a.Requirements[0].Values[0]] = a.ID
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AMIs by architecture (-want +got):\n%s", diff)
			}
		})
	}
	nc := nodeClass(awsv1.AMISelectorTerm{ID: "ami-0a1b2c3d4e5f60001"}, awsv1.AMISelectorTerm{ID: "ami-0a1b2c3d4e5f60002"})
	nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
	amis, _ := r.AMIs(ctx, nc)
	if len(amis) != 2 {
		t.Errorf("two terms for two architectures give two AMIs: %+v", amis)
	}
}

func TestInstanceProfile(t *testing.T) {
	a := simaws.NewAccount()
	a.Seed()
	r := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), ClusterName: "nodewright-sim", Region: "us-east-1", KubernetesVersion: simaws.KubernetesVersion}
	ctx, iamAPI := context.Background(), a.IAM()
	nc := nodeClass()
	nc.Name = "default"
	nc.Spec.Role = "KarpenterNodeRole-nodewright-sim"
	roleOf := func(name string) string {
		out, err := iamAPI.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: &name})
		if err != nil || len(out.InstanceProfile.Roles) != 1 {
			t.Fatalf("profile %s: %+v %v", name, out, err)
		}
		return *out.InstanceProfile.Roles[0].RoleName
	}
	name, err := r.InstanceProfile(ctx, nc)
	if err != nil || name != "nodewright_nodewright-sim_us-east-1_default" || roleOf(name) != nc.Spec.Role {
		t.Fatalf("created profile %q: %v", name, err)
	}
	if again, err := r.InstanceProfile(ctx, nc); err != nil || again != name {
		t.Errorf("a second reconcile must reuse the profile: %q %v", again, err)
	}
	nc.Spec.Role = "KarpenterControllerRole-nodewright-sim"
	if _, err := r.InstanceProfile(ctx, nc); err != nil || roleOf(name) != nc.Spec.Role {
		t.Errorf("a changed role must replace the profile's role: %v", err)
	}
	nc.Spec.Role = "NoSuchRole"
	if _, err := r.InstanceProfile(ctx, nc); err == nil || !strings.Contains(err.Error(), "role NoSuchRole does not exist") {
		t.Errorf("a missing role: %v", err)
	}
	nc.Spec.Role, nc.Spec.InstanceProfile = "", ptr.To("missing-profile")
	if _, err := r.InstanceProfile(ctx, nc); err == nil || !strings.Contains(err.Error(), "instance profile missing-profile does not exist") {
		t.Errorf("a missing instance profile: %v", err)
	}
}

// An instance profile with the name nodewright would give its own, made by
// someone else (no tags saying it is this cluster's, for this
// EC2NodeClass), is neither taken over nor deleted with the EC2NodeClass.
func TestForeignInstanceProfileIsLeftAlone(t *testing.T) {
	a := simaws.NewAccount()
	a.Seed()
	r := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), ClusterName: "nodewright-sim", Region: "us-east-1", KubernetesVersion: simaws.KubernetesVersion}
	ctx, iamAPI := context.Background(), a.IAM()
	name := nodeclass.ProfileName("nodewright-sim", "us-east-1", "default")
	if _, err := iamAPI.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: &name}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamAPI.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: &name, RoleName: ptr.To("KarpenterControllerRole-nodewright-sim")}); err != nil {
		t.Fatal(err)
	}
	nc := nodeClass()
	nc.Name, nc.Spec.Role = "default", "KarpenterNodeRole-nodewright-sim"
	_, err := r.InstanceProfile(ctx, nc)
	if err == nil || !strings.Contains(err.Error(), "nodewright did not make it for EC2NodeClass default") || !strings.Contains(err.Error(), "spec.instanceProfile") {
		t.Errorf("a foreign profile with nodewright's name: %v", err)
	}
	if err := r.DeleteInstanceProfile(ctx, nc); err != nil {
		t.Fatal(err)
	}
	out, err := iamAPI.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: &name})
	if err != nil || len(out.InstanceProfile.Roles) != 1 || *out.InstanceProfile.Roles[0].RoleName != "KarpenterControllerRole-nodewright-sim" {
		t.Errorf("the foreign profile was changed or deleted: %+v %v", out, err)
	}
}

// An alias that finds nothing names the SSM parameters it read, the
// Kubernetes version and what to do.
func TestNoAMIMessage(t *testing.T) {
	r := &nodeclass.Resolver{KubernetesVersion: "1.99"}
	msg := r.NoAMIMessage(nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"}))
	for _, want := range []string{"Kubernetes 1.99", "/aws/service/eks/optimized-ami/1.99/amazon-linux-2023/x86_64/standard/recommended/image_id",
		"/aws/service/eks/optimized-ami/1.99/amazon-linux-2023/arm64/standard/recommended/image_id", "--kubernetes-version", "al2023@<version>", "ssmParameter"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	if msg := r.NoAMIMessage(nodeClass(awsv1.AMISelectorTerm{ID: "ami-123"})); !strings.Contains(msg, "describe-images") {
		t.Errorf("id term: %q", msg)
	}
}

// Windows aliases read the latest image of their release from
// /aws/service/ami-windows-latest; the AMI boots Windows nodes of the
// release's build, amd64 only. Windows Server 2025 images exist for
// Kubernetes 1.35 on.
func TestWindowsAliases(t *testing.T) {
	r, ctx := resolver(), context.Background()
	amis, err := r.AMIs(ctx, nodeClass(awsv1.AMISelectorTerm{Alias: "windows2022@latest"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(amis) != 1 || amis[0].ID != "ami-windows2022x8664" {
		t.Fatalf("AMIs %+v", amis)
	}
	reqs := map[string][]string{}
	for _, r := range amis[0].Requirements {
		reqs[r.Key] = r.Values
	}
	want := map[string][]string{"kubernetes.io/arch": {"amd64"}, "kubernetes.io/os": {"windows"}, "node.kubernetes.io/windows-build": {"10.0.20348"}}
	if diff := cmp.Diff(want, reqs); diff != "" {
		t.Errorf("requirements (-want +got):\n%s", diff)
	}
	params, err := nodeclass.AliasParameters("", "windows2019@latest", "1.33")
	if err != nil || len(params) != 1 || params[0] != "/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.33/image_id" {
		t.Errorf("windows2019 parameters %v, %v", params, err)
	}
	if _, err := nodeclass.AliasParameters("", "windows2025@latest", "1.34"); err == nil || !strings.Contains(err.Error(), "1.35") {
		t.Errorf("windows2025 on Kubernetes 1.34: %v", err)
	}
	if params, err := nodeclass.AliasParameters("", "windows2025@latest", "1.35"); err != nil || len(params) != 1 {
		t.Errorf("windows2025 on Kubernetes 1.35: %v, %v", params, err)
	}
}

// IAM is global: two clusters of one name in two regions (a
// disaster-recovery pair) with EC2NodeClasses of one name get a profile
// each, each with its own role, and deleting the EC2NodeClass in one
// region leaves the other region's profile and role as they are. Before,
// both shared nodewright_CLUSTER_CLASS: the two controllers swapped its
// role back and forth, and one deletion took the other region's nodes'
// profile.
func TestInstanceProfilesPerRegion(t *testing.T) {
	a := simaws.NewAccount()
	a.Seed()
	a.AddRole("NodeRole-west")
	ctx, iamAPI := context.Background(), a.IAM()
	east := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: iamAPI, ClusterName: "prod", Region: "us-east-1", KubernetesVersion: simaws.KubernetesVersion}
	west := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: iamAPI, ClusterName: "prod", Region: "us-west-2", KubernetesVersion: simaws.KubernetesVersion}
	eastClass, westClass := nodeClass(), nodeClass()
	eastClass.Name, westClass.Name = "default", "default"
	eastClass.Spec.Role, westClass.Spec.Role = "KarpenterNodeRole-nodewright-sim", "NodeRole-west"
	profile := func(name string) *iamtypes.InstanceProfile {
		out, err := iamAPI.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: &name})
		if err != nil {
			return nil
		}
		return out.InstanceProfile
	}
	var eastName, westName string
	for range 3 { // controllers reconcile over and over
		var err error
		if eastName, err = east.InstanceProfile(ctx, eastClass); err != nil {
			t.Fatal(err)
		}
		if westName, err = west.InstanceProfile(ctx, westClass); err != nil {
			t.Fatal(err)
		}
	}
	if eastName == westName {
		t.Fatalf("both regions launch with instance profile %s", eastName)
	}
	for name, want := range map[string]string{eastName: "KarpenterNodeRole-nodewright-sim", westName: "NodeRole-west"} {
		p := profile(name)
		if p == nil || len(p.Roles) != 1 || aws.ToString(p.Roles[0].RoleName) != want {
			t.Errorf("profile %s: %+v, want it to hold %s", name, p, want)
		}
	}
	tags := map[string]string{}
	for _, tag := range profile(westName).Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if tags["topology.kubernetes.io/region"] != "us-west-2" || tags["kubernetes.io/cluster/prod"] != "owned" || tags["karpenter.k8s.aws/ec2nodeclass"] != "default" {
		t.Errorf("profile %s tags %v: want the cluster, the EC2NodeClass and the region", westName, tags)
	}
	if err := east.DeleteInstanceProfile(ctx, eastClass); err != nil {
		t.Fatal(err)
	}
	if profile(eastName) != nil {
		t.Errorf("profile %s is left after its EC2NodeClass's deletion in us-east-1", eastName)
	}
	if p := profile(westName); p == nil || len(p.Roles) != 1 {
		t.Errorf("deleting the EC2NodeClass in us-east-1 changed us-west-2's profile: %+v", p)
	}

	// A name too long for IAM is cut and keeps apart from another cut
	// the same way.
	long1, long2 := nodeclass.ProfileName(strings.Repeat("c", 100), "eu-west-1", "x"), nodeclass.ProfileName(strings.Repeat("c", 100), "eu-west-2", "x")
	if len(long1) > 128 || long1 == long2 {
		t.Errorf("long names %q and %q: want at most 128 characters, and apart", long1, long2)
	}
}

// A profile made under the name before it held the region
// (nodewright_CLUSTER_CLASS, no region tag) may be the one the same
// cluster name in another region launches with: the EC2NodeClass moves
// to its regional profile, and the old one keeps its role and is not
// deleted with the class (the controller says so in an event, with the
// commands to delete it once unused).
func TestLegacyInstanceProfileIsLeftInPlace(t *testing.T) {
	a := simaws.NewAccount()
	a.Seed()
	ctx, iamAPI := context.Background(), a.IAM()
	r := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: iamAPI, ClusterName: "prod", Region: "eu-central-1", KubernetesVersion: simaws.KubernetesVersion}
	legacy := nodeclass.LegacyProfileName("prod", "default")
	if _, err := iamAPI.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: &legacy, Tags: []iamtypes.Tag{
		{Key: aws.String("kubernetes.io/cluster/prod"), Value: aws.String("owned")}, {Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamAPI.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: &legacy, RoleName: ptr.To("KarpenterControllerRole-nodewright-sim")}); err != nil {
		t.Fatal(err)
	}
	nc := nodeClass()
	nc.Name, nc.Spec.Role = "default", "KarpenterNodeRole-nodewright-sim"
	nc.Status.InstanceProfile = legacy
	name, err := r.InstanceProfile(ctx, nc)
	if err != nil || name != nodeclass.ProfileName("prod", "eu-central-1", "default") {
		t.Fatalf("resolved %q, %v; want the regional profile", name, err)
	}
	if got, err := r.LegacyProfile(ctx, nc); err != nil || got != legacy {
		t.Errorf("LegacyProfile = %q, %v; want %s", got, err, legacy)
	}
	if err := r.DeleteInstanceProfile(ctx, nc); err != nil {
		t.Fatal(err)
	}
	out, err := iamAPI.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: &legacy})
	if err != nil || len(out.InstanceProfile.Roles) != 1 || aws.ToString(out.InstanceProfile.Roles[0].RoleName) != "KarpenterControllerRole-nodewright-sim" {
		t.Errorf("the legacy profile was changed or deleted: %+v %v", out, err)
	}
}
