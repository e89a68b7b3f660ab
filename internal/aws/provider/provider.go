// Package provider launches, finds and terminates the EC2 instances of
// NodeClaims through the narrow SDK interfaces, so the simulated account
// runs the same code as AWS.
package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// UnavailableOfferingTTL is how long an offering that ran out of capacity
// is not tried again.
const UnavailableOfferingTTL = 3 * time.Minute

// Launcher launches, reads and terminates EC2 instances for NodeClaims: the AWS side of CloudProvider.
type Launcher struct {
	ec2         sdk.EC2
	resolver    *nodeclass.Resolver
	cluster     userdata.Cluster
	unavailable *unavailableOfferings
	clock       clock.PassiveClock
	// templates are the launch templates known to exist, by name (their
	// content is in their name): a launch uses one without describing
	// it. A launch that finds one gone forgets it and makes it again.
	templates sync.Map
	// batches are the launch batches launched or read.
	batches batches
	// tagging paces CreateTags (see tagRequestsPerSecond).
	tagging flowcontrol.RateLimiter
	// Recorded reads which instances of a launch batch its NodeClaims
	// recorded, when this process loads the batch (nil: none did).
	Recorded Recorded
	// Specs are the instance types' specifications, to evaluate
	// spec.kubelet's expressions for the types launched (the embedded
	// catalog when nil).
	Specs func(context.Context) ([]instancetypes.Spec, error)
}

// New returns the launcher of a cluster.
func New(ec2API sdk.EC2, resolver *nodeclass.Resolver, cluster userdata.Cluster, c clock.PassiveClock) *Launcher {
	return &Launcher{ec2: ec2API, resolver: resolver, cluster: cluster, unavailable: newUnavailableOfferings(c, UnavailableOfferingTTL), clock: c,
		tagging: flowcontrol.NewTokenBucketRateLimiter(tagRequestsPerSecond, tagBurst)}
}

// tagRequestsPerSecond and tagBurst pace this process's CreateTags calls
// (the NodeClaim tags of launch batches' instances, written after their
// launch) below EC2's default bucket for the action (100 requests,
// refilled at 10 a second), leaving a tenth to the account's other
// callers; a caller that cannot wait for its turn is told to come back
// after tagRetry.
const (
	tagRequestsPerSecond = 9
	tagBurst             = 90
	tagRetry             = time.Second
)

// SetUnavailableOfferingTTL sets how long an offering that ran out of
// capacity is left out (UnavailableOfferingTTL by default).
func (p *Launcher) SetUnavailableOfferingTTL(ttl time.Duration) {
	p.unavailable.mu.Lock()
	defer p.unavailable.mu.Unlock()
	p.unavailable.ttl = ttl
}

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

// capacityType picks, among the capacity types the requirements allow,
// the first of reserved, spot and on-demand that has an available
// offering; on-demand when none has.
func (p *Launcher) capacityType(reqs scheduling.Requirements, types []*scheduling.InstanceType) string {
	r, constrained := reqs[v1.LabelCapacityType]
	for _, ct := range []string{v1.CapacityTypeReserved, v1.CapacityTypeSpot} {
		if (!constrained || r.Has(ct)) && p.anyAvailable(reqs, types, ct) {
			return ct
		}
	}
	if constrained && !r.Has(v1.CapacityTypeOnDemand) {
		if r.Has(v1.CapacityTypeSpot) {
			return v1.CapacityTypeSpot
		}
		return v1.CapacityTypeReserved
	}
	return v1.CapacityTypeOnDemand
}

// anyAvailable reports an available offering of the capacity type, in an
// allowed zone and not recently out of capacity, among the types.
func (p *Launcher) anyAvailable(reqs scheduling.Requirements, types []*scheduling.InstanceType, capacityType string) bool {
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.CapacityType == capacityType && o.Available && zoneAllowed(reqs, o.Zone) && !p.unavailable.isUnavailable(o.CapacityType, it.Name, o.Zone) {
				return true
			}
		}
	}
	return false
}

