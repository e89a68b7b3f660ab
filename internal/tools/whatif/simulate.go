package whatif

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// Result is a plan with the problems found while preparing it.
type Result struct {
	Plan *scheduling.Plan
	// Snapshot is the cluster the plan was made for.
	Snapshot *state.Snapshot
	// Warnings are problems that do not stop the simulation, such as a
	// NodePool whose EC2NodeClass does not exist.
	Warnings []string
}

// Run plans the objects' pending pods from the objects alone: each
// EC2NodeClass as its status says (a cluster's dump), else with every
// architecture and DefaultZones (manifests).
func Run(o *Objects) (*Result, error) {
	return RunWith(o, nil)
}

// DefaultZones are the zones a plan uses for an EC2NodeClass whose status
// names no subnet: three of the region the built-in catalog's prices are
// for.
var DefaultZones = []string{catalogRegion + "a", catalogRegion + "b", catalogRegion + "c"}

// RunWith plans the objects' pending pods, resolving each EC2NodeClass's
// AMIs and zones with resolver, an account's. Without a resolver it
// reads them from the EC2NodeClass's status (a cluster's objects), and
// when the status is empty too (manifests) treats AMIs as unknown: every
// architecture and DefaultZones are allowed, so nothing is blamed on an
// AMI.
func RunWith(o *Objects, resolver *nodeclass.Resolver) (*Result, error) {
	snap, warnings, err := Snapshot(o, resolver)
	if err != nil {
		return nil, err
	}
	plan, more := solveWithStatic(snap)
	return &Result{Plan: plan, Snapshot: snap, Warnings: append(warnings, more...)}, nil
}

// Snapshot is the cluster the objects describe, as every decision sees
// it, with the problems found preparing it. The resolver works as for
// RunWith.
func Snapshot(o *Objects, resolver *nodeclass.Resolver) (*state.Snapshot, []string, error) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	used := state.NodeClassesUsed(o.NodePools)
	classes := map[string]*cloudprovider.NodeClass{}
	for _, nc := range o.EC2NodeClasses {
		if !used[nc.Name] {
			continue
		}
		resolveFn := resolve
		if resolver == nil {
			resolveFn = fromStatusIn(o.zones())
		}
		r, err := resolveFn(resolver, nc)
		if err != nil {
			return nil, nil, err
		}
		if r.warning != "" {
			warnings = append(warnings, r.warning)
		}
		// What the controller refuses (ValidationSucceeded=False:
		// spec.kubelet, spec.userData) launches nothing, as there.
		if v := nodeclass.OfflineValidation(nc); v.Status != metav1.ConditionTrue {
			rc := nodeclass.Rules(nc)
			rc.NotReady = &cloudprovider.NotReady{Condition: v.Type, Reason: v.Reason, Message: fmt.Sprintf("is not ready (%s: %s)", v.Reason, v.Message)}
			classes[nc.Name] = rc
			continue
		}
		needs := instancetypes.NeedsOf(nc)
		if r.placement != nil {
			needs.PlacementGroup = r.placement
		}
		kubelet, err := kubeletconfig.Parse(nc.Spec.Kubelet)
		if err != nil {
			return nil, nil, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
		}
		types := instancetypes.InstanceTypes(specs, o.typeOptions(instancetypes.Options{Zones: r.zones, Kubelet: kubelet, Reservations: r.reservations, Needs: needs}))
		if resolver != nil && nc.Spec.PlacementGroupSelector != nil && r.placement == nil {
			types = nil // not Ready: the controller launches nothing from it
		}
		rc := nodeclass.Rules(nc)
		rc.InstanceTypes, rc.AMIs = types, r.amis
		classes[nc.Name] = rc
	}
	snap := state.Build(o.State(), state.Options{Now: o.now(), NodeClasses: classes, NodesWithoutClaims: true, DefaultSpread: o.DefaultSpread, IgnoreDRARequests: o.Settings.IgnoreDRARequests, Policy: o.Settings.Policy,
		Catalog: instancetypes.InstanceTypes(specs, o.typeOptions(instancetypes.Options{Zones: o.zones()}))})
	warnings = append(warnings, o.regionWarnings()...)
	warnings = append(warnings, o.runtimeClassWarnings()...)
	_, _, bufferWarnings := o.buffers()
	warnings = append(warnings, bufferWarnings...)
	for _, sk := range snap.Skipped {
		if sk.Reason == state.SkipNodeClassNotFound {
			warnings = append(warnings, fmt.Sprintf("NodePool %s: EC2NodeClass %s is not among the inputs; it launches nothing", sk.NodePool, sk.NodeClass))
			continue
		}
		warnings = append(warnings, sk.String())
	}
	for _, n := range snap.Nodes {
		if n.Unsized {
			warnings = append(warnings, fmt.Sprintf("NodeClaim %s: no allocatable in its status and no known instance type in its requirements; ignored", n.NodeClaim.Name))
		}
	}
	return snap, warnings, nil
}

