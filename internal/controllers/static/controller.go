// Package static keeps each static NodePool at its number of nodes: it
// acts on what internal/decide/static decides, launching NodeClaims from
// the template and deleting the surplus (their termination drains them
// through the Eviction API, so PodDisruptionBudgets hold; disruption
// budgets do not apply, as the user asked for the change).
package static

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/static"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Controller keeps static NodePools at their replicas.
type Controller struct {
	Client client.Client
	// LaunchBatching puts the NodeClaims it makes that would launch
	// identically in launch batches.
	LaunchBatching bool
	// Policy is how minValues is read (--min-values-policy).
	Policy scheduling.Policy
	// NodeClasses resolves the NodePools' node classes.
	NodeClasses   listing.NodeClassResolver
	Registrations *nodepoolhealth.Registrations
	Recorder      record.EventRecorder
	Clock         clock.PassiveClock
	Metrics       *metrics.Metrics
	Log           logr.Logger
	// Retry is how long a NodePool that could not launch all it misses
	// waits before it tries again.
	Retry time.Duration

	// created holds the NodeClaims this controller created until its
	// cache shows them (for up to createdTTL): a decision made on a cache
	// behind the API server counts them instead of creating them again.
	createdMu sync.Mutex
	created   map[string]createdClaim
}

// createdClaim is a NodeClaim created, and when.
type createdClaim struct {
	claim *v1.NodeClaim
	at    time.Time
}

// createdTTL is how long a NodeClaim created is counted while the cache
// does not show it (deleted again before the cache showed it, it stops
// counting then).
const createdTTL = time.Minute

// withCreated adds to the NodeClaims listed those this controller created
// that the list does not show yet, and forgets those it shows or that are
// older than createdTTL.
func (c *Controller) withCreated(listed []*v1.NodeClaim, now time.Time) []*v1.NodeClaim {
	c.createdMu.Lock()
	defer c.createdMu.Unlock()
	if len(c.created) == 0 {
		return listed
	}
	shown := make(map[string]bool, len(listed))
	for _, nc := range listed {
		shown[nc.Name] = true
	}
	for name, cr := range c.created {
		if shown[name] || now.Sub(cr.at) > createdTTL {
			delete(c.created, name)
			continue
		}
		listed = append(listed, cr.claim)
	}
	return listed
}

// remember records a NodeClaim created at now.
func (c *Controller) remember(nc *v1.NodeClaim, now time.Time) {
	c.createdMu.Lock()
	defer c.createdMu.Unlock()
	if c.created == nil {
		c.created = map[string]createdClaim{}
	}
	c.created[nc.Name] = createdClaim{claim: nc.DeepCopy(), at: now}
}

// SetupWithManager registers the controller: a NodePool's changes, its
// NodeClaims' and its nodes' taints wake it.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	ofPool := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if pool := o.GetLabels()[v1.LabelNodePool]; pool != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pool}}}
		}
		return nil
	})
	taintsChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, after := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return !slices.Equal(before.Spec.Taints, after.Spec.Taints) || !before.DeletionTimestamp.Equal(after.DeletionTimestamp)
	}}
	return builder.ControllerManagedBy(mgr).Named("nodepool.static").
		For(&v1.NodePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodeClaim{}, ofPool).
		Watches(&corev1.Node{}, ofPool, builder.WithPredicates(taintsChanged)).
		Complete(c)
}

// Reconcile brings one static NodePool to its replicas.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.Client.Get(ctx, req.NamespacedName, np); err != nil || np.Spec.Replicas == nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	listed, err := listing.List(ctx, c.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	classes, err := c.NodeClasses.ResolveNodeClasses(ctx, listed.NodePools)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.Clock.Now()
	listed.NodeClaims = c.withCreated(listed.NodeClaims, now)
	snap := state.Build(listed.Objects, state.Options{Now: now, NodeClasses: classes, Backoff: c.Registrations.Backoffs(), Policy: c.Policy})
	d := decide.Decide(snap, np.Name)
	if d == nil {
		return reconcile.Result{}, nil
	}
	if err := c.remove(ctx, np, d); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.launch(ctx, np, d, snap); err != nil {
		return reconcile.Result{}, err
	}
	if d.Short != "" {
		c.Recorder.Eventf(np, corev1.EventTypeWarning, v1.ReasonStaticReplicasShort, "NodePool %s has %d of its %d replicas and cannot launch more now: %s",
			np.Name, d.Counted+len(d.Launch), d.Replicas, d.Short)
		c.Log.Info("static NodePool is short of replicas", "nodePool", np.Name, "replicas", d.Replicas, "nodeClaims", d.Counted+len(d.Launch), "why", d.Short)
		return reconcile.Result{RequeueAfter: c.Retry}, nil
	}
	return reconcile.Result{}, nil
}

func (c *Controller) launch(ctx context.Context, np *v1.NodePool, d *decide.Decision, snap *state.Snapshot) error {
	if len(d.Launch) == 0 {
		return nil
	}
	writer := &intent.NodeClaims{Client: c.Client, Metrics: c.Metrics, Batch: c.LaunchBatching}
	created, err := writer.Create(ctx, snap, d.Launch, func(nc *v1.NodeClaim, planned *scheduling.PlannedNodeClaim) {
		c.remember(nc, c.Clock.Now())
		c.Log.Info("created NodeClaim", "NodeClaim", nc.Name, "nodePool", np.Name, "cheapestInstanceType", planned.InstanceType.Name,
			"instanceTypes", len(planned.InstanceTypes), "replicas", d.Replicas)
	})
	if len(created) > 0 {
		c.Recorder.Eventf(np, corev1.EventTypeNormal, v1.ReasonStaticScaledUp, "NodePool %s had %d of its %d replicas; launching %s",
			np.Name, d.Counted, d.Replicas, strings.Join(created, ", "))
	}
	if err != nil {
		return fmt.Errorf("static NodePool %s: %w", np.Name, err)
	}
	return nil
}

func (c *Controller) remove(ctx context.Context, np *v1.NodePool, d *decide.Decision) error {
	if len(d.Remove) == 0 {
		return nil
	}
	var deleted []string
	defer func() {
		writer := &intent.NodeClaims{Client: c.Client, Metrics: c.Metrics, Batch: c.LaunchBatching}
		if err := writer.AwaitDeleted(ctx, deleted); err != nil {
			c.Log.Info("NodeClaims just deleted", "error", err.Error())
		}
	}()
	for _, n := range d.Remove {
		if err := c.Client.Delete(ctx, n.NodeClaim); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting NodeClaim %s of static NodePool %s: %w", n.NodeClaim.Name, np.Name, err)
		}
		deleted = append(deleted, n.NodeClaim.Name)
		c.Recorder.Eventf(n.NodeClaim, corev1.EventTypeNormal, v1.ReasonStaticScaledDown, "NodePool %s keeps %d replicas and had %d; this NodeClaim goes (its node is drained)",
			np.Name, d.Replicas, d.Counted)
		c.Log.Info("deleted NodeClaim", "NodeClaim", n.NodeClaim.Name, "nodePool", np.Name, "replicas", d.Replicas, "pods", len(n.Reschedulable()))
	}
	c.Recorder.Eventf(np, corev1.EventTypeNormal, v1.ReasonStaticScaledDown, "NodePool %s had %d of its %d replicas; deleting %s",
		np.Name, d.Counted, d.Replicas, strings.Join(deleted, ", "))
	return nil
}
