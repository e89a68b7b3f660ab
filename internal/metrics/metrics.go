// Package metrics defines nodewright's Prometheus metrics. They are created
// once per process and passed to the controllers that record them.
package metrics

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Metrics are the counters and histograms the controllers record. A nil
// *Metrics records nothing.
type Metrics struct {
	created, registered, initialized, terminated *prometheus.CounterVec
	registration, initialization                 *prometheus.HistogramVec
	decision                                     prometheus.Histogram
	pending                                      prometheus.Gauge
	// Disruption.
	disruptions        *prometheus.CounterVec // reason, outcome
	eligible, savings  *prometheus.GaugeVec   // nodepool
	allowed            *prometheus.GaugeVec   // nodepool, reason
	blocked            *prometheus.GaugeVec   // nodepool, method, reason
	rollout            *prometheus.GaugeVec   // nodepool, state
	disruptionDecision prometheus.Histogram
	// Node repair.
	repairs   *prometheus.CounterVec // nodepool, condition
	unhealthy *prometheus.GaugeVec   // nodepool
	held      *prometheus.GaugeVec   // nodepool
	// Interruption.
	messages     *prometheus.CounterVec // kind
	interrupted  *prometheus.CounterVec // kind, nodepool, capacity_type
	messageDelay prometheus.Histogram
	queueErrors  *prometheus.CounterVec // operation
	// Prices.
	priceSource *prometheus.GaugeVec // kind, source
	priceSince  *prometheus.GaugeVec // kind
	// compat are the reference's series.
	compat compat
	runs   *runs
	// started are the pods seen Ready once (by UID), until deleted;
	// planned those a provisioning decision planned room for.
	started, planned uidSet
}

// uidSet is a set of pod UIDs safe for concurrent use: a set under a lock
// holds tens of thousands of UIDs in a third of what a sync.Map takes.
type uidSet struct {
	mu   sync.Mutex
	uids sets.Set[types.UID]
}

func (s *uidSet) has(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uids.Has(uid)
}

// add reports whether uid was not in the set.
func (s *uidSet) add(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uids.Has(uid) {
		return false
	}
	if s.uids == nil {
		s.uids = sets.New[types.UID]()
	}
	s.uids.Insert(uid)
	return true
}

func (s *uidSet) remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids.Delete(uid)
}

