package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// reservedPool builds a NodePool whose instance types include capacity
// reservations.
func reservedPool(t *testing.T, name string, reservations []instancetypes.Reservation, opts ...func(*v1.NodePool)) *scheduling.NodePool {
	t.Helper()
	types, err := instancetypes.Load(instancetypes.Options{Zones: account.Zones(), Reservations: reservations})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: name}
	for _, o := range opts {
		o(np)
	}
	return scheduling.NodePoolFromObject(np, types, archAMIs("amd64", "arm64"), nil)
}

func byCapacityType(plan *scheduling.Plan) map[string][]*scheduling.PlannedNodeClaim {
	out := map[string][]*scheduling.PlannedNodeClaim{}
	for _, c := range plan.NodeClaims {
		out[c.Offering.CapacityType] = append(out[c.Offering.CapacityType], c)
	}
	return out
}

func TestReservedCapacityIsUsedFirstAndNotBeyondItsCount(t *testing.T) {
	np := reservedPool(t, "general", []instancetypes.Reservation{{ID: "cr-0aaa", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 2}})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(12, "web", "1", "2Gi")})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasons(plan))
	}
	got := byCapacityType(plan)
	reserved := got[v1.CapacityTypeReserved]
	if len(reserved) != 2 {
		t.Fatalf("%d NodeClaims in the reservation, want its 2 instances", len(reserved))
	}
	for _, c := range reserved {
		if c.InstanceType.Name != "m5.xlarge" || c.Offering.Zone != "us-east-1a" || c.Offering.ReservationID != "cr-0aaa" {
			t.Errorf("reserved NodeClaim %s: %s in %s (%s)", c.Name, c.InstanceType.Name, c.Offering.Zone, c.Offering.ReservationID)
		}
		if zone, _ := c.Requirements[scheduling.LabelZone].Single(); zone != "us-east-1a" {
			t.Errorf("reserved NodeClaim %s is not pinned to the reservation's zone: %s", c.Name, c.Requirements[scheduling.LabelZone])
		}
		// m5.xlarge: 4 vCPU, of which 3 whole CPUs remain after kubelet reservations.
		if len(c.Pods) != 3 {
			t.Errorf("reserved NodeClaim %s holds %d pods, want 3 (a full m5.xlarge)", c.Name, len(c.Pods))
		}
		if c.Offering.Price > 0.001 {
			t.Errorf("reserved NodeClaim %s priced %f: reserved capacity is already paid for", c.Name, c.Offering.Price)
		}
	}
	rest := append(append([]*scheduling.PlannedNodeClaim(nil), got[v1.CapacityTypeSpot]...), got[v1.CapacityTypeOnDemand]...)
	if len(rest) == 0 {
		t.Fatal("the 6 pods beyond the reservation got no spot or on-demand NodeClaim")
	}
	for _, c := range rest {
		if r := c.Requirements[v1.LabelCapacityType]; r == nil || r.Has(v1.CapacityTypeReserved) {
			t.Errorf("NodeClaim %s (%s) may launch into the reservation: %s", c.Name, c.Offering.CapacityType, c.Requirements[v1.LabelCapacityType])
		}
	}
}

func TestReservedCapacityHonoursRequirements(t *testing.T) {
	reservations := []instancetypes.Reservation{{ID: "cr-0aaa", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 5}}
	inZoneB := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{scheduling.LabelZone: "us-east-1b"} }
	for _, tc := range []struct {
		name string
		np   *scheduling.NodePool
		pods []*corev1.Pod
	}{
		{"pod in another zone", reservedPool(t, "general", reservations), pods(2, "b", "1", "1Gi", inZoneB)},
		{"pod larger than the reserved type", reservedPool(t, "general", reservations), pods(1, "big", "6", "8Gi")},
		{"NodePool on-demand only", reservedPool(t, "od", reservations,
			requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)), pods(2, "od", "1", "1Gi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{tc.np}, Pods: tc.pods})
			if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) == 0 {
				t.Fatalf("unschedulable: %v", reasons(plan))
			}
			if r := byCapacityType(plan)[v1.CapacityTypeReserved]; len(r) > 0 {
				t.Errorf("%s landed in the reservation", r[0].Name)
			}
		})
	}
}

