// Package podevents records on each NodeClaim when a pod last came to or
// left its node (status.lastPodEventTime), which consolidateAfter counts
// from.
package podevents

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/listing"
)

// PodEvents records on a NodeClaim when a pod last left its node or was
// made on it with its node set (status.lastPodEventTime, which
// consolidateAfter counts from, with the binding times of the pods
// kube-scheduler bound there: state.Node.LastPodEvent). It writes that
// field only, at most once per Dedupe. kube-scheduler's bindings are not
// written: the pods say when they were bound, so a scale-up of thousands
// of pods costs no write.
type PodEvents struct {
	Client client.Client
	Clock  clock.PassiveClock
	Dedupe time.Duration
}

// SetupWithManager watches pods made on a node and pods leaving theirs.
func (p *PodEvents) SetupWithManager(mgr manager.Manager) error {
	changed := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return MadeOnNode(e.Object.(*corev1.Pod)) },
		DeleteFunc: func(e event.DeleteEvent) bool { return PodLeft(nil, e.Object.(*corev1.Pod)) },
		UpdateFunc: func(e event.UpdateEvent) bool { return PodLeft(e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)) },
	}
	return builder.ControllerManagedBy(mgr).Named("nodeclaim.podevents").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.(*corev1.Pod).Spec.NodeName}}}
		}), builder.WithPredicates(changed)).
		Complete(p)
}

// MadeOnNode reports a pod created with its node set: nothing on it says
// when it was bound until its kubelet reports.
func MadeOnNode(p *corev1.Pod) bool { return p.Spec.NodeName != "" && !finished(p) }

// PodLeft reports a pod of a node that finished or is being deleted (no
// before: deleted).
func PodLeft(before, after *corev1.Pod) bool {
	if after.Spec.NodeName == "" {
		return false
	}
	return before == nil || (!finished(before) && finished(after))
}

func finished(p *corev1.Pod) bool {
	return !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Reconcile stamps the NodeClaim of the node named by the request.
func (p *PodEvents) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: req.Name}, node); err != nil || node.Spec.ProviderID == "" {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	claims := &v1.NodeClaimList{}
	if err := p.Client.List(ctx, claims, client.MatchingFields{listing.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return reconcile.Result{}, err
	}
	now := p.Clock.Now()
	for i := range claims.Items {
		nc := &claims.Items[i]
		if now.Sub(nc.Status.LastPodEventTime.Time) < p.Dedupe {
			continue
		}
		before := nc.DeepCopy()
		nc.Status.LastPodEventTime = metav1.NewTime(now)
		if err := p.Client.Status().Patch(ctx, nc, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("recording a pod event on NodeClaim %s: %w", nc.Name, err)
		}
	}
	return reconcile.Result{}, nil
}
