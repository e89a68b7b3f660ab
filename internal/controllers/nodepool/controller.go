// Package nodepool keeps NodePool status current: the resources its
// NodeClaims hold, whether its EC2NodeClass is ready, whether its nodes
// register, and how the replacement of its drifted nodes goes.
package nodepool

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/conditions"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Controller is the NodePool status controller.
type Controller struct {
	Client client.Client
	// NodeClasses reads the node classes NodePools use.
	NodeClasses   NodeClasses
	Clock         clock.PassiveClock
	Registrations *nodepoolhealth.Registrations
	// Drifts are the replacements of drifted nodes disruption recorded;
	// DriftFailureLimit how many may fail in a row before drift pauses
	// (nodepoolhealth.DefaultDriftFailureLimit when zero).
	Drifts            *nodepoolhealth.DriftReplacements
	DriftFailureLimit int
	Recorder          record.EventRecorder
	Metrics           *metrics.Metrics
}

// NodeClasses is what the controller reads of node classes: their
// readiness, and their kind, to watch.
type NodeClasses interface {
	NodeClass(ctx context.Context, name string) (*cloudprovider.NodeClass, error)
	NodeClassObject() client.Object
}

// Gather is how long a NodeClaim's or node's change waits for others of
// the same NodePool before its status is recomputed: a scale-up changes
// thousands of NodeClaims several times each, and each recomputation
// reads them all.
const Gather = 2 * time.Second

// SetupWithManager registers the controller; NodeClaim and EC2NodeClass
// changes wake the NodePools they concern (NodeClaims' and nodes' after
// Gather, together).
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	gather := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if pool := o.GetLabels()[v1.LabelNodePool]; pool != "" {
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKey{Name: pool}}, Gather)
		}
	}
	ofPool := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			gather(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			gather(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			gather(e.Object, q)
		},
	}
	return builder.ControllerManagedBy(mgr).Named("nodepool.status").For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, ofPool).Watches(&corev1.Node{}, ofPool, builder.WithPredicates(predicate.Funcs{UpdateFunc: conditionsChanged})).
		Watches(c.NodeClasses.NodeClassObject(), handler.EnqueueRequestsFromMapFunc(c.poolsOfClass)).
		Complete(c)
}

// conditionsChanged passes a node update that changes a condition's
// status (a node failing or recovering), not heartbeats.
func conditionsChanged(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*corev1.Node)
	after, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 || len(before.Status.Conditions) != len(after.Status.Conditions) {
		return true
	}
	for i, c := range after.Status.Conditions {
		if old := before.Status.Conditions[i]; old.Type != c.Type || old.Status != c.Status {
			return true
		}
	}
	return false
}

func (c *Controller) poolsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	pools := &v1.NodePoolList{}
	if err := c.Client.List(ctx, pools); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, np := range pools.Items {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&np)})
		}
	}
	return out
}