// New creates the metrics and registers them; collectors already
// registered (by an earlier manager in the same process) are reused.
func New(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: name, Help: help}, []string{"nodepool"})
	}
	durations := prometheus.ExponentialBuckets(1, 2, 12)
	m := &Metrics{
		created:     counter("nodeclaims_created_total", "NodeClaims created by the provisioner."),
		registered:  counter("nodeclaims_registered_total", "NodeClaims whose node registered."),
		initialized: counter("nodeclaims_initialized_total", "NodeClaims whose node finished initializing."),
		terminated:  counter("nodeclaims_terminated_total", "NodeClaims whose node and instance were deleted."),
		registration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "nodewright", Name: "nodeclaim_registration_duration_seconds",
			Help: "Time from NodeClaim creation to node registration.", Buckets: durations}, []string{"nodepool"}),
		initialization: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "nodewright", Name: "nodeclaim_initialization_duration_seconds",
			Help: "Time from NodeClaim creation to node initialization.", Buckets: durations}, []string{"nodepool"}),
		decision: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nodewright", Name: "provisioning_decision_duration_seconds",
			Help: "Time the provisioner takes to plan NodeClaims for a batch of pending pods.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nodewright", Name: "pods_pending",
			Help: "Pods waiting for capacity at the last provisioning decision."}),
		disruptions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "disruption_decisions_total",
			Help: "Disruption commands by reason (Unhealthy, Expired, Drifted, Empty, Underutilized) and outcome (decided, started, cancelled, rolled_back, completed)."}, []string{"reason", "outcome"}),
		eligible: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "disruption_eligible_nodes",
			Help: "Nodes a disruption method could act on at the last decision."}, []string{"nodepool"}),
		savings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "disruption_estimated_savings_per_hour",
			Help: "Hourly savings of the disruption commands being carried out, in US dollars."}, []string{"nodepool"}),
		allowed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "disruption_allowed_disruptions",
			Help: "Nodes the NodePool's budgets allow to be disrupted now, by reason."}, []string{"nodepool", "reason"}),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "disruption_blocked_nodes",
			Help: "Nodes a disruption method would act on that stay at the last decision, by NodePool, method (Drifted, Expired, Empty, Underutilized) and why (Blocker: a PodDisruptionBudget or do-not-disrupt, Budget, PodsDoNotFit, ...)."}, []string{"nodepool", "method", "reason"}),
		rollout: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "nodepool_drift_rollout_nodes",
			Help: "A NodePool's nodes while drifted ones are replaced, by state: up_to_date, replacing (drifted, being replaced), waiting (drifted, not yet)."}, []string{"nodepool", "state"}),
		disruptionDecision: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nodewright", Name: "disruption_decision_duration_seconds",
			Help: "Time a disruption decision takes.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "node_repairs_total",
			Help: "Unhealthy nodes replaced, by NodePool and the condition that failed (Ready, KernelReady, ...)."}, []string{"nodepool", "condition"}),
		unhealthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "nodes_unhealthy",
			Help: "Nodes of the NodePool that a repair policy matches now."}, []string{"nodepool"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "node_repair_held",
			Help: "1 while repair waits because too many of the NodePool's nodes are unhealthy at once."}, []string{"nodepool"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "interruption_messages_total",
			Help: "Interruption queue messages handled, by kind (spot_interruption, rebalance_recommendation, scheduled_change, instance_stopping, instance_terminating, capacity_reservation_interruption, state_change_ignored, not_ours, malformed)."}, []string{"kind"}),
		interrupted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "interruption_nodeclaims_deleted_total",
			Help: "NodeClaims deleted because of an interruption message, by kind, NodePool and capacity type."}, []string{"kind", "nodepool", "capacity_type"}),
		messageDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "nodewright", Name: "interruption_message_delay_seconds",
			Help: "Time from an interruption event to nodewright acting on it.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
		queueErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "nodewright", Name: "interruption_queue_errors_total",
			Help: "Calls to the interruption queue that failed, by operation (get_queue_url, receive, delete): the queue is missing, or the controller's role may not read it."}, []string{"operation"}),
		priceSource: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "prices_source",
			Help: "1 for the source of the prices in use, by kind (on_demand, spot) and source (API, LastKnown: the API failed and its last answer is used, BuiltIn: no answer yet, the built-in table)."}, []string{"kind", "source"}),
		priceSince: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nodewright", Name: "prices_source_since_timestamp_seconds",
			Help: "When the prices in use, by kind, came from their source."}, []string{"kind"}),
		compat: newCompat(),
		runs:   newRuns(),
	}
	var err error
	m.created = register(reg, m.created, &err)
	m.registered = register(reg, m.registered, &err)
	m.initialized = register(reg, m.initialized, &err)
	m.terminated = register(reg, m.terminated, &err)
	m.registration = register(reg, m.registration, &err)
	m.initialization = register(reg, m.initialization, &err)
	m.decision = register(reg, m.decision, &err)
	m.pending = register(reg, m.pending, &err)
	m.disruptions = register(reg, m.disruptions, &err)
	m.eligible = register(reg, m.eligible, &err)
	m.savings = register(reg, m.savings, &err)
	m.allowed = register(reg, m.allowed, &err)
	m.blocked = register(reg, m.blocked, &err)
	m.rollout = register(reg, m.rollout, &err)
	m.disruptionDecision = register(reg, m.disruptionDecision, &err)
	m.repairs = register(reg, m.repairs, &err)
	m.unhealthy = register(reg, m.unhealthy, &err)
	m.held = register(reg, m.held, &err)
	m.messages = register(reg, m.messages, &err)
	m.interrupted = register(reg, m.interrupted, &err)
	m.messageDelay = register(reg, m.messageDelay, &err)
	m.queueErrors = register(reg, m.queueErrors, &err)
	for _, op := range []string{"get_queue_url", "receive", "delete"} {
		m.queueErrors.WithLabelValues(op) // 0 until one fails: alerts see the series
	}
	m.priceSource = register(reg, m.priceSource, &err)
	m.priceSince = register(reg, m.priceSince, &err)
	m.compat.register(reg, &err)
	m.runs = register(reg, m.runs, &err)
	return m, err
}

// register registers c, or returns the collector already registered for it.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c
	case errors.As(err, &already):
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	*errp = errors.Join(*errp, err)
	return c
}

// NodeClaimCreated counts a NodeClaim created, and why: "provisioned",
// or the disruption reason of a replacement; minValuesRelaxed says whether
// it asks fewer values than its NodePool's minValues.
func (m *Metrics) NodeClaimCreated(pool, reason string, minValuesRelaxed bool) {
	if m != nil {
		m.created.WithLabelValues(pool).Inc()
		m.compat.nodeclaimsCreated.WithLabelValues(ReasonLabel(reason), pool, strconv.FormatBool(minValuesRelaxed)).Inc()
	}
}

// NodeClaimRegistered records a registration (a node, in zone) after age.
func (m *Metrics) NodeClaimRegistered(pool, zone string, age time.Duration) {
	if m != nil {
		m.registered.WithLabelValues(pool).Inc()
		m.registration.WithLabelValues(pool).Observe(age.Seconds())
		m.compat.nodesCreated.WithLabelValues(pool, zone).Inc()
	}
}

