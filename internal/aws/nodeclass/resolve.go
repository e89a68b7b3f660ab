// Package nodeclass resolves an EC2NodeClass's selector terms against AWS:
// its subnets, security groups and AMIs.
package nodeclass

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// ec2API and ssmAPI are what resolution calls; sdk.EC2 and sdk.SSM (and
// so the SDK clients and the simulated account) provide them.
type ec2API interface {
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, opts ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

type ssmAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Resolver resolves selector terms.
type Resolver struct {
	EC2 ec2API
	SSM ssmAPI
	IAM iamAPI
	// ClusterName names and tags the instance profiles nodewright creates.
	ClusterName string
	// Region is the controller's region, part of the name and tags of
	// those profiles (IAM is global; the cluster's name may be reused in
	// another region).
	Region string
	// KubernetesVersion is the cluster's minor version ("1.34"), which
	// picks the EKS-optimized AMIs of an alias.
	KubernetesVersion string
	// AliasParameterRoot is where the public SSM parameters that name
	// the EKS-optimized AMIs of aliases live: /aws/service (the default,
	// when empty) on AWS; a copy elsewhere where they are not published.
	AliasParameterRoot string
}

// tagFilters turns selector tags into EC2 filters; "*" matches any value.
func tagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ec2types.Filter, 0, len(keys))
	for _, k := range keys {
		if tags[k] == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{tags[k]}})
		}
	}
	return out
}

// Subnet is a resolved subnet with the free addresses launch needs.
type Subnet struct {
	awsv1.Subnet
	FreeIPs int32
}

// Subnets resolves subnetSelectorTerms (ORed), sorted by id.
func (r *Resolver) Subnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]Subnet, error) {
	seen := map[string]Subnet{}
	for _, term := range nc.Spec.SubnetSelectorTerms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{term.ID}})
		}
		out, err := r.EC2.DescribeSubnets(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing subnets: %w", err)
		}
		for _, s := range out.Subnets {
			seen[aws.ToString(s.SubnetId)] = Subnet{
				Subnet:  awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)},
				FreeIPs: aws.ToInt32(s.AvailableIpAddressCount),
			}
		}
	}
	out := make([]Subnet, 0, len(seen))
	for _, s := range seen {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// SecurityGroups resolves securityGroupSelectorTerms (ORed), sorted by id.
func (r *Resolver) SecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	seen := map[string]awsv1.SecurityGroup{}
	for _, term := range nc.Spec.SecurityGroupSelectorTerms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{term.ID}})
		}
		if term.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{term.Name}})
		}
		out, err := r.EC2.DescribeSecurityGroups(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing security groups: %w", err)
		}
		for _, g := range out.SecurityGroups {
			seen[aws.ToString(g.GroupId)] = awsv1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)}
		}
	}
	out := make([]awsv1.SecurityGroup, 0, len(seen))
	for _, g := range seen {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// AMIs resolves amiSelectorTerms: aliases through the public SSM
// parameters of the EKS-optimized AMIs, the other terms through
// DescribeImages. Of the AMIs for the same requirements (architecture) the
// newest non-deprecated one is kept.
func (r *Resolver) AMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	var images []ec2types.Image
	for _, term := range nc.Spec.AMISelectorTerms {
		var found []ec2types.Image
		var err error
		switch {
		case term.Alias != "":
			found, err = r.aliasImages(ctx, term.Alias)
		case term.SSMParameter != "":
			found, err = r.parameterImages(ctx, []string{term.SSMParameter})
		default:
			in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags)}
			if term.ID != "" {
				in.ImageIds = []string{term.ID}
			}
			if term.Name != "" {
				in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
			}
			if term.Owner != "" {
				in.Owners = []string{term.Owner}
			}
			var out *ec2.DescribeImagesOutput
			if out, err = r.EC2.DescribeImages(ctx, in); err == nil {
				found = out.Images
			}
		}
		if err != nil {
			return nil, err
		}
		images = append(images, found...)
	}
	return newestPerRequirements(images, awsv1.WindowsBuild(Family(nc))), nil
}

