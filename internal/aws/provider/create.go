package provider

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Create launches the instance of a NodeClaim: the cheapest offering its
// requirements allow among the instance types given, in a capacity
// reservation when one is allowed and has room, else spot, and on-demand
// only when no spot offering is allowed and available. Launching again for the same
// NodeClaim returns the same instance.
//
// A launch that finds no capacity marks the offerings it tried unavailable
// and, when the NodeClaim allows another capacity type with offerings
// left (spot after a reservation, on-demand after spot), launches that at
// once rather than give the NodeClaim up.
//
// Prices NodeOverlays gave the offerings when the NodeClaim was decided
// travel on it (cloudprovider.AnnotationDecidedPrices); the launch then
// asks EC2 for the offerings in that order.
func (p *Launcher) Create(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType) (*cloudprovider.Instance, error) {
	if value, ok := claim.Annotations[cloudprovider.AnnotationDecidedPrices]; ok {
		prices, err := cloudprovider.DecodePrices(claim.Name, value)
		if err != nil {
			return nil, err
		}
		types = prices.Apply(types)
	}
	batch, batched, err := cloudprovider.LaunchBatchOf(claim.Name, claim.Annotations)
	if err != nil {
		return nil, err
	}
	if batched {
		inst, handled, err := p.createInBatch(ctx, claim, class, types, batch)
		if handled {
			return inst, err
		}
		// The batch launched nothing for want of capacity: the NodeClaim
		// tries the other capacity types on its own.
	}
	token := clientToken(claim)
	inst, capacityType, err := p.launch(ctx, claim, class, types, token)
	var said []string // what each capacity type tried answered
	for tried := map[string]bool{}; cloudprovider.IsInsufficientCapacity(err) && capacityType != "" && !tried[capacityType]; {
		tried[capacityType] = true
		said = append(said, capacityType+": "+shortOf(err))
		// Each attempt has its own client token: EC2 answers a token
		// used before with that request's outcome.
		inst, capacityType, err = p.launch(ctx, claim, class, types, token+"-after-"+capacityType)
	}
	if cloudprovider.IsInsufficientCapacity(err) && len(said) > 0 {
		err = &cloudprovider.InsufficientCapacityError{Message: strings.Join(said, "; then ")}
	}
	if hasCode(err, "IdempotentParameterMismatch") {
		// Launched before (then a restart) with a request that differs
		// from this one (the offerings or subnets changed since): the
		// instance is found by its tag, never launched again.
		err = &cloudprovider.InsufficientCapacityError{Message: fmt.Sprintf("an earlier launch of NodeClaim %s left no instance", claim.Name)}
	}
	if cloudprovider.IsInsufficientCapacity(err) {
		// Asked again for a NodeClaim it launched a moment ago (read
		// before its instance was recorded, or after a restart), the
		// offering it took may be gone since (the last place in a
		// capacity reservation): that NodeClaim has its instance.
		found, ferr := p.launchedFor(ctx, claim, types)
		if ferr != nil {
			// Unsure whether it has an instance: try again rather than
			// give the NodeClaim up as out of capacity.
			return nil, ferr
		}
		if found != nil {
			return found, nil
		}
	}
	return inst, err
}

// shortOf is what an InsufficientCapacityError says.
func shortOf(err error) string {
	var e *cloudprovider.InsufficientCapacityError
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// launch launches with the capacity type the offerings available now
// allow, and returns that type (empty when it got no further).
func (p *Launcher) launch(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType, token string) (*cloudprovider.Instance, string, error) {
	l, err := p.plan(ctx, claim, class, types)
	if err != nil || l == nil {
		return nil, "", err
	}
	configs, err := l.configs(ctx, p)
	if err != nil {
		return nil, l.capacityType, fmt.Errorf("launching NodeClaim %s: %w", claim.Name, err)
	}
	if len(configs) == 0 {
		return nil, l.capacityType, &cloudprovider.InsufficientCapacityError{Message: fmt.Sprintf("no %s offering of NodeClaim %s's instance types is available in a zone with a subnet", l.capacityType, claim.Name)}
	}
	out, err := p.createFleet(ctx, l, l.fleetInput(p.tags(claim, class), token, configs))
	if err != nil {
		return nil, l.capacityType, err
	}
	launched, err := p.launched(l, out)
	if err != nil {
		return nil, l.capacityType, err
	}
	zone := ""
	if o := launched.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
		zone = aws.ToString(o.Overrides.AvailabilityZone)
	}
	inst, err := p.Get(ctx, providerID(zone, launched.InstanceIds[0]), types...)
	return inst, l.capacityType, err
}

