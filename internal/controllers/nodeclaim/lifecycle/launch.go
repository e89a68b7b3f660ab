package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// launch creates the instance once. Capacity and node class problems
// delete the NodeClaim so the provisioner can try elsewhere; other errors
// are retried.
func (c *Controller) launch(ctx context.Context, nc *v1.NodeClaim, now metav1.Time) (bool, error) {
	if nc.Status.ProviderID != "" {
		c.launched.Delete(nc.UID)
		return false, nil
	}
	var inst *cloudprovider.Instance
	var err error
	if known, ok := c.launched.Load(nc.UID); ok {
		inst = known.(*cloudprovider.Instance)
	} else if inst, err = c.Cloud.Create(ctx, nc); err == nil {
		c.launched.Store(nc.UID, inst)
		if inst.SubnetID != "" {
			// The launch answered where the instance runs and that it
			// is nodewright's: registration and drift need not ask.
			c.instances.remember(inst)
		}
	}
	switch {
	case cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsNodeClassNotReady(err):
		reason := v1.ReasonInsufficientCapacity
		if cloudprovider.IsNodeClassNotReady(err) {
			reason = v1.ReasonNodeClassNotReady
		}
		c.Recorder.Eventf(nc, corev1.EventTypeWarning, reason, "deleting NodeClaim %s, it cannot be launched: %v", nc.Name, err)
		logf.FromContext(ctx).Info("deleting NodeClaim, it cannot be launched", "reason", reason, "error", err.Error())
		return true, client.IgnoreNotFound(c.Client.Delete(ctx, nc))
	case cloudprovider.IsRetryLater(err):
		// Nothing was sent: not a failure, but the NodeClaim says why it
		// is not launched yet (one write: the message stays the same
		// while it waits).
		set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionLaunched, metav1.ConditionUnknown, v1.ReasonLaunchWaiting, err.Error())
		return false, err
	case err != nil:
		set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionLaunched, metav1.ConditionUnknown, v1.ReasonLaunchFailed, err.Error())
		return false, fmt.Errorf("launching NodeClaim %s: %w", nc.Name, err)
	}
	nc.Status.ProviderID, nc.Status.ImageID = inst.ProviderID, inst.ImageID
	nc.Status.Capacity, nc.Status.Allocatable = inst.Capacity, inst.Allocatable
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range inst.Labels {
		nc.Labels[k] = v
	}
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionLaunched, metav1.ConditionTrue, v1.ReasonLaunched,
		fmt.Sprintf("%s %s in %s", inst.CapacityType, inst.InstanceType, inst.Zone))
	logf.FromContext(ctx).Info("launched NodeClaim", "providerID", inst.ProviderID, "instanceType", inst.InstanceType,
		"zone", inst.Zone, "capacityType", inst.CapacityType, "imageID", inst.ImageID)
	return false, nil
}