// interruptibleOnly reports a reserved launch whose only available
// reservations are interruptible ones: reservations that are not come
// first, since their instances are not reclaimed.
func (p *Launcher) interruptibleOnly(reqs scheduling.Requirements, types []*scheduling.InstanceType) bool {
	any := false
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.CapacityType != v1.CapacityTypeReserved || !o.Available || !zoneAllowed(reqs, o.Zone) || p.unavailable.isUnavailable(o.CapacityType, it.Name, o.Zone) {
				continue
			}
			if !o.ReservationInterruptible {
				return false
			}
			any = true
		}
	}
	return any
}

func zoneAllowed(reqs scheduling.Requirements, zone string) bool {
	r, ok := reqs[scheduling.LabelZone]
	return !ok || r.Has(zone)
}

// launchTemplateConfigs makes one launch template per AMI and pod limit
// (user data differs), with one override per compatible instance type and
// zone, in the subnet with the most free addresses there.
func (p *Launcher) launchTemplateConfigs(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, reqs scheduling.Requirements,
	types []*scheduling.InstanceType, capacityType string, interruptible bool, subnets []nodeclass.Subnet) ([]ec2types.FleetLaunchTemplateConfigRequest, error) {
	filter := offeringFilter{unavailable: p.unavailable, reqs: reqs, capacityType: capacityType, interruptible: interruptible, subnets: roomiestSubnets(subnets)}
	kubelets, err := p.kubeletsFor(ctx, class, types)
	if err != nil {
		return nil, err
	}
	groups := groupOverrides(class, types, filter, kubelets)
	if !groups.overlaid {
		// EC2's own prices decide: no priorities.
		groups.dropPriorities()
	}
	configs := make([]ec2types.FleetLaunchTemplateConfigRequest, 0, len(groups.order))
	for _, g := range groups.order {
		name, err := p.ensureLaunchTemplate(ctx, claim, class, groups.amis[g.ami], g.maxPods, g.reservation, groups.kubelets[g.kubelet])
		if err != nil {
			return nil, err
		}
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   groups.overrides[g],
		})
	}
	return configs, nil
}

// roomiestSubnets is, by zone, the subnet with the most free addresses.
func roomiestSubnets(subnets []nodeclass.Subnet) map[string]nodeclass.Subnet {
	best := map[string]nodeclass.Subnet{}
	for _, s := range subnets {
		if cur, ok := best[s.Zone]; !ok || s.FreeIPs > cur.FreeIPs {
			best[s.Zone] = s
		}
	}
	return best
}

// offeringFilter decides which offerings one launch asks EC2 for.
type offeringFilter struct {
	unavailable   *unavailableOfferings
	reqs          scheduling.Requirements
	capacityType  string
	interruptible bool
	// subnets is the subnet each zone launches into.
	subnets map[string]nodeclass.Subnet
}

// subnetFor is the subnet an offering launches into, and whether the
// launch takes the offering at all: it must be of the launch's capacity
// type and kind of reservation, available, in an allowed zone with a
// subnet, and not recently out of capacity.
func (f offeringFilter) subnetFor(it *scheduling.InstanceType, o scheduling.Offering) (nodeclass.Subnet, bool) {
	subnet, hasSubnet := f.subnets[o.Zone]
	if o.CapacityType != f.capacityType || !o.Available || !hasSubnet || !zoneAllowed(f.reqs, o.Zone) || f.unavailable.isUnavailable(f.capacityType, it.Name, o.Zone) ||
		o.ReservationInterruptible != f.interruptible {
		return nodeclass.Subnet{}, false
	}
	return subnet, true
}

// templateGroup is what one launch template is for: an AMI and a pod
// limit (they make its user data) and the capacity reservation it
// launches into, if any.
type templateGroup struct {
	ami         string
	maxPods     int64
	reservation string
	// kubelet is the kubelet configuration evaluated for the instance
	// types, as JSON, when spec.kubelet has expressions.
	kubelet string
}

// overrideGroups are a launch's overrides by launch template, the groups
// in the order they were first met, and the AMIs they use.
type overrideGroups struct {
	amis      map[string]awsv1.AMI
	kubelets  map[string]*kubeletconfig.Config
	overrides map[templateGroup][]ec2types.FleetLaunchTemplateOverridesRequest
	order     []templateGroup
	// overlaid: some offering has a NodeOverlay's price.
	overlaid bool
}

