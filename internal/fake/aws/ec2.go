package aws

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2 is the simulated EC2 API of an account.
type EC2 struct{ account *Account }

// DescribeSubnets lists subnets by id and filters (subnet-id, availability-zone,
// tag:KEY, tag-key).
func (e *EC2) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeSubnets")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &ec2.DescribeSubnetsOutput{}
	for _, s := range a.subnets {
		if len(in.SubnetIds) > 0 && !contains(in.SubnetIds, deref(s.SubnetId)) {
			continue
		}
		ok, err := matches(in.Filters, func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return []string{deref(s.SubnetId)}, true
			case "availability-zone":
				return []string{deref(s.AvailabilityZone)}, true
			}
			return tagAttributes(s.Tags, name)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			out.Subnets = append(out.Subnets, s)
		}
	}
	for _, id := range in.SubnetIds {
		if !hasSubnet(out.Subnets, id) {
			return nil, apiError("InvalidSubnetID.NotFound", "The subnet ID '"+id+"' does not exist")
		}
	}
	return out, nil
}

func hasSubnet(subnets []ec2types.Subnet, id string) bool {
	for _, s := range subnets {
		if deref(s.SubnetId) == id {
			return true
		}
	}
	return false
}

// DescribeSecurityGroups lists security groups by id, name and filters
// (group-id, group-name, tag:KEY, tag-key).
func (e *EC2) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	if err := e.account.call(ctx, apiCall{action: "DescribeSecurityGroups", ec2: true, unfiltered: len(in.GroupIds) == 0 && len(in.GroupNames) == 0 && len(in.Filters) == 0 && in.MaxResults == nil && in.NextToken == nil}); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &ec2.DescribeSecurityGroupsOutput{}
	for _, g := range a.securityGroups {
		if len(in.GroupIds) > 0 && !contains(in.GroupIds, deref(g.GroupId)) {
			continue
		}
		if len(in.GroupNames) > 0 && !contains(in.GroupNames, deref(g.GroupName)) {
			continue
		}
		ok, err := matches(in.Filters, func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return []string{deref(g.GroupId)}, true
			case "group-name":
				return []string{deref(g.GroupName)}, true
			}
			return tagAttributes(g.Tags, name)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			out.SecurityGroups = append(out.SecurityGroups, g)
		}
	}
	for _, id := range in.GroupIds {
		found := false
		for _, g := range out.SecurityGroups {
			found = found || deref(g.GroupId) == id
		}
		if !found {
			return nil, apiError("InvalidGroup.NotFound", "The security group '"+id+"' does not exist")
		}
	}
	return out, nil
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
	out := &ec2.DescribeImagesOutput{}
	for _, img := range a.images {
		if len(in.ImageIds) > 0 && !contains(in.ImageIds, deref(img.ImageId)) {
			continue
		}
		if len(in.Owners) > 0 && !ownedBy(img, in.Owners) {
			continue
		}
		ok, err := matches(in.Filters, func(name string) ([]string, bool) {
			switch name {
			case "image-id":
				return []string{deref(img.ImageId)}, true
			case "name":
				return []string{deref(img.Name)}, true
			case "architecture":
				return []string{string(img.Architecture)}, true
			}
			return tagAttributes(img.Tags, name)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			out.Images = append(out.Images, img)
		}
	}
	return out, nil
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
