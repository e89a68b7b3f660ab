// Package termination ends a node nodewright launched once its NodeClaim
// or Node is deleted: it fences the node (karpenter.sh/disrupted:
// NoSchedule), drains it through the Eviction API (internal/drain) up to
// the NodeClaim's deadline, terminates the instance, and removes the
// finalizers.
package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/listing"
)

// InstanceDeleter terminates instances.
type InstanceDeleter interface {
	// Delete terminates the instance; it returns a NotFound error once the
	// instance is gone.
	Delete(ctx context.Context, providerID string, holder cloudprovider.Holder) error
}

// Controller owns the termination finalizer of nodewright's nodes: a
// deleted node — by its NodeClaim's finalizer, or by `kubectl delete
// node` — is drained, its NodeClaim deleted, its instance terminated,
// and only then released, so its kubelet cannot register it again.
type Controller struct {
	Client client.Client
	// APIReader reads past the cache: the node is read afresh before its
	// finalizer is removed, so one another controller added after the
	// cache's copy is kept. The Client when nil.
	APIReader client.Reader
	Cloud     InstanceDeleter
	Drainer   *drain.Drainer
	Recorder  record.EventRecorder
	Clock     clock.PassiveClock
	// Poll is how soon a node still draining or terminating is looked at
	// again.
	Poll time.Duration
}

// SetupWithManager watches nodes that carry the finalizer.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("node.termination").
		For(&corev1.Node{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return controllerutil.ContainsFinalizer(o, v1.TerminationFinalizer) && !o.GetDeletionTimestamp().IsZero()
		}))).
		Complete(c)
}

// Reconcile drains and terminates one deleted node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	return c.terminate(ctx, node)
}

// terminate drains the node, deletes its NodeClaim, terminates its
// instance and releases it, coming back while the drain or the instance
// is not done.
func (c *Controller) terminate(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	nc, err := c.claimOf(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	drained, err := c.drain(ctx, node, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !drained {
		return reconcile.Result{RequeueAfter: c.Poll}, nil
	}
	if err := c.deleteClaim(ctx, node, nc); err != nil {
		return reconcile.Result{}, err
	}
	gone, err := c.instanceGone(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !gone {
		return reconcile.Result{RequeueAfter: c.Poll}, nil // still terminating
	}
	return c.release(ctx, node)
}

// drain drains the node on behalf of its NodeClaim, which then gets the
// events and whose terminationGracePeriod sets the deadline; on its own
// behalf when it has none.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim) (bool, error) {
	var owner client.Object = node
	if nc != nil {
		owner = nc
	}
	// Nothing new lands on the node while it drains.
	if err := intent.SetDisrupted(ctx, c.Client, node, true); err != nil {
		return false, err
	}
	return c.Drainer.Drain(ctx, node, owner, deadline(node, nc), drain.Options{Fence: v1.TaintKeyDisrupted})
}

// deleteClaim deletes the NodeClaim of a drained node deleted on its own,
// so the NodeClaim does not outlive it.
func (c *Controller) deleteClaim(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim) error {
	if nc == nil || !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := c.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting NodeClaim %s of deleted node %s: %w", nc.Name, node.Name, err)
	}
	c.Recorder.Eventf(nc, corev1.EventTypeNormal, v1.ReasonNodeDeleted, "node %s was deleted and drained; deleting its NodeClaim", node.Name)
	logf.FromContext(ctx).Info("deleted the NodeClaim of a deleted node", "NodeClaim", nc.Name)
	return nil
}

// instanceGone terminates the node's instance and reports whether it is
// gone. An instance nodewright did not launch is left running, reported,
// and counts as gone.
func (c *Controller) instanceGone(ctx context.Context, node *corev1.Node) (bool, error) {
	if node.Spec.ProviderID == "" {
		return true, nil
	}
	// The node's own provider ID is its instance (its kubelet set it):
	// terminated for no NodeClaim, whatever a NodeClaim records.
	err := c.Cloud.Delete(ctx, node.Spec.ProviderID, cloudprovider.Holder{})
	switch {
	case err == nil:
		return false, nil
	case cloudprovider.IsNotOwned(err):
		c.Recorder.Eventf(node, corev1.EventTypeWarning, v1.ReasonInstanceNotOwned, "node %s runs on an instance nodewright did not launch: %v; terminate it yourself if it should go", node.Name, err)
	case !cloudprovider.IsNotFound(err):
		return false, fmt.Errorf("terminating the instance of node %s: %w", node.Name, err)
	}
	return true, nil
}

// release removes the node's finalizer once its instance is gone, so its
// kubelet cannot register it again. The node is read afresh and written
// with its resourceVersion, so the other finalizers are written as the API
// server has them, not as the cache's copy had them (a finalizer removed
// since would be added back to a deleted node, which is refused); a
// conflict reads it again.
func (c *Controller) release(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	reader := c.APIReader
	if reader == nil {
		reader = c.Client
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := &corev1.Node{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
			return err
		}
		// A node of the same name registered since (EC2 gives a new
		// instance the old one's address) is not this one to release.
		if fresh.UID != node.UID || fresh.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(fresh, v1.TerminationFinalizer) {
			return nil
		}
		before := fresh.DeepCopy()
		controllerutil.RemoveFinalizer(fresh, v1.TerminationFinalizer)
		return c.Client.Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("releasing node %s: %w", node.Name, err)
	}
	logf.FromContext(ctx).Info("terminated node", "Node", node.Name, "providerID", node.Spec.ProviderID)
	return reconcile.Result{}, nil
}

// claimOf finds the node's NodeClaim, nil when it has none.
func (c *Controller) claimOf(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims, client.MatchingFields{listing.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("finding the NodeClaim of node %s: %w", node.Name, err)
	}
	if len(claims.Items) == 0 {
		return nil, nil
	}
	return &claims.Items[0], nil
}

// deadline is when the drain stops waiting for pods: the NodeClaim's
// terminationGracePeriod after its deletion (or the node's, whichever
// came first), or its karpenter.sh/nodeclaim-termination-timestamp when
// that is sooner; zero without either.
func deadline(node *corev1.Node, nc *v1.NodeClaim) time.Time {
	if nc == nil {
		return time.Time{}
	}
	var out time.Time
	if nc.Spec.TerminationGracePeriod != nil {
		start := node.DeletionTimestamp.Time
		if !nc.DeletionTimestamp.IsZero() && nc.DeletionTimestamp.Before(node.DeletionTimestamp) {
			start = nc.DeletionTimestamp.Time
		}
		out = start.Add(nc.Spec.TerminationGracePeriod.Duration)
	}
	if at, err := time.Parse(time.RFC3339, nc.Annotations[v1.AnnotationTerminationTimestamp]); err == nil && (out.IsZero() || at.Before(out)) {
		out = at
	}
	return out
}