// groupOverrides makes an override, priced, for each offering the filter
// takes of each instance type that has an AMI, grouped by launch template.
func groupOverrides(class *awsv1.EC2NodeClass, types []*scheduling.InstanceType, filter offeringFilter, kubelets map[string]*kubeletconfig.Config) *overrideGroups {
	groups := &overrideGroups{amis: map[string]awsv1.AMI{}, kubelets: map[string]*kubeletconfig.Config{}, overrides: map[templateGroup][]ec2types.FleetLaunchTemplateOverridesRequest{}}
	for _, it := range types {
		ami, ok := amiFor(it, class.Status.AMIs)
		if !ok {
			continue
		}
		groups.amis[ami.ID] = ami
		kubelet := ""
		if k, ok := kubelets[it.Name]; ok {
			data, _ := json.Marshal(k)
			kubelet = string(data)
			groups.kubelets[kubelet] = k
		}
		for _, o := range it.Offerings {
			if subnet, ok := filter.subnetFor(it, o); ok {
				groups.add(templateGroup{ami: ami.ID, maxPods: it.Capacity.Pods(), reservation: o.ReservationID, kubelet: kubelet}, it, o, subnet)
			}
		}
	}
	return groups
}

// kubeletsFor is the kubelet configuration of each instance type, its
// expressions evaluated; nil when spec.kubelet has none.
func (p *Launcher) kubeletsFor(ctx context.Context, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType) (map[string]*kubeletconfig.Config, error) {
	kubelet, err := kubeletconfig.Parse(class.Spec.Kubelet)
	if err != nil || !kubelet.HasExpressions() {
		return nil, err
	}
	specs, err := p.specs(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]instancetypes.Spec, len(specs))
	for _, s := range specs {
		byName[s.Name] = s
	}
	out := make(map[string]*kubeletconfig.Config, len(types))
	for _, it := range types {
		s, ok := byName[it.Name]
		if !ok {
			continue
		}
		windows, _ := instancetypes.WindowsOf(class)
		k, err := kubelet.For(instancetypes.VarsOf(s, windows))
		if err != nil {
			return nil, fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
		}
		out[it.Name] = k
	}
	return out, nil
}

// specs are the instance types' specifications (Specs when set, else the
// embedded catalog).
func (p *Launcher) specs(ctx context.Context) ([]instancetypes.Spec, error) {
	if p.Specs != nil {
		return p.Specs(ctx)
	}
	return instancetypes.Catalog()
}

// add puts the override of an offering in its group.
func (g *overrideGroups) add(group templateGroup, it *scheduling.InstanceType, o scheduling.Offering, subnet nodeclass.Subnet) {
	if _, seen := g.overrides[group]; !seen {
		g.order = append(g.order, group)
	}
	g.overlaid = g.overlaid || o.Overlaid
	g.overrides[group] = append(g.overrides[group], ec2types.FleetLaunchTemplateOverridesRequest{
		InstanceType: ec2types.InstanceType(it.Name), SubnetId: aws.String(subnet.ID), AvailabilityZone: aws.String(o.Zone),
		Priority: aws.Float64(o.Price),
	})
}

// dropPriorities clears the overrides' priorities.
func (g *overrideGroups) dropPriorities() {
	for _, list := range g.overrides {
		for i := range list {
			list[i].Priority = nil
		}
	}
}

// overlaidPrices reports a launch whose offerings include a NodeOverlay's
// price: every override then has its price (overlaid or not) as its
// priority, and EC2 launches by priority, lowest first, instead of by its
// own prices.
func overlaidPrices(configs []ec2types.FleetLaunchTemplateConfigRequest) bool {
	any := false
	for _, c := range configs {
		for _, o := range c.Overrides {
			any = any || o.Priority != nil
		}
	}
	return any
}