// NodeClaimInitialized records an initialization after age.
func (m *Metrics) NodeClaimInitialized(pool string, age time.Duration) {
	if m != nil {
		m.initialized.WithLabelValues(pool).Inc()
		m.initialization.WithLabelValues(pool).Observe(age.Seconds())
	}
}

// NodeClaimTerminated counts a NodeClaim whose node (if it registered
// one) and instance are gone.
func (m *Metrics) NodeClaimTerminated(pool, capacityType, zone string, hadNode bool, took time.Duration) {
	if m != nil {
		m.terminated.WithLabelValues(pool).Inc()
		m.compat.nodeclaimsTerminated.WithLabelValues(pool, capacityType, zone).Inc()
		if hadNode {
			m.compat.nodesTerminated.WithLabelValues(pool, zone).Inc()
			m.compat.terminationDuration.WithLabelValues(pool).Observe(took.Seconds())
		}
	}
}

// NodeRepaired counts an unhealthy node replaced.
func (m *Metrics) NodeRepaired(pool, condition string) {
	if m != nil {
		m.repairs.WithLabelValues(pool, condition).Inc()
	}
}

// InterruptionMessage counts a message of the interruption queue handled,
// delay after the event it reports.
func (m *Metrics) InterruptionMessage(kind string, delay time.Duration) {
	if m == nil {
		return
	}
	m.messages.WithLabelValues(kind).Inc()
	if delay > 0 {
		m.messageDelay.Observe(delay.Seconds())
	}
	m.compat.observeQueue(kind, delay)
}

// InterruptionQueueError counts a failed call to the interruption queue.
func (m *Metrics) InterruptionQueueError(operation string) {
	if m != nil {
		m.queueErrors.WithLabelValues(operation).Inc()
	}
}

// Interrupted counts a NodeClaim deleted because of an interruption.
func (m *Metrics) Interrupted(kind, pool, capacityType string) {
	if m != nil {
		m.interrupted.WithLabelValues(kind, pool, capacityType).Inc()
	}
}

// NodePoolHealth records a NodePool's unhealthy nodes and whether repair
// is held.
func (m *Metrics) NodePoolHealth(pool string, unhealthy int, held bool) {
	if m == nil {
		return
	}
	m.unhealthy.WithLabelValues(pool).Set(float64(unhealthy))
	v := 0.0
	if held {
		v = 1
	}
	m.held.WithLabelValues(pool).Set(v)
}

// Disruption counts a disruption command's step.
func (m *Metrics) Disruption(reason, outcome string) {
	if m != nil {
		m.disruptions.WithLabelValues(reason, outcome).Inc()
	}
}

// DisruptionDecision records a disruption decision: how long it took, the
// eligible nodes per NodePool, what the budgets allow per NodePool and
// reason, and the hourly savings of the commands in flight per NodePool.
//
// blocked counts the nodes that stay by NodePool, method and reason.
func (m *Metrics) DisruptionDecision(d time.Duration, eligible map[string]int, allowed map[[2]string]int, blocked map[[3]string]int, savings map[string]float64) {
	if m == nil {
		return
	}
	m.disruptionDecision.Observe(d.Seconds())
	m.eligible.Reset()
	for pool, n := range eligible {
		m.eligible.WithLabelValues(pool).Set(float64(n))
	}
	m.allowed.Reset()
	m.compat.allowed.Reset()
	for k, n := range allowed {
		m.allowed.WithLabelValues(k[0], k[1]).Set(float64(n))
		m.compat.allowed.WithLabelValues(k[0], ReasonLabel(k[1])).Set(float64(n))
	}
	m.savings.Reset()
	for pool, s := range savings {
		m.savings.WithLabelValues(pool).Set(s)
	}
	m.blocked.Reset()
	for k, n := range blocked {
		m.blocked.WithLabelValues(k[0], k[1], k[2]).Set(float64(n))
	}
}

// DriftRollout records a NodePool's nodes while its drifted ones are
// replaced; all zero when none has drifted.
func (m *Metrics) DriftRollout(pool string, upToDate, replacing, waiting int) {
	if m == nil {
		return
	}
	m.rollout.WithLabelValues(pool, "up_to_date").Set(float64(upToDate))
	m.rollout.WithLabelValues(pool, "replacing").Set(float64(replacing))
	m.rollout.WithLabelValues(pool, "waiting").Set(float64(waiting))
}

// PriceSource records where one kind of price (on_demand, spot) comes from
// and since when.
func (m *Metrics) PriceSource(kind, source string, sources []string, since time.Time) {
	if m == nil {
		return
	}
	for _, s := range sources {
		v := 0.0
		if s == source {
			v = 1
		}
		m.priceSource.WithLabelValues(kind, s).Set(v)
	}
	m.priceSince.WithLabelValues(kind).Set(float64(since.Unix()))
}
