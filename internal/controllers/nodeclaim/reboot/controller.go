// Package reboot carries out the reboots node repair asks for (a
// NodeClaim's Rebooting condition True with reason RebootRequested): it
// fences the node (karpenter.sh/rebooting:NoSchedule), drains it through
// the Eviction API up to the bound the request carries, records the boot
// ID, reboots the instance, and waits for a new boot ID and Ready. A
// reboot that cannot be issued, or after which the node does not come
// back in time, fails, and the NodeClaim is deleted: the node is replaced.
//
// The request is node repair's (intent.RequestReboot); this controller
// owns the condition from then on, and the taint and the pre-boot ID.
package reboot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/metrics"
)

// Rebooter reboots the instance of a provider ID nodewright launched.
type Rebooter interface {
	Reboot(ctx context.Context, providerID string) error
}

// MinDrain is the least a drain before a reboot lasts, however short its
// bound: pods get a chance to be evicted.
const MinDrain = 5 * time.Second

// Controller reboots the nodes node repair asks it to.
type Controller struct {
	Client   client.Client
	Cloud    Rebooter
	Drainer  *drain.Drainer
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// Poll is how often a reboot in progress is looked at again.
	Poll time.Duration
	// IssueWithin is how long a reboot that cannot be issued (the cloud
	// errs) is retried after it was requested.
	IssueWithin time.Duration
	// Timeout is how long after the reboot was issued the node has to
	// boot again and be Ready.
	Timeout time.Duration
	// Concurrency is how many NodeClaims are looked at at once.
	Concurrency int
	Metrics     *metrics.Metrics

	mu sync.Mutex
	// requested is when each reboot in progress was requested, by
	// NodeClaim UID (for its duration once it ends).
	requested map[types.UID]time.Time
	// issued are the reboots this process issued, by NodeClaim and the
	// boot ID it rebooted from, until a read shows them recorded: a
	// condition write that fails after the reboot (a conflict on a busy
	// API server), or a cache that does not show the write yet, does not
	// reboot the instance again.
	issued sync.Map
}

// Defaults are the reference's timing.
func Defaults() (poll, issueWithin, timeout time.Duration) {
	return 15 * time.Second, 5 * time.Minute, 20 * time.Minute
}

// SetupWithManager watches NodeClaims that are rebooting.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	rebooting := predicate.NewPredicateFuncs(func(o client.Object) bool {
		nc, ok := o.(*v1.NodeClaim)
		return ok && meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionRebooting)
	})
	return ctrl.NewControllerManagedBy(mgr).Named("reboot").
		For(&v1.NodeClaim{}, builder.WithPredicates(rebooting, predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(c.Concurrency, 1)}).
		Complete(c)
}

// Reconcile moves a reboot along.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
	if cond == nil || cond.Status != metav1.ConditionTrue || !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeOf(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		return reconcile.Result{}, c.fail(ctx, nc, nil, metrics.RebootProviderError, "its node is gone", true)
	}
	if cond.Reason == v1.ReasonRebootRequested {
		c.remember(nc.UID, cond.LastTransitionTime.Time)
	}
	if cond.Reason == v1.ReasonRebootIssued {
		return c.observe(ctx, nc, node, cond)
	}
	return c.issue(ctx, nc, node, cond)
}

