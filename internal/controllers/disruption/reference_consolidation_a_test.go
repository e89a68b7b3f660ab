package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The first part of the reference's consolidation_test.go (its Events,
// Metrics, Budgets and Replace contexts). The reference's "most
// expensive instance type" node is an m5.8xlarge (32 vCPUs) here, with a
// small pod that a far cheaper type holds.

const (
	rcaBig = "m5.8xlarge"
	rcaCtx = "Consolidation > "
)

var _ = restate("consolidation_test.go",
	// Events.
	refCase{ref: rcaCtx + "Events > should not fire an event for ConsolidationDisabled when the NodePool has consolidation set to WhenEmptyOrUnderutilized",
		run: func(t *testing.T) {
			e := rcaStart(t, func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
				np.Spec.Disruption.ConsolidateAfter = "0s"
			})
			rcaCtrlNode(t, e, rcaNodeSpec{name: "empty", itype: rcaBig})
			e.reconcile(t)
			if evs := e.events(); has(evs, "DisruptionBlocked") {
				t.Errorf("an empty node of a pool that consolidates was told it is blocked: %v", evs)
			}
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			if rcaClaimExists(t, e, "nc-empty") {
				t.Errorf("the empty node's NodeClaim stays; events %v", e.events())
			}
		}},
	refCase{ref: rcaCtx + "Events > should fire an event for ConsolidationDisabled when the NodePool has consolidation set to WhenEmpty",
		better: "nodewright tells the node's NodeClaim once (DisruptionBlocked, \"consolidationPolicy is WhenEmpty: only empty nodes are removed\"), not the Node and the NodeClaim once per consolidation method (4 Unconsolidatable events): one reason, said once where the user looks for the node's disruption",
		run: func(t *testing.T) {
			rcaToldOnce(t, func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
				np.Spec.Disruption.ConsolidateAfter = "1m"
			}, nil, "consolidationPolicy is WhenEmpty: only empty nodes are removed")
		}},
	refCase{ref: rcaCtx + "Events > should fire an event for ConsolidationDisabled when the NodePool has consolidateAfter set to 'Never'",
		better: "told once on the NodeClaim (DisruptionBlocked, \"consolidateAfter is Never: consolidation is off\"), not on the Node and the NodeClaim by each of emptiness, multi- and single-node consolidation (6 events)",
		run: func(t *testing.T) {
			rcaToldOnce(t, func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
				np.Spec.Disruption.ConsolidateAfter = v1.Never
			}, nil, "consolidateAfter is Never: consolidation is off")
		}},
	refCase{ref: rcaCtx + "Events > should fire an event when a candidate does not have a resolvable instance type",
		better: "told once on the NodeClaim (DisruptionBlocked: savings cannot be measured), not on the Node and the NodeClaim by multi- and single-node consolidation (4 events)",
		run: func(t *testing.T) {
			rcaToldOnce(t, nil, []string{corev1.LabelInstanceTypeStable}, "savings cannot be measured")
		}},
	refCase{ref: rcaCtx + "Events > should fire an event when a candidate does not have the capacity type label",
		better: "told once on the NodeClaim (DisruptionBlocked: savings cannot be measured), not on the Node and the NodeClaim by multi- and single-node consolidation (4 events)",
		run: func(t *testing.T) {
			rcaToldOnce(t, nil, []string{v1.LabelCapacityType}, "savings cannot be measured")
		}},
	refCase{ref: rcaCtx + "Events > should fire an event when a candidate does not have the zone label",
		better: "told once on the NodeClaim (DisruptionBlocked: savings cannot be measured), not on the Node and the NodeClaim by multi- and single-node consolidation (4 events)",
		run: func(t *testing.T) {
			rcaToldOnce(t, nil, []string{corev1.LabelTopologyZone}, "savings cannot be measured")
		}},

	// Metrics.
	refCase{ref: rcaCtx + "Metrics > should correctly report eligible nodes",
		run: func(t *testing.T) {
			e := rcaStart(t, nil)
			reg := rcaMetrics(t, e)
			rcaCtrlNode(t, e, rcaNodeSpec{name: "big", itype: rcaBig, pods: 1, podAnnotations: map[string]string{v1.AnnotationDoNotDisrupt: "true"}})
			e.reconcile(t)
			if v := rcaGauge(t, reg, "karpenter_voluntary_disruption_eligible_nodes", map[string]string{"reason": "underutilized"}); v != 0 {
				t.Errorf("a node held by a do-not-disrupt pod: eligible nodes %v, want 0", v)
			}
			pod := &corev1.Pod{}
			if err := e.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "big-0"}, pod); err != nil {
				t.Fatal(err)
			}
			pod.Annotations = nil
			if err := e.kube.Update(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			if v := rcaGauge(t, reg, "karpenter_voluntary_disruption_eligible_nodes", map[string]string{"reason": "underutilized"}); v != 1 {
				t.Errorf("the annotation removed: eligible nodes %v, want 1", v)
			}
		}},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for emptiness disruption > when a candidate is blocked by budgets",
		run: func(t *testing.T) { rcaInvalidated(t, "empty", rcaByBudget) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for emptiness disruption > when candidates are filtered out due to pod churn",
		run: func(t *testing.T) { rcaInvalidated(t, "empty", rcaByChurn) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for emptiness disruption > when candidates are filtered out due to candidate being nominated",
		run: func(t *testing.T) { rcaInvalidated(t, "empty", rcaByNomination) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for multi node disruption > when candidates are blocked by budgets",
		run: func(t *testing.T) { rcaInvalidated(t, "multi", rcaByBudget) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for multi node disruption > when candidates are filtered out due to pod churn",
		better: "karpenter_voluntary_disruption_failed_validations_total{consolidation_type=\"multi\"} counts the one cancelled command once (the reference counts 2: its multi-node search validates again a smaller set); the counter counts commands, as its help says",
		run:    func(t *testing.T) { rcaInvalidated(t, "multi", rcaByChurn) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for multi node disruption > when candidates are filtered out due to candidate being nominated",
		better: "karpenter_voluntary_disruption_failed_validations_total{consolidation_type=\"multi\"} counts the one cancelled command once (the reference counts 2: its multi-node search validates again a smaller set); the counter counts commands, as its help says",
		run:    func(t *testing.T) { rcaInvalidated(t, "multi", rcaByNomination) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for single node disruption > when a candidate is blocked by budgets",
		run: func(t *testing.T) { rcaInvalidated(t, "single", rcaByBudget) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for single node disruption > when candidates are filtered out due to pod churn",
		run: func(t *testing.T) { rcaInvalidated(t, "single", rcaByChurn) }},
	refCase{ref: rcaCtx + "Metrics > should correctly report invalidated commands for single node disruption > when candidates are filtered out due to candidate being nominated",
		run: func(t *testing.T) { rcaInvalidated(t, "single", rcaByNomination) }},

	// Budgets.
	refCase{ref: rcaCtx + "Budgets > should only allow 3 empty nodes to be disrupted",
		run: func(t *testing.T) { rcaEmptyBudget(t, 1, "30%", 3, 7) }},
	refCase{ref: rcaCtx + "Budgets > should allow all empty nodes to be disrupted",
		run: func(t *testing.T) { rcaEmptyBudget(t, 1, "100%", 10, 0) }},
	refCase{ref: rcaCtx + "Budgets > should allow no empty nodes to be disrupted",
		run: func(t *testing.T) { rcaEmptyBudget(t, 1, "0%", 0, 10) }},
	refCase{ref: rcaCtx + "Budgets > should only allow 3 nodes to be deleted in multi node consolidation delete",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%"}}
			for i := range 10 {
				n := c.node(fmt.Sprintf("n%d", i), rcaBig, onDemand)
				c.pods(n, 1, "100m", "128Mi")
			}
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 3 || len(d.Commands[0].Replacements) != 0 {
				t.Fatalf("ten nodes whose pods fit on one, a budget of 30%%: %q, want one command deleting 3", commands(d))
			}
			inFlight := map[string]bool{}
			for _, n := range d.Commands[0].NodeNames() {
				inFlight[n] = true
			}
			if d := c.decide(func(o *decide.Options) { o.InFlight = inFlight }); len(d.Commands) != 0 {
				t.Errorf("with the 3 being deleted, the budget is used up: %q", commands(d))
			}
		}},
	refCase{ref: rcaCtx + "Budgets > should only allow 3 nodes to be deleted in single node consolidation delete",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%"}}
			for i := range 10 {
				n := c.node(fmt.Sprintf("n%d", i), rcaBig, onDemand)
				c.pods(n, 1, "15", "1Gi")
			}
			// Five rounds, each beside the commands of the rounds before.
			inFlight, planned := map[string]bool{}, []decide.Room(nil)
			for round := range 5 {
				d := c.decide(func(o *decide.Options) { o.InFlight, o.Planned = inFlight, planned })
				for _, cmd := range d.Commands {
					if len(cmd.Replacements) != 0 {
						t.Errorf("round %d: %q, want deletions (two pods fit a node)", round, commands(d))
					}
					for _, n := range cmd.NodeNames() {
						inFlight[n] = true
					}
					planned = append(planned, decide.RoomOf(cmd))
				}
			}
			if len(inFlight) != 3 {
				t.Errorf("%d nodes disrupted in five rounds under a budget of 30%% of 10 (%v), want 3", len(inFlight), inFlight)
			}
		}},
	refCase{ref: rcaCtx + "Budgets > should allow 2 nodes from each nodePool to be deleted",
		run: func(t *testing.T) { rcaEmptyBudget(t, 10, "50%", 2, 10) }},
	refCase{ref: rcaCtx + "Budgets > should allow all nodes from each nodePool to be deleted",
		run: func(t *testing.T) { rcaEmptyBudget(t, 10, "100%", 3, 0) }},
	refCase{ref: rcaCtx + "Budgets > should allow no nodes from each nodePool to be deleted",
		run: func(t *testing.T) { rcaEmptyBudget(t, 10, "0%", 0, 30) }},
	refCase{ref: rcaCtx + "Budgets > should not mark empty node consolidated if the candidates can't be disrupted due to budgets with one nodepool",
		run: func(t *testing.T) { rcaNotConsolidated(t, 1, false, v1.DisruptionReasonEmpty, nil, true) }},
	refCase{ref: rcaCtx + "Budgets > should not mark empty node consolidated if all candidates can't be disrupted due to budgets with many nodepools",
		run: func(t *testing.T) { rcaNotConsolidated(t, 10, false, v1.DisruptionReasonEmpty, nil, true) }},
	refCase{ref: rcaCtx + "Budgets > should not mark multi node consolidated if the candidates can't be disrupted due to budgets with one nodepool",
		run: func(t *testing.T) {
			rcaNotConsolidated(t, 1, true, v1.DisruptionReasonUnderutilized, rcaMultiOnly, false)
		}},
	refCase{ref: rcaCtx + "Budgets > should not mark multi node consolidated if all candidates can't be disrupted due to budgets with many nodepools",
		run: func(t *testing.T) {
			rcaNotConsolidated(t, 10, true, v1.DisruptionReasonUnderutilized, rcaMultiOnly, false)
		}},
	refCase{ref: rcaCtx + "Budgets > should not mark single node consolidated if the candidates can't be disrupted due to budgets with one nodepool",
		run: func(t *testing.T) {
			rcaNotConsolidated(t, 1, true, v1.DisruptionReasonUnderutilized, rcaSingleOnly, true)
		}},
	refCase{ref: rcaCtx + "Budgets > should not mark single node consolidated if all candidates can't be disrupted due to budgets with many nodepools",
		run: func(t *testing.T) {
			rcaNotConsolidated(t, 10, true, v1.DisruptionReasonUnderutilized, rcaSingleOnly, true)
		}},

	// Replace.
	refCase{ref: rcaCtx + "Replace > can replace node > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaReplaceCarriedOut(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcaCtx + "Replace > can replace node > if the candidate is spot node",
		run: func(t *testing.T) { rcaReplaceCarriedOut(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcaCtx + "Replace > cannot replace spot with spot if less than minimum InstanceTypes flexibility",
		run: func(t *testing.T) {
			c := newCluster(t)
			rcaOnly(c, []string{"us-east-1a"}, nil, "m5.large", "m5.xlarge")
			c.node("spot", "m5.xlarge")
			c.pods("spot", 1, "100m", "128Mi")
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "spot"), "would have 1 cheaper spot instance types, fewer than the 15 that keep it diverse") {
				t.Errorf("one cheaper spot type: %q, blocked %q", commands(d), blocked(d, "spot"))
			}
		}},
	refCase{ref: rcaCtx + "Replace > cannot replace spot with spot if the spotToSpotConsolidation is disabled",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("spot", rcaBig)
			c.pods("spot", 1, "100m", "128Mi")
			d := c.decide(func(o *decide.Options) { o.SpotToSpot = false })
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "spot"), "SpotToSpotConsolidation") {
				t.Errorf("spot-to-spot disabled: %q, blocked %q", commands(d), blocked(d, "spot"))
			}
			if d := c.decide(); len(d.Commands) != 1 {
				t.Errorf("spot-to-spot enabled: %q, want the spot node replaced", commands(d))
			}
		}},
	refCase{ref: rcaCtx + "Replace > cannot replace spot with spot if it is part of the 15 cheapest instance types.",
		run: func(t *testing.T) {
			c := newCluster(t)
			rcaOnly(c, []string{"us-east-1a"}, []string{v1.CapacityTypeSpot})
			ranked := rcaRanked(c, v1.CapacityTypeSpot)
			// A type with one type cheaper than it.
			var second string
			for i := 1; i < len(ranked) && second == ""; i++ {
				if ranked[i].price > ranked[0].price {
					second = ranked[i].name
				}
			}
			c.node("spot", second)
			c.pods("spot", 1, "10m", "16Mi")
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "spot"), "fewer than the 15 that keep it diverse") {
				t.Errorf("a node of %s, among the cheapest spot types: %q, blocked %q", second, commands(d), blocked(d, "spot"))
			}
		}},
	refCase{ref: rcaCtx + "Replace > spot to spot consolidation should order the instance types by price before enforcing minimum flexibility.",
		run: func(t *testing.T) { rcaSpotTruncation(t, 0, 15) }},
	refCase{ref: rcaCtx + "Replace > spot to spot consolidation should consider the max of default and minimum number of instanceTypeOptions from minValues in requirement for truncation if minimum number of instanceTypeOptions from minValues in requirement is greater than 15.",
		run: func(t *testing.T) { rcaSpotTruncation(t, 16, 16) }},
	refCase{ref: rcaCtx + "Replace > should handle failing filterOutSameInstanceType correctly (without a panic) when minValues isn't satisfied",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge", "m5a.xlarge"}, MinValues: ptr.To(2)},
				{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			}
			for i, pods := range []int{1, 1, 2} {
				n := c.node(fmt.Sprintf("n%d", i), "m5.xlarge", onDemand)
				c.pods(n, pods, "1500m", "1Gi")
			}
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 1 || len(d.Commands[0].Replacements) != 0 || d.Commands[0].NodeNames()[0] == "n2" {
				t.Errorf("three nodes, the first two with a pod each: %q, want one of the first two deleted", commands(d))
			}
		}},
	refCase{ref: rcaCtx + "Replace > spot to spot consolidation should consider the default for truncation if minimum number of instanceTypeOptions from minValues in requirement is less than 15.",
		run: func(t *testing.T) { rcaSpotTruncation(t, 10, 15) }},
	refCase{ref: rcaCtx + "Replace > Consolidation should fail if filterByPrice breaks the minimum requirement from the NodePools. > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaMinValuesByPrice(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcaCtx + "Replace > Consolidation should fail if filterByPrice breaks the minimum requirement from the NodePools. > if the candidate is spot node",
		run: func(t *testing.T) { rcaMinValuesByPrice(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes if another nodePool returns no instance types > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaOtherPoolWithoutTypes(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes if another nodePool returns no instance types > if the candidate is spot node",
		run: func(t *testing.T) { rcaOtherPoolWithoutTypes(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers PDB > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaPDB(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers PDB > if the candidate is spot node",
		run: func(t *testing.T) { rcaPDB(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers PDB policy > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaPDBPolicy(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers PDB policy > if the candidate is spot node",
		run: func(t *testing.T) { rcaPDBPolicy(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, PDB namespace must match > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaPDBOtherNamespace(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, PDB namespace must match > if the candidate is spot node",
		run: func(t *testing.T) { rcaPDBOtherNamespace(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers karpenter.sh/do-not-disrupt set to true on nodes > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaDoNotDisruptBeside(t, v1.CapacityTypeOnDemand, true) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers karpenter.sh/do-not-disrupt set to true on nodes > if the candidate is spot node",
		run: func(t *testing.T) { rcaDoNotDisruptBeside(t, v1.CapacityTypeSpot, true) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers karpenter.sh/do-not-disrupt set to true on pods > if the candidate is on-demand node",
		run: func(t *testing.T) { rcaDoNotDisruptBeside(t, v1.CapacityTypeOnDemand, false) }},
	refCase{ref: rcaCtx + "Replace > can replace nodes, considers karpenter.sh/do-not-disrupt set to true on pods > if the candidate is spot node",
		run: func(t *testing.T) { rcaDoNotDisruptBeside(t, v1.CapacityTypeSpot, false) }},
	refCase{ref: rcaCtx + "Replace > won't replace node if any spot replacement is more expensive",
		run: func(t *testing.T) { rcaSpotWorstPrice(t) }},
	refCase{ref: rcaCtx + "Replace > won't replace on-demand node if on-demand replacement is more expensive",
		run: func(t *testing.T) {
			c := newCluster(t)
			rcaOnly(c, []string{"us-east-1a"}, []string{v1.CapacityTypeOnDemand})
			// The cheapest on-demand type that holds the pod: spot types
			// cost less, but the NodePool takes on-demand only.
			need := scheduling.MustParseResources("cpu=1500m,memory=1Gi,pods=3")
			var node string
			for _, r := range rcaRanked(c, v1.CapacityTypeOnDemand) {
				if need.Fits(c.types[r.name].Allocatable) {
					node = r.name
					break
				}
			}
			c.node("od", node, onDemand)
			c.pods("od", 1, "1500m", "1Gi")
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "od"), "no cheaper placement") {
				t.Errorf("an on-demand %s, the cheapest on-demand type for its pod: %q, blocked %q", node, commands(d), blocked(d, "od"))
			}
		}},
)

// rcaOnly narrows the default NodePool to zones, capacity types and
// instance types (each when given).
func rcaOnly(c *cluster, zones, capacityTypes []string, types ...string) {
	add := func(key string, values []string) {
		if len(values) > 0 {
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values})
		}
	}
	add(corev1.LabelTopologyZone, zones)
	add(v1.LabelCapacityType, capacityTypes)
	add(corev1.LabelInstanceTypeStable, types)
}

type rcaPrice struct {
	name  string
	price float64
}

// rcaRanked are the amd64 instance types by the price of their available
// offering of the capacity type in us-east-1a, cheapest first.
func rcaRanked(c *cluster, capacityType string) []rcaPrice {
	var out []rcaPrice
	for _, it := range c.all {
		if arch, _ := it.Requirements[corev1.LabelArchStable].Single(); arch != "amd64" {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == "us-east-1a" && o.CapacityType == capacityType && o.Available {
				out = append(out, rcaPrice{it.Name, o.Price})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].price < out[j].price || out[i].price == out[j].price && out[i].name < out[j].name
	})
	return out
}

// rcaCapacity sets a node's capacity type.
func rcaCapacity(capacityType string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) { n.Labels[v1.LabelCapacityType] = capacityType }
}

// rcaInPool puts a node in another NodePool.
func rcaInPool(pool string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, nc *v1.NodeClaim) {
		n.Labels[v1.LabelNodePool], nc.Labels[v1.LabelNodePool] = pool, pool
	}
}

// rcaPool adds a NodePool like the default one.
func rcaPool(c *cluster, name string, budget string) *v1.NodePool {
	np := c.pool.DeepCopy()
	np.Name = name
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}}
	c.objs.NodePools = append(c.objs.NodePools, np)
	return np
}

// rcaReplaces checks a command replaces node alone with one node none of
// whose instance types is the node's own, each cheaper than it.
func rcaReplaces(t *testing.T, d *decide.Decision, node, itype string) {
	t.Helper()
	if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonUnderutilized || !slices.Equal(d.Commands[0].NodeNames(), []string{node}) || len(d.Commands[0].Replacements) != 1 {
		t.Fatalf("%q, want %s replaced by one cheaper node", commands(d), node)
	}
	cmd := d.Commands[0]
	r := cmd.Replacements[0]
	for _, it := range r.InstanceTypes {
		if it.Name == itype {
			t.Errorf("the replacement may be the node's own type %s", itype)
		}
		if o, _ := it.CheapestOffering(r.Requirements); o.Price >= cmd.PricePerHour {
			t.Errorf("replacement type %s costs $%.4f/h, not less than the node's $%.4f/h", it.Name, o.Price, cmd.PricePerHour)
		}
	}
}

// rcaSpotTruncation: 18 spot types, the node of the dearest; its spot
// replacement should list only the cheapest max(15, minValues) of them.
func rcaSpotTruncation(t *testing.T, minValues, want int) {
	c := newCluster(t)
	ranked := rcaRanked(c, v1.CapacityTypeSpot)
	var names []string
	seen := map[float64]bool{}
	for _, r := range ranked[len(ranked)/3:] {
		if !seen[r.price] && len(names) < 18 {
			seen[r.price] = true
			names = append(names, r.name)
		}
	}
	rcaOnly(c, []string{"us-east-1a"}, []string{v1.CapacityTypeSpot})
	req := v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}
	if minValues > 0 {
		req.MinValues = ptr.To(minValues)
	}
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements, req)
	dearest := names[len(names)-1]
	c.node("spot", dearest)
	c.pods("spot", 1, "10m", "16Mi")
	d := c.decide()
	rcaReplaces(t, d, "spot", dearest)
	var got []string
	for _, it := range d.Commands[0].Replacements[0].InstanceTypes {
		got = append(got, it.Name)
	}
	if !slices.Contains(got, names[0]) {
		t.Errorf("the cheapest type %s is not among the replacement's %v", names[0], got)
	}
	if len(got) != want || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(names[:want]))) {
		t.Errorf("the replacement lists %d types %v, want the %d cheapest %v", len(got), got, want, names[:want])
	}
}

// rcaMinValuesByPrice: the NodePool asks for 16 instance types at least,
// and only 15 of its types cost less than the node.
func rcaMinValuesByPrice(t *testing.T, capacityType string) {
	for _, minValues := range []int{16, 15} {
		c := newCluster(t)
		var names []string
		last := -1.0
		for _, r := range rcaRanked(c, capacityType) {
			if r.price > last && len(names) < 18 {
				last = r.price
				names = append(names, r.name)
			}
		}
		rcaOnly(c, []string{"us-east-1a"}, []string{capacityType})
		c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names, MinValues: ptr.To(minValues)})
		node := names[15]
		c.node("n", node, rcaCapacity(capacityType))
		c.pods("n", 1, "10m", "16Mi")
		d := c.decide(func(o *decide.Options) { o.SpotToSpotMinTypes = 1 })
		switch minValues {
		case 16:
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "no cheaper placement") {
				t.Errorf("%s %s with 15 cheaper types, minValues 16: %q, blocked %q", capacityType, node, commands(d), blocked(d, "n"))
			}
		default:
			if len(d.Commands) != 1 {
				t.Errorf("%s %s with 15 cheaper types, minValues 15: %q, blocked %q; want it replaced", capacityType, node, commands(d), blocked(d, "n"))
			}
		}
	}
}

