package metrics

import (
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/version"
)

// compat are series under the reference's names, with its labels and
// meanings, served beside nodewright's own so that dashboards and alerts
// made for the reference keep working after a takeover (the mapping is in
// docs/observability.md).
type compat struct {
	nodeclaimsCreated    *prometheus.CounterVec   // reason, nodepool, min_values_relaxed
	nodeclaimsTerminated *prometheus.CounterVec   // nodepool, capacity_type, zone
	nodeclaimsDisrupted  *prometheus.CounterVec   // reason, nodepool, capacity_type, consolidation_policy, termination_mode
	nodesCreated         *prometheus.CounterVec   // nodepool, zone
	nodesTerminated      *prometheus.CounterVec   // nodepool, zone
	terminationDuration  *prometheus.SummaryVec   // nodepool
	decisions            *prometheus.CounterVec   // decision, reason, consolidation_type
	decisionsByPool      *prometheus.CounterVec   // nodepool, decision, reason, consolidation_type
	queueFailures        *prometheus.CounterVec   // decision, reason, consolidation_type
	consuming            *prometheus.GaugeVec     // nodepool, reason
	allowed              *prometheus.GaugeVec     // nodepool, reason
	usage, limit         *prometheus.GaugeVec     // resource_type, nodepool
	scheduling           *prometheus.HistogramVec // controller
	received             *prometheus.CounterVec   // message_type
	deleted              prometheus.Counter
	queueDuration        prometheus.Histogram
	buildInfo            *prometheus.GaugeVec     // version, goversion, goarch, commit
	deletionCostWrites   *prometheus.CounterVec   // result
	deletionCostPending  *prometheus.GaugeVec     // nodepool
	reboots              *prometheus.CounterVec   // result
	rebootDuration       *prometheus.HistogramVec // result
	rebootRecovery       prometheus.Histogram
	evictions            *prometheus.CounterVec   // code
	cloudDuration        *prometheus.HistogramVec // controller, method, provider
	cloudErrors          *prometheus.CounterVec   // controller, method, provider, error
	typeCPU, typeMemory  *prometheus.GaugeVec     // instance_type
	offeringAvailable    *prometheus.GaugeVec     // capacity_type, instance_type, zone
	offeringPrice        *prometheus.GaugeVec     // capacity_type, instance_type, zone
	eligibleNodes        *prometheus.GaugeVec     // reason
	evaluation           *prometheus.HistogramVec // reason, consolidation_type
	failedValidations    *prometheus.CounterVec   // consolidation_type
	poolCost             *prometheus.GaugeVec     // nodepool
	unschedulable        *prometheus.GaugeVec     // controller
	ignored              prometheus.Gauge
	byZone               *prometheus.GaugeVec     // controller, zone
	score                *prometheus.HistogramVec // decision, nodepool, policy
	moves                *prometheus.CounterVec   // decision, nodepool, policy
	podStartup           prometheus.Summary
	podBound             prometheus.Histogram
	provStartup          prometheus.Histogram
	provBound            prometheus.Histogram
	decided              prometheus.Histogram
}