// issue fences and drains the node, records its boot ID and reboots its
// instance.
func (c *Controller) issue(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, cond *metav1.Condition) (reconcile.Result, error) {
	requested := cond.LastTransitionTime.Time
	deadline, err := drainDeadline(nc, requested)
	if err != nil {
		// The request itself is wrong: the node is neither rebooted nor
		// replaced for it.
		return reconcile.Result{}, c.fail(ctx, nc, node, metrics.RebootInvalidRequest, err.Error(), false)
	}
	if err := intent.SetRebooting(ctx, c.Client, node, true); err != nil {
		return reconcile.Result{}, err
	}
	done, err := c.Drainer.Drain(ctx, node, nc, deadline, drain.Options{KeepDaemonSets: true, LeaveAtDeadline: true, Fence: v1.TaintKeyRebooting})
	if err != nil || !done {
		return reconcile.Result{RequeueAfter: c.Poll}, err
	}
	pre, recorded := nc.Annotations[v1.AnnotationRebootPreBootID]
	if !recorded {
		if err := c.annotate(ctx, nc, node.Status.NodeInfo.BootID); err != nil {
			return reconcile.Result{}, err
		}
		pre = node.Status.NodeInfo.BootID
	}
	// A boot ID that changed since it was recorded: the reboot was issued
	// before a restart of nodewright, and is not issued again.
	key := string(nc.UID) + "/" + pre
	if _, done := c.issued.Load(key); !done && (!recorded || node.Status.NodeInfo.BootID == pre) {
		if err := c.Cloud.Reboot(ctx, nc.Status.ProviderID); err != nil {
			return c.notIssued(ctx, nc, node, requested, err)
		}
		c.issued.Store(key, true)
	}
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, v1.ReasonNodeRebooting, "drained node %s and rebooted its instance; waiting for it to boot again and be Ready", node.Name)
	logf.FromContext(ctx).Info("rebooted an unhealthy node", "Node", node.Name, "NodeClaim", nc.Name, "bootID", pre)
	if err := c.setCondition(ctx, nc, metav1.ConditionTrue, v1.ReasonRebootIssued,
		fmt.Sprintf("instance rebooted at %s; waiting for a boot ID other than %q and Ready", c.Clock.Now().UTC().Format(time.RFC3339), pre)); err != nil {
		return reconcile.Result{}, err
	}
	// Remembered until a read shows the condition (observe): a cache that
	// lags the write still shows the request.
	return reconcile.Result{RequeueAfter: c.Poll}, nil
}

// notIssued retries a reboot the cloud refused, until IssueWithin after
// the request; a node whose instance is gone or not nodewright's fails
// at once.
func (c *Controller) notIssued(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, requested time.Time, err error) (reconcile.Result, error) {
	var notOwned *cloudprovider.NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		return reconcile.Result{}, c.fail(ctx, nc, node, metrics.RebootProviderError, "rebooting its instance: "+err.Error(), false)
	case cloudprovider.IsNotFound(err) || c.Clock.Since(requested) > c.IssueWithin:
		return reconcile.Result{}, c.fail(ctx, nc, node, metrics.RebootProviderError, "rebooting its instance: "+err.Error(), true)
	}
	logf.FromContext(ctx).Error(err, "rebooting an instance; retrying", "NodeClaim", nc.Name)
	return reconcile.Result{RequeueAfter: c.Poll}, nil
}

// observe waits for the node to boot again (a new boot ID: the fence
// comes off) and be Ready (the reboot succeeded), or for the timeout.
func (c *Controller) observe(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, cond *metav1.Condition) (reconcile.Result, error) {
	pre, now := nc.Annotations[v1.AnnotationRebootPreBootID], node.Status.NodeInfo.BootID
	// The condition records the reboot from now on.
	c.issued.Delete(string(nc.UID) + "/" + pre)
	booted := now != "" && now != pre
	if booted {
		if err := intent.SetRebooting(ctx, c.Client, node, false); err != nil {
			return reconcile.Result{}, err
		}
		if ready(node) {
			if err := c.annotate(ctx, nc, ""); err != nil {
				return reconcile.Result{}, err
			}
			c.Recorder.Eventf(nc, corev1.EventTypeNormal, v1.ReasonNodeRebooted, "node %s booted again (boot ID %s) and is Ready", node.Name, now)
			issued := cond.LastTransitionTime.Time
			c.Metrics.Reboot(metrics.RebootSucceeded, c.Clock.Since(c.forget(nc.UID, issued)), c.Clock.Since(issued))
			return reconcile.Result{}, c.setCondition(ctx, nc, metav1.ConditionFalse, v1.ReasonRebootSucceeded,
				fmt.Sprintf("node %s booted again (boot ID %q, was %q) and is Ready", node.Name, now, pre))
		}
	}
	if c.Clock.Since(cond.LastTransitionTime.Time) > c.Timeout {
		what := "did not boot again"
		if booted {
			what = "booted again but did not become Ready"
		}
		return reconcile.Result{}, c.fail(ctx, nc, node, metrics.RebootRecoveryTimeout, fmt.Sprintf("node %s %s within %s of the reboot", node.Name, what, c.Timeout), true)
	}
	return reconcile.Result{RequeueAfter: c.Poll}, nil
}