// rcaOtherPoolWithoutTypes: a second NodePool no instance type satisfies.
func rcaOtherPoolWithoutTypes(t *testing.T, capacityType string) {
	c := newCluster(t)
	other := rcaPool(c, "no-types", "100%")
	other.Spec.Weight = ptr.To[int32](10)
	other.Spec.Template.Spec.Requirements = append(other.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"none.such"}})
	c.node("big", rcaBig, rcaCapacity(capacityType))
	c.pods("big", 1, "100m", "128Mi")
	d := c.decide()
	rcaReplaces(t, d, "big", rcaBig)
	if p := d.Commands[0].Replacements[0].NodePool; p != "default" {
		t.Errorf("the replacement is of NodePool %s", p)
	}
}

func rcaPDB(t *testing.T, capacityType string) {
	c := newCluster(t)
	c.node("big", rcaBig, rcaCapacity(capacityType))
	c.pods("big", 3, "100m", "128Mi")
	c.objs.PDBs = []*policyv1.PodDisruptionBudget{pdb(0, "big")}
	d := c.decide()
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "big"), "PodDisruptionBudget default/pdb-big allows 0 disruptions now") {
		t.Errorf("a PDB allowing no disruption: %q, blocked %q", commands(d), blocked(d, "big"))
	}
}

