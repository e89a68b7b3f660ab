// Package metrics defines nodewright's Prometheus metrics. They are created
// once per process and passed to the controllers that record them.
package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the counters and histograms the controllers record. A nil
// *Metrics records nothing.
type Metrics struct {
	created, registered, initialized, terminated *prometheus.CounterVec
	registration, initialization                 *prometheus.HistogramVec
	decision                                     prometheus.Histogram
	pending                                      prometheus.Gauge
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

// NodeClaimCreated counts a NodeClaim the provisioner created.
func (m *Metrics) NodeClaimCreated(pool string) {
	if m != nil {
		m.created.WithLabelValues(pool).Inc()
	}
}

// NodeClaimRegistered records a registration after age.
func (m *Metrics) NodeClaimRegistered(pool string, age time.Duration) {
	if m != nil {
		m.registered.WithLabelValues(pool).Inc()
		m.registration.WithLabelValues(pool).Observe(age.Seconds())
	}
}

// NodeClaimInitialized records an initialization after age.
func (m *Metrics) NodeClaimInitialized(pool string, age time.Duration) {
	if m != nil {
		m.initialized.WithLabelValues(pool).Inc()
		m.initialization.WithLabelValues(pool).Observe(age.Seconds())
	}
}

// NodeClaimTerminated counts a NodeClaim whose node and instance are gone.
func (m *Metrics) NodeClaimTerminated(pool string) {
	if m != nil {
		m.terminated.WithLabelValues(pool).Inc()
	}
}

// Decision records a provisioning decision and the pods it left pending.
func (m *Metrics) Decision(d time.Duration, pending int) {
	if m != nil {
		m.decision.Observe(d.Seconds())
		m.pending.Set(float64(pending))
	}
}
