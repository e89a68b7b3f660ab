package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

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
	groups := groupOverrides(class, types, filter, kubelets, wantsEFA(claim, class))
	if !groups.overlaid {
		// EC2's own prices decide: no priorities.
		groups.dropPriorities()
	}
	configs := make([]ec2types.FleetLaunchTemplateConfigRequest, 0, len(groups.order))
	for _, g := range groups.order {
		name, err := p.ensureLaunchTemplate(ctx, claim, class, groups.amis[g.ami], templateOptions{maxPods: g.maxPods, reservation: g.reservation, efa: g.efa}, groups.kubelets[g.kubelet])
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
	// efa is how many EFA interfaces the instance is launched with: all
	// its type has, when the NodeClaim's pods claim them (dra.net).
	efa int64
}

// wantsEFA reports whether a NodeClaim is launched with its instance
// type's EFA interfaces (EC2 attaches them only when the launch asks):
// its pods request the EFA device plugin's resource or claim DRANET
// devices, which the catalog describes as the EFA interfaces, and the
// EC2NodeClass does not lay out the network interfaces itself.
func wantsEFA(claim *v1.NodeClaim, class *awsv1.EC2NodeClass) bool {
	if len(class.Spec.NetworkInterfaces) > 0 {
		return false
	}
	if _, ok := claim.Spec.Resources.Requests[instancetypes.EFAResource]; ok {
		return true
	}
	return slices.Contains(strings.Split(claim.Annotations[v1.AnnotationRequestedDRADrivers], ","), instancetypes.EFADriver)
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
func groupOverrides(class *awsv1.EC2NodeClass, types []*scheduling.InstanceType, filter offeringFilter, kubelets map[string]*kubeletconfig.Config, efa bool) *overrideGroups {
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
		interfaces := int64(0)
		if efa {
			interfaces = it.Capacity.Devices()[instancetypes.EFADriver]
		}
		for _, o := range it.Offerings {
			if subnet, ok := filter.subnetFor(it, o); ok {
				groups.add(templateGroup{ami: ami.ID, maxPods: it.Capacity.Pods(), reservation: o.ReservationID, kubelet: kubelet, efa: interfaces}, it, o, subnet)
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