func rcaPDBPolicy(t *testing.T, capacityType string) {
	c := newCluster(t)
	c.node("big", rcaBig, rcaCapacity(capacityType))
	c.pods("big", 3, "100m", "128Mi", func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	})
	b := pdb(0, "big")
	b.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
	c.objs.PDBs = []*policyv1.PodDisruptionBudget{b}
	rcaReplaces(t, c.decide(), "big", rcaBig)
}

func rcaPDBOtherNamespace(t *testing.T, capacityType string) {
	c := newCluster(t)
	c.node("big", rcaBig, rcaCapacity(capacityType))
	c.pods("big", 1, "100m", "128Mi")
	b := pdb(0, "big")
	b.Namespace = "elsewhere"
	c.objs.PDBs = []*policyv1.PodDisruptionBudget{b}
	rcaReplaces(t, c.decide(), "big", rcaBig)
}

// rcaDoNotDisruptBeside: a node with two pods beside a small node held by
// do-not-disrupt (on the NodeClaim, or on its pod) without room for them.
func rcaDoNotDisruptBeside(t *testing.T, capacityType string, onNode bool) {
	c := newCluster(t)
	c.node("big", rcaBig, rcaCapacity(capacityType))
	c.pods("big", 2, "2", "1Gi")
	c.node("held", "m5.xlarge", rcaCapacity(capacityType), func(_ *corev1.Node, nc *v1.NodeClaim) {
		if onNode {
			nc.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}
	})
	c.pods("held", 1, "2", "1Gi", func(p *corev1.Pod) {
		if !onNode {
			p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}
	})
	d := c.decide()
	rcaReplaces(t, d, "big", rcaBig)
	want := "the node is annotated karpenter.sh/do-not-disrupt=true"
	if !onNode {
		want = "pod default/held-2-0 is annotated karpenter.sh/do-not-disrupt=true"
	}
	if b := blocked(d, "held"); b != want {
		t.Errorf("the held node: %q, want %q", b, want)
	}
}

