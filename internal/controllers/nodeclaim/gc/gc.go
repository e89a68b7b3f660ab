// Package gc collects what a launch left behind: instances of nodewright's
// that no NodeClaim records (a launch batch whose NodeClaims were deleted
// before their launch, a lost launch record) once no NodeClaim can still
// take them, and NodeClaims whose instance is gone.
package gc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/loop"
)

// InstanceLister lists the cluster's instances, finds and deletes them,
// and tags a launch batch's instance with the NodeClaim that recorded it
// (a cloudprovider.RetryLaterError when it cannot be sent before ctx's
// deadline).
type InstanceLister interface {
	List(ctx context.Context) ([]*cloudprovider.Instance, error)
	Get(ctx context.Context, providerID string) (*cloudprovider.Instance, error)
	Delete(ctx context.Context, providerID string) error
	TagHolder(ctx context.Context, inst *cloudprovider.Instance, claim string) error
}

// GarbageCollector keeps instances and NodeClaims in step: it removes
// what lost its counterpart — instances of this cluster without a
// NodeClaim (after a grace period, so a launch that has not recorded its
// provider ID yet is spared), and NodeClaims whose instance is gone — and
// tags each instance of a launch batch with the NodeClaim that recorded
// it (its launch returns before the tag is written).
type GarbageCollector struct {
	Client   client.Client
	Cloud    InstanceLister
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Interval time.Duration
	Grace    time.Duration
	Log      logr.Logger
}

// Start collects every Interval until ctx ends.
func (g *GarbageCollector) Start(ctx context.Context) error {
	loop.Every(ctx, g.Clock, g.Interval, false, func(ctx context.Context) {
		if err := g.Collect(ctx); err != nil && ctx.Err() == nil {
			g.Log.Error(err, "garbage collection")
		}
	})
	return nil
}

// Collect makes one pass: instances without a NodeClaim are terminated,
// NodeClaims without an instance deleted, launch batches' instances
// tagged with their NodeClaims.
func (g *GarbageCollector) Collect(ctx context.Context) error {
	// The cache's own objects, not copies (thousands of NodeClaims each
	// pass): they are read, and what is deleted or told is a copy.
	claims := &v1.NodeClaimList{}
	if err := g.Client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	instances, err := g.Cloud.List(ctx)
	if err != nil {
		return err
	}
	if err := g.orphanedInstances(ctx, claims.Items, instances); err != nil {
		return err
	}
	if err := g.orphanedClaims(ctx, claims.Items, instances); err != nil {
		return err
	}
	return g.tagHolders(ctx, claims.Items, instances)
}

// tagHolders tags the instances of launch batches that a NodeClaim
// recorded but whose tag does not name it yet. A pass spends at most half
// an interval waiting for CreateTags' pace; the next pass tags the rest.
func (g *GarbageCollector) tagHolders(ctx context.Context, claims []v1.NodeClaim, instances []*cloudprovider.Instance) error {
	holders := map[string]string{}
	for _, nc := range claims {
		if nc.Status.ProviderID != "" {
			holders[nc.Status.ProviderID] = nc.Name
		}
	}
	budget := ctx
	if g.Interval > 0 {
		var cancel context.CancelFunc
		budget, cancel = context.WithTimeout(ctx, g.Interval/2)
		defer cancel()
	}
	for _, inst := range instances {
		claim := holders[inst.ProviderID]
		if inst.LaunchBatch == "" || inst.NodeClaim != "" || claim == "" {
			continue
		}
		err := g.Cloud.TagHolder(budget, inst, claim)
		if cloudprovider.IsRetryLater(err) || (err != nil && budget.Err() != nil && ctx.Err() == nil) {
			return nil // the pass's time for tags is spent: the next pass tags the rest
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// orphanedInstances terminates the instances no NodeClaim records, once
// past the grace period.
func (g *GarbageCollector) orphanedInstances(ctx context.Context, claims []v1.NodeClaim, instances []*cloudprovider.Instance) error {
	known := make(map[string]bool, len(claims))
	for _, nc := range claims {
		known[nc.Status.ProviderID] = true
	}
	for _, inst := range instances {
		if known[inst.ProviderID] || g.Clock.Since(inst.LaunchTime) < g.Grace {
			continue
		}
		owned, err := g.claimedSince(ctx, inst)
		if err != nil {
			return err
		}
		if owned {
			continue
		}
		g.Log.Info("terminating an instance without a NodeClaim", "instance", inst.InstanceID, "nodeClaim", inst.NodeClaim, "launched", inst.LaunchTime)
		if err := g.Cloud.Delete(ctx, inst.ProviderID); err != nil && !cloudprovider.IsNotFound(err) && !cloudprovider.IsNotOwned(err) {
			return fmt.Errorf("terminating orphaned instance %s: %w", inst.InstanceID, err)
		}
	}
	return nil
}

// claimedSince looks again whether a NodeClaim has the instance: a launch
// records its provider ID right after CreateFleet, so one written since
// the list is not missed. An instance of a launch batch is kept while a
// NodeClaim of the batch has no instance yet (it may be the one to take
// it).
func (g *GarbageCollector) claimedSince(ctx context.Context, inst *cloudprovider.Instance) (bool, error) {
	fresh := &v1.NodeClaimList{}
	if err := g.Client.List(ctx, fresh, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	return slices.ContainsFunc(fresh.Items, func(nc v1.NodeClaim) bool {
		if nc.Status.ProviderID == inst.ProviderID {
			return true
		}
		if nc.Status.ProviderID != "" {
			return false
		}
		batch, _, _ := cloudprovider.LaunchBatchOf(nc.Name, nc.Annotations)
		return (inst.NodeClaim != "" && nc.Name == inst.NodeClaim) || (inst.LaunchBatch != "" && batch.ID == inst.LaunchBatch)
	}), nil
}

// orphanedClaims deletes the launched NodeClaims whose instance no longer
// exists.
func (g *GarbageCollector) orphanedClaims(ctx context.Context, claims []v1.NodeClaim, instances []*cloudprovider.Instance) error {
	listed := make(map[string]bool, len(instances))
	for _, inst := range instances {
		listed[inst.ProviderID] = true
	}
	for i := range claims {
		nc := &claims[i]
		if nc.Status.ProviderID == "" || !nc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionLaunched) || listed[nc.Status.ProviderID] {
			continue
		}
		// Not in the list: make sure with a call of its own (a listing
		// may lag behind a launch).
		if _, err := g.Cloud.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNotFound(err) {
			continue
		}
		nc = nc.DeepCopy()
		g.Recorder.Eventf(nc, corev1.EventTypeWarning, v1.ReasonInstanceTerminated, "the instance of NodeClaim %s (%s) no longer exists; deleting the NodeClaim", nc.Name, nc.Status.ProviderID)
		if err := client.IgnoreNotFound(g.Client.Delete(ctx, nc)); err != nil {
			return err
		}
	}
	return nil
}
