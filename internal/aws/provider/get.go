package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// ParseProviderID splits aws:///<zone>/<instance-id>.
func ParseProviderID(id string) (zone, instanceID string, err error) {
	rest, ok := strings.CutPrefix(id, "aws:///")
	zone, instanceID, found := strings.Cut(rest, "/")
	if !ok || !found || !strings.HasPrefix(instanceID, "i-") {
		return "", "", fmt.Errorf("provider ID %q is not aws:///<zone>/<instance-id>", id)
	}
	return zone, instanceID, nil
}

// Get returns the instance behind a provider ID; a terminated or unknown
// instance is a NotFoundError. types, when given, fill capacity, allocatable
// and labels.
func (p *Launcher) Get(ctx context.Context, id string, types ...*scheduling.InstanceType) (*cloudprovider.Instance, error) {
	_, instanceID, err := ParseProviderID(id)
	if err != nil {
		return nil, err
	}
	inst, err := p.describe(ctx, instanceID)
	if err != nil {
		return nil, err
	}
	out := instanceOf(inst, types)
	out.Foreign = !p.owns(inst.Tags)
	return out, nil
}

// describe reads one instance; a terminated or unknown one is a
// NotFoundError.
func (p *Launcher) describe(ctx context.Context, instanceID string) (ec2types.Instance, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instanceID}})
	if err != nil {
		if hasCode(err, "InvalidInstanceID.NotFound") {
			return ec2types.Instance{}, &cloudprovider.NotFoundError{Message: "instance " + instanceID + " does not exist"}
		}
		return ec2types.Instance{}, fmt.Errorf("describing instance %s: %w", instanceID, err)
	}
	if len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
		return ec2types.Instance{}, &cloudprovider.NotFoundError{Message: "instance " + instanceID + " does not exist"}
	}
	inst := out.Reservations[0].Instances[0]
	if inst.State != nil && inst.State.Name == ec2types.InstanceStateNameTerminated {
		return ec2types.Instance{}, &cloudprovider.NotFoundError{Message: "instance " + instanceID + " is terminated"}
	}
	return inst, nil
}

// launchedFor is the live instance launched for a NodeClaim, if any.
func (p *Launcher) launchedFor(ctx context.Context, claim *v1.NodeClaim, types []*scheduling.InstanceType) (*cloudprovider.Instance, error) {
	filters := append(p.ownedFilters(),
		ec2types.Filter{Name: aws.String("tag:" + TagNodeClaim), Values: []string{claim.Name}},
		ec2types.Filter{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}})
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: filters})
	if err != nil {
		return nil, fmt.Errorf("finding the instance of NodeClaim %s: %w", claim.Name, err)
	}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			if p.owns(inst.Tags) && tagValue(inst.Tags, TagNodeClaim) == claim.Name {
				return instanceOf(inst, types), nil
			}
		}
	}
	return nil, nil
}

// List returns the instances nodewright launched in the cluster (see
// owns) that are not terminated, for garbage collection. Instances of the
// cluster that nodewright did not launch (a managed or self-managed node
// group's, the reference's before a takeover without its tags) are never
// listed.
func (p *Launcher) List(ctx context.Context) ([]*cloudprovider.Instance, error) {
	var out []*cloudprovider.Instance
	filters := append(p.ownedFilters(),
		ec2types.Filter{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped", "shutting-down"}})
	pages := ec2.NewDescribeInstancesPaginator(p.ec2, &ec2.DescribeInstancesInput{Filters: filters})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the cluster's instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				// The filters already say so; an endpoint that ignores
				// one must not make a foreign instance ours.
				if p.owns(inst.Tags) {
					out = append(out, instanceOf(inst, nil))
				}
			}
		}
	}
	return out, nil
}