// rcaSpotWorstPrice: the node's only cheaper replacement is a spot type
// whose spot price is below the node's in one zone and above it in the
// other.
func rcaSpotWorstPrice(t *testing.T) {
	c := newCluster(t)
	price := func(it *scheduling.InstanceType, zone, ct string) float64 {
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct && o.Available {
				return o.Price
			}
		}
		return -1
	}
	// A spot type dearer in us-east-1a than in us-east-1b, and an
	// on-demand type priced between the two.
	var spot, node string
	for _, x := range c.all {
		a, b := price(x, "us-east-1a", v1.CapacityTypeSpot), price(x, "us-east-1b", v1.CapacityTypeSpot)
		if arch, _ := x.Requirements[corev1.LabelArchStable].Single(); arch != "amd64" || b <= 0 || a < 1.5*b {
			continue
		}
		for _, n := range c.all {
			if od := price(n, "us-east-1a", v1.CapacityTypeOnDemand); od > 1.2*b && od < a/1.2 {
				spot, node = x.Name, n.Name
				break
			}
		}
		if spot != "" {
			break
		}
	}
	if spot == "" {
		t.Fatal("no spot type of prices that straddle an on-demand type's")
	}
	rcaOnly(c, []string{"us-east-1a", "us-east-1b"}, []string{v1.CapacityTypeSpot}, spot)
	c.node("od", node, onDemand)
	c.pods("od", 1, "10m", "16Mi")
	// (The node's type is not the NodePool's: consolidation alone decides.)
	d := c.decide(func(o *decide.Options) { o.Methods = []v1.DisruptionReason{v1.DisruptionReasonUnderutilized} })
	if len(d.Commands) != 0 {
		t.Errorf("an on-demand %s ($%.4f/h), its only replacement %s spot at $%.4f/h in us-east-1b but $%.4f/h in us-east-1a: %q",
			node, price(c.types[node], "us-east-1a", v1.CapacityTypeOnDemand), spot,
			price(c.types[spot], "us-east-1b", v1.CapacityTypeSpot), price(c.types[spot], "us-east-1a", v1.CapacityTypeSpot), commands(d))
	}
}