func TestReservedOnlyNodePoolSaysWhenReservationsAreUsedUp(t *testing.T) {
	np := reservedPool(t, "reserved", []instancetypes.Reservation{{ID: "cr-0aaa", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 1}},
		requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(2, "batch", "3", "4Gi")})
	if got := byCapacityType(plan); len(plan.NodeClaims) != 1 || len(got[v1.CapacityTypeReserved]) != 1 {
		t.Fatalf("NodeClaims %v, want one in the reservation", got)
	}
	why := reasons(plan)["batch-1"]
	for _, want := range []string{"NodePool reserved", "only reserved capacity is allowed", "EC2NodeClass reserved", "3 CPU"} {
		if !strings.Contains(why, want) {
			t.Errorf("reason %q lacks %q", why, want)
		}
	}

	none := reservedPool(t, "reserved", nil, requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{none}, Pods: pods(1, "batch", "1", "1Gi")})
	if why := reasons(plan)["batch-0"]; !strings.Contains(why, "selects no capacity reservation") {
		t.Errorf("without reservations: reason %q", why)
	}
}

func TestReservedCapacityKeepsTopologySpread(t *testing.T) {
	// Reservations in two zones; six pods spread over three zones with
	// maxSkew 1 fill both reservations and one zone with spot/on-demand.
	np := reservedPool(t, "general", []instancetypes.Reservation{
		{ID: "cr-0aaa", InstanceType: "m5.large", Zone: "us-east-1a", Available: 4},
		{ID: "cr-0bbb", InstanceType: "m5.large", Zone: "us-east-1b", Available: 4},
	})
	spread := func(p *corev1.Pod) {
		p.Labels["app"] = "api"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: scheduling.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
		}}
	}
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(6, "api", "1", "1Gi", spread)})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasons(plan))
	}
	zones := map[string]int{}
	for _, c := range plan.NodeClaims {
		zones[c.Offering.Zone] += len(c.Pods)
		if c.Offering.CapacityType == v1.CapacityTypeReserved && c.Offering.Zone == "us-east-1c" {
			t.Errorf("NodeClaim %s reserved in a zone without a reservation", c.Name)
		}
	}
	if zones["us-east-1a"] != 2 || zones["us-east-1b"] != 2 || zones["us-east-1c"] != 2 {
		t.Errorf("pods per zone %v, want 2 each", zones)
	}
	if r := byCapacityType(plan)[v1.CapacityTypeReserved]; len(r) == 0 {
		t.Error("no NodeClaim used the reservations")
	}
}

// A NodeClaim pinned to a reservation that is still launching takes its
// place: the reservation's count shows the instance only once it runs.
func TestLaunchingNodeClaimsTakeTheirReservation(t *testing.T) {
	np := reservedPool(t, "general", []instancetypes.Reservation{{ID: "cr-0aaa", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 2}})
	launching := func(name string, launching bool) *scheduling.Node {
		reqs := scheduling.LabelRequirements(map[string]string{v1.LabelNodePool: "general"})
		reqs.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))
		reqs.Add(scheduling.NewRequirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, "us-east-1a"))
		reqs.Add(scheduling.NewRequirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.xlarge"))
		// Full already: the pods below need new NodeClaims.
		return &scheduling.Node{Name: name, Requirements: reqs, Allocatable: scheduling.MustParseResources("cpu=100m,memory=100Mi,pods=1"), Launching: launching}
	}
	for _, tc := range []struct {
		nodes    []*scheduling.Node
		reserved int
	}{
		{nil, 2},
		{[]*scheduling.Node{launching("general-a", true)}, 1},
		{[]*scheduling.Node{launching("general-a", true), launching("general-b", true)}, 0},
		// Launched: the reservation's count already shows it.
		{[]*scheduling.Node{launching("general-a", false)}, 2},
	} {
		plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Nodes: tc.nodes, Pods: pods(12, "web", "1", "2Gi")})
		if got := len(byCapacityType(plan)[v1.CapacityTypeReserved]); got != tc.reserved {
			t.Errorf("with %d NodeClaims in flight: %d new NodeClaims in the reservation, want %d", len(tc.nodes), got, tc.reserved)
		}
	}
}