func newCompat() compat {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "karpenter", Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "karpenter", Name: name, Help: help}, labels)
	}
	return compat{
		nodeclaimsCreated: counter("nodeclaims_created_total", "NodeClaims created, by why (provisioned, or the disruption a replacement is for) and NodePool.",
			"reason", "nodepool", "min_values_relaxed"),
		nodeclaimsTerminated: counter("nodeclaims_terminated_total", "NodeClaims whose instance is gone, by NodePool, capacity type and zone.", "nodepool", "capacity_type", "zone"),
		nodeclaimsDisrupted: counter("nodeclaims_disrupted_total", "NodeClaims disruption deleted, by reason, NodePool, capacity type, consolidation policy and termination mode.",
			"reason", "nodepool", "capacity_type", "consolidation_policy", "termination_mode"),
		nodesCreated:    counter("nodes_created_total", "Nodes registered, by NodePool and zone.", "nodepool", "zone"),
		nodesTerminated: counter("nodes_terminated_total", "Nodes whose NodeClaim's instance is gone, by NodePool and zone.", "nodepool", "zone"),
		terminationDuration: prometheus.NewSummaryVec(prometheus.SummaryOpts{Namespace: "karpenter", Subsystem: "nodes", Name: "termination_duration_seconds",
			Help:       "Time from a node's NodeClaim's deletion to its release (drained, instance terminated), by NodePool.",
			Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0}}, []string{"nodepool"}),
		decisions: counter("voluntary_disruption_decisions_total", "Disruption commands carried out, by decision (replace, delete), reason and consolidation type (single, multi).",
			"decision", "reason", "consolidation_type"),
		decisionsByPool: counter("voluntary_disruption_decisions_by_nodepool_total", "Disruption commands carried out, by NodePool, decision, reason and consolidation type.",
			"nodepool", "decision", "reason", "consolidation_type"),
		queueFailures: counter("voluntary_disruption_queue_failures_total", "Disruption commands that failed once started and were rolled back (a replacement that did not launch or initialize in time), by decision, reason and consolidation type.",
			"decision", "reason", "consolidation_type"),
		consuming: gauge("nodepools_nodes_consuming_budgets", "A NodePool's nodes that count against its disruption budgets now (being disrupted or deleted), by reason.",
			"nodepool", "reason"),
		allowed: gauge("nodepools_allowed_disruptions", "Nodes a NodePool's budgets allow to be disrupted now, by reason.", "nodepool", "reason"),
		usage:   gauge("nodepools_usage", "Resources a NodePool's NodeClaims hold.", "resource_type", "nodepool"),
		limit:   gauge("nodepools_limit", "A NodePool's limits.", "resource_type", "nodepool"),
		scheduling: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "scheduler", Name: "scheduling_duration_seconds",
			Help: "Time a scheduling decision takes.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"controller"}),
		received: counter("interruption_received_messages_total", "Interruption queue messages received, by type.", "message_type"),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "karpenter", Subsystem: "interruption", Name: "deleted_messages_total",
			Help: "Interruption queue messages deleted."}),
		queueDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "interruption", Name: "message_queue_duration_seconds",
			Help: "Time from an interruption event to its message being handled.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
		buildInfo: gauge("build_info", "1, labelled with the build's version, Go version, architecture and commit.", "version", "goversion", "goarch", "commit"),
		deletionCostWrites: counter("pod_deletion_cost_pod_annotation_writes_total",
			"Pod deletion cost annotations written or left, by result (updated, skipped_unchanged, skipped_notfound, skipped_conflict, error).", "result"),
		deletionCostPending: gauge("pod_deletion_cost_nodes_with_pending_annotation_writes",
			"Nodes whose pods' pod deletion cost is still to be written, by NodePool.", "nodepool"),
		reboots: counter("nodes_reboots_total", "Reboots node repair asked for, by result (succeeded, provider_error, recovery_timeout, invalid_request).", "result"),
		rebootDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "karpenter", Name: "nodes_reboot_duration_seconds",
			Help: "Time from a reboot's request to its end, by result.", Buckets: prometheus.ExponentialBuckets(10, 2, 8)}, []string{"result"}),
		rebootRecovery: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "karpenter", Name: "nodes_reboot_recovery_duration_seconds",
			Help: "Time from a reboot being issued to the node being back and Ready.", Buckets: prometheus.ExponentialBuckets(10, 2, 8)}),
		evictions: counter("pods_eviction_requests_total", "Eviction requests a drain made, by the HTTP status code of the answer.", "code"),
		cloudDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "cloudprovider", Name: "duration_seconds",
			Help: "Time a cloud provider call takes, by method (the controller label is left empty).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)},
			[]string{"controller", "method", "provider"}),
		cloudErrors: counter("cloudprovider_errors_total", "Cloud provider calls that failed, by method and error kind.", "controller", "method", "provider", "error"),
		typeCPU:     gauge("cloudprovider_instance_type_cpu_cores", "vCPUs of an instance type.", "instance_type"),
		typeMemory:  gauge("cloudprovider_instance_type_memory_bytes", "Memory of an instance type, in bytes.", "instance_type"),
		offeringAvailable: gauge("cloudprovider_instance_type_offering_available", "1 when an offering can be launched now, 0 when not (no capacity, not offered).",
			"capacity_type", "instance_type", "zone"),
		podStartup: prometheus.NewSummary(prometheus.SummaryOpts{Namespace: "karpenter", Subsystem: "pods", Name: "startup_duration_seconds",
			Help: "Time from a pod's creation to its being Ready.", Objectives: map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0}}),
		podBound: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "pods", Name: "bound_duration_seconds",
			Help: "Time from a pod's creation to its being bound to a node.", Buckets: prometheus.ExponentialBuckets(0.25, 2, 14)}),
		provStartup: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_startup_duration_seconds",
			Help: "Time from the creation to the first Ready of a pod nodewright planned room for.", Buckets: prometheus.ExponentialBuckets(0.25, 2, 14)}),
		provBound: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_bound_duration_seconds",
			Help: "Time from the creation to the binding of a pod nodewright planned room for.", Buckets: prometheus.ExponentialBuckets(0.25, 2, 14)}),
		decided: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "pods", Name: "scheduling_decision_duration_seconds",
			Help: "Time from a pending pod's creation to the first decision that planned room for it.", Buckets: prometheus.ExponentialBuckets(0.25, 2, 14)}),
		evaluation: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
			Help: "Time a disruption method takes to decide, by reason (consolidation_type is left empty).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)},
			[]string{"reason", "consolidation_type"}),
		failedValidations: counter("voluntary_disruption_failed_validations_total",
			"Consolidation commands that no longer held when checked again before being carried out, by consolidation type.", "consolidation_type"),
		poolCost:      gauge("nodepools_cost_total", "What a NodePool's nodes cost per hour now, by their offerings' prices.", "nodepool"),
		unschedulable: gauge("scheduler_unschedulable_pods_count", "Pods the last provisioning decision found no place for (but those it ignored).", "controller"),
		ignored: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "karpenter", Subsystem: "scheduler", Name: "ignored_pods_count",
			Help: "Pending pods the last provisioning decision tried no NodePool for: their own volume claims or terms keep them off every node."}),
		byZone: gauge("scheduler_pending_pods_by_effective_zone_count",
			"The last provisioning decision's pods by the zone their node selector, required node affinity and volumes leave them (a zone, flexible: more than one, none).",
			"controller", "zone"),
		score: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "karpenter", Name: "consolidation_score",
			Help: "Scores of the consolidation commands the Balanced policy weighed (1 or more approves), by decision.", Buckets: []float64{.1, .25, .33, .5, 1, 2, 5, 10}},
			[]string{"decision", "nodepool", "policy"}),
		moves:         counter("consolidation_moves_total", "Consolidation commands (moves) the Balanced policy weighed, by decision.", "decision", "nodepool", "policy"),
		eligibleNodes: gauge("voluntary_disruption_eligible_nodes", "Nodes a disruption method could act on at the last decision, by reason.", "reason"),
		offeringPrice: gauge("cloudprovider_instance_type_offering_price_estimate", "An offering's price per hour, as nodewright decides with it.",
			"capacity_type", "instance_type", "zone"),
	}
}

