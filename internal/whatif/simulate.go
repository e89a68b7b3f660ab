package whatif

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/fake/account"
	simaws "github.com/nodewright/nodewright/internal/fake/aws"
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

// Run plans the objects' pending pods against the simulated account.
func Run(o *Objects) (*Result, error) {
	return RunWith(o, SimulatedAccount())
}

// SimulatedAccount resolves AMIs and subnets in a freshly seeded simulated
// account: the one every scenario assumes.
func SimulatedAccount() *nodeclass.Resolver {
	cloud := simaws.NewAccount()
	cloud.Seed()
	return &nodeclass.Resolver{EC2: cloud.EC2(), SSM: cloud.SSM(), KubernetesVersion: simaws.KubernetesVersion}
}

// RunWith plans the objects' pending pods, resolving each EC2NodeClass's
// AMIs and zones with resolver. Without a resolver it reads them from the
// EC2NodeClass's status (a cluster's objects), and when the status is
// empty too (manifests) treats AMIs as unknown: every architecture and
// every zone of the region is allowed, so nothing is blamed on an AMI.
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
			resolveFn = fromStatus
		}
		r, err := resolveFn(resolver, nc)
		if err != nil {
			return nil, nil, err
		}
		if r.warning != "" {
			warnings = append(warnings, r.warning)
		}
		needs := instancetypes.NeedsOf(nc)
		if r.placement != nil {
			needs.PlacementGroup = r.placement
		}
		types := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: r.zones, Kubelet: nc.Spec.Kubelet, Reservations: r.reservations, Needs: needs})
		if resolver != nil && nc.Spec.PlacementGroupSelector != nil && r.placement == nil {
			types = nil // not Ready: the controller launches nothing from it
		}
		rc := nodeclass.Rules(nc)
		rc.InstanceTypes, rc.AMIs = types, r.amis
		classes[nc.Name] = rc
	}
	snap := state.Build(o.State(), state.Options{Now: o.now(), NodeClasses: classes,
		Catalog: instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: account.Zones()})})
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
// and its capacity reservations, in the simulated account, and says what
// is missing.
func resolve(r *nodeclass.Resolver, nc *awsv1.EC2NodeClass) (resolved, error) {
	ctx := context.Background()
	amis, err := r.AMIs(ctx, nc)
	if err != nil {
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
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: placementGroupSelector selects no available placement group in account %s; it launches nothing", nc.Name, account.AccountID))
	}
	if len(amis) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: amiSelectorTerms select no AMI in account %s", nc.Name, account.AccountID))
	}
	if len(subnets) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: subnetSelectorTerms select no subnet in account %s", nc.Name, account.AccountID))
	}
	out := make([]scheduling.AMI, 0, len(amis))
	for _, a := range amis {
		out = append(out, scheduling.AMI{ID: a.ID, Requirements: scheduling.NewRequirements(a.Requirements...)})
	}
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 && len(reservations) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: capacityReservationSelectorTerms select no active capacity reservation in account %s", nc.Name, account.AccountID))
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
// EC2NodeClass's status; when there are none, any architecture and zone.
// The status does not say how much room capacity reservations have left,
// so none is planned.
func fromStatus(_ *nodeclass.Resolver, nc *awsv1.EC2NodeClass) (resolved, error) {
	amis := make([]scheduling.AMI, 0, len(nc.Status.AMIs))
	for _, a := range nc.Status.AMIs {
		amis = append(amis, scheduling.AMI{ID: a.ID, Requirements: scheduling.NewRequirements(a.Requirements...)})
	}
	if len(amis) == 0 {
		amis = []scheduling.AMI{{ID: "unresolved", Requirements: scheduling.NewRequirements(
			corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}
	}
	zones := make([]string, 0, len(nc.Status.Subnets))
	for _, s := range nc.Status.Subnets {
		zones = append(zones, s.Zone)
	}
	if len(zones) == 0 {
		zones = account.Zones()
	}
	return resolved{amis: amis, zones: sortedUnique(zones)}, nil
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
