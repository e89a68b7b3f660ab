package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// launchTemplate is a stored launch template and its data.
type launchTemplate struct {
	template ec2types.LaunchTemplate
	data     ec2types.RequestLaunchTemplateData
}

// SetUnavailable makes an offering ("spot:m5.large:us-east-1a") fail with
// InsufficientInstanceCapacity, or succeed again; "*" stands for every
// instance type or zone ("spot:*:*": no spot capacity at all).
func (a *Account) SetUnavailable(capacityType, instanceType, zone string, unavailable bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unavailable[capacityType+":"+instanceType+":"+zone] = unavailable
}

// outOfCapacity reports an offering SetUnavailable took away. The caller
// holds a.mu.
func (a *Account) outOfCapacity(capacityType, instanceType, zone string) bool {
	for _, t := range []string{instanceType, "*"} {
		for _, z := range []string{zone, "*"} {
			if a.unavailable[capacityType+":"+t+":"+z] {
				return true
			}
		}
	}
	return false
}

// CreateLaunchTemplate stores a launch template under a unique name.
func (e *EC2) CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	if err := e.account.call(ctx, ec2Call("CreateLaunchTemplate")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	name := aws.ToString(in.LaunchTemplateName)
	if _, exists := a.templates[name]; exists {
		return nil, apiError("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	if in.LaunchTemplateData == nil {
		return nil, apiError("MissingParameter", "The request must contain the parameter LaunchTemplateData")
	}
	if err := checkTemplateData(in.LaunchTemplateData); err != nil {
		return nil, err
	}
	lt := launchTemplate{data: *in.LaunchTemplateData, template: ec2types.LaunchTemplate{
		LaunchTemplateId: aws.String(fmt.Sprintf("lt-%017x", len(a.templates)+1)), LaunchTemplateName: aws.String(name),
		LatestVersionNumber: aws.Int64(1), DefaultVersionNumber: aws.Int64(1), CreateTime: aws.Time(a.clock.Now()),
	}}
	for _, spec := range in.TagSpecifications {
		if spec.ResourceType == ec2types.ResourceTypeLaunchTemplate {
			lt.template.Tags = append(lt.template.Tags, spec.Tags...)
		}
	}
	a.templates[name] = &lt
	return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: &lt.template}, nil
}

// checkTemplateData refuses what EC2 refuses of a launch template: a
// volume initialization rate outside 100-300 MiB/s, or without the
// snapshot it fills the volume from; network interfaces together with
// instance-level security groups, without the primary interface, or
// repeating a card and device index; connection tracking timeouts out of
// range; an unknown nested virtualization setting.
func checkTemplateData(d *ec2types.RequestLaunchTemplateData) error {
	if err := checkInterfaces(d); err != nil {
		return err
	}
	if o := d.CpuOptions; o != nil && o.NestedVirtualization != "" && !slices.Contains(o.NestedVirtualization.Values(), o.NestedVirtualization) {
		return apiError("InvalidParameterValue", fmt.Sprintf("Invalid value '%s' for NestedVirtualization", o.NestedVirtualization))
	}
	for _, m := range d.BlockDeviceMappings {
		if err := checkInitializationRate(m.Ebs); err != nil {
			return err
		}
	}
	return nil
}

// checkInitializationRate checks a volume's initialization rate, if it
// has one: 100-300 MiB/s, and only for a volume made from a snapshot.
func checkInitializationRate(ebs *ec2types.LaunchTemplateEbsBlockDeviceRequest) error {
	if ebs == nil || ebs.VolumeInitializationRate == nil {
		return nil
	}
	if rate := *ebs.VolumeInitializationRate; rate < 100 || rate > 300 {
		return apiError("InvalidParameterValue", fmt.Sprintf("Volume initialization rate %d MiB/s is out of range: use 100 to 300", rate))
	}
	if aws.ToString(ebs.SnapshotId) == "" {
		return apiError("InvalidParameterCombination", "A volume initialization rate can only be specified for a volume created from a snapshot")
	}
	return nil
}

