package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/bufferroom"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Provisioner batches pending pods and creates the NodeClaims the
// scheduling engine plans for them.
type Provisioner struct {
	Client client.Client
	// LaunchBatching puts the NodeClaims it makes that would launch
	// identically in launch batches.
	LaunchBatching bool
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints (none when not configured).
	DefaultSpread scheduling.SpreadDefaults
	// IgnoreDRARequests leaves pods with resource claims unplanned.
	IgnoreDRARequests bool
	// Policy is how minValues and pods' preferences are read.
	Policy scheduling.Policy
	// NodeClasses resolves the NodePools' node classes.
	NodeClasses listing.NodeClassResolver
	Recorder    record.EventRecorder
	Batcher     *Batcher
	// Retry is how long to wait before deciding again when a NodeClaim is
	// still launching or pods stayed pending.
	Retry   time.Duration
	Clock   clock.Clock
	Metrics *metrics.Metrics
	Log     logr.Logger
	// Registrations say which NodePools back off after registration
	// timeouts.
	Registrations *nodepoolhealth.Registrations
	// Nominator tells kube-scheduler where the plan put each pod; nil
	// leaves the choice to kube-scheduler.
	Nominator *Nominator
	// Rooms records what each plan found of the CapacityBuffers' pods;
	// nil without buffers.
	Rooms *bufferroom.Rooms

	// nominatedEvents bounds the Nominated events (NominatedEventsPerSecond,
	// NominatedEventsBurst).
	nominatedEvents     flowcontrol.PassiveRateLimiter
	nominatedEventsOnce sync.Once
	// said is what each pending pod was last told (FailedScheduling), and
	// when: a pod is told again when the reason changes, or after Resay.
	said map[types.UID]saying
	// same counts the decisions in a row that left the same pods pending
	// for the same reasons and launched nothing: the next one waits
	// longer, up to MaxRetry, unless something changes.
	same    int
	lastKey string
}

type saying struct {
	reason string
	at     time.Time
}

// Resay is how often a pod that stays pending for the same reason is told
// again (events expire after an hour).
const Resay = 30 * time.Minute

// MaxRetry is the longest a decision that changed nothing waits for the
// next, when nothing it watches changes.
const MaxRetry = time.Minute

// NominationGrace is how long after its node initialized a pod planned
// or nominated onto it still counts as that node's: kube-scheduler binds
// it within seconds, or the pod is planned again.
const NominationGrace = 10 * time.Second

// UnseenGrace is how long the pods planned onto a NodeClaim just created
// wait for the cache to show it (on a loaded machine it can lag well past
// intent.CacheWait) before they are planned again.
const UnseenGrace = time.Minute

// Nominated events (where the plan put a pod) are limited: a scale-up of
// tens of thousands of pods would otherwise cost the API server a write
// per pod for an event few read. The first NominatedEventsBurst pods of a
// burst are told, then NominatedEventsPerSecond a second; the log's
// "created NodeClaim" lines and the metrics count every planned pod.
const (
	NominatedEventsPerSecond = 10
	NominatedEventsBurst     = 100
)

// nominatedEvent records a Nominated event on the pod within the limit.
func (p *Provisioner) nominatedEvent(pod *corev1.Pod, format string, args ...any) {
	// NodeClaims are created, and their pods told, in parallel.
	p.nominatedEventsOnce.Do(func() {
		p.nominatedEvents = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(NominatedEventsPerSecond, NominatedEventsBurst, p.Clock)
	})
	if p.nominatedEvents.TryAccept() {
		p.Recorder.Eventf(pod, corev1.EventTypeNormal, v1.ReasonNominated, format, args...)
	}
}

// nominateExisting nominates the pods planned onto existing nodes that
// kube-scheduler has found no node for, and remembers the others: those
// planned onto NodeClaims still in flight, and those kube-scheduler has
// not tried yet (it places them itself when it gets to them; the plan
// keeps their room meanwhile so that no decision plans them again).
func (p *Provisioner) nominateExisting(ctx context.Context, snap *state.Snapshot, plan *scheduling.Plan, hint bool) error {
	byName := make(map[string]*state.Node, len(snap.Nodes))
	for _, n := range snap.Nodes {
		byName[n.Name] = n
	}
	for _, e := range plan.Existing {
		n := byName[e.Node]
		if n == nil || !n.Registered() {
			for _, pod := range notVirtual(e.Pods) {
				p.nominatedEvent(pod, "pod should schedule on NodeClaim %s (launching)", e.Node)
			}
			p.Nominator.Plan(e.Node, e.Pods, hint)
			continue
		}
		marked, fresh := splitMarked(notVirtual(e.Pods))
		if n.NodeClaim != nil && len(fresh) > 0 {
			p.Nominator.Plan(n.NodeClaim.Name, fresh, false)
		}
		for _, pod := range marked {
			p.nominatedEvent(pod, "pod should schedule on node %s", e.Node)
		}
		if !hint {
			continue
		}
		if err := p.Nominator.Nominate(ctx, e.Node, marked); err != nil {
			return err
		}
	}
	return nil
}

