package aws

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// Placement groups the account is seeded with, one per strategy.
const (
	ClusterPlacementGroup   = "nodewright-cluster"
	PartitionPlacementGroup = "nodewright-partition"
	SpreadPlacementGroup    = "nodewright-spread"
)

// spreadPerZone is how many running instances a spread placement group
// holds per Availability Zone (rack-level spread).
const spreadPerZone = 7

// AddPlacementGroup adds a placement group, available; a partition group
// without a count gets 3 partitions.
func (a *Account) AddPlacementGroup(g ec2types.PlacementGroup) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if g.GroupId == nil {
		g.GroupId = aws.String(fmt.Sprintf("pg-0%016x", len(a.placement)+1))
	}
	if g.State == "" {
		g.State = ec2types.PlacementGroupStateAvailable
	}
	if g.Strategy == ec2types.PlacementStrategyPartition && g.PartitionCount == nil {
		g.PartitionCount = aws.Int32(3)
	}
	a.placement = append(a.placement, g)
}

// DescribePlacementGroups lists placement groups by id or name; an unknown
// one is an error, as EC2 answers.
func (e *EC2) DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribePlacementGroups")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	out := &ec2.DescribePlacementGroupsOutput{}
	for _, id := range in.GroupIds {
		g := a.placementGroup(id)
		if g == nil {
			return nil, apiError("InvalidPlacementGroupId.NotFound", fmt.Sprintf("The Placement Group ID '%s' does not exist", id))
		}
		out.PlacementGroups = append(out.PlacementGroups, *g)
	}
	for _, name := range in.GroupNames {
		g := a.placementGroup(name)
		if g == nil {
			return nil, apiError("InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", name))
		}
		out.PlacementGroups = append(out.PlacementGroups, *g)
	}
	if len(in.GroupIds) == 0 && len(in.GroupNames) == 0 {
		out.PlacementGroups = append(out.PlacementGroups, a.placement...)
	}
	return out, nil
}

// placementGroup finds a placement group by id or name.
func (a *Account) placementGroup(key string) *ec2types.PlacementGroup {
	for i := range a.placement {
		if deref(a.placement[i].GroupId) == key || deref(a.placement[i].GroupName) == key {
			return &a.placement[i]
		}
	}
	return nil
}

// place puts a launch into its launch template's placement group: the
// strategy must be one the instance type supports; a spread group takes
// seven running instances per zone; a partition group puts the instance
// in the partition asked for, or the next one round-robin. It returns the
// placement, or an error code and message.
func (a *Account) place(p *ec2types.LaunchTemplatePlacementRequest, c candidate, zone string) (*ec2types.Placement, string, string) {
	placement := &ec2types.Placement{AvailabilityZone: aws.String(zone)}
	if p == nil || (p.GroupId == nil && p.GroupName == nil) {
		return placement, "", ""
	}
	key := requestedGroup(p)
	g := a.placementGroup(key)
	if g == nil {
		return nil, "InvalidPlacementGroup.Unknown", fmt.Sprintf("The Placement Group '%s' is unknown.", key)
	}
	if !slices.Contains(c.spec.PlacementStrategies, string(g.Strategy)) {
		return nil, "InvalidParameterCombination", fmt.Sprintf("The instance type %s is not supported in a %s placement group.", c.spec.Name, g.Strategy)
	}
	placement.GroupId, placement.GroupName = g.GroupId, g.GroupName
	if code, message := a.placeInGroup(g, p, zone, placement); code != "" {
		return nil, code, message
	}
	return placement, "", ""
}

// requestedGroup is the id of the placement group a launch template asks
// for, else its name.
func requestedGroup(p *ec2types.LaunchTemplatePlacementRequest) string {
	if key := deref(p.GroupId); key != "" {
		return key
	}
	return deref(p.GroupName)
}