func (c *compat) register(reg prometheus.Registerer, errp *error) {
	c.nodeclaimsCreated = register(reg, c.nodeclaimsCreated, errp)
	c.nodeclaimsTerminated = register(reg, c.nodeclaimsTerminated, errp)
	c.nodeclaimsDisrupted = register(reg, c.nodeclaimsDisrupted, errp)
	c.nodesCreated = register(reg, c.nodesCreated, errp)
	c.nodesTerminated = register(reg, c.nodesTerminated, errp)
	c.terminationDuration = register(reg, c.terminationDuration, errp)
	c.decisions = register(reg, c.decisions, errp)
	c.decisionsByPool = register(reg, c.decisionsByPool, errp)
	c.queueFailures = register(reg, c.queueFailures, errp)
	c.consuming = register(reg, c.consuming, errp)
	c.allowed = register(reg, c.allowed, errp)
	c.usage = register(reg, c.usage, errp)
	c.limit = register(reg, c.limit, errp)
	c.scheduling = register(reg, c.scheduling, errp)
	c.received = register(reg, c.received, errp)
	c.deleted = register(reg, c.deleted, errp)
	c.queueDuration = register(reg, c.queueDuration, errp)
	c.buildInfo = register(reg, c.buildInfo, errp)
	c.deletionCostWrites = register(reg, c.deletionCostWrites, errp)
	c.deletionCostPending = register(reg, c.deletionCostPending, errp)
	c.reboots = register(reg, c.reboots, errp)
	for _, result := range []string{"succeeded", "provider_error", "recovery_timeout", "invalid_request"} {
		c.reboots.WithLabelValues(result) // 0 until a reboot: dashboards see the series
	}
	c.rebootDuration = register(reg, c.rebootDuration, errp)
	c.rebootRecovery = register(reg, c.rebootRecovery, errp)
	c.evictions = register(reg, c.evictions, errp)
	c.cloudDuration = register(reg, c.cloudDuration, errp)
	c.cloudErrors = register(reg, c.cloudErrors, errp)
	c.typeCPU = register(reg, c.typeCPU, errp)
	c.typeMemory = register(reg, c.typeMemory, errp)
	c.offeringAvailable = register(reg, c.offeringAvailable, errp)
	c.offeringPrice = register(reg, c.offeringPrice, errp)
	c.eligibleNodes = register(reg, c.eligibleNodes, errp)
	c.evaluation = register(reg, c.evaluation, errp)
	c.failedValidations = register(reg, c.failedValidations, errp)
	c.poolCost = register(reg, c.poolCost, errp)
	c.unschedulable = register(reg, c.unschedulable, errp)
	c.ignored = register(reg, c.ignored, errp)
	c.byZone = register(reg, c.byZone, errp)
	c.score = register(reg, c.score, errp)
	c.moves = register(reg, c.moves, errp)
	c.podStartup = register(reg, c.podStartup, errp)
	c.podBound = register(reg, c.podBound, errp)
	c.provStartup = register(reg, c.provStartup, errp)
	c.provBound = register(reg, c.provBound, errp)
	c.decided = register(reg, c.decided, errp)
	v := version.Get()
	c.buildInfo.WithLabelValues(v.Version, v.GoVersion, runtime.GOARCH, v.Commit).Set(1)
}

