package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// What happens to NodeClaims, disruption and the interruption queue is
// also counted under the reference's metric names, labels and label
// values, so a dashboard made for it reads the same series.
func TestReferenceSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.NodeClaimCreated("default", "provisioned", false)
	m.NodeClaimCreated("default", "provisioned", true)
	m.NodeClaimCreated("default", "Drifted", false)
	m.NodeClaimRegistered("default", "us-east-1a", time.Second)
	m.NodeClaimTerminated("default", "spot", "us-east-1a", true, 90*time.Second)
	m.NodeClaimTerminated("default", "spot", "us-east-1b", false, 0)
	m.DisruptionCarriedOut("Underutilized", true, []string{"default"})
	m.DisruptionCarriedOut("Underutilized", false, []string{"default", "default", "gpu"})
	m.DisruptionCarriedOut("Drifted", true, []string{"default"})
	m.BudgetsConsumed(map[[2]string]int{{"default", "Drifted"}: 1})
	m.NodeClaimDisrupted("Drifted", "default", "spot", "WhenEmptyOrUnderutilized", false)
	m.DisruptionDecision(time.Millisecond, nil, map[[2]string]int{{"default", "Drifted"}: 2}, nil, nil)
	m.InterruptionMessage("instance_terminating", 2*time.Second)
	m.InterruptionMessage("spot_interruption", time.Second)
	m.InterruptionMessageDeleted()
	m.NodePoolResources("default", map[string]float64{"cpu": 4, "nodes": 2}, map[string]float64{"cpu": 100})
	m.Decision(time.Millisecond, &scheduling.Plan{
		Unschedulable: []*scheduling.UnschedulablePod{{}, {}, {}, {Ignored: true}},
		PendingByZone: map[string]int{"us-east-1a": 2, scheduling.ZoneFlexible: 5},
	})
	m.ValidationFailed("Underutilized", 2)
	m.ValidationFailed("Drifted", 1) // not a consolidation
	m.NodePoolCosts(map[string]float64{"default": 0.25})
	m.MethodsTook(map[string]time.Duration{"Drifted": time.Millisecond})
	m.ConsolidationScored("default", 0.4, false)
	m.ConsolidationScored("default", 0.6, false)

	want := `
# HELP karpenter_nodeclaims_created_total NodeClaims created, by why (provisioned, or the disruption a replacement is for) and NodePool.
# TYPE karpenter_nodeclaims_created_total counter
karpenter_nodeclaims_created_total{min_values_relaxed="false",nodepool="default",reason="drifted"} 1
karpenter_nodeclaims_created_total{min_values_relaxed="false",nodepool="default",reason="provisioned"} 1
karpenter_nodeclaims_created_total{min_values_relaxed="true",nodepool="default",reason="provisioned"} 1
# HELP karpenter_nodeclaims_disrupted_total NodeClaims disruption deleted, by reason, NodePool, capacity type, consolidation policy and termination mode.
# TYPE karpenter_nodeclaims_disrupted_total counter
karpenter_nodeclaims_disrupted_total{capacity_type="spot",consolidation_policy="WhenEmptyOrUnderutilized",nodepool="default",reason="drifted",termination_mode="graceful"} 1
# HELP karpenter_nodeclaims_terminated_total NodeClaims whose instance is gone, by NodePool, capacity type and zone.
# TYPE karpenter_nodeclaims_terminated_total counter
karpenter_nodeclaims_terminated_total{capacity_type="spot",nodepool="default",zone="us-east-1a"} 1
karpenter_nodeclaims_terminated_total{capacity_type="spot",nodepool="default",zone="us-east-1b"} 1
# HELP karpenter_nodes_created_total Nodes registered, by NodePool and zone.
# TYPE karpenter_nodes_created_total counter
karpenter_nodes_created_total{nodepool="default",zone="us-east-1a"} 1
# HELP karpenter_nodes_terminated_total Nodes whose NodeClaim's instance is gone, by NodePool and zone.
# TYPE karpenter_nodes_terminated_total counter
karpenter_nodes_terminated_total{nodepool="default",zone="us-east-1a"} 1
# HELP karpenter_voluntary_disruption_decisions_total Disruption commands carried out, by decision (replace, delete), reason and consolidation type (single, multi).
# TYPE karpenter_voluntary_disruption_decisions_total counter
karpenter_voluntary_disruption_decisions_total{consolidation_type="",decision="replace",reason="drifted"} 1
karpenter_voluntary_disruption_decisions_total{consolidation_type="multi",decision="delete",reason="underutilized"} 1
karpenter_voluntary_disruption_decisions_total{consolidation_type="single",decision="replace",reason="underutilized"} 1
# HELP karpenter_voluntary_disruption_decisions_by_nodepool_total Disruption commands carried out, by NodePool, decision, reason and consolidation type.
# TYPE karpenter_voluntary_disruption_decisions_by_nodepool_total counter
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type="",decision="replace",nodepool="default",reason="drifted"} 1
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type="multi",decision="delete",nodepool="default",reason="underutilized"} 1
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type="multi",decision="delete",nodepool="gpu",reason="underutilized"} 1
karpenter_voluntary_disruption_decisions_by_nodepool_total{consolidation_type="single",decision="replace",nodepool="default",reason="underutilized"} 1
# HELP karpenter_nodepools_nodes_consuming_budgets A NodePool's nodes that count against its disruption budgets now (being disrupted or deleted), by reason.
# TYPE karpenter_nodepools_nodes_consuming_budgets gauge
karpenter_nodepools_nodes_consuming_budgets{nodepool="default",reason="drifted"} 1
# HELP karpenter_voluntary_disruption_failed_validations_total Consolidation commands that no longer held when checked again before being carried out, by consolidation type.
# TYPE karpenter_voluntary_disruption_failed_validations_total counter
karpenter_voluntary_disruption_failed_validations_total{consolidation_type="multi"} 1
# HELP karpenter_nodepools_cost_total What a NodePool's nodes cost per hour now, by their offerings' prices.
# TYPE karpenter_nodepools_cost_total gauge
karpenter_nodepools_cost_total{nodepool="default"} 0.25
# HELP karpenter_scheduler_unschedulable_pods_count Pods the last provisioning decision found no place for (but those it ignored).
# TYPE karpenter_scheduler_unschedulable_pods_count gauge
karpenter_scheduler_unschedulable_pods_count{controller="provisioner"} 3
# HELP karpenter_scheduler_ignored_pods_count Pending pods the last provisioning decision tried no NodePool for: their own volume claims or terms keep them off every node.
# TYPE karpenter_scheduler_ignored_pods_count gauge
karpenter_scheduler_ignored_pods_count 1
# HELP karpenter_scheduler_pending_pods_by_effective_zone_count The last provisioning decision's pods by the zone their node selector, required node affinity and volumes leave them (a zone, flexible: more than one, none).
# TYPE karpenter_scheduler_pending_pods_by_effective_zone_count gauge
karpenter_scheduler_pending_pods_by_effective_zone_count{controller="provisioner",zone="flexible"} 5
karpenter_scheduler_pending_pods_by_effective_zone_count{controller="provisioner",zone="us-east-1a"} 2
# HELP karpenter_consolidation_moves_total Consolidation commands (moves) the Balanced policy weighed, by decision.
# TYPE karpenter_consolidation_moves_total counter
karpenter_consolidation_moves_total{decision="rejected",nodepool="default",policy="Balanced"} 2
# HELP karpenter_nodepools_allowed_disruptions Nodes a NodePool's budgets allow to be disrupted now, by reason.
# TYPE karpenter_nodepools_allowed_disruptions gauge
karpenter_nodepools_allowed_disruptions{nodepool="default",reason="drifted"} 2
# HELP karpenter_nodepools_usage Resources a NodePool's NodeClaims hold.
# TYPE karpenter_nodepools_usage gauge
karpenter_nodepools_usage{nodepool="default",resource_type="cpu"} 4
karpenter_nodepools_usage{nodepool="default",resource_type="nodes"} 2
# HELP karpenter_nodepools_limit A NodePool's limits.
# TYPE karpenter_nodepools_limit gauge
karpenter_nodepools_limit{nodepool="default",resource_type="cpu"} 100
# HELP karpenter_interruption_received_messages_total Interruption queue messages received, by type.
# TYPE karpenter_interruption_received_messages_total counter
karpenter_interruption_received_messages_total{message_type="spot_interruption"} 1
karpenter_interruption_received_messages_total{message_type="state_change"} 1
# HELP karpenter_interruption_deleted_messages_total Interruption queue messages deleted.
# TYPE karpenter_interruption_deleted_messages_total counter
karpenter_interruption_deleted_messages_total 1
`
	names := []string{"karpenter_nodeclaims_created_total", "karpenter_nodeclaims_disrupted_total", "karpenter_nodeclaims_terminated_total",
		"karpenter_nodes_created_total", "karpenter_nodes_terminated_total", "karpenter_voluntary_disruption_decisions_total",
		"karpenter_voluntary_disruption_decisions_by_nodepool_total", "karpenter_nodepools_nodes_consuming_budgets",
		"karpenter_voluntary_disruption_failed_validations_total", "karpenter_nodepools_cost_total", "karpenter_scheduler_unschedulable_pods_count",
		"karpenter_scheduler_ignored_pods_count", "karpenter_scheduler_pending_pods_by_effective_zone_count", "karpenter_consolidation_moves_total",
		"karpenter_nodepools_allowed_disruptions", "karpenter_nodepools_usage", "karpenter_nodepools_limit",
		"karpenter_interruption_received_messages_total", "karpenter_interruption_deleted_messages_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "karpenter_build_info"); err != nil || n != 1 {
		t.Errorf("karpenter_build_info: %d series, %v", n, err)
	}
	observed := observations(t, reg)
	for name, want := range map[string]uint64{"karpenter_scheduler_scheduling_duration_seconds": 1, "karpenter_interruption_message_queue_duration_seconds": 2,
		"karpenter_voluntary_disruption_decision_evaluation_duration_seconds": 1, "karpenter_consolidation_score": 2} {
		if observed[name] != want {
			t.Errorf("%s: %d observations, want %d", name, observed[name], want)
		}
	}
}