// placeInGroup applies the group's strategy to the placement: a spread
// group refuses an eighth running instance in a zone, a partition group
// picks the partition. It returns an error code and message, or "".
func (a *Account) placeInGroup(g *ec2types.PlacementGroup, p *ec2types.LaunchTemplatePlacementRequest, zone string, placement *ec2types.Placement) (string, string) {
	switch g.Strategy {
	case ec2types.PlacementStrategySpread:
		if a.spreadCount(deref(g.GroupId), zone) >= spreadPerZone {
			return "InsufficientInstanceCapacity", fmt.Sprintf("The spread placement group %s already has %d running instances in %s, its limit per Availability Zone.", deref(g.GroupName), spreadPerZone, zone)
		}
	case ec2types.PlacementStrategyPartition:
		return a.placeInPartition(g, p, placement)
	}
	return "", ""
}

// placeInPartition puts the placement in the partition the launch template
// asks for, or in the group's next one round-robin.
func (a *Account) placeInPartition(g *ec2types.PlacementGroup, p *ec2types.LaunchTemplatePlacementRequest, placement *ec2types.Placement) (string, string) {
	count := aws.ToInt32(g.PartitionCount)
	n := aws.ToInt32(p.PartitionNumber)
	if n > count {
		return "InvalidParameterValue", fmt.Sprintf("Partition number %d is out of range: placement group %s has %d partitions.", n, deref(g.GroupName), count)
	}
	if n == 0 {
		n = a.partition[deref(g.GroupId)]%count + 1
		a.partition[deref(g.GroupId)] = n
	}
	placement.PartitionNumber = aws.Int32(n)
	return "", ""
}

// spreadCount counts the live instances of a placement group in a zone.
func (a *Account) spreadCount(group, zone string) int {
	n := 0
	for _, inst := range a.instances {
		p := inst.Placement
		if p == nil || deref(p.GroupId) != group || deref(p.AvailabilityZone) != zone {
			continue
		}
		if live(inst.State) {
			n++
		}
	}
	return n
}

// live reports whether an instance in the state counts against its
// placement group: it has not begun shutting down.
func live(s *ec2types.InstanceState) bool {
	return s == nil || (s.Name != ec2types.InstanceStateNameTerminated && s.Name != ec2types.InstanceStateNameShuttingDown)
}

// checkInterfaces checks a launch template's network interfaces as EC2
// does when the template is made.
func checkInterfaces(d *ec2types.RequestLaunchTemplateData) error {
	if len(d.NetworkInterfaces) == 0 {
		return nil
	}
	if len(d.SecurityGroupIds) > 0 || len(d.SecurityGroups) > 0 {
		return apiError("InvalidParameterCombination", "Network interfaces and an instance-level security groups may not be specified on the same request")
	}
	seen := map[[2]int32]bool{}
	for _, ni := range d.NetworkInterfaces {
		if err := checkInterface(ni, seen); err != nil {
			return err
		}
	}
	if !seen[[2]int32{0, 0}] {
		return apiError("InvalidParameterValue", "The network interfaces need a primary interface at network card 0, device index 0")
	}
	return nil
}

// checkInterface checks one network interface of a launch template and
// records its network card and device index in seen, which must not have
// them yet.
func checkInterface(ni ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, seen map[[2]int32]bool) error {
	at := [2]int32{aws.ToInt32(ni.NetworkCardIndex), aws.ToInt32(ni.DeviceIndex)}
	if ni.DeviceIndex == nil {
		return apiError("MissingParameter", "Each network interface needs a DeviceIndex")
	}
	if seen[at] {
		return apiError("InvalidParameterValue", fmt.Sprintf("Network card %d, device index %d is specified more than once", at[0], at[1]))
	}
	seen[at] = true
	if efaOnlyWithIPOptions(ni) {
		return apiError("InvalidParameterValue", "An EFA-only network interface takes no IP prefixes, public IP address or connection tracking")
	}
	return checkConnectionTracking(ni.ConnectionTrackingSpecification)
}

