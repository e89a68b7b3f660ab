// Package nodeoverlay keeps NodeOverlay status current: which instance
// types each overlay changes, and why one is not Ready (it loses a field
// to an overlay of the same weight, or names capacity the scheduler does
// not account for). The overlays themselves are applied where every
// decision reads instance types (state.Build).
package nodeoverlay

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/conditions"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// Controller writes NodeOverlay status.
type Controller struct {
	Client client.Client
	// NodeClasses resolves the NodePools' node classes.
	NodeClasses listing.NodeClassResolver
	Clock       clock.PassiveClock
	Log         logr.Logger
}

// all is the one request: every overlay's status depends on every other.
var all = reconcile.Request{NamespacedName: client.ObjectKey{Name: "all"}}

// SetupWithManager registers the controller: NodeOverlays, NodePools and
// EC2NodeClasses changing wake it.
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{all} })
	return builder.ControllerManagedBy(mgr).Named("nodeoverlay.status").
		Watches(&v1alpha1.NodeOverlay{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.NodePool{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(c.NodeClasses.NodeClassObject(), toAll).
		Complete(c)
}

// Reconcile recomputes every overlay's status.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	listed, err := listing.List(ctx, c.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(listed.Overlays) == 0 {
		return reconcile.Result{}, nil
	}
	classes, err := c.NodeClasses.ResolveNodeClasses(ctx, listed.NodePools)
	if err != nil {
		return reconcile.Result{}, err
	}
	snap := state.Build(listed.Objects, state.Options{Now: c.Clock.Now(), NodeClasses: classes})
	for _, o := range listed.Overlays {
		before := o.DeepCopy()
		setReady(o, snap.OverlayEffects[o.Name], metav1.NewTime(c.Clock.Now()))
		if equalConditions(before.Status.Conditions, o.Status.Conditions) {
			continue
		}
		if err := c.Client.Status().Patch(ctx, o, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("patching the status of NodeOverlay %s: %w", o.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

// setReady sets an overlay's Ready condition from what it did.
func setReady(o *v1alpha1.NodeOverlay, e *state.OverlayEffect, now metav1.Time) {
	if e == nil {
		e = &state.OverlayEffect{}
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady, ObservedGeneration: o.Generation, LastTransitionTime: now}
	capacity, drivers := splitUnsupported(e.Unsupported)
	switch {
	case e.InvalidDevices != "":
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalidDynamicResources
		cond.Message = fmt.Sprintf("%s; its dynamicResources do not apply, the rest of the overlay does (%s)", e.InvalidDevices, describeTypes(e.Types))
	case len(capacity) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonUnsupportedCapacity
		cond.Message = fmt.Sprintf("capacity %s is not a resource the scheduler accounts for (it knows cpu, memory, pods, ephemeral-storage, hugepages-2Mi, hugepages-1Gi and the GPU, Neuron, EFA and pod-ENI resources); pods requesting it stay pending. The rest of the overlay applies (%s)",
			strings.Join(capacity, ", "), describeTypes(e.Types))
	case len(drivers) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonUnsupportedCapacity
		cond.Message = fmt.Sprintf("the %s: the scheduler counts the devices of the drivers its catalog knows and of %d others, the first overlays declared (%s); pods claiming them stay pending. Declare fewer drivers the catalog does not know, and restart nodewright to count these. The rest of the overlay applies (%s)",
			strings.Join(drivers, ", "), scheduling.MaxExtraDrivers, strings.Join(scheduling.ExtraDrivers(), ", "), describeTypes(e.Types))
	case len(e.Conflicts) > 0:
		parts := make([]string, 0, len(e.Conflicts))
		for _, c := range e.Conflicts {
			parts = append(parts, c.String())
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonConflict
		cond.Message = strings.Join(parts, "; ") + "; give the overlays different weights"
	default:
		cond.Message = describeTypes(e.Types)
	}
	conditions.Set(&o.Status.Conditions, cond)
}

// splitUnsupported separates extended resources from the drivers whose
// devices the scheduler cannot count.
func splitUnsupported(names []string) (capacity, drivers []string) {
	for _, n := range names {
		if strings.HasPrefix(n, "devices of ") {
			drivers = append(drivers, n)
		} else {
			capacity = append(capacity, n)
		}
	}
	return capacity, drivers
}

// describeTypes names the instance types an overlay changes.
func describeTypes(types []string) string {
	types = slices.Compact(slices.Sorted(slices.Values(types)))
	switch {
	case len(types) == 0:
		return "applies to no instance type of any NodePool"
	case len(types) > 10:
		return fmt.Sprintf("applies to %d instance types: %s and %d more", len(types), strings.Join(types[:10], ", "), len(types)-10)
	}
	return fmt.Sprintf("applies to %d instance type(s): %s", len(types), strings.Join(types, ", "))
}

func equalConditions(a, b []metav1.Condition) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration
	})
}