// splitMarked parts pods kube-scheduler has found no node for from
// those it has not tried yet.
func splitMarked(pods []*corev1.Pod) (marked, fresh []*corev1.Pod) {
	for _, pod := range pods {
		if state.MarkedUnschedulable(pod) {
			marked = append(marked, pod)
		} else {
			fresh = append(fresh, pod)
		}
	}
	return marked, fresh
}

// SetupWithManager watches pods (pending ones open a batch) and NodeClaims
// and nodes being deleted or gone (their pods need a new plan), and runs
// the batch loop with the manager.
func (p *Provisioner) SetupWithManager(mgr manager.Manager) error {
	deleted := handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero() {
				p.Batcher.Trigger()
			}
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			p.Batcher.Trigger()
		},
	}
	// A NodePool or EC2NodeClass that changes what it asks for, or
	// becomes ready or not, may place pods left pending.
	changed := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			p.Batcher.Trigger()
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() || readiness(e.ObjectOld) != readiness(e.ObjectNew) {
				p.Batcher.Trigger()
			}
		},
	}
	b := builder.ControllerManagedBy(mgr).Named("provisioner.trigger").For(&corev1.Pod{}).
		Watches(&v1.NodeClaim{}, deleted).Watches(&corev1.Node{}, deleted).
		Watches(&v1.NodePool{}, changed).Watches(p.NodeClasses.NodeClassObject(), changed)
	if p.Rooms != nil {
		// A buffer resolved anew may need room.
		b = b.Watches(&v1beta1.CapacityBuffer{}, handler.Funcs{
			CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				p.Batcher.Trigger()
			},
			UpdateFunc: func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				p.Batcher.Trigger()
			},
		})
	}
	if err := b.Complete(reconcile.Func(p.podChanged)); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(p.run))
}

// readiness is the Ready condition's status and reason of a NodePool or
// node class, and a NodePool's registration backoff.
func readiness(o client.Object) string {
	out := ""
	if c, ok := o.(interface{ StatusConditions() []metav1.Condition }); ok {
		out = conditionOf(c.StatusConditions(), v1.ConditionReady)
	}
	if np, ok := o.(*v1.NodePool); ok && np.Status.RegistrationBackoff != nil {
		out += "/" + np.Status.RegistrationBackoff.Until.String()
	}
	return out
}

func conditionOf(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

func (p *Provisioner) podChanged(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := p.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if state.Pending(pod) {
		p.Batcher.Trigger()
	}
	return reconcile.Result{}, nil
}

// launchingIntoReservation reports a NodeClaim pinned to reserved
// capacity whose instance is not recorded yet.
func launchingIntoReservation(nc *v1.NodeClaim) bool {
	if nc.Status.ProviderID != "" || !nc.DeletionTimestamp.IsZero() {
		return false
	}
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelCapacityType {
			return r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == v1.CapacityTypeReserved
		}
	}
	return false
}

// describeFallback says which NodePools a pod fell back from, and why.
func describeFallback(f *scheduling.Fallback) string {
	parts := make([]string, 0, len(f.Passed))
	for _, pl := range f.Passed {
		parts = append(parts, fmt.Sprintf("NodePool %s (weight %d): %s", pl.Name, pl.Weight, pl.Reason))
	}
	return fmt.Sprintf("launching on NodePool %s: the NodePools of more weight that admit this pod cannot take it now: %s", f.NodePool, strings.Join(parts, "; "))
}

// deleting reports a NodeClaim being deleted: its node's pods need room.
func deleting(nc *v1.NodeClaim) bool { return !nc.DeletionTimestamp.IsZero() }

func (p *Provisioner) run(ctx context.Context) error {
	for p.Batcher.Wait(ctx) {
		retry, err := p.Provision(ctx)
		if err != nil {
			p.Log.Error(err, "provisioning")
			retry = p.Retry
		}
		if retry > 0 {
			go func() {
				select {
				case <-p.Clock.After(retry):
					p.Batcher.Trigger()
				case <-ctx.Done():
				}
			}()
		}
	}
	return nil
}