// efaOnlyWithIPOptions reports whether an EFA-only interface asks for what
// only an IP interface has.
func efaOnlyWithIPOptions(ni ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) bool {
	if aws.ToString(ni.InterfaceType) != string(ec2types.NetworkInterfaceTypeEfaOnly) {
		return false
	}
	return ni.Ipv4PrefixCount != nil || ni.AssociatePublicIpAddress != nil || ni.ConnectionTrackingSpecification != nil
}

// checkConnectionTracking checks the connection tracking timeouts an
// interface sets against the ranges EC2 accepts.
func checkConnectionTracking(ct *ec2types.ConnectionTrackingSpecificationRequest) error {
	if ct == nil {
		return nil
	}
	for _, b := range []struct {
		name     string
		v        *int32
		min, max int32
	}{{"TcpEstablishedTimeout", ct.TcpEstablishedTimeout, 60, 432000}, {"UdpStreamTimeout", ct.UdpStreamTimeout, 60, 180}, {"UdpTimeout", ct.UdpTimeout, 30, 60}} {
		if b.v != nil && (*b.v < b.min || *b.v > b.max) {
			return apiError("InvalidParameterValue", fmt.Sprintf("%s %d is out of range: use %d to %d seconds", b.name, *b.v, b.min, b.max))
		}
	}
	return nil
}

// typeProblem checks what a launch template asks of the instance type:
// its network cards, interfaces per card and EFA interfaces, nested
// virtualization, and Nitro for connection tracking.
func typeProblem(d ec2types.RequestLaunchTemplateData, spec instancetypes.Spec) string {
	if o := d.CpuOptions; o != nil && o.NestedVirtualization == ec2types.NestedVirtualizationSpecificationEnabled && !spec.NestedVirtualization {
		return fmt.Sprintf("The instance type %s does not support nested virtualization", spec.Name)
	}
	if o := d.EnclaveOptions; o != nil && aws.ToBool(o.Enabled) && !spec.NitroEnclaves {
		return fmt.Sprintf("The instance type %s does not support Nitro Enclaves", spec.Name)
	}
	perCard := max(1, spec.MaxENIs/max(1, spec.NetworkCards))
	efa := int64(0)
	for _, ni := range d.NetworkInterfaces {
		if problem := interfaceTypeProblem(ni, spec, perCard); problem != "" {
			return problem
		}
		if isEFA(ni) {
			efa++
		}
	}
	if efa > spec.MaxEFA {
		return fmt.Sprintf("The instance type %s supports %d EFA interfaces, not %d", spec.Name, spec.MaxEFA, efa)
	}
	return ""
}

// interfaceTypeProblem checks one network interface against the instance
// type: its card and device index in range, and Nitro for connection
// tracking.
func interfaceTypeProblem(ni ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, spec instancetypes.Spec, perCard int64) string {
	card, device := int64(aws.ToInt32(ni.NetworkCardIndex)), int64(aws.ToInt32(ni.DeviceIndex))
	if card >= spec.NetworkCards {
		return fmt.Sprintf("Network card index %d is out of range: the instance type %s has %d network cards", card, spec.Name, spec.NetworkCards)
	}
	if device >= perCard {
		return fmt.Sprintf("Device index %d is out of range: the instance type %s takes %d network interfaces per card", device, spec.Name, perCard)
	}
	if ni.ConnectionTrackingSpecification != nil && spec.Hypervisor != "nitro" {
		return fmt.Sprintf("Connection tracking timeouts are supported only on Nitro instance types, not %s", spec.Name)
	}
	return ""
}

// isEFA reports whether a network interface is an EFA, with or without IP.
func isEFA(ni ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest) bool {
	switch aws.ToString(ni.InterfaceType) {
	case string(ec2types.NetworkInterfaceTypeEfaOnly), string(ec2types.NetworkInterfaceTypeEfa):
		return true
	}
	return false
}
