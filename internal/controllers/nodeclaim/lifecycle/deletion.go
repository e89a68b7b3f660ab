package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// finalize deletes the NodeClaim's node and waits until it is gone (the
// node's own finalizer drains it, PodDisruptionBudgets holding until the
// terminationGracePeriod deadline, and terminates the instance), then
// deletes the instance until it is gone, then releases the NodeClaim.
func (c *Controller) finalize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	if known, ok := c.launched.Load(nc.UID); ok && nc.Status.ProviderID == "" {
		// Launched, but deleted before its instance was recorded.
		nc = nc.DeepCopy()
		nc.Status.ProviderID = known.(*cloudprovider.Instance).ProviderID
	}
	if nc.Status.ProviderID == "" {
		return c.release(ctx, nc)
	}
	return c.terminate(ctx, nc)
}

// terminate deletes the nodes of a launched NodeClaim and waits until they
// are gone, then its instance; a NodeClaim whose instance nodewright did
// not launch is released with its node and instance left alone.
func (c *Controller) terminate(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes, client.MatchingFields{providerIDField: nc.Status.ProviderID}); err != nil {
		return reconcile.Result{}, err
	}
	if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.DeletionTimestamp.IsZero() }) {
		// Before a node is deleted: is it on an instance nodewright
		// launched? Asked of the cloud now, not of what it said earlier
		// (deleting the instance checks again).
		c.instances.forget(nc.Status.ProviderID)
		inst, err := c.foreignInstance(ctx, nc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if inst != nil {
			c.Recorder.Eventf(nc, corev1.EventTypeWarning, v1.ReasonInstanceNotOwned, "NodeClaim %s points at instance %s, which nodewright did not launch; its node and instance are left alone", nc.Name, inst.InstanceID)
			return c.release(ctx, nc)
		}
	}
	if err := c.deleteNodes(ctx, nodes.Items); err != nil {
		return reconcile.Result{}, err
	}
	if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return controllerutil.ContainsFinalizer(&n, v1.TerminationFinalizer) }) {
		// The termination controller drains the node and terminates
		// the instance; the node's deletion brings the NodeClaim back.
		return reconcile.Result{RequeueAfter: c.Options.Poll}, nil
	}
	// No node to drain: none, or only nodes this NodeClaim never took
	// over (its kubelet registered before the NodeClaim recorded the
	// instance, or before the NodeClaim was deleted), which nothing
	// drains and whose kubelet registers again while the instance runs.
	return c.terminateInstance(ctx, nc)
}

// deleteNodes deletes the nodes not being deleted yet; the termination
// controller drains each and terminates its instance.
func (c *Controller) deleteNodes(ctx context.Context, nodes []corev1.Node) error {
	for i := range nodes {
		node := &nodes[i]
		if !node.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", describeNode(node), err)
		}
		logf.FromContext(ctx).Info("deleted node", "Node", node.Name)
	}
	return nil
}

// terminateInstance terminates the NodeClaim's instance, coming back until
// it is gone, then releases the NodeClaim; an instance nodewright did not
// launch is reported and left running.
func (c *Controller) terminateInstance(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	err := c.Cloud.Delete(ctx, nc.Status.ProviderID, cloudprovider.HolderOf(nc.Name, nc.Annotations))
	switch {
	case err == nil:
		return reconcile.Result{RequeueAfter: c.Options.Poll}, nil // still terminating
	case cloudprovider.IsNotOwned(err):
		c.Recorder.Eventf(nc, corev1.EventTypeWarning, v1.ReasonInstanceNotOwned, "NodeClaim %s points at an instance nodewright did not launch: %v; terminate it yourself if it should go", nc.Name, err)
	case !cloudprovider.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("terminating the instance of NodeClaim %s: %w", nc.Name, err)
	}
	return c.release(ctx, nc)
}

// release removes the NodeClaim's finalizer: its instance is gone, or not
// nodewright's.
func (c *Controller) release(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	before := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	if err := c.Client.Patch(ctx, nc, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	c.launched.Delete(nc.UID)
	c.wrote.Delete(nc.UID)
	c.instances.forget(nc.Status.ProviderID)
	var took time.Duration
	if nc.DeletionTimestamp != nil {
		took = c.Clock.Since(nc.DeletionTimestamp.Time)
	}
	c.Metrics.NodeClaimTerminated(nc.Labels[v1.LabelNodePool], nc.Labels[v1.LabelCapacityType], nc.Labels[corev1.LabelTopologyZone], nc.Status.NodeName != "", took)
	logf.FromContext(ctx).Info("terminated NodeClaim", "providerID", nc.Status.ProviderID)
	return reconcile.Result{}, nil
}
