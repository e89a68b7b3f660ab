// Package capacitybuffer resolves CapacityBuffers (the CapacityBuffer
// feature gate): the pod each keeps room for and how many, written to its
// status for state.Build to turn into pods that decisions place like
// pending ones. A buffer of a workload (scalableRef) gets a PodTemplate of
// its own, kept in step with the workload's pod template. The buffer's
// Provisioning condition says what the provisioner last found of its pods.
package capacitybuffer

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/bufferroom"
)

// Controller keeps CapacityBuffers' status.
type Controller struct {
	Client client.Client
	Clock  clock.PassiveClock
	// Rooms is what the provisioner last found of the buffers' pods.
	Rooms *bufferroom.Rooms
	// Resync is how often a buffer is resolved again (its workload's
	// replicas change without the buffer changing).
	Resync time.Duration
}

// SetupWithManager watches CapacityBuffers and the PodTemplates they own.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("capacitybuffer").
		For(&v1beta1.CapacityBuffer{}).
		Owns(&corev1.PodTemplate{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(c)
}

// resolved is what a buffer resolves to, or why it does not.
type resolved struct {
	template *corev1.PodTemplate
	replicas int32
	reason   string
	message  string
}

// Reconcile resolves a buffer and writes its status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &v1beta1.CapacityBuffer{}
	if err := c.Client.Get(ctx, req.NamespacedName, b); err != nil || !b.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r, err := c.resolve(ctx, b)
	if err != nil {
		return reconcile.Result{}, err
	}
	before := b.DeepCopy()
	strategy := ptr.Deref(b.Spec.ProvisioningStrategy, v1beta1.ProvisioningStrategyActiveCapacity)
	b.Status.ProvisioningStrategy = &strategy
	ready := metav1.Condition{Type: v1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionFalse, Reason: r.reason, Message: r.message, ObservedGeneration: b.Generation}
	if r.template != nil {
		ready.Status = metav1.ConditionTrue
		b.Status.PodTemplateRef = &v1beta1.LocalObjectRef{Name: r.template.Name}
		b.Status.PodTemplateGeneration = ptr.To(r.template.Generation)
		b.Status.Replicas = ptr.To(r.replicas)
	} else {
		b.Status.PodTemplateRef, b.Status.PodTemplateGeneration, b.Status.Replicas = nil, nil, nil
	}
	c.setCondition(b, ready)
	c.setCondition(b, c.provisioning(b, r))
	if !equality.Semantic.DeepEqual(before.Status, b.Status) {
		if err := c.Client.Status().Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	return reconcile.Result{RequeueAfter: c.Resync}, nil
}

func (c *Controller) setCondition(b *v1beta1.CapacityBuffer, cond metav1.Condition) {
	if cond.Type == "" {
		return
	}
	cond.ObservedGeneration = b.Generation
	cond.LastTransitionTime = metav1.NewTime(c.Clock.Now())
	meta.SetStatusCondition(&b.Status.Conditions, cond)
}

// provisioning is the Provisioning condition: what the provisioner last
// found of the buffer's pods (none yet: the condition waits).
func (c *Controller) provisioning(b *v1beta1.CapacityBuffer, r resolved) metav1.Condition {
	cond := metav1.Condition{Type: v1beta1.ConditionProvisioning, Status: metav1.ConditionFalse}
	room, found := c.Rooms.Get(types.NamespacedName{Namespace: b.Namespace, Name: b.Name})
	switch {
	case r.template == nil:
		cond.Reason, cond.Message = v1beta1.ReasonNotReady, "the buffer is not ready for provisioning: "+r.message
	case r.replicas == 0:
		cond.Reason, cond.Message = v1beta1.ReasonBufferEmpty, "the buffer keeps room for no pod"
	case !found || room.Pods != int(r.replicas):
		return metav1.Condition{} // the provisioner has not planned these pods yet
	case room.Hosted == room.Pods:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1beta1.ReasonFitsExisting
		cond.Message = fmt.Sprintf("All %d virtual pods fit on existing capacity", room.Pods)
	default:
		cond.Reason = v1beta1.ReasonRequiresNew
		cond.Message = fmt.Sprintf("%d/%d virtual pods required new capacity, %d failed", room.Pods-room.Hosted-room.Failed, room.Pods, room.Failed)
	}
	return cond
}

// resolve finds the pod the buffer keeps room for and how many.
func (c *Controller) resolve(ctx context.Context, b *v1beta1.CapacityBuffer) (resolved, error) {
	if s := ptr.Deref(b.Spec.ProvisioningStrategy, v1beta1.ProvisioningStrategyActiveCapacity); s != v1beta1.ProvisioningStrategyActiveCapacity {
		return resolved{reason: v1beta1.ReasonResolutionFailed, message: fmt.Sprintf("spec.provisioningStrategy %q is not served; use %q",
			s, v1beta1.ProvisioningStrategyActiveCapacity)}, nil
	}
	switch {
	case b.Spec.PodTemplateRef != nil:
		t := &corev1.PodTemplate{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.PodTemplateRef.Name}, t)
		if apierrors.IsNotFound(err) {
			return resolved{reason: v1beta1.ReasonPodTemplateNotFound, message: fmt.Sprintf("PodTemplate %s/%s (spec.podTemplateRef) does not exist",
				b.Namespace, b.Spec.PodTemplateRef.Name)}, nil
		}
		if err != nil {
			return resolved{}, err
		}
		return count(b, t, -1), nil
	case b.Spec.ScalableRef != nil:
		return c.resolveScalable(ctx, b)
	}
	return resolved{reason: v1beta1.ReasonResolutionFailed, message: "set spec.podTemplateRef or spec.scalableRef"}, nil
}