// amisCover refuses a NodeClaim none of whose instance types has an AMI of
// its architecture in the EC2NodeClass, naming what is there.
func amisCover(claim *v1.NodeClaim, class *awsv1.EC2NodeClass, types []*scheduling.InstanceType) error {
	archs := map[string]bool{}
	for _, it := range types {
		if _, ok := amiFor(it, class.Status.AMIs); ok {
			return nil
		}
		for _, a := range it.Requirements[scheduling.LabelArch].Values() {
			archs[a] = true
		}
	}
	var want, have []string
	for a := range archs {
		want = append(want, a)
	}
	sort.Strings(want)
	for _, ami := range class.Status.AMIs {
		reqs := scheduling.NewRequirements(ami.Requirements...)
		var req []string
		for _, k := range reqs.Keys() {
			req = append(req, reqs[k].String())
		}
		have = append(have, ami.ID+" ("+strings.Join(req, ", ")+")")
	}
	return &cloudprovider.NodeClassNotReadyError{Message: fmt.Sprintf(
		"EC2NodeClass %s has no AMI for %s, the architecture of every instance type NodeClaim %s allows; its AMIs: %s; select an AMI for %s in amiSelectorTerms or restrict the NodePool to the AMIs' architecture",
		class.Name, strings.Join(want, ", "), claim.Name, strings.Join(have, ", "), strings.Join(want, ", "))}
}

// amiFor picks the AMI whose requirements (architecture) the type meets.
func amiFor(it *scheduling.InstanceType, amis []awsv1.AMI) (awsv1.AMI, bool) {
	for _, ami := range amis {
		if it.Compatible(scheduling.NewRequirements(ami.Requirements...)) {
			return ami, true
		}
	}
	return awsv1.AMI{}, false
}

// ensureLaunchTemplate finds or creates the launch template for the
// content; its name is a hash of that content, so equal content shares one.
// A reservation id makes it launch into that capacity reservation.
func (p *Launcher) ensureLaunchTemplate(ctx context.Context, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, ami awsv1.AMI, maxPods int64, reservation string,
	kubelet *kubeletconfig.Config) (string, error) {
	data, err := p.launchTemplateData(claim, class, ami, maxPods, reservation, kubelet)
	if err != nil {
		return "", err
	}
	content, err := json.Marshal(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(content)
	name := "nodewright/" + p.cluster.Name + "/" + hex.EncodeToString(sum[:])[:20]
	if _, known := p.templates.Load(name); known {
		return name, nil
	}
	if _, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}}); err == nil {
		p.templates.Store(name, struct{}{})
		return name, nil
	} else if !hasCode(err, templateNotFound...) {
		return "", fmt.Errorf("finding launch template %s: %w", name, err)
	}
	if err := p.createLaunchTemplate(ctx, name, class, data); err != nil {
		return "", err
	}
	p.templates.Store(name, struct{}{})
	return name, nil
}

// createLaunchTemplate creates a launch template, tagged as the cluster's
// and the EC2NodeClass's; one made meanwhile by another launch is fine.
func (p *Launcher) createLaunchTemplate(ctx context.Context, name string, class *awsv1.EC2NodeClass, data *ec2types.RequestLaunchTemplateData) error {
	// The reference finds an EC2NodeClass's templates by eks:eks-cluster-name
	// and the class: with it, going back to the reference deletes these too.
	tags := []ec2types.Tag{
		{Key: aws.String(p.clusterTag()), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String(p.cluster.Name)},
		{Key: aws.String(awsv1.LabelEC2NodeClass), Value: aws.String(class.Name)},
	}
	_, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name), LaunchTemplateData: data,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	})
	if err != nil && !hasCode(err, "InvalidLaunchTemplateName.AlreadyExistsException") {
		return fmt.Errorf("creating launch template %s: %w", name, err)
	}
	return nil
}

// launchTemplateData is what a launch template holds: the AMI, the user
// data for the pod limit, the instance profile, network interfaces,
// placement, the capacity reservation if any, and the EC2NodeClass's
// monitoring, CPU, Nitro Enclaves, metadata and volume settings.
func (p *Launcher) launchTemplateData(claim *v1.NodeClaim, class *awsv1.EC2NodeClass, ami awsv1.AMI, maxPods int64, reservation string,
	kubelet *kubeletconfig.Config) (*ec2types.RequestLaunchTemplateData, error) {
	ud, err := LaunchUserData(p.cluster, claim, class, maxPods, kubelet)
	if err != nil {
		return nil, err
	}
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(ami.ID),
		UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(ud))),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(class.Status.InstanceProfile)},
		Monitoring:         &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(aws.ToBool(class.Spec.DetailedMonitoring))},
	}
	data.NetworkInterfaces = networkInterfaces(class)
	data.CpuOptions = cpuOptions(class)
	if o := class.Spec.EnclaveOptions; o != nil && o.Enabled {
		data.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: aws.Bool(true)}
	}
	data.Placement = placement(claim, class)
	data.CapacityReservationSpecification = reservationTarget(reservation)
	data.MetadataOptions = metadataOptions(class)
	data.BlockDeviceMappings = blockDeviceMappings(class)
	return data, nil
}

