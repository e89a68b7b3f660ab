package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/nodepool"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/listing"
)

// Provisioner batches pending pods and creates the NodeClaims the
// scheduling engine plans for them.
type Provisioner struct {
	Client   client.Client
	Types    listing.InstanceTypeSource
	AMIs     func(*awsv1.EC2NodeClass) []scheduling.AMI
	Recorder record.EventRecorder
	Batcher  *Batcher
	// Retry is how long to wait before deciding again when a NodeClaim is
	// still launching or pods stayed pending.
	Retry   time.Duration
	Clock   clock.PassiveClock
	Metrics *metrics.Metrics
	Log     logr.Logger
	// Registrations say which NodePools back off after registration
	// timeouts.
	Registrations *nodepool.Registrations
	// Nominator tells kube-scheduler where the plan put each pod; nil
	// leaves the choice to kube-scheduler.
	Nominator *Nominator
}

// NominationGrace is how long after its node initialized a pod planned
// or nominated onto it still counts as that node's: kube-scheduler binds
// it within seconds, or the pod is planned again.
const NominationGrace = 10 * time.Second

// nominateExisting nominates the pods planned onto existing nodes that
// kube-scheduler has found no node for (the others it places itself when
// it gets to them), and remembers those planned onto NodeClaims still in
// flight.
func (p *Provisioner) nominateExisting(ctx context.Context, snap *state.Snapshot, plan *scheduling.Plan) error {
	registered := map[string]bool{}
	for _, n := range snap.Nodes {
		registered[n.Name] = n.Registered()
	}
	for _, e := range plan.Existing {
		if !registered[e.Node] {
			for _, pod := range e.Pods {
				p.Recorder.Eventf(pod, corev1.EventTypeNormal, "Nominated", "pod should schedule on NodeClaim %s (launching)", e.Node)
			}
			p.Nominator.Plan(ctx, e.Node, e.Pods)
			continue
		}
		marked := slices.DeleteFunc(slices.Clone(e.Pods), func(pod *corev1.Pod) bool { return !state.MarkedUnschedulable(pod) })
		for _, pod := range marked {
			p.Recorder.Eventf(pod, corev1.EventTypeNormal, "Nominated", "pod should schedule on node %s", e.Node)
		}
		if err := p.Nominator.Nominate(ctx, e.Node, marked); err != nil {
			return err
		}
	}
	return nil
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
	if err := builder.ControllerManagedBy(mgr).Named("provisioner.trigger").For(&corev1.Pod{}).
		Watches(&v1.NodeClaim{}, deleted).Watches(&corev1.Node{}, deleted).
		Complete(reconcile.Func(p.podChanged)); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(p.run))
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

// awaitCache waits until the cache the next decision reads holds the
// NodeClaims just created (for up to CacheWait), so that decision counts
// them and their pods.
func (p *Provisioner) awaitCache(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, CacheWait, true, func(ctx context.Context) (bool, error) {
		for len(names) > 0 {
			if err := p.Client.Get(ctx, client.ObjectKey{Name: names[0]}, &v1.NodeClaim{}); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			names = names[1:]
		}
		return true, nil
	})
	if err != nil {
		p.Log.Info("the cache does not show the NodeClaims just created yet", "missing", len(names), "error", err.Error())
	}
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

// CreateWorkers is how many NodeClaims a decision creates at once.
const CreateWorkers = 32

// CacheWait bounds how long a decision waits for the NodeClaims it
// created to show in the cache.
const CacheWait = 10 * time.Second

func (p *Provisioner) run(ctx context.Context) error {
	for p.Batcher.Wait(ctx) {
		retry, err := p.Provision(ctx)
		if err != nil {
			p.Log.Error(err, "provisioning")
			retry = true
		}
		if retry {
			go func() {
				select {
				case <-time.After(p.Retry):
					p.Batcher.Trigger()
				case <-ctx.Done():
				}
			}()
		}
	}
	return nil
}