// rcaMultiOnly and rcaSingleOnly leave one of consolidation's searches.
func rcaMultiOnly(o *decide.Options)  { o.MaxSingleNode = 0 }
func rcaSingleOnly(o *decide.Options) { o.MaxMultiNode = 1 }

// rcaNotConsolidated: pools of nodes whose budget allows nothing; nothing
// is disrupted, each node says why, and nothing is remembered: once the
// budgets allow it, the same method disrupts them.
func rcaNotConsolidated(t *testing.T, pools int, withPods bool, method v1.DisruptionReason, opt func(*decide.Options), perNode bool) {
	c := newCluster(t)
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0%"}}
	var nps []*v1.NodePool
	var nodes []string
	perPool := 10
	if pools > 1 {
		perPool = 3
		for i := range pools {
			nps = append(nps, rcaPool(c, fmt.Sprintf("np-%d", i), "0%"))
		}
	} else {
		nps = []*v1.NodePool{c.pool}
	}
	for _, np := range nps {
		for i := range perPool {
			n := c.node(fmt.Sprintf("%s-%d", np.Name, i), rcaBig, onDemand, rcaInPool(np.Name))
			if withPods {
				c.pods(n, 1, "1", "1Gi")
			}
			nodes = append(nodes, n)
		}
	}
	opts := []func(*decide.Options){func(o *decide.Options) { o.Methods = []v1.DisruptionReason{method} }}
	if opt != nil {
		opts = append(opts, opt)
	}
	d := c.decide(opts...)
	if len(d.Commands) != 0 {
		t.Fatalf("budgets of 0%%: %q", commands(d))
	}
	for _, np := range nps {
		found := false
		for _, a := range d.Allowances {
			if a.NodePool == np.Name && a.Reason == method {
				found = true
				if a.Allowed != 0 {
					t.Errorf("NodePool %s allows %d %s disruptions, want 0", np.Name, a.Allowed, method)
				}
			}
		}
		if !found {
			t.Errorf("no %s budget of NodePool %s weighed", method, np.Name)
		}
	}
	// Single-node consolidation and emptiness say why on each node (the
	// multi-node search alone weighs the budget for the set).
	if perNode {
		for _, n := range nodes {
			if b := blocked(d, n); !strings.Contains(b, "allows 0 of 0%") {
				t.Errorf("node %s: %q, want it held by its budget", n, b)
			}
		}
	}
	for _, np := range nps {
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	}
	if d := c.decide(opts...); len(d.Commands) == 0 || d.Commands[0].Reason != method {
		t.Errorf("the budgets opened: %q, want %s to act", commands(d), method)
	}
}