// DescribeLaunchTemplates lists launch templates by name, id or tag filter.
func (e *EC2) DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeLaunchTemplates")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, name := range in.LaunchTemplateNames {
		if _, ok := a.templates[name]; !ok {
			return nil, apiError("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
		}
	}
	names, err := a.templateFilters().filter(slices.Sorted(maps.Keys(a.templates)), in.Filters, func(name string) bool {
		return selected(in.LaunchTemplateNames, name) && selected(in.LaunchTemplateIds, aws.ToString(a.templates[name].template.LaunchTemplateId))
	})
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeLaunchTemplatesOutput{}
	for _, name := range names {
		out.LaunchTemplates = append(out.LaunchTemplates, a.templates[name].template)
	}
	return out, nil
}

// templateFilters are the filters DescribeLaunchTemplates knows, for
// launch templates given by name.
func (a *Account) templateFilters() resourceFilters[string] {
	return resourceFilters[string]{
		fields: map[string]func(string) string{
			"launch-template-name": func(name string) string { return name },
		},
		tags: func(name string) []ec2types.Tag { return a.templates[name].template.Tags },
	}
}

// DeleteLaunchTemplate deletes a launch template by name or id.
func (e *EC2) DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	if err := e.account.call(ctx, ec2Call("DeleteLaunchTemplate")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, lt := range a.templates {
		if name == aws.ToString(in.LaunchTemplateName) || aws.ToString(lt.template.LaunchTemplateId) == aws.ToString(in.LaunchTemplateId) {
			delete(a.templates, name)
			return &ec2.DeleteLaunchTemplateOutput{LaunchTemplate: &lt.template}, nil
		}
	}
	return nil, apiError("InvalidLaunchTemplateName.NotFoundException", "The specified launch template does not exist.")
}

// candidate is one launch template override a fleet may launch.
type candidate struct {
	template *launchTemplate
	override ec2types.FleetLaunchTemplateOverridesRequest
	spec     instancetypes.Spec
	price    float64
}

// CreateFleet launches instances (type instant) from the cheapest
// overrides that have capacity; overrides made unavailable answer
// InsufficientInstanceCapacity. A repeated ClientToken returns the first
// call's result without launching again, or, with a request that differs
// from the first, IdempotentParameterMismatch.
func (e *EC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	if err := e.account.call(ctx, ec2Call("CreateFleet")); err != nil {
		return nil, err
	}
	if e.account.hangs(in) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	specs, err := e.account.specs()
	if err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	token := aws.ToString(in.ClientToken)
	request := canonicalFleetRequest(in)
	if prior, ok := a.fleets[token]; ok && token != "" {
		if a.fleetRequests[token] != request {
			return nil, apiError("IdempotentParameterMismatch", fmt.Sprintf("The client token %s was used with a request that differs from this one", token))
		}
		return prior, nil
	}
	out, err := a.createFleet(in, specs)
	if err != nil {
		return nil, err
	}
	if token != "" {
		a.fleets[token], a.fleetRequests[token] = out, request
	}
	return out, nil
}

// canonicalFleetRequest is a CreateFleet request without its client
// token, its launch template configurations and their overrides in one
// order: two calls that ask for the same have the same.
func canonicalFleetRequest(in *ec2.CreateFleetInput) string {
	keys := make([]string, len(in.LaunchTemplateConfigs))
	for i, lc := range in.LaunchTemplateConfigs {
		overrides := slices.Clone(lc.Overrides)
		slices.SortFunc(overrides, func(a, b ec2types.FleetLaunchTemplateOverridesRequest) int {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return strings.Compare(string(ja), string(jb))
		})
		lc.Overrides = overrides
		data, _ := json.Marshal(lc)
		keys[i] = string(data)
	}
	slices.Sort(keys)
	data, _ := json.Marshal([]any{in.Type, in.TargetCapacitySpecification, in.TagSpecifications, in.SpotOptions, in.OnDemandOptions,
		in.ReservedCapacityOptions, in.Context, in.ValidFrom, in.ValidUntil, keys})
	return string(data)
}