// resolved is what planning needs of an EC2NodeClass.
type resolved struct {
	amis         []scheduling.AMI
	zones        []string
	reservations []instancetypes.Reservation
	placement    *awsv1.PlacementGroup
	warning      string
}

// resolve finds the AMIs of an EC2NodeClass, the zones its subnets are in
// and its capacity reservations, in the resolver's account, and says what
// is missing.
func resolve(r *nodeclass.Resolver, nc *awsv1.EC2NodeClass) (resolved, error) {
	ctx := context.Background()
	amis, err := r.AMIs(ctx, nc)
	var aliasErr *nodeclass.AliasError
	if err != nil && !errors.As(err, &aliasErr) {
		return resolved{}, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	subnets, err := r.Subnets(ctx, nc)
	if err != nil {
		return resolved{}, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	reservations, err := r.CapacityReservations(ctx, nc, time.Now())
	if err != nil {
		return resolved{}, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	placement, err := r.PlacementGroup(ctx, nc)
	if err != nil {
		return resolved{}, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	var warnings []string
	if nc.Spec.PlacementGroupSelector != nil && placement == nil {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: placementGroup selects no available placement group in the account; it launches nothing", nc.Name))
	}
	switch {
	case aliasErr != nil:
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: %v; it launches nothing", nc.Name, aliasErr))
	case len(amis) == 0:
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: amiSelectorTerms select no AMI in the account", nc.Name))
	}
	if len(subnets) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: subnetSelectorTerms select no subnet in the account", nc.Name))
	}
	out := make([]scheduling.AMI, 0, len(amis))
	for _, a := range amis {
		out = append(out, scheduling.AMI{ID: a.ID, Requirements: scheduling.NewRequirements(a.Requirements...)})
	}
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 && len(reservations) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: capacityReservationSelectorTerms select no active capacity reservation in the account", nc.Name))
	}
	zones := make([]string, 0, len(subnets))
	for _, s := range subnets {
		zones = append(zones, s.Zone)
	}
	res := resolved{amis: out, zones: sortedUnique(zones), placement: placement, warning: strings.Join(warnings, "; ")}
	for _, cr := range reservations {
		res.reservations = append(res.reservations, instancetypes.Reservation{ID: cr.ID, InstanceType: cr.InstanceType, Zone: cr.AvailabilityZone, Available: cr.Available, Interruptible: cr.Interruptible})
	}
	return res, nil
}

// fromStatus reads the AMIs and zones a controller resolved into an
// EC2NodeClass's status; without them (a manifest), the architectures
// its terms name (an alias, an AMI name), and when a term names none (an
// id, tags), every architecture, with a warning that says so. The status
// does not say how much room capacity reservations have left, so none is
// planned.
func fromStatusIn(defaultZones []string) func(*nodeclass.Resolver, *awsv1.EC2NodeClass) (resolved, error) {
	return func(_ *nodeclass.Resolver, nc *awsv1.EC2NodeClass) (resolved, error) {
		return fromStatus(nc, defaultZones)
	}
}

func fromStatus(nc *awsv1.EC2NodeClass, defaultZones []string) (resolved, error) {
	amis := make([]scheduling.AMI, 0, len(nc.Status.AMIs))
	for _, a := range nc.Status.AMIs {
		amis = append(amis, scheduling.AMI{ID: a.ID, Requirements: scheduling.NewRequirements(a.Requirements...)})
	}
	warning := ""
	if len(amis) == 0 {
		known := nodeclass.ArchitecturesOf(nc)
		archs := known.Archs
		if !known.Known {
			archs = []string{"amd64", "arm64"}
			warning = fmt.Sprintf("EC2NodeClass %s: the architecture of %s is known only to the account (a manifest has no status.amis), so every architecture is planned; a cluster's dump, or an account (--cloud), says which its amiSelectorTerms select",
				nc.Name, strings.Join(known.Unknown, ", "))
		}
		amis = []scheduling.AMI{{ID: "unresolved", Requirements: scheduling.NewRequirements(
			corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: archs})}}
	}
	zones := make([]string, 0, len(nc.Status.Subnets))
	for _, s := range nc.Status.Subnets {
		zones = append(zones, s.Zone)
	}
	if len(zones) == 0 {
		zones = defaultZones
	}
	return resolved{amis: amis, zones: sortedUnique(zones), warning: warning}, nil
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
