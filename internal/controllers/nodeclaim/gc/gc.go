// Package gc collects what a launch left behind: instances of nodewright's
// that no NodeClaim records (a launch batch whose NodeClaims were deleted
// before their launch, a lost launch record) once no NodeClaim can still
// take them, and NodeClaims whose instance is gone.
package gc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	Delete(ctx context.Context, providerID string, holder cloudprovider.Holder) error
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
	// Grace is how old an instance without a NodeClaim must be to be
	// terminated, and how long a registered NodeClaim's instance must be
	// missing (over ConfirmLooks passes) for the NodeClaim to be deleted.
	Grace time.Duration
	Log   logr.Logger

	mu     sync.Mutex
	missed map[string]missing // by provider ID
	// unclaimed are the instances no NodeClaim records, by provider ID,
	// with when a pass first saw them so.
	unclaimed map[string]time.Time
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
// past the grace period by their launch time and since this controller
// first saw them without a NodeClaim.
func (g *GarbageCollector) orphanedInstances(ctx context.Context, claims []v1.NodeClaim, instances []*cloudprovider.Instance) error {
	known := make(map[string]bool, len(claims))
	for _, nc := range claims {
		known[nc.Status.ProviderID] = true
	}
	now := g.Clock.Now()
	g.mu.Lock()
	if g.unclaimed == nil {
		g.unclaimed = map[string]time.Time{}
	}
	listed := make(map[string]bool, len(instances))
	for _, inst := range instances {
		listed[inst.ProviderID] = true
		if _, seen := g.unclaimed[inst.ProviderID]; !seen && !known[inst.ProviderID] {
			g.unclaimed[inst.ProviderID] = now
		}
	}
	for id := range g.unclaimed {
		if known[id] || !listed[id] {
			delete(g.unclaimed, id)
		}
	}
	unclaimedSince := maps.Clone(g.unclaimed)
	g.mu.Unlock()
	for _, inst := range instances {
		// Old enough by EC2's launch time and by this controller's own
		// clock: EC2's clock may run behind (an instance launched a
		// moment ago would look old) or ahead.
		if known[inst.ProviderID] || g.Clock.Since(inst.LaunchTime) < g.Grace || now.Sub(unclaimedSince[inst.ProviderID]) < g.Grace {
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
		if err := g.Cloud.Delete(ctx, inst.ProviderID, cloudprovider.Holder{}); err != nil && !cloudprovider.IsNotFound(err) && !cloudprovider.IsNotOwned(err) {
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

// ConfirmLooks is how many passes in a row must find a NodeClaim's
// instance missing, the first and the last at least the grace apart,
// before the NodeClaim is deleted: EC2's reads are eventually consistent,
// and a wrong region or credential answers "not found" for everything, so
// no single answer is taken for the instance's end.
const ConfirmLooks = 3

// missing is what the passes saw of a NodeClaim whose instance they did
// not find: when they first missed it, and how many times in a row.
type missing struct {
	since time.Time
	looks int
}

// orphanedClaims deletes the registered NodeClaims whose instance no
// longer exists, as the reference does: only registered ones (a launch
// that never registers is the registration timeout's), never one whose
// Node reports Ready (its kubelet runs, whatever the cloud says), and only
// once the instance was missed ConfirmLooks passes in a row over the
// grace period.
func (g *GarbageCollector) orphanedClaims(ctx context.Context, claims []v1.NodeClaim, instances []*cloudprovider.Instance) error {
	listed := make(map[string]bool, len(instances))
	for _, inst := range instances {
		listed[inst.ProviderID] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.missed == nil {
		g.missed = map[string]missing{}
	}
	suspects := map[string]*v1.NodeClaim{}
	for i := range claims {
		nc := &claims[i]
		if nc.Status.ProviderID == "" || !nc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionRegistered) || listed[nc.Status.ProviderID] {
			continue
		}
		suspects[nc.Status.ProviderID] = nc
	}
	for id := range g.missed {
		if suspects[id] == nil {
			delete(g.missed, id) // listed again, deleted or no longer a candidate
		}
	}
	if len(suspects) == 0 {
		return nil
	}
	ready, err := g.readyNodes(ctx)
	if err != nil {
		return err
	}
	now := g.Clock.Now()
	for id, nc := range suspects {
		if ready[id] {
			delete(g.missed, id) // its kubelet reports: the instance runs
			continue
		}
		// Not in the list: a call of its own (a listing may lag behind a
		// launch, a tag filter behind its tags).
		if _, err := g.Cloud.Get(ctx, id); !cloudprovider.IsNotFound(err) {
			delete(g.missed, id)
			continue
		}
		m := g.missed[id]
		if m.looks == 0 {
			m.since = now
		}
		m.looks++
		g.missed[id] = m
		if m.looks < ConfirmLooks || now.Sub(m.since) < g.Grace {
			g.Log.V(1).Info("instance of a NodeClaim not found; looking again before deleting it", "nodeClaim", nc.Name, "providerID", id, "looks", m.looks, "since", m.since)
			continue
		}
		delete(g.missed, id)
		nc = nc.DeepCopy()
		g.Recorder.Eventf(nc, corev1.EventTypeWarning, v1.ReasonInstanceTerminated, "the instance of NodeClaim %s (%s) was not found %d times over %s and its Node is not Ready; deleting the NodeClaim", nc.Name, id, m.looks, now.Sub(m.since).Round(time.Second))
		// Deleted only as the NodeClaim that was read: one recreated
		// under the name since is not touched.
		if err := client.IgnoreNotFound(g.Client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID})); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// readyNodes are the provider IDs of the Nodes whose Ready condition is
// True.
func (g *GarbageCollector) readyNodes(ctx context.Context) (map[string]bool, error) {
	nodes := &corev1.NodeList{}
	if err := g.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	ready := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && n.Spec.ProviderID != "" {
				ready[n.Spec.ProviderID] = true
			}
		}
	}
	return ready, nil
}
