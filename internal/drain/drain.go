// Package drain empties a node of its pods through the Eviction API, in
// tiers, so PodDisruptionBudgets hold: before its NodeClaim's instance
// goes (termination), or before node repair reboots it. The caller fences
// the node first, with its own taint.
package drain

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/state"
)

// Drainer evicts the pods of nodes being terminated or rebooted.
type Drainer struct {
	Client   client.Client
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	// Metrics counts the eviction requests (nil: not counted).
	Metrics *metrics.Metrics
}

// tier orders eviction: ordinary pods, then DaemonSet pods, then critical
// pods, then critical DaemonSet pods.
func tier(p *corev1.Pod) int {
	t := 0
	if state.OwnedByDaemonSet(p) {
		t++
	}
	if p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical" {
		t += 2
	}
	return t
}

// Options say what a drain waits for and does at its deadline.
type Options struct {
	// KeepDaemonSets leaves DaemonSet pods on the node (a reboot brings
	// them back up there); a termination evicts them last.
	KeepDaemonSets bool
	// LeaveAtDeadline stops at the deadline and leaves the pods that are
	// still there (they ride a reboot out); a termination deletes them.
	LeaveAtDeadline bool
	// Fence is the key of the NoSchedule taint the caller fenced the node
	// with. Pods that tolerate it are not evicted: they could come back
	// at once (a DaemonSet's controller recreates its pod on a node being
	// drained), so the drain would never end; they go with the node.
	Fence string
}

// stuckAfter is how long past its deletion a terminating pod is waited
// for: a pod still there a minute later has no kubelet to stop it (the
// node is unreachable or gone), and waiting for it would hold the node
// for ever when the drain has no deadline.
const stuckAfter = time.Minute

// Drain evicts the pods of the node's lowest non-empty tier; pods marked
// karpenter.sh/do-not-disrupt wait for the deadline. At the deadline
// (non-zero) the pods left are deleted, or left (opts). It returns
// done=true once only pods that need no eviction remain (mirror pods,
// finished pods, DaemonSet pods when kept), or the deadline passed and
// the pods are left.
func (d *Drainer) Drain(ctx context.Context, node *corev1.Node, owner client.Object, deadline time.Time, opts Options) (bool, error) {
	pods := &corev1.PodList{}
	if err := d.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
		return false, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	pastDeadline := !deadline.IsZero() && !d.Clock.Now().Before(deadline)
	remaining := needingEviction(pods.Items, opts, d.Clock.Now())
	switch {
	case len(remaining) == 0:
		return true, nil
	case pastDeadline && opts.LeaveAtDeadline:
		return true, nil
	case pastDeadline:
		return false, d.deleteAtDeadline(ctx, node, remaining)
	}
	return false, d.evictTier(ctx, owner, remaining, lowestTier(remaining))
}

// needingEviction are the pods a drain waits for: all but mirror pods,
// finished ones, pods that tolerate the fence, pods stuck terminating
// and, when kept, DaemonSet pods.
func needingEviction(pods []corev1.Pod, opts Options, now time.Time) []*corev1.Pod {
	fence := &corev1.Taint{Key: opts.Fence, Effect: corev1.TaintEffectNoSchedule}
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		switch {
		case p.Annotations[corev1.MirrorPodAnnotationKey] != "", p.Status.Phase == corev1.PodSucceeded, p.Status.Phase == corev1.PodFailed:
		case opts.KeepDaemonSets && state.OwnedByDaemonSet(p):
		case opts.Fence != "" && tolerates(p, fence):
		case p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > stuckAfter:
		default:
			out = append(out, p)
		}
	}
	return out
}

// tolerates reports whether one of the pod's tolerations tolerates the
// taint.
func tolerates(p *corev1.Pod, taint *corev1.Taint) bool {
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}

// lowestTier is the first tier the pods have one in.
func lowestTier(pods []*corev1.Pod) int {
	lowest := 4
	for _, p := range pods {
		lowest = min(lowest, tier(p))
	}
	return lowest
}

// deleteAtDeadline deletes the pods left at the termination deadline,
// without grace.
func (d *Drainer) deleteAtDeadline(ctx context.Context, node *corev1.Node, pods []*corev1.Pod) error {
	for _, p := range pods {
		if err := client.IgnoreNotFound(d.Client.Delete(ctx, p, client.GracePeriodSeconds(0))); err != nil {
			return fmt.Errorf("deleting pod %s/%s at the termination deadline: %w", p.Namespace, p.Name, err)
		}
		logf.FromContext(ctx).Info("deleted pod at the termination deadline", "pod", client.ObjectKeyFromObject(p), "Node", node.Name)
	}
	return nil
}

// evictTier evicts the pods of the tier that are not going yet; those
// marked karpenter.sh/do-not-disrupt wait for the deadline, which is
// reported.
func (d *Drainer) evictTier(ctx context.Context, owner client.Object, pods []*corev1.Pod, tierToEvict int) error {
	for _, p := range pods {
		switch {
		case tier(p) != tierToEvict || !p.DeletionTimestamp.IsZero():
		case p.Annotations[v1.AnnotationDoNotDisrupt] == "true":
			d.Recorder.Eventf(owner, corev1.EventTypeNormal, v1.ReasonDrainWaiting, "pod %s/%s is marked %s=true; it is not evicted before the terminationGracePeriod deadline", p.Namespace, p.Name, v1.AnnotationDoNotDisrupt)
		default:
			if err := d.evict(ctx, p, owner); err != nil {
				return err
			}
		}
	}
	return nil
}

// evict asks the Eviction API to evict a pod; a PodDisruptionBudget that
// forbids it is reported and retried later.
func (d *Drainer) evict(ctx context.Context, p *corev1.Pod, owner client.Object) error {
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	err := d.Client.SubResource("eviction").Create(ctx, p, eviction)
	code := http.StatusCreated
	if status := apierrors.APIStatus(nil); errors.As(err, &status) {
		code = int(status.Status().Code)
	}
	d.Metrics.EvictionRequest(code)
	switch {
	case err == nil:
		logf.FromContext(ctx).Info("evicted pod", "pod", client.ObjectKeyFromObject(p), "Node", p.Spec.NodeName)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsTooManyRequests(err):
		d.Recorder.Eventf(owner, corev1.EventTypeNormal, v1.ReasonDrainBlocked, "evicting pod %s/%s would violate its PodDisruptionBudget; retrying", p.Namespace, p.Name)
		logf.FromContext(ctx).V(1).Info("eviction blocked by a PodDisruptionBudget", "pod", client.ObjectKeyFromObject(p))
		return nil
	}
	return fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err)
}