// instanceOf is the cloudprovider view of an EC2 instance; types, when
// one is the instance's, fill its capacity, allocatable and labels.
func instanceOf(inst ec2types.Instance, types []*scheduling.InstanceType) *cloudprovider.Instance {
	zone := zoneOf(inst)
	capacityType := capacityTypeOf(inst)
	out := &cloudprovider.Instance{
		ProviderID: providerID(zone, aws.ToString(inst.InstanceId)), InstanceID: aws.ToString(inst.InstanceId),
		InstanceType: string(inst.InstanceType), Zone: zone, CapacityType: capacityType, ImageID: aws.ToString(inst.ImageId),
		Labels: map[string]string{
			scheduling.LabelInstanceType: string(inst.InstanceType), scheduling.LabelZone: zone, v1.LabelCapacityType: capacityType,
		},
	}
	addPlacementLabels(out.Labels, inst)
	if inst.State != nil {
		out.State = string(inst.State.Name)
	}
	out.LaunchTime = aws.ToTime(inst.LaunchTime)
	out.SubnetID = aws.ToString(inst.SubnetId)
	out.CapacityReservationID = aws.ToString(inst.CapacityReservationId)
	for _, g := range inst.SecurityGroups {
		out.SecurityGroupIDs = append(out.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	out.NodeClaim, out.NodePool = claimAndPool(inst.Tags)
	out.LaunchBatch, out.Name = tagValue(inst.Tags, TagLaunchBatch), tagValue(inst.Tags, "Name")
	if out.LaunchBatch != "" && out.NodeClaim == Untaken(out.LaunchBatch) {
		out.NodeClaim = ""
	}
	addTypeDetails(out, types)
	return out
}

// zoneOf is the instance's availability zone, "" when EC2 does not say.
func zoneOf(inst ec2types.Instance) string {
	if inst.Placement == nil {
		return ""
	}
	return aws.ToString(inst.Placement.AvailabilityZone)
}

// capacityTypeOf is how the instance was bought: in a capacity
// reservation, as spot, or on demand.
func capacityTypeOf(inst ec2types.Instance) string {
	switch {
	case inst.CapacityReservationId != nil:
		return v1.CapacityTypeReserved
	case inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot:
		return v1.CapacityTypeSpot
	}
	return v1.CapacityTypeOnDemand
}

// addPlacementLabels labels the instance's capacity reservation and
// placement group, when it is in one.
func addPlacementLabels(labels map[string]string, inst ec2types.Instance) {
	if inst.CapacityReservationId != nil {
		labels[awsv1.LabelCapacityReservationID] = *inst.CapacityReservationId
		labels[awsv1.LabelCapacityReservationInterruptible] = strconv.FormatBool(inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation)
	}
	if p := inst.Placement; p != nil && p.GroupId != nil {
		labels[awsv1.LabelPlacementGroupID] = *p.GroupId
		if p.PartitionNumber != nil {
			labels[awsv1.LabelPlacementGroupPartition] = strconv.Itoa(int(*p.PartitionNumber))
		}
	}
}

// claimAndPool are the NodeClaim and NodePool an instance's tags name.
func claimAndPool(tags []ec2types.Tag) (nodeClaim, nodePool string) {
	for _, t := range tags {
		switch aws.ToString(t.Key) {
		case TagNodeClaim:
			nodeClaim = aws.ToString(t.Value)
		case v1.LabelNodePool:
			nodePool = aws.ToString(t.Value)
		}
	}
	return nodeClaim, nodePool
}

// addTypeDetails fills the instance's capacity and allocatable from its
// type among types, and the type's labels the instance does not have.
func addTypeDetails(out *cloudprovider.Instance, types []*scheduling.InstanceType) {
	for _, it := range types {
		if it.Name != out.InstanceType {
			continue
		}
		out.Capacity, out.Allocatable = it.Capacity.List(), it.Allocatable.List()
		for k, v := range it.Requirements.Labels() {
			if _, set := out.Labels[k]; !set {
				out.Labels[k] = v
			}
		}
	}
}