// createFleet launches what a CreateFleet call asks for. The caller holds
// a.mu.
func (a *Account) createFleet(in *ec2.CreateFleetInput, specs []instancetypes.Spec) (*ec2.CreateFleetOutput, error) {
	req, err := fleetRequestOf(in)
	if err != nil {
		return nil, err
	}
	out := &ec2.CreateFleetOutput{FleetId: aws.String(fmt.Sprintf("fleet-%017x", len(a.fleets)+1))}
	candidates, err := a.fleetCandidates(in, specs, req.lifecycle, out)
	if err != nil {
		return nil, err
	}
	orderCandidates(candidates, prioritized(in))
	// The best candidate launches as many as it can, then the next; a
	// partial answer (Faults.PartialFleet) fails the last few of them.
	launched, want := 0, req.want
	if failed := min(a.faults.PartialFleet, want-1); failed > 0 && len(candidates) > 0 {
		want -= failed
		for range failed {
			out.Errors = append(out.Errors, fleetError(candidates[0].override, "InsufficientInstanceCapacity", "There is not enough capacity to fulfill your request.", req.lifecycle))
		}
	}
	for _, c := range candidates {
		for launched < want && a.launchCandidate(c, req, out) {
			launched++
		}
	}
	return out, nil
}

// fleetRequest is what a CreateFleet call asks for: how many instances, of
// which capacity type, and the tags they launch with.
type fleetRequest struct {
	want         int
	capacityType ec2types.DefaultTargetCapacityType
	lifecycle    ec2types.InstanceLifecycle
	// interruptible is set for reserved-capacity fleets, which launch
	// into interruptible capacity reservations only.
	interruptible bool
	tags          []ec2types.TagSpecification
}

// fleetRequestOf checks what the simulated account supports of a
// CreateFleet call and reads what it asks for.
func fleetRequestOf(in *ec2.CreateFleetInput) (fleetRequest, error) {
	if in.Type != ec2types.FleetTypeInstant {
		return fleetRequest{}, apiError("InvalidParameterValue", "the simulated account supports instant fleets only")
	}
	if in.TargetCapacitySpecification == nil {
		return fleetRequest{}, apiError("MissingParameter", "The request must contain the parameter TargetCapacitySpecification")
	}
	req := fleetRequest{
		want:         int(aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity)),
		capacityType: in.TargetCapacitySpecification.DefaultTargetCapacityType,
		lifecycle:    ec2types.InstanceLifecycleOnDemand,
		tags:         in.TagSpecifications,
	}
	if req.capacityType == ec2types.DefaultTargetCapacityTypeSpot {
		req.lifecycle = ec2types.InstanceLifecycleSpot
	}
	req.interruptible = req.capacityType == ec2types.DefaultTargetCapacityTypeReservedCapacity
	if req.interruptible && (in.ReservedCapacityOptions == nil ||
		!slices.Contains(in.ReservedCapacityOptions.ReservationTypes, ec2types.FleetReservationTypeInterruptibleCapacityReservation)) {
		return fleetRequest{}, apiError("MissingParameter", "Target capacity type reserved-capacity needs ReservedCapacityOptions with reservation type interruptible-capacity-reservation")
	}
	return req, nil
}