// launchPlan is what one launch asks EC2 for: the NodeClaim's instance
// types that meet its requirements, the capacity type, and the subnets.
type launchPlan struct {
	claim         *v1.NodeClaim
	class         *awsv1.EC2NodeClass
	reqs          scheduling.Requirements
	candidates    []*scheduling.InstanceType
	capacityType  string
	interruptible bool
	subnets       []nodeclass.Subnet
}

// plan works out a launch, or why there is none.
func (p *Launcher) plan(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType) (*launchPlan, error) {
	if err := ready(class); err != nil {
		return nil, err
	}
	l := &launchPlan{claim: claim, class: class, reqs: scheduling.Requirements{}}
	for _, r := range claim.Spec.Requirements {
		l.reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	l.reqs.AddAll(scheduling.LabelRequirements(claim.Labels))
	for _, it := range types {
		if it.Compatible(l.reqs) {
			l.candidates = append(l.candidates, it)
		}
	}
	if len(l.candidates) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{Message: fmt.Sprintf("no instance type meets the requirements of NodeClaim %s", claim.Name)}
	}
	if err := amisCover(claim, class, l.candidates); err != nil {
		return nil, err
	}
	l.capacityType = p.capacityType(l.reqs, l.candidates)
	l.interruptible = l.capacityType == v1.CapacityTypeReserved && p.interruptibleOnly(l.reqs, l.candidates)
	subnets, err := p.resolver.Subnets(ctx, class)
	if err != nil {
		return nil, fmt.Errorf("launching NodeClaim %s: %w", claim.Name, err)
	}
	l.subnets = subnets
	return l, nil
}

// configs are the launch's launch template configurations.
func (l *launchPlan) configs(ctx context.Context, p *Launcher) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	return p.launchTemplateConfigs(ctx, l.claim, l.class, l.reqs, l.candidates, l.capacityType, l.interruptible, l.subnets)
}

// fleetInput is the instant fleet of one instance the launch asks for.
// Reserved instances are on-demand instances launched into the
// reservation their launch template targets; interruptible reservations
// take reserved-capacity launches only.
func (l *launchPlan) fleetInput(tags map[string]string, token string, configs []ec2types.FleetLaunchTemplateConfigRequest) *ec2.CreateFleetInput {
	fleetCapacityType := ec2types.DefaultTargetCapacityTypeOnDemand
	switch {
	case l.capacityType == v1.CapacityTypeSpot:
		fleetCapacityType = ec2types.DefaultTargetCapacityTypeSpot
	case l.interruptible:
		fleetCapacityType = ec2types.DefaultTargetCapacityTypeReservedCapacity
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		ClientToken:           aws.String(token),
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: fleetCapacityType,
		},
		TagSpecifications: tagSpecifications(tags, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet),
	}
	l.allocation(in, overlaidPrices(configs))
	return in
}

// allocation picks how EC2 chooses among the offerings: by the priority
// of the overrides when overlays changed prices, else by price (and, for
// spot, capacity).
func (l *launchPlan) allocation(in *ec2.CreateFleetInput, prioritized bool) {
	switch {
	case l.interruptible:
		in.ReservedCapacityOptions = &ec2types.ReservedCapacityOptionsRequest{
			ReservationTypes: []ec2types.FleetReservationType{ec2types.FleetReservationTypeInterruptibleCapacityReservation},
		}
	case l.capacityType == v1.CapacityTypeSpot && prioritized:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case l.capacityType == v1.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
}

// createFleet asks EC2 for the fleet; a launch template deleted behind
// nodewright's back is made again, once.
func (p *Launcher) createFleet(ctx context.Context, l *launchPlan, in *ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil && hasCode(err, templateNotFound...) {
		for _, c := range in.LaunchTemplateConfigs {
			p.templates.Delete(aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName))
		}
		if in.LaunchTemplateConfigs, err = l.configs(ctx, p); err != nil {
			return nil, fmt.Errorf("launching NodeClaim %s: %w", l.claim.Name, err)
		}
		out, err = p.ec2.CreateFleet(ctx, in)
	}
	if err != nil {
		return nil, fmt.Errorf("launching NodeClaim %s: creating fleet: %w", l.claim.Name, err)
	}
	return out, nil
}