// ReasonLabel is a disruption reason as the reference's metrics label it
// (Underutilized: underutilized).
func ReasonLabel(reason string) string { return strings.ToLower(reason) }

// messageTypes are the reference's message types of nodewright's kinds of
// interruption message.
var messageTypes = map[string]string{
	"spot_interruption": "spot_interruption", "rebalance_recommendation": "rebalance_recommendation", "scheduled_change": "scheduled_change",
	"instance_stopping": "state_change", "instance_terminating": "state_change", "state_change_ignored": "state_change",
	"capacity_reservation_interruption": "capacity_reservation_interruption",
}

// NodeClaimDisrupted counts a NodeClaim a disruption command deletes:
// termination mode graceful (PodDisruptionBudgets hold its drain) or
// eventual (its terminationGracePeriod bounds the drain).
func (m *Metrics) NodeClaimDisrupted(reason, pool, capacityType, policy string, bounded bool) {
	if m == nil {
		return
	}
	mode := "graceful"
	if bounded {
		mode = "eventual"
	}
	m.compat.nodeclaimsDisrupted.WithLabelValues(ReasonLabel(reason), pool, capacityType, policy, mode).Inc()
}

// disruptionLabels are a command's decision (replace, delete) and
// consolidation type (empty, single, multi; none for other reasons), by
// its reason, whether it replaces, and its nodes' NodePools.
func disruptionLabels(reason string, replaces bool, nodePools []string) (string, string) {
	decision := "delete"
	if replaces {
		decision = "replace"
	}
	consolidation := ""
	switch {
	case reason == "Empty":
		consolidation = "empty"
	case reason == "Underutilized" && len(nodePools) > 1:
		consolidation = "multi"
	case reason == "Underutilized":
		consolidation = "single"
	}
	return decision, consolidation
}

// DisruptionFailed counts a started command that was rolled back, as
// DisruptionCarriedOut labels it.
func (m *Metrics) DisruptionFailed(reason string, replaces bool, nodePools []string) {
	if m == nil {
		return
	}
	decision, consolidation := disruptionLabels(reason, replaces, nodePools)
	m.compat.queueFailures.WithLabelValues(decision, ReasonLabel(reason), consolidation).Inc()
}

// DisruptionCarriedOut counts a disruption command started: a replacement
// or a deletion, of one node or several (consolidation: single, multi).
func (m *Metrics) DisruptionCarriedOut(reason string, replaces bool, nodePools []string) {
	if m == nil {
		return
	}
	decision, consolidation := disruptionLabels(reason, replaces, nodePools)
	m.compat.decisions.WithLabelValues(decision, ReasonLabel(reason), consolidation).Inc()
	seen := map[string]bool{}
	for _, pool := range nodePools {
		if !seen[pool] {
			seen[pool] = true
			m.compat.decisionsByPool.WithLabelValues(pool, decision, ReasonLabel(reason), consolidation).Inc()
		}
	}
}

// BudgetsConsumed sets, per NodePool and reason, how many of its nodes
// count against its budgets now (those being disrupted or deleted).
func (m *Metrics) BudgetsConsumed(consuming map[[2]string]int) {
	if m == nil {
		return
	}
	m.compat.consuming.Reset()
	for k, n := range consuming {
		m.compat.consuming.WithLabelValues(k[0], ReasonLabel(k[1])).Set(float64(n))
	}
}

