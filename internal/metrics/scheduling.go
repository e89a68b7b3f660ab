package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// runs serves karpenter_scheduler_queue_depth and
// karpenter_scheduler_unfinished_work_seconds for the scheduling
// decisions running now, one series each by controller and scheduling_id:
// the pods a decision was given (it decides them all at once, so none is
// decided before it ends) and how long it has run. A decision's series go
// when it ends.
type runs struct {
	mu         sync.Mutex
	next       uint64
	running    map[uint64]run
	depth, age *prometheus.Desc
}

type run struct {
	controller string
	pods       int
	started    time.Time
	now        func() time.Time
}

func newRuns() *runs {
	labels := []string{"controller", "scheduling_id"}
	return &runs{running: map[uint64]run{},
		depth: prometheus.NewDesc("karpenter_scheduler_queue_depth", "Pods a scheduling decision running now was given and has not decided yet.", labels, nil),
		age:   prometheus.NewDesc("karpenter_scheduler_unfinished_work_seconds", "How long a scheduling decision running now has run.", labels, nil),
	}
}

func (r *runs) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.depth
	ch <- r.age
}

func (r *runs) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, run := range r.running {
		labels := []string{run.controller, strconv.FormatUint(id, 10)}
		ch <- prometheus.MustNewConstMetric(r.depth, prometheus.GaugeValue, float64(run.pods), labels...)
		ch <- prometheus.MustNewConstMetric(r.age, prometheus.GaugeValue, run.now().Sub(run.started).Seconds(), labels...)
	}
}

// SchedulingStarted records a scheduling decision of the controller that
// starts now (by now's clock) with the pods to place; the returned
// function ends it.
func (m *Metrics) SchedulingStarted(controller string, pods int, now func() time.Time) (done func()) {
	if m == nil {
		return func() {}
	}
	r := m.runs
	r.mu.Lock()
	r.next++
	id := r.next
	r.running[id] = run{controller: controller, pods: pods, started: now(), now: now}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.running, id)
		r.mu.Unlock()
	}
}

// Decision records a provisioning decision: how long it took, the pods
// it left pending (those it tried NodePools for), the pods it ignored,
// and its pods by effective zone (the last decision's only).
func (m *Metrics) Decision(d time.Duration, plan *scheduling.Plan) {
	if m == nil {
		return
	}
	ignored := plan.Ignored()
	m.decision.Observe(d.Seconds())
	m.pending.Set(float64(len(plan.Unschedulable)))
	m.compat.scheduling.WithLabelValues("provisioner").Observe(d.Seconds())
	m.compat.unschedulable.WithLabelValues("provisioner").Set(float64(len(plan.Unschedulable) - ignored))
	m.compat.ignored.Set(float64(ignored))
	m.compat.byZone.Reset()
	for zone, n := range plan.PendingByZone {
		m.compat.byZone.WithLabelValues("provisioner", zone).Set(float64(n))
	}
}

// Kind is the type of the series runs serves, for the catalog.
func (r *runs) Kind() string { return "gauge" }