// cpuOptions are the EC2NodeClass's CPU options, nil when it sets none.
func cpuOptions(class *awsv1.EC2NodeClass) *ec2types.LaunchTemplateCpuOptionsRequest {
	o := class.Spec.CPUOptions
	if o == nil || o.NestedVirtualization == nil {
		return nil
	}
	return &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*o.NestedVirtualization)}
}

// reservationTarget launches into a capacity reservation; nil for none.
func reservationTarget(reservation string) *ec2types.LaunchTemplateCapacityReservationSpecificationRequest {
	if reservation == "" {
		return nil
	}
	return &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(reservation)},
	}
}

// metadataOptions are the EC2NodeClass's instance metadata settings, nil
// when it sets none.
func metadataOptions(class *awsv1.EC2NodeClass) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	m := class.Spec.MetadataOptions
	if m == nil {
		return nil
	}
	return &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(aws.ToString(m.HTTPEndpoint)),
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(aws.ToString(m.HTTPProtocolIPv6)),
		HttpPutResponseHopLimit: aws.Int32(int32(aws.ToInt64(m.HTTPPutResponseHopLimit))), //nolint:gosec // at most 64
		HttpTokens:              ec2types.LaunchTemplateHttpTokensState(aws.ToString(m.HTTPTokens)),
	}
}

// blockDeviceMappings are the EC2NodeClass's EBS volumes; mappings
// without one are left out. A Windows node without any boots from a
// 50Gi encrypted gp3 /dev/sda1 (the Windows AMIs' own root volume is
// 30Gi, which the images and their layers outgrow).
func blockDeviceMappings(class *awsv1.EC2NodeClass) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	if len(class.Spec.BlockDeviceMappings) == 0 && awsv1.IsWindows(nodeclass.Family(class)) {
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{{
			DeviceName: aws.String(WindowsRootDevice),
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(WindowsRootGiB), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true),
			},
		}}
	}
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, bdm := range class.Spec.BlockDeviceMappings {
		if bdm == nil || bdm.EBS == nil {
			continue
		}
		out = append(out, ec2types.LaunchTemplateBlockDeviceMappingRequest{
			DeviceName: bdm.DeviceName,
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: volumeGiB(bdm.EBS.VolumeSize), VolumeType: ec2types.VolumeType(aws.ToString(bdm.EBS.VolumeType)),
				Encrypted: bdm.EBS.Encrypted, DeleteOnTermination: bdm.EBS.DeleteOnTermination, KmsKeyId: bdm.EBS.KMSKeyID,
				SnapshotId: bdm.EBS.SnapshotID, Iops: int32Of(bdm.EBS.IOPS), Throughput: int32Of(bdm.EBS.Throughput),
				VolumeInitializationRate: bdm.EBS.VolumeInitializationRate,
			},
		})
	}
	return out
}

// The root volume of Windows nodes when the EC2NodeClass has no
// blockDeviceMappings.
const (
	WindowsRootDevice = "/dev/sda1"
	WindowsRootGiB    = 50
)