// Reconcile recomputes one NodePool's status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := np.DeepCopy()
	claims := &v1.NodeClaimList{}
	// Read only, and listed on each of the many events that lead here:
	// the cache's objects themselves, not copies.
	if err := c.Client.List(ctx, claims, client.MatchingLabels{v1.LabelNodePool: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes, client.MatchingLabels{v1.LabelNodePool: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	resources := corev1.ResourceList{"nodes": *resource.NewQuantity(0, resource.DecimalSI)}
	for k, q := range state.Usage(listing.Pointers(claims.Items), listing.Pointers(nodes.Items))[np.Name] {
		resources[k] = q
	}
	np.Status.Resources = resources
	c.Metrics.NodePoolResources(np.Name, quantities(resources), quantities(np.Spec.Limits))
	count := resources["nodes"]
	np.Status.Nodes = count.Value()
	now := metav1.NewTime(c.Clock.Now())
	class, classReady, classMsg, err := c.nodeClassReady(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}
	setCondition(np, now, v1.ConditionNodeClassReady, classReady, v1.ReasonNodeClassNotReady, classMsg)
	invalid := np.RuntimeValidate()
	invalidMsg := ""
	if invalid != nil {
		invalidMsg = invalid.Error()
	}
	setCondition(np, now, v1.ConditionValidationSucceeded, invalid == nil, v1.ReasonValidationFailed, invalidMsg)
	c.registrationHealth(np, now)
	health := nodepoolhealth.Assess(listing.Pointers(claims.Items), listing.Pointers(nodes.Items), nodepoolhealth.DefaultTolerations().Policies(), now.Time)[np.Name]
	repairHeld, heldWhy := health != nil && health.Held(), ""
	if repairHeld {
		heldWhy = health.HeldReason()
	}
	setCondition(np, now, v1.ConditionNodeRepairAllowed, !repairHeld, v1.ReasonTooManyUnhealthyNodes, heldWhy)
	c.driftHealth(np, class, now)
	rolling := c.rollout(np, listing.Pointers(claims.Items), listing.Pointers(nodes.Items), now)
	if invalid != nil {
		setCondition(np, now, v1.ConditionReady, false, v1.ReasonValidationFailed, invalidMsg)
	} else {
		setCondition(np, now, v1.ConditionReady, classReady, v1.ReasonNodeClassNotReady, classMsg)
	}
	if class != nil {
		np.Status.NodeClassObservedGeneration = class.Generation
	}
	// An unchanged status is not written: a patch would still cost the
	// API server a request for each of the many events that lead here.
	if !equality.Semantic.DeepEqual(before.Status, np.Status) {
		if err := c.Client.Status().Patch(ctx, np, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("patching the status of NodePool %s: %w", np.Name, err)
		}
	}
	if rolling {
		// Budget windows open and close with time, not with objects.
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	return reconcile.Result{}, nil
}

// registrationHealth shows what the lifecycle recorded: True once a node
// registered, False with the likely cause and the backoff after
// timeouts, and the backoff itself in status.registrationBackoff. Without
// a record (nothing happened since the controller started) the backoff in
// status is taken up again, so a restart or a new leader backs off as the
// last one did and says so; without either the condition stays as it
// was, True when new.
func (c *Controller) registrationHealth(np *v1.NodePool, now metav1.Time) {
	reg, known := c.Registrations.Get(np.Name)
	if !known && np.Status.RegistrationBackoff != nil {
		c.Registrations.RestoreFrom(np)
		reg, known = c.Registrations.Get(np.Name)
	}
	if !known {
		if meta.FindStatusCondition(np.Status.Conditions, v1.ConditionNodeRegistrationHealthy) == nil {
			setCondition(np, now, v1.ConditionNodeRegistrationHealthy, true, "", "")
		}
		return
	}
	if reg.Failures == 0 {
		np.Status.RegistrationBackoff = nil
		setCondition(np, now, v1.ConditionNodeRegistrationHealthy, true, "", "")
		return
	}
	until := reg.Last.Add(nodepoolhealth.Backoff(reg.Failures))
	np.Status.RegistrationBackoff = &v1.RegistrationBackoff{Failures: int32(reg.Failures), //nolint:gosec // a count of timeouts
		LastTimeout: metav1.NewTime(reg.Last), Until: metav1.NewTime(until), Cause: reg.Cause}
	setCondition(np, now, v1.ConditionNodeRegistrationHealthy, false, v1.ReasonRegistrationTimeout,
		fmt.Sprintf("%d NodeClaim(s) in a row timed out before their node registered; launches back off until %s. Most likely cause: %s",
			reg.Failures, until.UTC().Format(time.RFC3339), reg.Cause))
}

// nodeClassReady reads the NodePool's node class: whether it is ready,
// and why not.
func (c *Controller) nodeClassReady(ctx context.Context, np *v1.NodePool) (*cloudprovider.NodeClass, bool, string, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return nil, false, "spec.template.spec.nodeClassRef is not set", nil
	}
	class, err := c.NodeClasses.NodeClass(ctx, ref.Name)
	switch {
	case err != nil:
		return nil, false, "", fmt.Errorf("NodePool %s: %w", np.Name, err)
	case class == nil:
		return nil, false, fmt.Sprintf("%s %s does not exist", ref.Kind, ref.Name), nil
	case class.NotReady != nil:
		return class, false, fmt.Sprintf("%s %s %s", ref.Kind, ref.Name, class.NotReady.Message), nil
	}
	return class, true, "", nil
}

func setCondition(np *v1.NodePool, now metav1.Time, condType string, ok bool, reason, message string) {
	c := metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: condType, ObservedGeneration: np.Generation, LastTransitionTime: now}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, message
	}
	conditions.Set(&np.Status.Conditions, c)
}

// quantities are resources as numbers, for metrics.
func quantities(list corev1.ResourceList) map[string]float64 {
	out := make(map[string]float64, len(list))
	for name, q := range list {
		out[string(name)] = q.AsApproximateFloat64()
	}
	return out
}