// NodePoolResources records what a NodePool's NodeClaims hold and its
// limits, by resource.
func (m *Metrics) NodePoolResources(pool string, usage, limits map[string]float64) {
	if m == nil {
		return
	}
	m.compat.usage.DeletePartialMatch(prometheus.Labels{"nodepool": pool})
	m.compat.limit.DeletePartialMatch(prometheus.Labels{"nodepool": pool})
	for r, v := range usage {
		m.compat.usage.WithLabelValues(r, pool).Set(v)
	}
	for r, v := range limits {
		m.compat.limit.WithLabelValues(r, pool).Set(v)
	}
}

// InterruptionMessageDeleted counts a message removed from the queue.
func (m *Metrics) InterruptionMessageDeleted() {
	if m != nil {
		m.compat.deleted.Inc()
	}
}

// observeQueue records how long an interruption message waited.
func (c *compat) observeQueue(kind string, delay time.Duration) {
	if t, ok := messageTypes[kind]; ok {
		c.received.WithLabelValues(t).Inc()
	}
	if delay > 0 {
		c.queueDuration.Observe(delay.Seconds())
	}
}

// DeletionCostWrite counts a pod whose pod deletion cost was looked at,
// by result.
func (m *Metrics) DeletionCostWrite(result string) {
	if m == nil {
		return
	}
	m.compat.deletionCostWrites.WithLabelValues(result).Inc()
}

// DeletionCostPending sets, per NodePool, how many nodes' pods still wait
// for their pod deletion cost.
func (m *Metrics) DeletionCostPending(pending map[string]int) {
	if m == nil {
		return
	}
	m.compat.deletionCostPending.Reset()
	for pool, n := range pending {
		m.compat.deletionCostPending.WithLabelValues(pool).Set(float64(n))
	}
}

// Reboot results, the result label of the reboot series.
const (
	RebootSucceeded       = "succeeded"
	RebootProviderError   = "provider_error"
	RebootRecoveryTimeout = "recovery_timeout"
	RebootInvalidRequest  = "invalid_request"
)

// Reboot counts a reboot that ended, and how long it took from its
// request; recovery (a succeeded one's) is from its issue to Ready.
func (m *Metrics) Reboot(result string, took, recovery time.Duration) {
	if m == nil {
		return
	}
	m.compat.reboots.WithLabelValues(result).Inc()
	m.compat.rebootDuration.WithLabelValues(result).Observe(took.Seconds())
	if result == RebootSucceeded {
		m.compat.rebootRecovery.Observe(recovery.Seconds())
	}
}

// EvictionRequest counts an eviction request by the HTTP status code of
// its answer.
func (m *Metrics) EvictionRequest(code int) {
	if m == nil {
		return
	}
	m.compat.evictions.WithLabelValues(strconv.Itoa(code)).Inc()
}

// CloudProvider is the provider label of the cloud provider series.
const CloudProvider = "aws"

// CloudProviderCall records a cloud provider call: its duration, and its
// error kind when it failed ("": it did not).
func (m *Metrics) CloudProviderCall(method string, took time.Duration, errKind string) {
	if m == nil {
		return
	}
	m.compat.cloudDuration.WithLabelValues("", method, CloudProvider).Observe(took.Seconds())
	if errKind != "" {
		m.compat.cloudErrors.WithLabelValues("", method, CloudProvider, errKind).Inc()
	}
}

// InstanceTypes shows instance types: their vCPUs and memory, and each
// offering's availability and price.
func (m *Metrics) InstanceTypes(types []*scheduling.InstanceType) {
	if m == nil {
		return
	}
	for _, it := range types {
		m.compat.typeCPU.WithLabelValues(it.Name).Set(float64(it.Capacity.CPU()) / 1000)
		m.compat.typeMemory.WithLabelValues(it.Name).Set(float64(it.Capacity.Memory()))
		for _, o := range it.Offerings {
			available := 0.0
			if o.Available {
				available = 1
			}
			m.compat.offeringAvailable.WithLabelValues(o.CapacityType, it.Name, o.Zone).Set(available)
			m.compat.offeringPrice.WithLabelValues(o.CapacityType, it.Name, o.Zone).Set(o.Price)
		}
	}
}