// fleetCandidates are the overrides of the fleet's launch templates, with
// their price. Overrides of instance types that are not offered go to
// out's errors.
func (a *Account) fleetCandidates(in *ec2.CreateFleetInput, specs []instancetypes.Spec, lifecycle ec2types.InstanceLifecycle, out *ec2.CreateFleetOutput) ([]candidate, error) {
	byName := map[string]instancetypes.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	var candidates []candidate
	for _, cfg := range in.LaunchTemplateConfigs {
		lt := a.template(cfg.LaunchTemplateSpecification)
		if lt == nil {
			return nil, apiError("InvalidLaunchTemplateName.NotFoundException", "The specified launch template does not exist.")
		}
		for _, o := range cfg.Overrides {
			spec, known := byName[string(o.InstanceType)]
			if !known || spec.OnDemand <= 0 {
				out.Errors = append(out.Errors, fleetError(o, "InvalidFleetConfiguration", fmt.Sprintf("instance type %s is not offered", o.InstanceType), lifecycle))
				continue
			}
			candidates = append(candidates, candidate{template: lt, override: o, spec: spec, price: a.offeringPrice(spec, o, lifecycle)})
		}
	}
	return candidates, nil
}

// offeringPrice is the hourly price of an override: on-demand, or the
// spot price in its zone.
func (a *Account) offeringPrice(spec instancetypes.Spec, o ec2types.FleetLaunchTemplateOverridesRequest, lifecycle ec2types.InstanceLifecycle) float64 {
	if lifecycle == ec2types.InstanceLifecycleSpot {
		return instancetypes.SpotPrice(spec.Name, a.zoneOf(o), spec.OnDemand)
	}
	return spec.OnDemand
}

// orderCandidates puts candidates in the order EC2 launches them: the
// cheapest offering first, or under a prioritized strategy the lowest
// priority number first (overrides without one last).
func orderCandidates(candidates []candidate, byPriority bool) {
	order := func(c candidate) float64 { return c.price }
	if byPriority {
		order = func(c candidate) float64 {
			if c.override.Priority == nil {
				return math.Inf(1)
			}
			return *c.override.Priority
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool { return order(candidates[i]) < order(candidates[j]) })
}

// launchCandidate launches an instance of a candidate into the fleet's
// output, or adds why it cannot to the output's errors.
func (a *Account) launchCandidate(c candidate, req fleetRequest, out *ec2.CreateFleetOutput) bool {
	zone := a.zoneOf(c.override)
	site, code, msg := a.admit(c, req, zone)
	if code != "" {
		out.Errors = append(out.Errors, fleetError(c.override, code, msg, req.lifecycle))
		return false
	}
	inst := a.launch(c, site.placement, req.lifecycle, req.tags)
	if site.reservation != nil {
		takeReservation(inst, site.reservation, req.interruptible)
	}
	out.Instances = append(out.Instances, fleetInstance(inst, req.lifecycle, zone))
	return true
}

// launchSite is where an admitted candidate launches: its placement and
// the capacity reservation it runs in, if any.
type launchSite struct {
	placement   *ec2types.Placement
	reservation *ec2types.CapacityReservation
}

// admit checks a candidate before it launches, in this order: capacity
// in the zone, the launch's parameters, a capacity reservation for an
// on-demand launch, then placement. It returns where the instance goes,
// or the fleet error code and message.
func (a *Account) admit(c candidate, req fleetRequest, zone string) (launchSite, string, string) {
	if a.outOfCapacity(string(req.capacityType), c.spec.Name, zone) {
		return launchSite{}, "InsufficientInstanceCapacity",
			fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", c.spec.Name, zone)
	}
	if msg := a.launchProblem(c); msg != "" {
		return launchSite{}, "InvalidParameterValue", msg
	}
	var site launchSite
	if req.lifecycle == ec2types.InstanceLifecycleOnDemand {
		var code, msg string
		if site.reservation, code, msg = a.reserve(c.template.data, c.spec.Name, zone, req.interruptible); code != "" {
			return launchSite{}, code, msg
		}
	}
	placement, code, msg := a.place(c.template.data.Placement, c, zone)
	if code != "" {
		return launchSite{}, code, msg
	}
	site.placement = placement
	return site, "", ""
}

// takeReservation counts an instance against the capacity reservation it
// launched into.
func takeReservation(inst *Instance, r *ec2types.CapacityReservation, interruptible bool) {
	r.AvailableInstanceCount = aws.Int32(aws.ToInt32(r.AvailableInstanceCount) - 1)
	inst.CapacityReservationId = r.CapacityReservationId
	if interruptible {
		inst.InstanceLifecycle = ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation
	}
}

// fleetInstance is how CreateFleet reports a launched instance.
func fleetInstance(inst *Instance, lifecycle ec2types.InstanceLifecycle, zone string) ec2types.CreateFleetInstance {
	return ec2types.CreateFleetInstance{
		InstanceIds: []string{aws.ToString(inst.InstanceId)}, InstanceType: inst.InstanceType, Lifecycle: lifecycle,
		LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{
			InstanceType: inst.InstanceType, SubnetId: inst.SubnetId, AvailabilityZone: aws.String(zone),
		}},
	}
}

