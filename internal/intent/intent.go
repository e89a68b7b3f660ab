// Package intent writes what a decision decided, in one place for every
// controller that decides: the NodeClaims of a plan (the provisioner's
// new nodes, a static NodePool's replicas, disruption's replacements) and
// the karpenter.sh/disrupted taint on nodes being disrupted or drained,
// a drain's deadline, and node repair's request to reboot a node.
// The per-object controllers act on what it writes.
package intent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Workers is how many NodeClaims are created at once: each create waits
// on the API server (and etcd's disk), not on this process.
const Workers = 32

// CacheWait bounds how long a writer waits for the cache to show the
// NodeClaims it created, so that the next decision counts them.
const CacheWait = 10 * time.Second

// NodeClaims creates the NodeClaims of plans.
type NodeClaims struct {
	Client  client.Client
	Metrics *metrics.Metrics
	// Reason is why the NodeClaims are made, for metrics: the disruption
	// reason of replacements; provisioned when empty.
	Reason string
	// Batch puts the NodeClaims that would launch identically in launch
	// batches (cloudprovider.AnnotationLaunchBatch).
	Batch bool
}

// Created is called for each NodeClaim once it is created, with the
// planned node it was made from (for the caller's events and logs); it
// may be called from several goroutines at once.
type Created func(nc *v1.NodeClaim, planned *scheduling.PlannedNodeClaim)

// Create makes the NodeClaim of every planned node from its NodePool's
// template and node class as the snapshot has them (owner reference,
// labels, drift hashes, the termination finalizer), creates them in
// parallel, and waits until the cache shows them. It returns the names
// created, in plan order, also when it fails part way (those stay: each
// is a node the plan wanted).
func (w *NodeClaims) Create(ctx context.Context, snap *state.Snapshot, planned []*scheduling.PlannedNodeClaim, created Created) ([]string, error) {
	claims := make([]*v1.NodeClaim, len(planned))
	for i, p := range planned {
		np := snap.Pools[p.NodePool]
		if np == nil {
			return nil, fmt.Errorf("planned a NodeClaim for NodePool %s, which the snapshot does not hold", p.NodePool)
		}
		claims[i] = state.NodeClaimFor(np, snap.NodeClassOf(np), p)
		// Made with the finalizer the lifecycle adds before it launches
		// anything: one write less per NodeClaim.
		claims[i].Finalizers = []string{v1.TerminationFinalizer}
	}
	if w.Batch {
		batch(claims, planned)
	}
	var (
		mu   sync.Mutex
		done = make([]bool, len(claims))
		g    errgroup.Group
	)
	g.SetLimit(Workers)
	for i, nc := range claims {
		g.Go(func() error {
			if err := w.Client.Create(ctx, nc); err != nil {
				return fmt.Errorf("creating a NodeClaim for NodePool %s: %w", planned[i].NodePool, err)
			}
			mu.Lock()
			done[i] = true
			mu.Unlock()
			w.Metrics.NodeClaimCreated(planned[i].NodePool, cmp.Or(w.Reason, "provisioned"), planned[i].MinValuesRelaxed != "")
			if created != nil {
				created(nc, planned[i])
			}
			return nil
		})
	}
	err := g.Wait()
	names := make([]string, 0, len(claims))
	for i, nc := range claims {
		if done[i] {
			names = append(names, nc.Name)
		}
	}
	w.awaitCache(ctx, names)
	return names, err
}

// awaitCache waits until the cache shows the NodeClaims (for up to
// CacheWait); the next decision may be made without them after that.
func (w *NodeClaims) awaitCache(ctx context.Context, names []string) {
	_ = w.await(ctx, names, func(_ *v1.NodeClaim, found bool) bool { return found })
}

// AwaitDeleted waits until the cache shows the NodeClaims just deleted as
// being deleted (or gone), for up to CacheWait, so that the next decision
// does not count them; it says which it still shows when it gives up.
func (w *NodeClaims) AwaitDeleted(ctx context.Context, names []string) error {
	return w.await(ctx, names, func(nc *v1.NodeClaim, found bool) bool { return !found || !nc.DeletionTimestamp.IsZero() })
}