// Controller-level helpers.

// rcaStart starts the controller with the default NodePool changed.
func rcaStart(t *testing.T, mutate func(*v1.NodePool)) *env {
	t.Helper()
	e := startController(t)
	if mutate != nil {
		rcaUpdatePool(t, e, "default", mutate)
	}
	return e
}

func rcaUpdatePool(t *testing.T, e *env, name string, mutate func(*v1.NodePool)) {
	t.Helper()
	np := &v1.NodePool{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, np); err != nil {
		t.Fatal(err)
	}
	mutate(np)
	if err := e.kube.Update(context.Background(), np); err != nil {
		t.Fatal(err)
	}
}

// rcaMetrics gives the controller metrics of its own registry.
func rcaMetrics(t *testing.T, e *env) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl.Metrics = m
	return reg
}

// rcaGauge is the value of the series of name with the labels (and any
// others); -1 when there is none.
func rcaGauge(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

type rcaNodeSpec struct {
	name, itype, pool, capacityType string
	pods                            int
	cpu                             string
	podAnnotations                  map[string]string
	drop                            []string
}

// rcaCtrlNode creates an initialized node with its NodeClaim, and its pods
// (bound to it).
func rcaCtrlNode(t *testing.T, e *env, s rcaNodeSpec) {
	t.Helper()
	ctx := context.Background()
	if s.pool == "" {
		s.pool = "default"
	}
	if s.capacityType == "" {
		s.capacityType = v1.CapacityTypeOnDemand
	}
	if s.cpu == "" {
		s.cpu = "100m"
	}
	var spec *scheduling.InstanceType
	for _, x := range e.ctrl.NodeClasses.(classes).types {
		if x.Name == s.itype {
			spec = x
		}
	}
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = s.name, "us-east-1a", s.capacityType, s.pool
	for _, k := range s.drop {
		delete(labels, k)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + s.name}}
	e.create(t, n)
	n.Status.Capacity, n.Status.Allocatable = spec.Capacity.List(), spec.Allocatable.List()
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + s.name, Labels: launchLabels(n)}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{s.itype}}}
	e.create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, s.name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	for i := range s.pods {
		e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", s.name, i), Namespace: "default", Annotations: s.podAnnotations, Labels: map[string]string{"app": s.name}},
			Spec: corev1.PodSpec{NodeName: s.name, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}})
	}
}