// networkInterfaces are the interfaces a node launches with: those of
// spec.networkInterfaces, else the primary one; each in the EC2NodeClass's
// security groups, and all but EFA-only ones with its IP prefixes, public
// IP setting and connection tracking timeouts.
func networkInterfaces(class *awsv1.EC2NodeClass) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	groups := make([]string, 0, len(class.Status.SecurityGroups))
	for _, g := range class.Status.SecurityGroups {
		groups = append(groups, g.ID)
	}
	var tracking *ec2types.ConnectionTrackingSpecificationRequest
	if ct := class.Spec.ConnectionTracking; ct != nil {
		tracking = &ec2types.ConnectionTrackingSpecificationRequest{
			TcpEstablishedTimeout: ct.TCPEstablishedTimeout, UdpStreamTimeout: ct.UDPStreamTimeout, UdpTimeout: ct.UDPTimeout,
		}
	}
	nics := class.Spec.NetworkInterfaces
	if len(nics) == 0 {
		nics = []*awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
	}
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, 0, len(nics))
	for _, ni := range nics {
		spec := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex), Groups: groups,
		}
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			spec.InterfaceType = aws.String(string(ec2types.NetworkInterfaceTypeEfaOnly))
		} else {
			if len(class.Spec.NetworkInterfaces) > 0 {
				spec.InterfaceType = aws.String(string(ec2types.NetworkInterfaceTypeInterface))
			}
			spec.Ipv4PrefixCount, spec.AssociatePublicIpAddress, spec.ConnectionTrackingSpecification = class.Spec.IPPrefixCount, class.Spec.AssociatePublicIPAddress, tracking
		}
		out = append(out, spec)
	}
	return out
}

// placement puts a node in the EC2NodeClass's placement group, and in a
// partition group in the partition its NodeClaim requires, if just one.
func placement(claim *v1.NodeClaim, class *awsv1.EC2NodeClass) *ec2types.LaunchTemplatePlacementRequest {
	pg := class.Status.PlacementGroup
	if pg == nil || class.Spec.PlacementGroupSelector == nil {
		return nil
	}
	p := &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg.ID)}
	for _, r := range claim.Spec.Requirements {
		if r.Key == awsv1.LabelPlacementGroupPartition && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			if n, err := strconv.ParseInt(r.Values[0], 10, 32); err == nil {
				p.PartitionNumber = aws.Int32(int32(n))
			}
		}
	}
	return p
}

// LaunchUserData is the user data (not base64-encoded) an instance of a
// NodeClaim is launched with when its instance type allows maxPods pods:
// the NodeClaim's labels (its NodePool and the template's labels; the
// instance type's labels come from the kubelet and nodewright), its
// taints and startup taints, the EC2NodeClass's kubelet settings (kubelet,
// when given: those evaluated for the instance type), merged with the
// EC2NodeClass's userData.
func LaunchUserData(cluster userdata.Cluster, claim *v1.NodeClaim, class *awsv1.EC2NodeClass, maxPods int64, kubelet *kubeletconfig.Config) (string, error) {
	labels := map[string]string{}
	for k, v := range claim.Labels {
		labels[k] = v
	}
	user := ""
	if class.Spec.UserData != nil {
		user = *class.Spec.UserData
	}
	if kubelet == nil {
		parsed, err := kubeletconfig.Parse(class.Spec.Kubelet)
		if err != nil {
			return "", fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
		}
		kubelet = parsed
	}
	node := userdata.Node{
		Labels: labels, Taints: append(append([]corev1.Taint(nil), claim.Spec.Taints...), claim.Spec.StartupTaints...),
		MaxPods: int32(maxPods), Kubelet: kubelet, KubeletFields: kubeletconfig.Fields(class.Spec.Kubelet), //nolint:gosec // pod limits are small
	}
	return userdata.Generate(nodeclass.Family(class), cluster, node, user)
}

func volumeGiB(size *string) *int32 {
	if size == nil {
		return nil
	}
	s := *size
	var n int32
	var unit string
	if _, err := fmt.Sscanf(s, "%d%s", &n, &unit); err != nil {
		return nil
	}
	switch unit {
	case "Ti", "T":
		n *= 1024
	}
	return aws.Int32(n)
}

func int32Of(v *int64) *int32 {
	if v == nil {
		return nil
	}
	return aws.Int32(int32(*v)) //nolint:gosec // validated ranges
}

func hasCode(err error, codes ...string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && slices.Contains(codes, apiErr.ErrorCode())
}

// templateNotFound are EC2's codes for a launch template that does not exist.
var templateNotFound = []string{"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"}

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

// clientToken makes CreateFleet idempotent per NodeClaim.
func clientToken(claim *v1.NodeClaim) string {
	if claim.UID != "" {
		return string(claim.UID)
	}
	return claim.Name
}

func providerID(zone, id string) string { return "aws:///" + zone + "/" + id }

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