// prioritized reports a fleet that launches by its overrides' priorities.
func prioritized(in *ec2.CreateFleetInput) bool {
	if in.OnDemandOptions != nil && in.OnDemandOptions.AllocationStrategy == ec2types.FleetOnDemandAllocationStrategyPrioritized {
		return true
	}
	return in.SpotOptions != nil && in.SpotOptions.AllocationStrategy == ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized
}

func fleetError(o ec2types.FleetLaunchTemplateOverridesRequest, code, msg string, lifecycle ec2types.InstanceLifecycle) ec2types.CreateFleetError {
	return ec2types.CreateFleetError{
		ErrorCode: aws.String(code), ErrorMessage: aws.String(msg), Lifecycle: lifecycle,
		LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{
			InstanceType: o.InstanceType, SubnetId: o.SubnetId, AvailabilityZone: o.AvailabilityZone,
		}},
	}
}

func (a *Account) template(spec *ec2types.FleetLaunchTemplateSpecificationRequest) *launchTemplate {
	if spec == nil {
		return nil
	}
	for name, lt := range a.templates {
		if name == aws.ToString(spec.LaunchTemplateName) || aws.ToString(lt.template.LaunchTemplateId) == aws.ToString(spec.LaunchTemplateId) {
			return lt
		}
	}
	return nil
}

// zoneOf is the zone of an override: its own, or its subnet's.
func (a *Account) zoneOf(o ec2types.FleetLaunchTemplateOverridesRequest) string {
	if o.AvailabilityZone != nil {
		return *o.AvailabilityZone
	}
	for _, s := range a.subnets {
		if deref(s.SubnetId) == deref(o.SubnetId) {
			return deref(s.AvailabilityZone)
		}
	}
	return ""
}

// launchProblem checks what EC2 checks before launching: the image, the
// subnet and the instance profile exist, and the image's architecture fits.
func (a *Account) launchProblem(c candidate) string {
	data := c.template.data
	image := a.image(deref(data.ImageId))
	if image == nil {
		return fmt.Sprintf("The image id '[%s]' does not exist", deref(data.ImageId))
	}
	if arch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[c.spec.Arch]; string(image.Architecture) != arch {
		return fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI", arch, image.Architecture)
	}
	if c.override.SubnetId == nil || !hasSubnet(a.subnets, *c.override.SubnetId) {
		return fmt.Sprintf("The subnet ID '%s' does not exist", deref(c.override.SubnetId))
	}
	if msg := typeProblem(data, c.spec); msg != "" {
		return msg
	}
	if data.IamInstanceProfile != nil {
		if _, ok := a.profiles[deref(data.IamInstanceProfile.Name)]; !ok {
			return fmt.Sprintf("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", deref(data.IamInstanceProfile.Name))
		}
	}
	return ""
}

func (a *Account) image(id string) *ec2types.Image {
	for i := range a.images {
		if deref(a.images[i].ImageId) == id {
			return &a.images[i]
		}
	}
	return nil
}