// retryAfter is how soon to decide again when nothing it watches changes:
// Retry while nodes are coming up or the outcome changed; while the same
// pods stay pending for the same reasons and nothing launches, twice as
// long each time up to MaxRetry, and no later than the end of a
// registration backoff (those pods launch then).
func (p *Provisioner) retryAfter(snap *state.Snapshot, plan *scheduling.Plan, reasons map[*corev1.Pod]string) time.Duration {
	if len(plan.Unschedulable) == 0 && snap.Rechecks() == 0 {
		p.same, p.lastKey = 0, ""
		return 0
	}
	keys := make([]string, 0, len(plan.Unschedulable))
	for _, u := range plan.Unschedulable {
		keys = append(keys, string(u.Pod.UID)+"="+reasons[u.Pod])
	}
	slices.Sort(keys)
	key := strings.Join(keys, "\n")
	if len(plan.NodeClaims) > 0 || snap.Rechecks() > 0 || key != p.lastKey {
		p.same, p.lastKey = 0, key
		return p.Retry
	}
	p.same++
	wait := min(p.Retry<<min(p.same, 10), max(MaxRetry, p.Retry))
	now := p.Clock.Now()
	for _, sk := range snap.Skipped {
		if sk.Reason == state.SkipRegistrationBackoff && sk.Until.After(now) {
			wait = min(wait, sk.Until.Sub(now)+time.Second)
		}
	}
	return wait
}

// tell records a FailedScheduling event for a pending pod unless it was
// told the same within Resay; pods no longer pending are forgotten.
func (p *Provisioner) tell(reasons map[*corev1.Pod]string) {
	now := p.Clock.Now()
	said := make(map[types.UID]saying, len(reasons))
	for pod, reason := range reasons {
		last, ok := p.said[pod.UID]
		if !ok || last.reason != reason || now.Sub(last.at) >= Resay {
			p.Recorder.Event(pod, corev1.EventTypeWarning, v1.ReasonFailedScheduling, "nodewright cannot launch a node for this pod: "+reason)
			last = saying{reason: reason, at: now}
		}
		said[pod.UID] = last
	}
	p.said = said
}

// Provision makes one decision. It returns how soon to decide again when
// it left pods pending or counted pods as a node's that is still coming
// up (0: only when something changes).
//
// NodeClaims still launching are capacity like any node (the least any
// of their instance types offers), with the pods planned onto them, so a
// decision never waits for a launch and never plans a pod twice; the
// NodeClaims it creates are in the cache before the next decision reads
// it.
func (p *Provisioner) Provision(ctx context.Context) (time.Duration, error) {
	listed, err := listing.List(ctx, p.Client)
	if err != nil {
		return 0, err
	}
	if slices.ContainsFunc(listed.NodeClaims, launchingIntoReservation) {
		// A capacity reservation's count drops when EC2 launches the
		// instance, a moment before the NodeClaim records it: deciding
		// in between would count the place twice or not at all. Such
		// launches take seconds; the decision waits for them.
		return p.Retry, nil
	}
	if !slices.ContainsFunc(listed.Pods, state.Pending) && !slices.ContainsFunc(listed.NodeClaims, deleting) && len(listed.CapacityBuffers) == 0 {
		return 0, nil
	}
	classes, err := p.NodeClasses.ResolveNodeClasses(ctx, listed.NodePools)
	if err != nil {
		return 0, err
	}
	now := p.Clock.Now()
	snap := state.Build(listed.Objects, state.Options{Now: now, NodeClasses: classes, Backoff: p.Registrations.Backoffs(),
		Planned: p.Nominator.Planned(), NominationGrace: NominationGrace, PlannedAt: p.Nominator.PlannedAt(), UnseenGrace: UnseenGrace,
		DefaultSpread: p.DefaultSpread, IgnoreDRARequests: p.IgnoreDRARequests, Policy: p.Policy})
	started := p.Clock.Now()
	done := p.Metrics.SchedulingStarted("provisioner", len(snap.Pending), p.Clock.Now)
	plan := scheduling.Solve(snap.Input(nil))
	done()
	took := p.Clock.Since(started)
	p.Metrics.Decision(took, plan)
	p.Log.Info("computed a plan", "pendingPods", len(snap.Pending), "leavingPods", len(snap.Leaving), "newNodeClaims", len(plan.NodeClaims), "unschedulablePods", len(plan.Unschedulable), "duration", took)
	if debug := p.Log.V(1); debug.Enabled() && len(snap.Pending) > 0 && len(snap.Pending) <= 20 {
		debug.Info("pending pods planned", "pods", podKeys(snap.Pending), "onExisting", len(plan.Existing))
	}
	writer := &intent.NodeClaims{Client: p.Client, Metrics: p.Metrics, Batch: p.LaunchBatching}
	// Pods waiting at once bound how many may be nominated at once.
	hint := p.Nominator.Hints(len(snap.Pending) + snap.Expecting())
	if _, err := writer.Create(ctx, snap, plan.NodeClaims, func(nc *v1.NodeClaim, planned *scheduling.PlannedNodeClaim) {
		p.Nominator.Plan(nc.Name, planned.Pods, hint)
		p.Log.Info("created NodeClaim", "NodeClaim", nc.Name, "nodePool", planned.NodePool, "pods", len(planned.Pods),
			"cheapestInstanceType", planned.InstanceType.Name, "instanceTypes", len(planned.InstanceTypes), "requests", planned.Requests.String())
		for _, pod := range notVirtual(planned.Pods) {
			p.nominatedEvent(pod, "pod should schedule on NodeClaim %s (%s)", nc.Name, planned.InstanceType.Name)
		}
	}); err != nil {
		return 0, err
	}
	if err := p.nominateExisting(ctx, snap, plan, hint); err != nil {
		return 0, err
	}
	for _, f := range plan.Fallbacks {
		if !state.Virtual(f.Pod) {
			p.Recorder.Event(f.Pod, corev1.EventTypeNormal, v1.ReasonNodePoolFallback, describeFallback(f))
		}
	}
	p.Rooms.Record(rooms(snap, plan))
	p.Metrics.PodsPlanned(planned(plan), now)
	reasons := p.explain(snap, plan)
	// Pods expected on nodes still coming up are looked at again: if
	// kube-scheduler has not bound them once the node is up, they are
	// planned anew. Buffers are looked at again every BufferRetry: pods
	// that took their room leave them to refill.
	retry := p.retryAfter(snap, plan, reasons)
	if len(snap.Buffers) > 0 && (retry == 0 || retry > BufferRetry) {
		retry = BufferRetry
	}
	return retry, nil
}