// await polls the cache until it shows each NodeClaim as wanted.
func (w *NodeClaims) await(ctx context.Context, names []string, shows func(nc *v1.NodeClaim, found bool) bool) error {
	left := slices.Clone(names)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, CacheWait, true, func(ctx context.Context) (bool, error) {
		for len(left) > 0 {
			nc := &v1.NodeClaim{}
			err := w.Client.Get(ctx, client.ObjectKey{Name: left[0]}, nc)
			if client.IgnoreNotFound(err) != nil {
				return false, err
			}
			if !shows(nc, err == nil) {
				return false, nil
			}
			left = left[1:]
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the cache does not show %d NodeClaim(s) as written yet (%s): %w", len(left), strings.Join(left, ", "), err)
	}
	return nil
}

// SetDisrupted adds (on) or removes karpenter.sh/disrupted:NoSchedule on
// a node; the only writer of that taint (setTaint).
func SetDisrupted(ctx context.Context, kube client.Client, node *corev1.Node, on bool) error {
	return setTaint(ctx, kube, node, v1.TaintKeyDisrupted, on)
}

// SetDisruptionReason sets the NodeClaim's DisruptionReason condition
// True with the reason, or removes it when the reason is empty, reading
// the NodeClaim afresh and patching its status with optimistic locking;
// the disruption controller is its only writer. A NodeClaim that is gone
// needs nothing.
func SetDisruptionReason(ctx context.Context, kube client.Client, nc *v1.NodeClaim, reason v1.DisruptionReason, now time.Time) error {
	if nc == nil {
		return nil
	}
	fresh := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	cur := meta.FindStatusCondition(fresh.Status.Conditions, v1.ConditionDisruptionReason)
	if reason == "" && cur == nil || cur != nil && cur.Status == metav1.ConditionTrue && cur.Reason == string(reason) {
		return nil
	}
	before := fresh.DeepCopy()
	if reason == "" {
		meta.RemoveStatusCondition(&fresh.Status.Conditions, v1.ConditionDisruptionReason)
	} else {
		meta.SetStatusCondition(&fresh.Status.Conditions, metav1.Condition{Type: v1.ConditionDisruptionReason, Status: metav1.ConditionTrue,
			Reason: string(reason), Message: "a disruption command (" + string(reason) + ") holds the node", ObservedGeneration: fresh.Generation, LastTransitionTime: metav1.NewTime(now)})
	}
	return client.IgnoreNotFound(kube.Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// SetRebooting adds (on) or removes karpenter.sh/rebooting:NoSchedule on
// a node node repair reboots; the only writer of that taint (setTaint).
func SetRebooting(ctx context.Context, kube client.Client, node *corev1.Node, on bool) error {
	return setTaint(ctx, kube, node, v1.TaintKeyRebooting, on)
}

// setTaint adds (on) or removes the NoSchedule taint of key on a node,
// reading it afresh and patching with optimistic locking, so a stale copy
// never overwrites newer taints. Whether the taint is there is read from
// the fresh node, never from the caller's copy (which may predate the
// taint). A node that is gone needs nothing.
func setTaint(ctx context.Context, kube client.Client, node *corev1.Node, key string, on bool) error {
	if node == nil {
		return nil
	}
	fresh := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	has := slices.ContainsFunc(fresh.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	if has == on {
		return nil
	}
	before := fresh.DeepCopy()
	fresh.Spec.Taints = slices.DeleteFunc(fresh.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	if on {
		fresh.Spec.Taints = append(fresh.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
	if err := kube.Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("tainting node %s %s (%v): %w", node.Name, key, on, err)
	}
	return nil
}

// TerminateBy records on a NodeClaim when the drain of its node stops
// waiting for pods (karpenter.sh/nodeclaim-termination-timestamp),
// unless an earlier time is already set. It reads the NodeClaim afresh
// (a caller's copy may predate a deadline set since) and writes only
// the version it read.
func TerminateBy(ctx context.Context, kube client.Client, nc *v1.NodeClaim, at time.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		if old, err := time.Parse(time.RFC3339, fresh.Annotations[v1.AnnotationTerminationTimestamp]); err == nil && !old.After(at) {
			return nil
		}
		before := fresh.DeepCopy()
		if fresh.Annotations == nil {
			fresh.Annotations = map[string]string{}
		}
		fresh.Annotations[v1.AnnotationTerminationTimestamp] = at.UTC().Format(time.RFC3339)
		return client.IgnoreNotFound(kube.Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
	})
}

// RequestReboot asks for a NodeClaim's node to be rebooted by node
// repair: karpenter.sh/reboot-termination-grace-period is its drain's
// bound (removed when nil: the drain waits for every pod), and the
// Rebooting condition turns True with reason RebootRequested and why.
// The reboot controller carries the request out and owns the condition
// from then on. A NodeClaim that is already rebooting is left as it is.
func RequestReboot(ctx context.Context, kube client.Client, nc *v1.NodeClaim, bound *time.Duration, why string, now time.Time) error {
	fresh := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	if meta.IsStatusConditionTrue(fresh.Status.Conditions, v1.ConditionRebooting) || !fresh.DeletionTimestamp.IsZero() {
		return nil
	}
	before := fresh.DeepCopy()
	if fresh.Annotations == nil {
		fresh.Annotations = map[string]string{}
	}
	delete(fresh.Annotations, v1.AnnotationRebootTerminationGracePeriod)
	delete(fresh.Annotations, v1.AnnotationRebootPreBootID)
	if bound != nil {
		fresh.Annotations[v1.AnnotationRebootTerminationGracePeriod] = bound.String()
	}
	if !requestRecorded(fresh, now) {
		fresh.Annotations[v1.AnnotationReboots] = nodepoolhealth.RecordReboot(fresh, now)
	}
	if err := kube.Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	before = fresh.DeepCopy()
	meta.SetStatusCondition(&fresh.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionTrue,
		Reason: v1.ReasonRebootRequested, Message: why, ObservedGeneration: fresh.Generation, LastTransitionTime: metav1.NewTime(now)})
	if err := kube.Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// requestRecorded reports a reboot request recorded in the NodeClaim's
// history whose Rebooting condition was never written (that write failed):
// the request made again is the same one, not another reboot.
func requestRecorded(nc *v1.NodeClaim, now time.Time) bool {
	reboots := nodepoolhealth.Reboots(nc, now)
	if len(reboots) == 0 {
		return false
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
	return c == nil || c.LastTransitionTime.Before(&metav1.Time{Time: reboots[len(reboots)-1]})
}

// batch writes the launch batch of each group of NodeClaims that would
// launch identically (the same NodePool, requirements, labels,
// annotations, taints and node class: their requests may differ), at most
// cloudprovider.MaxLaunchBatch a batch. NodeClaims that may launch into a
// capacity reservation launch on their own: each targets a reservation.
func batch(claims []*v1.NodeClaim, planned []*scheduling.PlannedNodeClaim) {
	groups := map[string][]*v1.NodeClaim{}
	var keys []string
	for i, nc := range claims {
		if mayReserve(nc, planned[i].InstanceTypes) {
			continue
		}
		key := launchKey(nc)
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], nc)
	}
	for _, key := range keys {
		for members := range slices.Chunk(groups[key], cloudprovider.MaxLaunchBatch) {
			if len(members) < 2 {
				continue
			}
			b := cloudprovider.LaunchBatch{ID: string(uuid.NewUUID()), Size: len(members)}
			for _, nc := range members {
				nc.Annotations[cloudprovider.AnnotationLaunchBatch] = b.String()
			}
		}
	}
}

// mayReserve reports a NodeClaim that may launch into a capacity
// reservation: its requirements admit reserved capacity (or name no
// capacity type) and one of its instance types has a reserved offering.
func mayReserve(nc *v1.NodeClaim, types []*scheduling.InstanceType) bool {
	for _, r := range nc.Spec.Requirements {
		if r.Key == v1.LabelCapacityType && !scheduling.NewRequirement(r.Key, r.Operator, r.Values...).Has(v1.CapacityTypeReserved) {
			return false
		}
	}
	return slices.ContainsFunc(types, func(it *scheduling.InstanceType) bool {
		return slices.ContainsFunc(it.Offerings, func(o scheduling.Offering) bool { return o.CapacityType == v1.CapacityTypeReserved })
	})
}

// launchKey is what makes two NodeClaims launch identically.
func launchKey(nc *v1.NodeClaim) string {
	spec := nc.Spec.DeepCopy()
	spec.Resources = v1.ResourceRequirements{}
	data, _ := json.Marshal([]any{nc.Labels, nc.Annotations, spec}) // maps marshal in key order
	return string(data)
}