// launch starts an instance of the candidate, pending, with the launch
// template's data and the tags of the instance tag specifications.
func (a *Account) launch(c candidate, placement *ec2types.Placement, lifecycle ec2types.InstanceLifecycle, specs []ec2types.TagSpecification) *Instance {
	n := len(a.instances) + 1
	data := c.template.data
	inst := &Instance{
		Instance: ec2types.Instance{
			InstanceId: aws.String(fmt.Sprintf("i-%017x", n)), InstanceType: ec2types.InstanceType(c.spec.Name),
			ImageId: data.ImageId, SubnetId: c.override.SubnetId, Placement: placement,
			PrivateDnsName:   aws.String(fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", n/250, n%250+4)),
			PrivateIpAddress: aws.String(fmt.Sprintf("10.0.%d.%d", n/250, n%250+4)),
			LaunchTime:       aws.Time(a.clock.Now()),
		},
		UserData: deref(data.UserData),
		Launched: data,
	}
	for _, id := range launchSecurityGroups(data) {
		inst.SecurityGroups = append(inst.SecurityGroups, ec2types.GroupIdentifier{GroupId: aws.String(id)})
	}
	a.setState(inst, statePending)
	if lifecycle == ec2types.InstanceLifecycleSpot {
		inst.InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
	}
	if data.IamInstanceProfile != nil {
		a.attachProfile(inst, deref(data.IamInstanceProfile.Name))
	}
	for _, spec := range specs {
		if spec.ResourceType == ec2types.ResourceTypeInstance {
			inst.Tags = append(inst.Tags, spec.Tags...)
		}
	}
	a.instances = append(a.instances, inst)
	return inst
}

// launchSecurityGroups are the security groups of a launch: those of the
// primary network interface when the template has one, else the
// instance-level ones.
func launchSecurityGroups(data ec2types.RequestLaunchTemplateData) []string {
	groups := data.SecurityGroupIds
	for _, ni := range data.NetworkInterfaces {
		if aws.ToInt32(ni.NetworkCardIndex) == 0 && aws.ToInt32(ni.DeviceIndex) == 0 {
			groups = ni.Groups
		}
	}
	return groups
}

// attachProfile gives an instance the named instance profile and the
// profile's role, for its kubelet to authenticate as.
func (a *Account) attachProfile(inst *Instance, profile string) {
	inst.Profile = profile
	inst.IamInstanceProfile = &ec2types.IamInstanceProfile{Arn: aws.String(fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", accountID, inst.Profile))}
	for _, r := range a.profiles[inst.Profile].Roles {
		inst.Role = aws.ToString(r.RoleName)
	}
}

// AddInstance starts an instance nodewright did not launch — a managed
// node group's, another cluster's, one started by hand — running in a zone
// with the tags given, and returns its id. userData (base64) is what its
// kubelet reads, if any.
func (a *Account) AddInstance(instanceType, zone, userData string, tags map[string]string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.instances) + 1
	inst := &Instance{
		Instance: ec2types.Instance{
			InstanceId: aws.String(fmt.Sprintf("i-%017x", n)), InstanceType: ec2types.InstanceType(instanceType),
			Placement:        &ec2types.Placement{AvailabilityZone: aws.String(zone)},
			PrivateDnsName:   aws.String(fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", n/250, n%250+4)),
			PrivateIpAddress: aws.String(fmt.Sprintf("10.0.%d.%d", n/250, n%250+4)),
			LaunchTime:       aws.Time(a.clock.Now()),
		},
		UserData: userData,
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		inst.Tags = append(inst.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	a.setState(inst, stateRunning)
	a.instances = append(a.instances, inst)
	return aws.ToString(inst.InstanceId)
}

// Instance is a simulated instance with what the simulated kubelet reads:
// its user data (base64, as launched) and the role of its profile.
type Instance struct {
	ec2types.Instance
	// Launched is the launch template data the instance was launched
	// with: its volumes, metadata options, network interfaces and so on.
	Launched ec2types.RequestLaunchTemplateData
	UserData string
	Profile  string
	Role     string
	// ConsoleOutput is what the instance printed, such as the kubelet's
	// errors when it cannot register.
	ConsoleOutput string
	// Reboots counts the reboots RebootInstances asked for; RebootedAt
	// is when the last was asked (its kubelet boots again from then).
	Reboots    int
	RebootedAt time.Time
	stateSince time.Time
	reclaimAt  time.Time
}

// Instances returns copies of the account's instances, in launch order.
func (a *Account) Instances() []Instance {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	out := make([]Instance, 0, len(a.instances))
	for _, i := range a.instances {
		c := *i
		c.Tags = append([]ec2types.Tag(nil), i.Tags...)
		out = append(out, c)
	}
	return out
}

// instanceFilters are the filters DescribeInstances knows.
var instanceFilters = resourceFilters[*Instance]{
	fields: map[string]func(*Instance) string{
		"instance-id":         func(inst *Instance) string { return deref(inst.InstanceId) },
		"instance-state-name": func(inst *Instance) string { return string(inst.State.Name) },
	},
	tags: func(inst *Instance) []ec2types.Tag { return inst.Tags },
}

// DescribeInstances lists instances by id and filters (instance-id,
// instance-state-name, tag:KEY, tag-key).
func (e *EC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	if err := e.account.call(ctx, apiCall{action: "DescribeInstances", ec2: true, unfiltered: unfilteredInstances(in)}); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	visible := a.describable()
	for _, id := range in.InstanceIds {
		if !slices.ContainsFunc(visible, func(i *Instance) bool { return deref(i.InstanceId) == id }) {
			return nil, apiError("InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
		}
	}
	found, err := instanceFilters.filter(visible, in.Filters, func(inst *Instance) bool {
		return selected(in.InstanceIds, deref(inst.InstanceId))
	})
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstancesOutput{}
	if len(found) > 0 {
		r := instanceReservation(found)
		for i := range r.Instances {
			if a.faults.ClockSkew != 0 && r.Instances[i].LaunchTime != nil {
				r.Instances[i].LaunchTime = aws.Time(r.Instances[i].LaunchTime.Add(a.faults.ClockSkew))
			}
		}
		out.Reservations = []ec2types.Reservation{r}
	}
	return out, nil
}

// describable are the instances DescribeInstances answers with: none
// under HideInstances, and none launched within DescribeLag. The caller
// holds a.mu.
func (a *Account) describable() []*Instance {
	if a.faults.HideInstances {
		return nil
	}
	if a.faults.DescribeLag <= 0 {
		return a.instances
	}
	now := a.clock.Now()
	out := make([]*Instance, 0, len(a.instances))
	for _, i := range a.instances {
		if now.Sub(aws.ToTime(i.LaunchTime)) >= a.faults.DescribeLag {
			out = append(out, i)
		}
	}
	return out
}

// unfilteredInstances reports whether a DescribeInstances call asks for
// every instance at once.
func unfilteredInstances(in *ec2.DescribeInstancesInput) bool {
	return len(in.InstanceIds) == 0 && len(in.Filters) == 0 && in.MaxResults == nil && in.NextToken == nil
}

// instanceReservation is the one reservation the simulator answers with,
// holding copies of the instances.
func instanceReservation(instances []*Instance) ec2types.Reservation {
	reservation := ec2types.Reservation{}
	for _, inst := range instances {
		c := inst.Instance
		c.Tags = append([]ec2types.Tag(nil), inst.Tags...)
		reservation.Instances = append(reservation.Instances, c)
	}
	return reservation
}

func (a *Account) instance(id string) *Instance {
	for _, i := range a.instances {
		if deref(i.InstanceId) == id {
			return i
		}
	}
	return nil
}

// TerminateInstances terminates instances: they are shutting-down, then
// terminated (and stay visible so).
func (e *EC2) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	if err := e.account.call(ctx, apiCall{action: "TerminateInstances", ec2: true, resources: len(in.InstanceIds)}); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	defer a.advance()
	out := &ec2.TerminateInstancesOutput{}
	for _, id := range in.InstanceIds {
		inst := a.instance(id)
		if inst == nil {
			return nil, apiError("InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
		}
		previous := *inst.State
		if previous.Name == ec2types.InstanceStateNamePending || previous.Name == ec2types.InstanceStateNameRunning {
			a.setState(inst, stateShuttingDown)
		}
		out.TerminatingInstances = append(out.TerminatingInstances, ec2types.InstanceStateChange{
			InstanceId: aws.String(id), PreviousState: &previous, CurrentState: inst.State,
		})
	}
	return out, nil
}

// RebootInstances reboots running instances: each keeps its id and
// state, and its operating system starts again (Reboots, RebootedAt).
// An instance that is not running cannot be rebooted.
func (e *EC2) RebootInstances(ctx context.Context, in *ec2.RebootInstancesInput, _ ...func(*ec2.Options)) (*ec2.RebootInstancesOutput, error) {
	if err := e.account.call(ctx, apiCall{action: "RebootInstances", ec2: true}); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	for _, id := range in.InstanceIds {
		inst := a.instance(id)
		if inst == nil {
			return nil, apiError("InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
		}
		if inst.State.Name != ec2types.InstanceStateNameRunning {
			return nil, apiError("IncorrectState", fmt.Sprintf("The instance '%s' is not in a state from which it can be rebooted", id))
		}
	}
	for _, id := range in.InstanceIds {
		inst := a.instance(id)
		inst.Reboots++
		inst.RebootedAt = a.clock.Now()
	}
	return &ec2.RebootInstancesOutput{}, nil
}

// CreateTags adds or replaces tags on instances.
func (e *EC2) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	if err := e.account.call(ctx, ec2Call("CreateTags")); err != nil {
		return nil, err
	}
	if len(in.Resources) == 0 || len(in.Tags) == 0 {
		return nil, apiError("MissingParameter", "The request must contain the parameters ResourceId and Tag")
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range in.Resources {
		if !strings.HasPrefix(id, "i-") {
			return nil, apiError("InvalidParameterValue", "the simulated account tags instances only")
		}
		inst := a.instance(id)
		if inst == nil {
			return nil, apiError("InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
		}
		for _, t := range in.Tags {
			inst.Tags = setTag(inst.Tags, t)
		}
	}
	return &ec2.CreateTagsOutput{}, nil
}

// setTag gives the tags' every tag of t's key t's value, or adds t when
// none has its key.
func setTag(tags []ec2types.Tag, t ec2types.Tag) []ec2types.Tag {
	replaced := false
	for i := range tags {
		if deref(tags[i].Key) == deref(t.Key) {
			tags[i].Value, replaced = t.Value, true
		}
	}
	if !replaced {
		tags = append(tags, t)
	}
	return tags
}

// SetConsoleOutput records what an instance printed on its console.
func (a *Account) SetConsoleOutput(id, output string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if inst := a.instance(id); inst != nil {
		inst.ConsoleOutput = output
	}
}

// hangs reports whether a CreateFleet call is for the NodePool whose
// launches the faults hang.
func (a *Account) hangs(in *ec2.CreateFleetInput) bool {
	a.mu.Lock()
	pool := a.faults.HangNodePool
	a.mu.Unlock()
	if pool == "" {
		return false
	}
	for _, spec := range in.TagSpecifications {
		for _, tag := range spec.Tags {
			if aws.ToString(tag.Key) == "karpenter.sh/nodepool" && aws.ToString(tag.Value) == pool {
				return true
			}
		}
	}
	return false
}
