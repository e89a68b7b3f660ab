package aws

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// KubernetesVersion is the minor version the account's EKS-optimized AMI
// parameters are published for.
const KubernetesVersion = "1.34"

// discoveryTag marks the subnets and security groups of the cluster.
var discoveryTag = ec2types.Tag{Key: aws.String("karpenter.sh/discovery"), Value: aws.String(account.ClusterName)}

// SeedReservationID is the seeded account's capacity reservation: two
// m5.large in us-east-1a, targeted (used only by launches that name it),
// tagged for discovery.
const SeedReservationID = "cr-0a1b2c3d4e5f60001"

// Seed fills the account with what every scenario assumes: a subnet and
// the cluster security group per zone, tagged for discovery; the
// EKS-optimized AMIs of every alias family for both architectures, with
// their public SSM parameters; the custom AMIs; a capacity reservation
// no scenario selects; and a placement group of each strategy.
func (a *Account) Seed() {
	for i, zone := range account.Zones() {
		a.AddSubnet(ec2types.Subnet{
			SubnetId: aws.String(fmt.Sprintf("subnet-0%d1234567890abcd", i+1)), AvailabilityZone: aws.String(zone),
			AvailabilityZoneId: aws.String(fmt.Sprintf("use1-az%d", i+1)), AvailableIpAddressCount: aws.Int32(int32(4000 - 500*i)),
			CidrBlock: aws.String(fmt.Sprintf("10.0.%d.0/20", 16*i)), Tags: []ec2types.Tag{discoveryTag, {Key: aws.String("Name"), Value: aws.String("private-" + zone)}},
		})
	}
	a.AddSecurityGroup(ec2types.SecurityGroup{
		GroupId: aws.String("sg-0123456789abcdef0"), GroupName: aws.String("eks-cluster-sg-" + account.ClusterName),
		Tags: []ec2types.Tag{discoveryTag},
	})
	a.AddSecurityGroup(ec2types.SecurityGroup{GroupId: aws.String("sg-0fedcba9876543210"), GroupName: aws.String("default")})
	a.AddRole(account.NodeRole)
	a.AddRole(account.ControllerRole)
	a.AddCapacityReservation(ec2types.CapacityReservation{
		CapacityReservationId: aws.String(SeedReservationID), InstanceType: aws.String("m5.large"),
		AvailabilityZone: aws.String(account.Zones()[0]), TotalInstanceCount: aws.Int32(2), Tags: []ec2types.Tag{discoveryTag},
	})
	a.AddPlacementGroup(ec2types.PlacementGroup{GroupName: aws.String(ClusterPlacementGroup), Strategy: ec2types.PlacementStrategyCluster})
	a.AddPlacementGroup(ec2types.PlacementGroup{GroupName: aws.String(PartitionPlacementGroup), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3)})
	a.AddPlacementGroup(ec2types.PlacementGroup{GroupName: aws.String(SpreadPlacementGroup), Strategy: ec2types.PlacementStrategySpread})
	for _, img := range aliasImages() {
		a.AddImage(img.image)
		a.SetParameter(img.parameter, *img.image.ImageId)
	}
	for _, img := range account.Images() {
		arch := ec2types.ArchitectureValuesX8664
		if img.Arch == "arm64" {
			arch = ec2types.ArchitectureValuesArm64
		}
		a.AddImage(ec2types.Image{
			ImageId: aws.String(img.ID), Name: aws.String(img.Name), Architecture: arch, OwnerId: aws.String(account.AccountID),
			CreationDate: aws.String("2026-10-01T00:00:00.000Z"), State: ec2types.ImageStateAvailable,
		})
	}
}

type aliasImage struct {
	parameter string
	image     ec2types.Image
}