// aliasImages resolves family@version through SSM.
func (r *Resolver) aliasImages(ctx context.Context, alias string) ([]ec2types.Image, error) {
	params, err := AliasParameters(r.AliasParameterRoot, alias, r.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	return r.parameterImages(ctx, params)
}

// DefaultAliasParameterRoot is where AWS publishes the SSM parameters of
// the EKS-optimized AMIs.
const DefaultAliasParameterRoot = "/aws/service"

// AliasParameters are the public SSM parameters an alias (family@version)
// names the EKS-optimized AMIs by, for a Kubernetes version, under root
// (DefaultAliasParameterRoot when empty).
func AliasParameters(root, alias, k string) ([]string, error) {
	root = strings.TrimSuffix(cmp.Or(root, DefaultAliasParameterRoot), "/")
	family, version, _ := strings.Cut(alias, "@")
	var params []string
	switch family {
	case "al2":
		for _, suffix := range []string{"", "-arm64"} {
			if version == "latest" {
				params = append(params, fmt.Sprintf(root+"/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", k, suffix))
			} else {
				params = append(params, fmt.Sprintf(root+"/eks/optimized-ami/%s/amazon-linux-2%s/amazon-eks%s-node-%s-%s/image_id", k, suffix, suffix, k, version))
			}
		}
	case "al2023":
		for _, arch := range []string{"x86_64", "arm64"} {
			if version == "latest" {
				params = append(params, fmt.Sprintf(root+"/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", k, arch))
			} else {
				params = append(params, fmt.Sprintf(root+"/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/amazon-eks-node-al2023-%s-standard-%s-%s/image_id", k, arch, arch, k, version))
			}
		}
	case "bottlerocket":
		v := strings.TrimPrefix(version, "v")
		for _, arch := range []string{"x86_64", "arm64"} {
			params = append(params, fmt.Sprintf(root+"/bottlerocket/aws-k8s-%s/%s/%s/image_id", k, arch, v))
		}
	case "windows2019", "windows2022", "windows2025":
		// Windows publishes only the latest image of each release.
		if family == "windows2025" && minorBelow(k, 35) {
			return nil, &AliasError{Alias: alias, Reason: fmt.Sprintf("Windows Server 2025 EKS-optimized AMIs are published for Kubernetes 1.35 and later, and the cluster runs %s", k),
				Fix: "use the alias windows2022@latest (amiFamily Windows2022), or upgrade the cluster to Kubernetes 1.35"}
		}
		params = append(params, fmt.Sprintf(root+"/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", strings.TrimPrefix(family, "windows"), k))
	default:
		return nil, &AliasError{Alias: alias, Reason: fmt.Sprintf("the %s family has no EKS-optimized AMIs", family), Fix: "use one of the families al2023, al2, bottlerocket, windows2019, windows2022, windows2025"}
	}
	return params, nil
}

// AliasError is an alias that names no AMI for the cluster: nothing is
// launched from its EC2NodeClass until it changes.
type AliasError struct{ Alias, Reason, Fix string }

func (e *AliasError) Error() string { return fmt.Sprintf("alias %s: %s; %s", e.Alias, e.Reason, e.Fix) }

// NoAMIMessage says why amiSelectorTerms select no AMI and what to do:
// for aliases, the SSM parameters read and the Kubernetes version they
// are for.
func (r *Resolver) NoAMIMessage(nc *awsv1.EC2NodeClass) string {
	msg := "no AMI matches spec.amiSelectorTerms " + DescribeAMITerms(nc.Spec.AMISelectorTerms)
	var params []string
	var alias string
	for _, t := range nc.Spec.AMISelectorTerms {
		if p, err := AliasParameters(r.AliasParameterRoot, t.Alias, r.KubernetesVersion); t.Alias != "" && err == nil {
			params, alias = append(params, p...), t.Alias
		}
	}
	if len(params) == 0 {
		return msg + "; check the ids, names, owners and tags against the account's images (aws ec2 describe-images), or use an alias such as al2023@latest"
	}
	family, _, _ := strings.Cut(alias, "@")
	return fmt.Sprintf("%s: for Kubernetes %s the alias reads the SSM parameters %s, and none names an image this account can use; "+
		"if the cluster is not on Kubernetes %s, give the controller --kubernetes-version; otherwise pin a version the alias publishes (%s@<version>), "+
		"or select the AMI with an ssmParameter, id or tags term", msg, r.KubernetesVersion, strings.Join(params, ", "), r.KubernetesVersion, family)
}

// parameterImages reads AMI ids from SSM parameters and describes them;
// missing parameters are skipped (not every variant exists for every
// version).
func (r *Resolver) parameterImages(ctx context.Context, params []string) ([]ec2types.Image, error) {
	var ids []string
	for _, p := range params {
		out, err := r.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(p)})
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading SSM parameter %s: %w", p, err)
		}
		ids = append(ids, aws.ToString(out.Parameter.Value))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := r.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids})
	if err != nil {
		return nil, fmt.Errorf("describing images %s: %w", strings.Join(ids, ", "), err)
	}
	return out.Images, nil
}

// architecture maps EC2 architectures to kubernetes.io/arch.
func architecture(a ec2types.ArchitectureValues) string {
	switch a {
	case ec2types.ArchitectureValuesX8664, ec2types.ArchitectureValuesX8664Mac:
		return "amd64"
	case ec2types.ArchitectureValuesArm64, ec2types.ArchitectureValuesArm64Mac:
		return "arm64"
	}
	return string(a)
}

// minorBelow reports whether a Kubernetes version ("1.34") is older than
// 1.<minor>; false when it cannot be read.
func minorBelow(version string, minor int) bool {
	_, m, ok := strings.Cut(version, ".")
	n, err := strconv.Atoi(m)
	return ok && err == nil && n < minor
}

// newestPerRequirements keeps the newest image per architecture; the
// images of a Windows family (windowsBuild set) boot Windows nodes of
// that build, which their requirements say.
func newestPerRequirements(images []ec2types.Image, windowsBuild string) []awsv1.AMI {
	best := map[string]ec2types.Image{}
	for _, img := range images {
		arch := architecture(img.Architecture)
		cur, ok := best[arch]
		if !ok || better(img, cur) {
			best[arch] = img
		}
	}
	archs := make([]string, 0, len(best))
	for a := range best {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	out := make([]awsv1.AMI, 0, len(archs))
	for _, arch := range archs {
		img := best[arch]
		reqs := []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
		if windowsBuild != "" {
			reqs = append(reqs,
				corev1.NodeSelectorRequirement{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
				corev1.NodeSelectorRequirement{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{windowsBuild}})
		}
		out = append(out, awsv1.AMI{ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Deprecated: deprecated(img), Requirements: reqs})
	}
	return out
}

// better prefers non-deprecated, then newer, then the larger id.
func better(a, b ec2types.Image) bool {
	if deprecated(a) != deprecated(b) {
		return !deprecated(a)
	}
	if aws.ToString(a.CreationDate) != aws.ToString(b.CreationDate) {
		return aws.ToString(a.CreationDate) > aws.ToString(b.CreationDate)
	}
	return aws.ToString(a.ImageId) > aws.ToString(b.ImageId)
}

func deprecated(img ec2types.Image) bool { return aws.ToString(img.DeprecationTime) != "" }