func rcaClaimExists(t *testing.T, e *env, name string) bool {
	t.Helper()
	nc := &v1.NodeClaim{}
	err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil && nc.DeletionTimestamp.IsZero()
}

func rcaClaims(t *testing.T, e *env) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.kube.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(nc v1.NodeClaim) bool { return !nc.DeletionTimestamp.IsZero() })
}

// rcaToldOnce: a node of m5.8xlarge with a pod (the labels drop taken off
// it) is told, once and on its NodeClaim only, that it is not
// consolidated and why.
func rcaToldOnce(t *testing.T, mutate func(*v1.NodePool), drop []string, why string) {
	e := rcaStart(t, mutate)
	rcaCtrlNode(t, e, rcaNodeSpec{name: "big", itype: rcaBig, pods: 1, drop: drop})
	e.reconcile(t)
	e.reconcile(t)
	evs := e.events()
	told := 0
	for _, ev := range evs {
		if strings.Contains(ev, "DisruptionBlocked") {
			told++
			if !strings.Contains(ev, why) || !strings.Contains(ev, "kind=NodeClaim") {
				t.Errorf("event %q, want on the NodeClaim: %q", ev, why)
			}
		}
	}
	if told != 1 {
		t.Errorf("%d DisruptionBlocked events in two rounds, want 1: %v", told, evs)
	}
	if !rcaClaimExists(t, e, "nc-big") {
		t.Error("the node's NodeClaim was deleted")
	}
}

// Ways a command is invalidated while it waits for validation.
const (
	rcaByBudget = iota
	rcaByChurn
	rcaByNomination
)