// eksImageName is the name EKS gives its optimized image of the family
// for the architecture (x86_64, arm64).
func eksImageName(family, arch string) string {
	brArch := map[string]string{"x86_64": "x86_64", "arm64": "aarch64"}[arch]
	switch family {
	case "al2":
		if arch == "arm64" {
			return fmt.Sprintf("amazon-eks-arm64-node-%s-v20261101", KubernetesVersion)
		}
		return fmt.Sprintf("amazon-eks-node-%s-v20261101", KubernetesVersion)
	case "al2023":
		return fmt.Sprintf("amazon-eks-node-al2023-%s-standard-%s-v20261101", arch, KubernetesVersion)
	case "bottlerocketfips":
		return fmt.Sprintf("bottlerocket-aws-k8s-%s-fips-%s-v1.50.0-5d1b2a3c", KubernetesVersion, brArch)
	}
	return fmt.Sprintf("bottlerocket-aws-k8s-%s-%s-v1.50.0-5d1b2a3c", KubernetesVersion, brArch)
}

// aliasImages are the EKS-optimized AMIs the aliases resolve to.
func aliasImages() []aliasImage {
	var out []aliasImage
	for _, arch := range []struct {
		name, ec2, al2Suffix string
	}{{"x86_64", string(ec2types.ArchitectureValuesX8664), ""}, {"arm64", string(ec2types.ArchitectureValuesArm64), "-arm64"}} {
		for _, f := range []struct{ family, parameter string }{
			{"al2", fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", KubernetesVersion, arch.al2Suffix)},
			{"al2023", fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", KubernetesVersion, arch.name)},
			{"bottlerocket", fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/latest/image_id", KubernetesVersion, arch.name)},
			{"bottlerocketfips", fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s-fips/%s/latest/image_id", KubernetesVersion, arch.name)},
		} {
			id := fmt.Sprintf("ami-%s%s", f.family, idPart(arch.name))
			out = append(out, aliasImage{parameter: f.parameter, image: ec2types.Image{
				ImageId: aws.String(id), Name: aws.String(eksImageName(f.family, arch.name)),
				Architecture: ec2types.ArchitectureValues(arch.ec2), OwnerId: aws.String("602401143452"), ImageOwnerAlias: aws.String("amazon"),
				CreationDate: aws.String("2026-11-01T00:00:00.000Z"), State: ec2types.ImageStateAvailable,
			}})
		}
	}
	// Windows: amd64 only, the latest image of each release.
	for _, release := range []string{"2019", "2022", "2025"} {
		out = append(out, aliasImage{
			parameter: fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", release, KubernetesVersion),
			image: ec2types.Image{
				ImageId: aws.String("ami-windows" + release + "x8664"), Name: aws.String(fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s-2026.11.12", release, KubernetesVersion)),
				Architecture: ec2types.ArchitectureValuesX8664, Platform: ec2types.PlatformValuesWindows, PlatformDetails: aws.String("Windows"),
				OwnerId: aws.String("801119661308"), ImageOwnerAlias: aws.String("amazon"),
				CreationDate: aws.String("2026-11-12T00:00:00.000Z"), State: ec2types.ImageStateAvailable,
			},
		})
	}
	return out
}

// idPart makes an architecture name fit an AMI id.
func idPart(arch string) string {
	if arch == "x86_64" {
		return "x8664"
	}
	return arch
}

// Family is the AMI family an instance of the account boots as.
func (a *Account) Family(inst Instance) string { return a.ImageFamily(aws.ToString(inst.ImageId)) }

// RoleARN is the ARN of one of the account's roles.
func (a *Account) RoleARN(role string) string {
	return fmt.Sprintf("arn:aws:iam::%s:role/%s", accountID, role)
}

// ImageFamily is the operating system family an AMI of the account boots,
// which decides how its user data is read.
func (a *Account) ImageFamily(id string) string {
	for _, f := range []struct{ prefix, family string }{
		{"ami-al2023", awsv1.AMIFamilyAL2023}, {"ami-al2", awsv1.AMIFamilyAL2}, {"ami-bottlerocket", awsv1.AMIFamilyBottlerocket},
		{"ami-windows2019", awsv1.AMIFamilyWindows2019}, {"ami-windows2022", awsv1.AMIFamilyWindows2022}, {"ami-windows2025", awsv1.AMIFamilyWindows2025},
	} {
		if strings.HasPrefix(id, f.prefix) {
			return f.family
		}
	}
	for _, img := range account.Images() {
		if img.ID == id {
			return img.Family
		}
	}
	return awsv1.AMIFamilyCustom
}