// BufferRetry is how often the CapacityBuffers' room is looked at again
// while there are buffers.
const BufferRetry = 15 * time.Second

// planned are the real pods a plan found room for, on new NodeClaims or
// nodes there.
func planned(plan *scheduling.Plan) []*corev1.Pod {
	n := 0
	for _, nc := range plan.NodeClaims {
		n += len(nc.Pods)
	}
	for _, e := range plan.Existing {
		n += len(e.Pods)
	}
	out := make([]*corev1.Pod, 0, n)
	for _, nc := range plan.NodeClaims {
		out = append(out, notVirtual(nc.Pods)...)
	}
	for _, e := range plan.Existing {
		out = append(out, notVirtual(e.Pods)...)
	}
	return out
}

// notVirtual are the pods that are not a buffer's.
func notVirtual(pods []*corev1.Pod) []*corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), state.Virtual)
}

// rooms are what the plan found of each buffer's pods.
func rooms(snap *state.Snapshot, plan *scheduling.Plan) map[types.NamespacedName]bufferroom.Room {
	out := make(map[types.NamespacedName]bufferroom.Room, len(snap.Buffers))
	for _, b := range snap.Buffers {
		out[b.Buffer] = bufferroom.Room{Pods: b.Pods, Hosted: b.Hosted}
	}
	add := func(pods []*corev1.Pod, f func(*bufferroom.Room)) {
		for _, pod := range pods {
			if r, ok := out[state.BufferOf(pod)]; ok && state.Virtual(pod) {
				f(&r)
				out[state.BufferOf(pod)] = r
			}
		}
	}
	for _, nc := range plan.NodeClaims {
		add(nc.Pods, func(r *bufferroom.Room) { r.Launched++ })
	}
	for _, e := range plan.Existing {
		add(e.Pods, func(r *bufferroom.Room) { r.Hosted++ })
	}
	for _, u := range plan.Unschedulable {
		add([]*corev1.Pod{u.Pod}, func(r *bufferroom.Room) { r.Failed++ })
	}
	return out
}

// explain tells each pod the plan left without a place why, on its own
// events (a buffer's pod says so in the buffer's Provisioning condition
// instead), and logs it once per workload; it returns the reasons.
func (p *Provisioner) explain(snap *state.Snapshot, plan *scheduling.Plan) map[*corev1.Pod]string {
	reasonOf := func(u *scheduling.UnschedulablePod) string { return snap.ReasonFor(u.Reason) }
	reasons := make(map[*corev1.Pod]string, len(plan.Unschedulable))
	for _, u := range plan.Unschedulable {
		if !state.Virtual(u.Pod) {
			reasons[u.Pod] = reasonOf(u)
		}
	}
	p.tell(reasons)
	for _, g := range state.GroupPods(plan.Unschedulable, func(u *scheduling.UnschedulablePod) *corev1.Pod { return u.Pod }, reasonOf) {
		p.Log.V(1).Info("pods cannot be scheduled", "workload", g.Workload.String(), "pods", len(g.Pods), "reason", reasons[g.Pods[0]])
	}
	return reasons
}

// podKeys names pods, for the log.
func podKeys(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, pod := range pods {
		out[i] = pod.Namespace + "/" + pod.Name
	}
	return out
}