// rcaNominate makes a pending pod nominated to the node.
func rcaNominate(t *testing.T, e *env, name, node string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	e.create(t, p)
	p.Status.NominatedNodeName = node
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := e.kube.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

// rcaInvalidated: a command of the kind (empty, multi, single) is decided,
// the cluster changes before its validation, and the command is cancelled
// and counted in karpenter_voluntary_disruption_failed_validations_total.
func rcaInvalidated(t *testing.T, kind string, how int) {
	e := rcaStart(t, nil)
	reg := rcaMetrics(t, e)
	nodes := []string{"big"}
	switch kind {
	case "empty":
		rcaCtrlNode(t, e, rcaNodeSpec{name: "big", itype: rcaBig})
	case "multi":
		e.ctrl.Config.MaxSingleNode = 0
		nodes = []string{"big", "big-2"}
		rcaCtrlNode(t, e, rcaNodeSpec{name: "big", itype: rcaBig, pods: 1})
		rcaCtrlNode(t, e, rcaNodeSpec{name: "big-2", itype: rcaBig, pods: 1})
	default:
		rcaCtrlNode(t, e, rcaNodeSpec{name: "big", itype: rcaBig, pods: 1})
	}
	e.reconcile(t) // decides
	switch how {
	case rcaByBudget:
		rcaUpdatePool(t, e, "default", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0%"}} })
	case rcaByChurn:
		e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "churn", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: nodes[0], Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}})
		rcaNominate(t, e, "nominated", nodes[0])
	case rcaByNomination:
		for i, n := range nodes {
			rcaNominate(t, e, fmt.Sprintf("nominated-%d", i), n)
		}
	}
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates
	for _, n := range nodes {
		if !rcaClaimExists(t, e, "nc-"+n) {
			t.Errorf("NodeClaim nc-%s was deleted though the command no longer held", n)
		}
	}
	if len(rcaClaims(t, e)) != len(nodes) {
		t.Errorf("NodeClaims %d, want the %d nodes' alone (no replacement)", len(rcaClaims(t, e)), len(nodes))
	}
	if v := rcaGauge(t, reg, "karpenter_voluntary_disruption_failed_validations_total", map[string]string{"consolidation_type": kind}); v != 1 {
		t.Errorf("failed validations {consolidation_type=%q}: %v, want 1; events %v", kind, v, e.events())
	}
}

// rcaEmptyBudget: pools of empty nodes (one pool of 10, or 10 pools of
// 3) under a budget; the budget each pool allows is reported, and the
// command carried out leaves remain NodeClaims.
func rcaEmptyBudget(t *testing.T, pools int, budget string, allowed float64, remain int) {
	e := rcaStart(t, nil)
	reg := rcaMetrics(t, e)
	var names []string
	if pools == 1 {
		rcaUpdatePool(t, e, "default", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}} })
		names = []string{"default"}
		for i := range 10 {
			rcaCtrlNode(t, e, rcaNodeSpec{name: fmt.Sprintf("n-%d", i), itype: rcaBig})
		}
	} else {
		for i := range pools {
			np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("np-%d", i)}}
			np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
			np.Spec.Disruption = v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: "0s", Budgets: []v1.Budget{{Nodes: budget}}}
			e.create(t, np)
			names = append(names, np.Name)
			for j := range 3 {
				rcaCtrlNode(t, e, rcaNodeSpec{name: fmt.Sprintf("n-%d-%d", i, j), itype: rcaBig, pool: np.Name})
			}
		}
	}
	e.reconcile(t) // decides
	for _, name := range names {
		if v := rcaGauge(t, reg, "karpenter_nodepools_allowed_disruptions", map[string]string{"nodepool": name, "reason": "empty"}); v != allowed {
			t.Errorf("NodePool %s: allowed disruptions %v, want %v", name, v, allowed)
		}
	}
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates and deletes
	if got := len(rcaClaims(t, e)); got != remain {
		t.Errorf("%d NodeClaims remain, want %d; events %v", got, remain, e.events())
	}
}

// rcaReplaceCarriedOut: a node with a small pod is replaced by a cheaper
// one: the replacement NodeClaim is created without the node's instance
// type, and once it is initialized the node's NodeClaim is deleted.
func rcaReplaceCarriedOut(t *testing.T, capacityType string) {
	e := rcaStart(t, nil)
	ctx := context.Background()
	rcaCtrlNode(t, e, rcaNodeSpec{name: "big", itype: rcaBig, capacityType: capacityType, pods: 1})
	e.reconcile(t) // decides
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates, taints, launches
	claims := rcaClaims(t, e)
	var repl *v1.NodeClaim
	for i := range claims {
		if claims[i].Name != "nc-big" {
			repl = &claims[i]
		}
	}
	if len(claims) != 2 || repl == nil {
		t.Fatalf("NodeClaims %d, want the node's and one replacement; events %v", len(claims), e.events())
	}
	var types []string
	for _, r := range repl.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			types = r.Values
		}
	}
	if len(types) == 0 || slices.Contains(types, rcaBig) {
		t.Errorf("the replacement's instance types %v: want some, not %s", types, rcaBig)
	}
	// The replacement launches and initializes as its first instance type.
	spec := e.ctrl.NodeClasses.(classes).types
	var it *scheduling.InstanceType
	for _, x := range spec {
		if x.Name == types[0] {
			it = x
		}
	}
	labels := it.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = "new", "us-east-1a", capacityType, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-new"}}
	e.create(t, n)
	n.Status.Capacity, n.Status.Allocatable = it.Capacity.List(), it.Allocatable.List()
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	repl.Status.ProviderID, repl.Status.NodeName = n.Spec.ProviderID, "new"
	repl.Status.Capacity, repl.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	repl.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	if err := e.kube.Status().Update(ctx, repl); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t) // the replacement is ready: the node goes
	if rcaClaimExists(t, e, "nc-big") {
		t.Errorf("the replaced node's NodeClaim stays; events %v", e.events())
	}
	if !rcaClaimExists(t, e, repl.Name) {
		t.Errorf("the replacement %s is gone", repl.Name)
	}
}
