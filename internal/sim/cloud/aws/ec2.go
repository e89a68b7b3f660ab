package aws

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2 is the simulated EC2 API of an account.
type EC2 struct{ account *Account }

// subnetFilters are the filters DescribeSubnets knows.
var subnetFilters = resourceFilters[ec2types.Subnet]{
	fields: map[string]func(ec2types.Subnet) string{
		"subnet-id":         func(s ec2types.Subnet) string { return deref(s.SubnetId) },
		"availability-zone": func(s ec2types.Subnet) string { return deref(s.AvailabilityZone) },
	},
	tags: func(s ec2types.Subnet) []ec2types.Tag { return s.Tags },
}

// DescribeSubnets lists subnets by id and filters (subnet-id, availability-zone,
// tag:KEY, tag-key).
func (e *EC2) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeSubnets")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	subnets, err := subnetFilters.filter(a.subnets, in.Filters, func(s ec2types.Subnet) bool {
		return selected(in.SubnetIds, deref(s.SubnetId))
	})
	if err != nil {
		return nil, err
	}
	for _, id := range in.SubnetIds {
		if !hasSubnet(subnets, id) {
			return nil, apiError("InvalidSubnetID.NotFound", "The subnet ID '"+id+"' does not exist")
		}
	}
	return &ec2.DescribeSubnetsOutput{Subnets: subnets}, nil
}

func hasSubnet(subnets []ec2types.Subnet, id string) bool {
	for _, s := range subnets {
		if deref(s.SubnetId) == id {
			return true
		}
	}
	return false
}

// securityGroupFilters are the filters DescribeSecurityGroups knows.
var securityGroupFilters = resourceFilters[ec2types.SecurityGroup]{
	fields: map[string]func(ec2types.SecurityGroup) string{
		"group-id":   func(g ec2types.SecurityGroup) string { return deref(g.GroupId) },
		"group-name": func(g ec2types.SecurityGroup) string { return deref(g.GroupName) },
		"vpc-id":     func(g ec2types.SecurityGroup) string { return deref(g.VpcId) },
	},
	tags: func(g ec2types.SecurityGroup) []ec2types.Tag { return g.Tags },
}

// DescribeSecurityGroups lists security groups by id, name and filters
// (group-id, group-name, tag:KEY, tag-key).
func (e *EC2) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	if err := e.account.call(ctx, apiCall{action: "DescribeSecurityGroups", ec2: true, unfiltered: unfilteredSecurityGroups(in)}); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	groups, err := securityGroupFilters.filter(a.securityGroups, in.Filters, func(g ec2types.SecurityGroup) bool {
		return selected(in.GroupIds, deref(g.GroupId)) && selected(in.GroupNames, deref(g.GroupName))
	})
	if err != nil {
		return nil, err
	}
	for _, id := range in.GroupIds {
		if !hasSecurityGroup(groups, id) {
			return nil, apiError("InvalidGroup.NotFound", "The security group '"+id+"' does not exist")
		}
	}
	return &ec2.DescribeSecurityGroupsOutput{SecurityGroups: groups}, nil
}

// unfilteredSecurityGroups reports whether a DescribeSecurityGroups call
// asks for every group at once.
func unfilteredSecurityGroups(in *ec2.DescribeSecurityGroupsInput) bool {
	return len(in.GroupIds) == 0 && len(in.GroupNames) == 0 && len(in.Filters) == 0 && in.MaxResults == nil && in.NextToken == nil
}

func hasSecurityGroup(groups []ec2types.SecurityGroup, id string) bool {
	for _, g := range groups {
		if deref(g.GroupId) == id {
			return true
		}
	}
	return false
}

// imageFilters are the filters DescribeImages knows.
var imageFilters = resourceFilters[ec2types.Image]{
	fields: map[string]func(ec2types.Image) string{
		"image-id":     func(img ec2types.Image) string { return deref(img.ImageId) },
		"name":         func(img ec2types.Image) string { return deref(img.Name) },
		"architecture": func(img ec2types.Image) string { return string(img.Architecture) },
	},
	tags: func(img ec2types.Image) []ec2types.Tag { return img.Tags },
}

// DescribeImages lists AMIs by id, owner and filters (image-id, name,
// architecture, tag:KEY, tag-key). Owners are account ids or self, amazon.
func (e *EC2) DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeImages")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	images, err := imageFilters.filter(a.images, in.Filters, func(img ec2types.Image) bool {
		return selected(in.ImageIds, deref(img.ImageId)) && (len(in.Owners) == 0 || ownedBy(img, in.Owners))
	})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeImagesOutput{Images: images}, nil
}

func ownedBy(img ec2types.Image, owners []string) bool {
	for _, o := range owners {
		switch {
		case o == deref(img.OwnerId), o == "amazon" && deref(img.ImageOwnerAlias) == "amazon",
			o == "self" && !strings.EqualFold(deref(img.ImageOwnerAlias), "amazon"):
			return true
		}
	}
	return false
}