// A scheduling decision that is running shows its pods and how long it
// has run, under its own scheduling_id; its series go when it ends.
func TestSchedulingRunsWhileTheyRun(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	first := m.SchedulingStarted("provisioner", 120, clock)
	now = now.Add(1500 * time.Millisecond)
	second := m.SchedulingStarted("provisioner", 7, clock)
	now = now.Add(500 * time.Millisecond)
	want := `
# HELP karpenter_scheduler_queue_depth Pods a scheduling decision running now was given and has not decided yet.
# TYPE karpenter_scheduler_queue_depth gauge
karpenter_scheduler_queue_depth{controller="provisioner",scheduling_id="1"} 120
karpenter_scheduler_queue_depth{controller="provisioner",scheduling_id="2"} 7
# HELP karpenter_scheduler_unfinished_work_seconds How long a scheduling decision running now has run.
# TYPE karpenter_scheduler_unfinished_work_seconds gauge
karpenter_scheduler_unfinished_work_seconds{controller="provisioner",scheduling_id="1"} 2
karpenter_scheduler_unfinished_work_seconds{controller="provisioner",scheduling_id="2"} 0.5
`
	names := []string{"karpenter_scheduler_queue_depth", "karpenter_scheduler_unfinished_work_seconds"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	first()
	second()
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != 0 {
		t.Errorf("%d series left after both decisions ended (%v), want 0", n, err)
	}
}
