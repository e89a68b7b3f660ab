// Package deletioncost writes controller.kubernetes.io/pod-deletion-cost on
// the ReplicaSet pods of nodewright's nodes (feature gate
// PodDeletionCostManagement), so that a Deployment scaling down deletes
// first the pods of the nodes disruption would take out first: the nodes
// being disrupted, then drifted nodes, then the cheapest to disrupt. The
// pods of nodes that may not be disrupted lose the annotation.
package deletioncost

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/loop"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/state"
)

// Disrupting is the cost of the pods of a node being disrupted: the
// lowest there is, so its ReplicaSets delete them first.
const Disrupting = math.MinInt32

// Rank is the pod deletion cost each registered node of a NodePool gives
// its pods: Disrupting for nodes being disrupted or deleted; for the nodes
// disruption may take, -n for the first, -n+1 for the next, ... -1 for the
// last, drifted nodes first, then by what disrupting them costs (cheapest
// first), then by name; nil for nodes that may not be disrupted (their
// pods lose the annotation).
func Rank(snap *state.Snapshot, now time.Time) map[string]*int32 {
	out := map[string]*int32{}
	var ranked []*state.Node
	for _, n := range snap.Candidates() {
		switch {
		case n.Disrupted() || n.Deleting():
			out[n.Name] = ptr.To[int32](Disrupting)
		case len(n.Blockers()) > 0:
			out[n.Name] = nil
		default:
			ranked = append(ranked, n)
		}
	}
	drifted := func(n *state.Node) bool {
		return n.NodeClaim != nil && meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionDrifted)
	}
	costs := make(map[string]float64, len(ranked))
	for _, n := range ranked {
		costs[n.Name] = n.DisruptionCost(now, false)
	}
	slices.SortFunc(ranked, func(a, b *state.Node) int {
		if da, db := drifted(a), drifted(b); da != db {
			if da {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(costs[a.Name], costs[b.Name]), cmp.Compare(a.Name, b.Name))
	})
	for i, n := range ranked {
		out[n.Name] = ptr.To(int32(i - len(ranked))) //nolint:gosec // a cluster has far fewer than 2^31 nodes
	}
	return out
}

// Controller writes the ranks: every Interval, up to MaxNodes nodes'
// pods a pass, the nodes whose pods differ from their rank first in the
// order Rank gives them.
type Controller struct {
	Client   client.Client
	Clock    clock.WithTicker
	Metrics  *metrics.Metrics
	Log      logr.Logger
	Interval time.Duration
	MaxNodes int
}

// SetupWithManager runs the controller with the manager (when leader).
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		loop.Every(ctx, c.Clock, c.Interval, true, func(ctx context.Context) {
			if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
				c.Log.Error(err, "pod deletion cost")
			}
		})
		return nil
	}))
}

// Reconcile makes one pass.
func (c *Controller) Reconcile(ctx context.Context) error {
	listed, err := listing.List(ctx, c.Client)
	if err != nil {
		return err
	}
	now := c.Clock.Now()
	snap := state.Build(listed.Objects, state.Options{Now: now})
	ranks := Rank(snap, now)
	pending := map[string]int{}
	written := 0
	for _, n := range snap.Candidates() {
		rank, ok := ranks[n.Name]
		if !ok {
			continue
		}
		stale, unchanged := stalePods(n.Pods, rank)
		for range unchanged {
			c.Metrics.DeletionCostWrite("skipped_unchanged")
		}
		if len(stale) == 0 {
			continue
		}
		if written >= c.MaxNodes {
			pending[n.NodePool]++
			continue
		}
		written++
		for _, pod := range stale {
			c.Metrics.DeletionCostWrite(c.write(ctx, pod, rank))
		}
	}
	c.Metrics.DeletionCostPending(pending)
	return nil
}

// stalePods are the ReplicaSet pods whose annotation is not the rank;
// unchanged counts those whose annotation is.
func stalePods(pods []*corev1.Pod, rank *int32) (stale []*corev1.Pod, unchanged int) {
	for _, pod := range pods {
		if !ownedByReplicaSet(pod) || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		have, set := pod.Annotations[v1.AnnotationPodDeletionCost]
		if (rank == nil && set) || (rank != nil && have != strconv.Itoa(int(*rank))) {
			stale = append(stale, pod)
		} else {
			unchanged++
		}
	}
	return stale, unchanged
}

func ownedByReplicaSet(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "ReplicaSet"
}

// write sets (or, for a nil rank, removes) a pod's pod deletion cost.
func (c *Controller) write(ctx context.Context, pod *corev1.Pod, rank *int32) string {
	patched := pod.DeepCopy()
	if rank == nil {
		delete(patched.Annotations, v1.AnnotationPodDeletionCost)
	} else {
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[v1.AnnotationPodDeletionCost] = strconv.Itoa(int(*rank))
	}
	err := c.Client.Patch(ctx, patched, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return "updated"
	case apierrors.IsNotFound(err):
		return "skipped_notfound"
	case apierrors.IsConflict(err):
		return "skipped_conflict" // written on the next pass
	}
	c.Log.Error(err, "writing the pod deletion cost", "pod", client.ObjectKeyFromObject(pod))
	return "error"
}