// fail ends a reboot that did not work: the fence comes off, Rebooting
// turns False (RebootFailed), and unless keep the NodeClaim is deleted,
// so the node is replaced.
func (c *Controller) fail(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, result, why string, replace bool) error {
	if err := intent.SetRebooting(ctx, c.Client, node, false); err != nil {
		return err
	}
	c.Metrics.Reboot(result, c.Clock.Since(c.forget(nc.UID, c.Clock.Now())), 0)
	if err := c.annotate(ctx, nc, ""); err != nil {
		return err
	}
	msg := "the reboot failed: " + why
	if replace {
		msg += "; the node is replaced"
	}
	c.Recorder.Event(nc, corev1.EventTypeWarning, v1.ReasonNodeRebootFailed, msg)
	if err := c.setCondition(ctx, nc, metav1.ConditionFalse, v1.ReasonRebootFailed, msg); err != nil || !replace {
		return err
	}
	return client.IgnoreNotFound(c.Client.Delete(ctx, nc))
}

// remember notes when a reboot was requested.
func (c *Controller) remember(uid types.UID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requested == nil {
		c.requested = map[types.UID]time.Time{}
	}
	if _, ok := c.requested[uid]; !ok {
		c.requested[uid] = at
	}
}

// forget returns when a reboot was requested (or, not known since a
// restart, otherwise) and forgets it.
func (c *Controller) forget(uid types.UID, otherwise time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.requested[uid]
	delete(c.requested, uid)
	if !ok {
		return otherwise
	}
	return at
}

// drainDeadline is when the drain before the reboot stops waiting: the
// request's bound after it was made (at least MinDrain); zero (no
// deadline) without a bound.
func drainDeadline(nc *v1.NodeClaim, requested time.Time) (time.Time, error) {
	value, ok := nc.Annotations[v1.AnnotationRebootTerminationGracePeriod]
	if !ok {
		return time.Time{}, nil
	}
	bound, err := time.ParseDuration(value)
	if err != nil || bound < 0 {
		return time.Time{}, fmt.Errorf("annotation %s=%q is not a duration of zero or more (such as 5m)", v1.AnnotationRebootTerminationGracePeriod, value)
	}
	return requested.Add(max(bound, MinDrain)), nil
}

// annotate records the node's boot ID before the reboot, or with "" removes
// it and the drain bound once the reboot is over.
func (c *Controller) annotate(ctx context.Context, nc *v1.NodeClaim, bootID string) error {
	before := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	if bootID != "" {
		nc.Annotations[v1.AnnotationRebootPreBootID] = bootID
	} else {
		delete(nc.Annotations, v1.AnnotationRebootPreBootID)
		delete(nc.Annotations, v1.AnnotationRebootTerminationGracePeriod)
	}
	return c.Client.Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// setCondition writes the Rebooting condition.
func (c *Controller) setCondition(ctx context.Context, nc *v1.NodeClaim, status metav1.ConditionStatus, reason, msg string) error {
	before := nc.DeepCopy()
	// Each step of a reboot is a transition: its time starts the step's
	// clock (the timeout runs from the reboot, not the request).
	nc.Status.Conditions = slices.DeleteFunc(nc.Status.Conditions, func(c metav1.Condition) bool { return c.Type == v1.ConditionRebooting })
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(c.Clock.Now())})
	return client.IgnoreNotFound(c.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// nodeOf is the NodeClaim's node (status.nodeName, with its provider ID).
func (c *Controller) nodeOf(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if node.Spec.ProviderID != nc.Status.ProviderID || !node.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return node, nil
}

func ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
