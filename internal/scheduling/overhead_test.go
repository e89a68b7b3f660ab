package scheduling_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// m5OnDemand is a NodePool of m5 on-demand types: their prices are
// proportional to their size, so a plan of many small nodes and one of few
// large ones can cost the same.
func m5OnDemand(t *testing.T) *scheduling.NodePool {
	return pool(t, "general",
		requirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5"),
		requirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "on-demand"),
		requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1a", "us-east-1b", "us-east-1c"))
}

func planPrice(plan *scheduling.Plan) float64 {
	total := 0.0
	for _, c := range plan.NodeClaims {
		total += c.Offering.Price
	}
	return total
}

func planTypes(plan *scheduling.Plan) string {
	out := ""
	for _, c := range plan.NodeClaims {
		out += fmt.Sprintf(" %s(%d pods)", c.InstanceType.Name, len(c.Pods))
	}
	return out
}

// cheapestUniform is the price of the cheapest plan of one m5 type for
// count pods of the requests, each node's room less the DaemonSets'.
func cheapestUniform(np *scheduling.NodePool, count int, pod, daemon scheduling.Resources) float64 {
	best := math.Inf(1)
	for _, it := range np.InstanceTypes {
		if !strings.HasPrefix(it.Name, "m5.") {
			continue
		}
		room := it.Allocatable.Sub(daemon)
		per := 0
		for used := pod; used.Fits(room); used = used.Add(pod) {
			per++
		}
		o, ok := it.CheapestOffering(np.Requirements)
		if per == 0 || !ok {
			continue
		}
		best = min(best, float64((count+per-1)/per)*o.Price)
	}
	return best
}

// Where a few large nodes and many small ones cost the same, the plan
// takes the few: 8 pods of 900m fit 4 m5.large, 2 m5.xlarge or one
// m5.2xlarge, all $0.384/h.
func TestFewerNodesWhenThePriceIsTheSame(t *testing.T) {
	np := m5OnDemand(t)
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(8, "w", "900m", "1Gi")})
	if len(plan.NodeClaims) != 1 || math.Abs(planPrice(plan)-0.384) > 1e-9 {
		t.Errorf("8 pods of 900m on m5: $%.4f/h on%s, want one m5.2xlarge at $0.3840/h", planPrice(plan), planTypes(plan))
	}
}

// DaemonSets take room on every node: the plan's cost counts it, so the
// small types, whose allocatable is mostly taken by the DaemonSets, lose
// to larger ones, for pods packed freely and for pods spread over zones.
func TestDaemonSetOverheadCountsInTheCost(t *testing.T) {
	np := m5OnDemand(t)
	ds := newPod("agent", "600m", "600Mi")
	daemon := scheduling.MustParseResources("cpu=600m,memory=600Mi,pods=1")
	pod := scheduling.MustParseResources("cpu=500m,memory=512Mi,pods=1")
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, DaemonSets: daemonSets(ds), Pods: pods(12, "w", "500m", "512Mi")})
	if want := cheapestUniform(np, 12, pod, daemon); planPrice(plan) > want+1e-9 || len(plan.NodeClaims) != 1 {
		t.Errorf("12 pods of 500m beside a 600m DaemonSet: $%.4f/h on%s, want one node at $%.4f/h at most", planPrice(plan), planTypes(plan), want)
	}

	spread := func(p *corev1.Pod) {
		p.Labels["app"] = "spread"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	}
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, DaemonSets: daemonSets(ds), Pods: pods(12, "s", "500m", "512Mi", spread)})
	// Four pods a zone: two m5.large or one m5.xlarge each ($0.192/h).
	if want := 3 * cheapestUniform(np, 4, pod, daemon); planPrice(plan) > want+1e-9 || len(plan.NodeClaims) != 3 {
		t.Errorf("12 pods of 500m over three zones beside a 600m DaemonSet: $%.4f/h on%s, want three nodes at $%.4f/h at most", planPrice(plan), planTypes(plan), want)
	}
}