// disruptionReasons are the reasons the eligible-nodes series always has
// (0 when no node is eligible).
var disruptionReasons = []string{"Unhealthy", "Expired", "Drifted", "Empty", "Underutilized"}

// EligibleByReason sets how many nodes each disruption method could act
// on at the last decision.
func (m *Metrics) EligibleByReason(eligible map[string]int) {
	if m == nil {
		return
	}
	for _, r := range disruptionReasons {
		m.compat.eligibleNodes.WithLabelValues(ReasonLabel(r)).Set(float64(eligible[r]))
	}
}

// PodChanged observes a pod's update: the time from its creation to its
// binding, and to its first Ready, when this update is the one that
// brought it there.
func (m *Metrics) PodChanged(before, after *corev1.Pod) {
	if m == nil {
		return
	}
	planned := m.planned.has(after.UID)
	if at, ok := becameTrue(before, after, corev1.PodScheduled); ok {
		m.compat.podBound.Observe(at.Sub(after.CreationTimestamp.Time).Seconds())
		if planned {
			m.compat.provBound.Observe(at.Sub(after.CreationTimestamp.Time).Seconds())
		}
	}
	if at, ok := becameTrue(before, after, corev1.PodReady); ok {
		if m.started.add(after.UID) {
			m.compat.podStartup.Observe(at.Sub(after.CreationTimestamp.Time).Seconds())
			if planned {
				m.compat.provStartup.Observe(at.Sub(after.CreationTimestamp.Time).Seconds())
				m.planned.remove(after.UID)
			}
		}
	}
}

// PodsPlanned records the pods a provisioning decision planned room for
// at now: the first time for each, how long after its creation; their
// binding and start count in the provisioning series too.
func (m *Metrics) PodsPlanned(pods []*corev1.Pod, now time.Time) {
	if m == nil {
		return
	}
	for _, p := range pods {
		if m.planned.add(p.UID) {
			m.compat.decided.Observe(now.Sub(p.CreationTimestamp.Time).Seconds())
		}
	}
}

// PodGone forgets a deleted pod (it started once: a later Ready of the
// same pod is a recovery, not a start).
func (m *Metrics) PodGone(uid types.UID) {
	if m != nil {
		m.started.remove(uid)
		m.planned.remove(uid)
	}
}

// becameTrue is when a pod condition turned True in this update.
func becameTrue(before, after *corev1.Pod, t corev1.PodConditionType) (time.Time, bool) {
	was, is := podCondition(before, t), podCondition(after, t)
	if is == nil || is.Status != corev1.ConditionTrue || (was != nil && was.Status == corev1.ConditionTrue) {
		return time.Time{}, false
	}
	return is.LastTransitionTime.Time, true
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// MethodsTook records how long each disruption method took to decide.
func (m *Metrics) MethodsTook(took map[string]time.Duration) {
	if m == nil {
		return
	}
	for reason, d := range took {
		m.compat.evaluation.WithLabelValues(ReasonLabel(reason), "").Observe(d.Seconds())
	}
}

// ValidationFailed counts a consolidation command that no longer held
// when checked again (nodes: how many it would have disrupted).
func (m *Metrics) ValidationFailed(reason string, nodes int) {
	if m == nil || (reason != "Underutilized" && reason != "Empty") {
		return
	}
	kind := "single"
	switch {
	case reason == "Empty":
		kind = "empty"
	case nodes > 1:
		kind = "multi"
	}
	m.compat.failedValidations.WithLabelValues(kind).Inc()
}

// NodePoolCosts sets what each NodePool's nodes cost per hour.
func (m *Metrics) NodePoolCosts(costs map[string]float64) {
	if m == nil {
		return
	}
	m.compat.poolCost.Reset()
	for pool, c := range costs {
		m.compat.poolCost.WithLabelValues(pool).Set(c)
	}
}

// Planned reports a pod a provisioning decision planned room for (and
// that has not started yet).
func (m *Metrics) Planned(uid types.UID) bool {
	if m == nil {
		return false
	}
	return m.planned.has(uid)
}

// ConsolidationScored records a consolidation command the Balanced policy
// weighed: its score, and one move, approved or rejected.
func (m *Metrics) ConsolidationScored(pool string, score float64, approved bool) {
	if m == nil {
		return
	}
	decision := "rejected"
	if approved {
		decision = "approved"
	}
	m.compat.score.WithLabelValues(decision, pool, "Balanced").Observe(score)
	m.compat.moves.WithLabelValues(decision, pool, "Balanced").Inc()
}
