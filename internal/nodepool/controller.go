// Package nodepool keeps NodePool status current: the resources its
// NodeClaims hold, whether its EC2NodeClass is ready, and whether its
// nodes register.
package nodepool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Annotations that drive the relaunch backoff: the NodePool's consecutive
// registration timeouts, and when the last one happened (RFC 3339).
const (
	AnnotationRegistrationFailures    = "nodewright.dev/registration-failures"
	AnnotationLastRegistrationFailure = "nodewright.dev/last-registration-failure"
)

// Controller is the NodePool status controller.
type Controller struct {
	Client client.Client
	Clock  clock.PassiveClock
}

// SetupWithManager registers the controller; NodeClaim and EC2NodeClass
// changes wake the NodePools they concern.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("nodepool.status").For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[v1.LabelNodePool]; pool != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pool}}}
			}
			return nil
		})).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.poolsOfClass)).
		Complete(c)
}

func (c *Controller) poolsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	pools := &v1.NodePoolList{}
	if err := c.Client.List(ctx, pools); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, np := range pools.Items {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&np)})
		}
	}
	return out
}

// Reconcile recomputes one NodePool's status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	before := np.DeepCopy()
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims, client.MatchingLabels{v1.LabelNodePool: np.Name}); err != nil {
		return reconcile.Result{}, err
	}
	resources := corev1.ResourceList{"nodes": *resource.NewQuantity(0, resource.DecimalSI)}
	for _, nc := range claims.Items {
		resources = scheduling.AddNodeUsage(resources, nc.Status.Capacity)
	}
	np.Status.Resources = resources
	now := metav1.NewTime(c.Clock.Now())
	classReady, classMsg := c.nodeClassReady(ctx, np)
	setCondition(np, now, v1.ConditionNodeClassReady, classReady, "NodeClassNotReady", classMsg)
	setCondition(np, now, v1.ConditionValidationSucceeded, true, "", "")
	if meta.FindStatusCondition(np.Status.Conditions, v1.ConditionNodeRegistrationHealthy) == nil {
		setCondition(np, now, v1.ConditionNodeRegistrationHealthy, true, "", "")
	}
	ready := classReady
	setCondition(np, now, v1.ConditionReady, ready, "NodeClassNotReady", classMsg)
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		class := &awsv1.EC2NodeClass{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err == nil {
			np.Status.NodeClassObservedGeneration = class.Generation
		}
	}
	if err := c.Client.Status().Patch(ctx, np, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching the status of NodePool %s: %w", np.Name, err)
	}
	return reconcile.Result{}, nil
}

func (c *Controller) nodeClassReady(ctx context.Context, np *v1.NodePool) (bool, string) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return false, "spec.template.spec.nodeClassRef is not set"
	}
	class := &awsv1.EC2NodeClass{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		return false, fmt.Sprintf("EC2NodeClass %s: %v", ref.Name, client.IgnoreNotFound(err))
	}
	cond := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		msg := "has not been resolved yet"
		if cond != nil {
			msg = cond.Message
		}
		return false, fmt.Sprintf("EC2NodeClass %s is not ready: %s", ref.Name, msg)
	}
	return true, ""
}

func setCondition(np *v1.NodePool, now metav1.Time, condType string, ok bool, reason, message string) {
	c := metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: condType, ObservedGeneration: np.Generation, LastTransitionTime: now}
	if !ok {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, message
	}
	if old := meta.FindStatusCondition(np.Status.Conditions, condType); old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	meta.SetStatusCondition(&np.Status.Conditions, c)
}

// RecordRegistration notes on a NodePool whether a node of it registered
// (healthy) or a NodeClaim of it timed out unregistered, with the most
// likely cause; consecutive timeouts are counted for the backoff.
func RecordRegistration(ctx context.Context, kube client.Client, now time.Time, pool string, healthy bool, cause string) error {
	np := &v1.NodePool{}
	if err := kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return client.IgnoreNotFound(err)
	}
	before := np.DeepCopy()
	failures, _ := strconv.Atoi(np.Annotations[AnnotationRegistrationFailures])
	if healthy {
		if failures == 0 && meta.IsStatusConditionTrue(np.Status.Conditions, v1.ConditionNodeRegistrationHealthy) {
			return nil
		}
		failures = 0
	} else {
		failures++
	}
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[AnnotationRegistrationFailures] = strconv.Itoa(failures)
	if !healthy {
		np.Annotations[AnnotationLastRegistrationFailure] = now.UTC().Format(time.RFC3339)
	}
	if err := kube.Patch(ctx, np, client.MergeFrom(before)); err != nil {
		return err
	}
	statusBefore := np.DeepCopy()
	msg := ""
	if !healthy {
		msg = fmt.Sprintf("%d NodeClaim(s) in a row timed out before their node registered; relaunches back off. Most likely cause: %s", failures, cause)
	}
	c := metav1.Condition{Type: v1.ConditionNodeRegistrationHealthy, Status: metav1.ConditionTrue, Reason: "NodesRegister", ObservedGeneration: np.Generation, LastTransitionTime: metav1.NewTime(now)}
	if !healthy {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "RegistrationTimeout", msg
	}
	meta.SetStatusCondition(&np.Status.Conditions, c)
	return kube.Status().Patch(ctx, np, client.MergeFrom(statusBefore))
}

// BackedOffUntil returns until when a NodePool does not launch after
// registration timeouts, and how many there were; zero when it launches.
func BackedOffUntil(np *v1.NodePool) (time.Time, int) {
	failures, _ := strconv.Atoi(np.Annotations[AnnotationRegistrationFailures])
	last, err := time.Parse(time.RFC3339, np.Annotations[AnnotationLastRegistrationFailure])
	if failures == 0 || err != nil {
		return time.Time{}, 0
	}
	return last.Add(Backoff(failures)), failures
}

// Backoff is how long after its last registration timeout a NodePool with
// failures consecutive timeouts waits before launching again: one minute,
// doubling, at most an hour.
func Backoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := time.Minute << min(failures-1, 6)
	return min(d, time.Hour)
}