// launched is the fleet's instance, or what kept it from launching: the
// offerings without capacity are marked unavailable, and a fleet that
// failed for capacity alone is an InsufficientCapacityError.
func (p *Launcher) launched(l *launchPlan, out *ec2.CreateFleetOutput) (ec2types.CreateFleetInstance, error) {
	problems := make([]string, 0, len(out.Errors))
	capacityOnly := true
	for _, e := range out.Errors {
		code := aws.ToString(e.ErrorCode)
		if o := e.LaunchTemplateAndOverrides; insufficientCapacityCodes[code] && o != nil && o.Overrides != nil {
			p.unavailable.mark(l.capacityType, string(o.Overrides.InstanceType), aws.ToString(o.Overrides.AvailabilityZone))
		} else {
			capacityOnly = false
		}
		problems = append(problems, code+": "+aws.ToString(e.ErrorMessage))
	}
	if len(out.Instances) > 0 && len(out.Instances[0].InstanceIds) > 0 {
		return out.Instances[0], nil
	}
	msg := strings.Join(uniq(problems), "; ")
	if capacityOnly {
		return ec2types.CreateFleetInstance{}, &cloudprovider.InsufficientCapacityError{Message: msg}
	}
	return ec2types.CreateFleetInstance{}, fmt.Errorf("launching NodeClaim %s: %s", l.claim.Name, msg)
}

// reservations are the EC2NodeClass's capacity reservations and the
// instances each can take now, read fresh: launches elsewhere use them up.
func (p *Launcher) reservations(ctx context.Context, class *awsv1.EC2NodeClass) ([]instancetypes.Reservation, error) {
	found, err := p.resolver.CapacityReservations(ctx, class, p.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
	}
	out := make([]instancetypes.Reservation, 0, len(found))
	for _, r := range found {
		out = append(out, instancetypes.Reservation{ID: r.ID, InstanceType: r.InstanceType, Zone: r.AvailabilityZone, Available: r.Available, Interruptible: r.Interruptible})
	}
	return out, nil
}

// ready refuses an EC2NodeClass that is not Ready for its generation.
func ready(class *awsv1.EC2NodeClass) error {
	c := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionReady)
	switch {
	case c == nil:
		return &cloudprovider.NodeClassNotReadyError{Message: fmt.Sprintf("EC2NodeClass %s has no Ready condition yet", class.Name)}
	case c.ObservedGeneration != class.Generation:
		return &cloudprovider.NodeClassNotReadyError{Message: fmt.Sprintf("EC2NodeClass %s changed and is being resolved again", class.Name)}
	case c.Status != metav1.ConditionTrue:
		return &cloudprovider.NodeClassNotReadyError{Message: fmt.Sprintf("EC2NodeClass %s: %s", class.Name, c.Message)}
	}
	return nil
}

// clientToken makes CreateFleet idempotent per NodeClaim.
func clientToken(claim *v1.NodeClaim) string {
	if claim.UID != "" {
		return string(claim.UID)
	}
	return claim.Name
}

func providerID(zone, id string) string { return "aws:///" + zone + "/" + id }

// tags are the instance tags: the cluster's ownership, the NodePool,
// NodeClaim and EC2NodeClass, and the EC2NodeClass's own tags.
func (p *Launcher) tags(claim *v1.NodeClaim, class *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	for k, v := range class.Spec.Tags {
		tags[k] = v
	}
	tags[p.clusterTag()] = "owned"
	tags["eks:eks-cluster-name"] = p.cluster.Name
	tags[v1.LabelNodePool] = claim.Labels[v1.LabelNodePool]
	tags[TagNodeClaim] = claim.Name
	tags[awsv1.LabelEC2NodeClass] = class.Name
	if _, named := tags["Name"]; !named {
		// The EC2 console's name column: which node this is.
		tags["Name"] = nodeNameTag(claim.Labels[v1.LabelNodePool], claim.Name)
	}
	return tags
}

func tagSpecifications(tags map[string]string, types ...ec2types.ResourceType) []ec2types.TagSpecification {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		list = append(list, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	out := make([]ec2types.TagSpecification, 0, len(types))
	for _, t := range types {
		out = append(out, ec2types.TagSpecification{ResourceType: t, Tags: list})
	}
	return out
}
