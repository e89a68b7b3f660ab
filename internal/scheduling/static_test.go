package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// A static NodePool's NodeClaims meet its requirements, list every
// instance type that fits its DaemonSets (cheapest first), and each is its
// own node.
func TestStaticNodeClaimsMeetTheTemplateAndFitDaemonSets(t *testing.T) {
	np := pool(t, "static", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge", "m5.2xlarge", "c5.large"),
		requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))
	// A DaemonSet asking 3 CPUs rules out the 2-vCPU types.
	ds := daemonSets(newPod("agent", "3", "1Gi"))
	claims, why := scheduling.Static(np, nil, ds, 3, scheduling.Policy{})
	if len(claims) != 3 || why != "" {
		t.Fatalf("%d NodeClaims (%q), want 3", len(claims), why)
	}
	names := map[string]bool{}
	for _, c := range claims {
		names[c.Name] = true
		var types []string
		for _, it := range c.InstanceTypes {
			types = append(types, it.Name)
		}
		if strings.Join(types, ",") != "m5.xlarge,m5.2xlarge" {
			t.Errorf("NodeClaim %s lists %v, want the types that fit the DaemonSet, cheapest first: m5.xlarge, m5.2xlarge", c.Name, types)
		}
		if c.Offering.CapacityType != v1.CapacityTypeOnDemand {
			t.Errorf("NodeClaim %s is %s, the NodePool allows only on-demand", c.Name, c.Offering.CapacityType)
		}
		if cpu := c.Requests.List()[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("3")) != 0 {
			t.Errorf("NodeClaim %s requests %s CPU, want the DaemonSet's 3", c.Name, cpu.String())
		}
		if len(c.Pods) != 0 {
			t.Errorf("NodeClaim %s carries pods %v", c.Name, c.Pods)
		}
	}
	if len(names) != 3 {
		t.Errorf("NodeClaim names %v are not distinct", names)
	}
}

// limits.nodes caps a static NodePool, counting the nodes it has.
func TestStaticNodeClaimsStopAtTheNodeLimit(t *testing.T) {
	np := pool(t, "static", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large"), func(np *v1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("4")}
	})
	np.Usage = corev1.ResourceList{"nodes": resource.MustParse("3")}
	claims, why := scheduling.Static(np, nil, nil, 2, scheduling.Policy{})
	if len(claims) != 1 || !strings.Contains(why, "limit of 4 nodes reached") {
		t.Errorf("%d NodeClaims (%q), want 1 and the node limit named", len(claims), why)
	}
	none, why := scheduling.Static(pool(t, "static", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "no-such-type")), nil, nil, 1, scheduling.Policy{})
	if len(none) != 0 || why == "" {
		t.Errorf("a NodePool no instance type meets opened %d NodeClaims (%q)", len(none), why)
	}
}

// A static NodePool that allows reserved capacity fills its reservations
// first, one instance per place.
func TestStaticNodeClaimsTakeReservedCapacityFirst(t *testing.T) {
	np := reservedPool(t, "static", []instancetypes.Reservation{{ID: "cr-0aaa", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 2}},
		requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved, v1.CapacityTypeOnDemand))
	claims, why := scheduling.Static(np, nil, nil, 3, scheduling.Policy{})
	if len(claims) != 3 {
		t.Fatalf("%d NodeClaims (%q), want 3", len(claims), why)
	}
	reserved := 0
	for _, c := range claims {
		if c.Offering.ReservationID == "cr-0aaa" {
			reserved++
		} else if r := c.Requirements[v1.LabelCapacityType]; r.Has(v1.CapacityTypeReserved) {
			t.Errorf("NodeClaim %s beyond the reservation may still launch into it: %s", c.Name, r)
		}
	}
	if reserved != 2 {
		t.Errorf("%d NodeClaims in the reservation of 2 places", reserved)
	}
}