// Provision makes one decision. It returns retry=true when it left pods
// pending or counted pods as a node's that is still coming up.
//
// NodeClaims still launching are capacity like any node (the least any
// of their instance types offers), with the pods planned onto them, so a
// decision never waits for a launch and never plans a pod twice; the
// NodeClaims it creates are in the cache before the next decision reads
// it.
func (p *Provisioner) Provision(ctx context.Context) (bool, error) {
	listed, err := listing.List(ctx, p.Client)
	if err != nil {
		return false, err
	}
	if slices.ContainsFunc(listed.NodeClaims, launchingIntoReservation) {
		// A capacity reservation's count drops when EC2 launches the
		// instance, a moment before the NodeClaim records it: deciding
		// in between would count the place twice or not at all. Such
		// launches take seconds; the decision waits for them.
		return true, nil
	}
	if !slices.ContainsFunc(listed.Pods, state.Pending) && !slices.ContainsFunc(listed.NodeClaims, deleting) {
		return false, nil
	}
	classes, err := listing.Resolve(ctx, listed, p.Types, p.AMIs)
	if err != nil {
		return false, err
	}
	now := p.Clock.Now()
	snap := state.Build(listed.Objects, state.Options{Now: now, NodeClasses: classes, Backoff: p.Registrations.Backoffs(now),
		Planned: p.Nominator.Planned(), NominationGrace: NominationGrace})
	started := p.Clock.Now()
	plan := scheduling.Solve(snap.Input(nil))
	took := p.Clock.Since(started)
	p.Metrics.Decision(took, len(plan.Unschedulable))
	p.Log.Info("computed a plan", "pendingPods", len(snap.Pending), "leavingPods", len(snap.Leaving), "newNodeClaims", len(plan.NodeClaims), "unschedulablePods", len(plan.Unschedulable), "duration", took)
	// NodeClaims are created in parallel: each create waits on the API
	// server (and etcd's disk), not on this process.
	var (
		mu      sync.Mutex
		created = make([]string, 0, len(plan.NodeClaims))
		g       errgroup.Group
	)
	g.SetLimit(CreateWorkers)
	defer func() { p.awaitCache(ctx, created) }()
	for _, planned := range plan.NodeClaims {
		np := snap.Pools[planned.NodePool]
		nc := state.NodeClaimFor(np, listed.NodeClass(np), planned)
		g.Go(func() error {
			if err := p.Client.Create(ctx, nc); err != nil {
				return fmt.Errorf("creating a NodeClaim for NodePool %s: %w", planned.NodePool, err)
			}
			mu.Lock()
			created = append(created, nc.Name)
			mu.Unlock()
			p.Metrics.NodeClaimCreated(planned.NodePool)
			p.Nominator.Plan(ctx, nc.Name, planned.Pods)
			p.Log.Info("created NodeClaim", "NodeClaim", nc.Name, "nodePool", planned.NodePool, "pods", len(planned.Pods),
				"cheapestInstanceType", planned.InstanceType.Name, "instanceTypes", len(planned.InstanceTypes), "requests", planned.Requests.String())
			for _, pod := range planned.Pods {
				p.Recorder.Eventf(pod, corev1.EventTypeNormal, "Nominated", "pod should schedule on NodeClaim %s (%s)", nc.Name, planned.InstanceType.Name)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	if err := p.nominateExisting(ctx, snap, plan); err != nil {
		return false, err
	}
	for _, f := range plan.Fallbacks {
		p.Recorder.Event(f.Pod, corev1.EventTypeNormal, "NodePoolFallback", describeFallback(f))
	}
	skipped := snap.SkippedSummary()
	reasonOf := func(u *scheduling.UnschedulablePod) string {
		switch {
		case skipped != "" && len(snap.NodePools) == 0:
			return skipped
		case skipped != "":
			return u.Reason + "; " + skipped
		}
		return u.Reason
	}
	// Each pod says why on its own events; the log says it once per
	// workload.
	reasons := make(map[*corev1.Pod]string, len(plan.Unschedulable))
	for _, u := range plan.Unschedulable {
		reasons[u.Pod] = reasonOf(u)
		p.Recorder.Event(u.Pod, corev1.EventTypeWarning, "FailedScheduling", "nodewright cannot launch a node for this pod: "+reasons[u.Pod])
	}
	for _, g := range state.GroupPods(plan.Unschedulable, func(u *scheduling.UnschedulablePod) *corev1.Pod { return u.Pod }, reasonOf) {
		p.Log.V(1).Info("pods cannot be scheduled", "workload", g.Workload.String(), "pods", len(g.Pods), "reason", reasons[g.Pods[0]])
	}
	// Pods expected on nodes still coming up are looked at again: if
	// kube-scheduler has not bound them once the node is up, they are
	// planned anew.
	return len(plan.Unschedulable) > 0 || snap.Expecting() > 0, nil
}