// resolveScalable keeps the buffer's own PodTemplate in step with its
// workload's pod template.
func (c *Controller) resolveScalable(ctx context.Context, b *v1beta1.CapacityBuffer) (resolved, error) {
	ref := b.Spec.ScalableRef
	var obj client.Object
	switch {
	case ref.APIGroup != "" && ref.APIGroup != appsv1.GroupName:
	case ref.Kind == "Deployment":
		obj = &appsv1.Deployment{}
	case ref.Kind == "StatefulSet":
		obj = &appsv1.StatefulSet{}
	case ref.Kind == "ReplicaSet":
		obj = &appsv1.ReplicaSet{}
	}
	if obj == nil {
		return resolved{reason: v1beta1.ReasonResolutionFailed, message: fmt.Sprintf("spec.scalableRef %s %s/%s: only apps Deployments, StatefulSets and ReplicaSets are served",
			ref.Kind, ref.APIGroup, ref.Name)}, nil
	}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ref.Name}, obj)
	if apierrors.IsNotFound(err) {
		return resolved{reason: v1beta1.ReasonScalableRefNotFound, message: fmt.Sprintf("%s %s/%s (spec.scalableRef) does not exist", ref.Kind, b.Namespace, ref.Name)}, nil
	}
	if err != nil {
		return resolved{}, err
	}
	template, replicas := workload(obj)
	t := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: "capacitybuffer-" + b.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c.Client, t, func() error {
		t.Template = *template.DeepCopy()
		return controllerutil.SetControllerReference(b, t, c.Client.Scheme())
	}); err != nil {
		return resolved{}, fmt.Errorf("keeping PodTemplate %s/%s of CapacityBuffer %s: %w", t.Namespace, t.Name, b.Name, err)
	}
	return count(b, t, replicas), nil
}

// workload is a workload's pod template and replicas (1 when unset).
func workload(obj client.Object) (*corev1.PodTemplateSpec, int32) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template, ptr.Deref(w.Spec.Replicas, 1)
	case *appsv1.StatefulSet:
		return &w.Spec.Template, ptr.Deref(w.Spec.Replicas, 1)
	case *appsv1.ReplicaSet:
		return &w.Spec.Template, ptr.Deref(w.Spec.Replicas, 1)
	}
	return &corev1.PodTemplateSpec{}, 0
}

// count resolves the buffer to its PodTemplate and how many pods
// (state.BufferReplicas); workloadReplicas is -1 without a workload.
func count(b *v1beta1.CapacityBuffer, t *corev1.PodTemplate, workloadReplicas int32) resolved {
	n, err := state.BufferReplicas(b.Spec, &t.Template.Spec, workloadReplicas)
	if err != nil {
		return resolved{reason: v1beta1.ReasonResolutionFailed, message: fmt.Sprintf("PodTemplate %s: %v", t.Name, err)}
	}
	return resolved{template: t, replicas: n, reason: v1beta1.ReasonResolved, message: "Pod template resolved successfully"}
}
