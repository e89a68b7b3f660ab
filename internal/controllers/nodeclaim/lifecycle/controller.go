// Package lifecycle carries each NodeClaim through launch, registration,
// initialization and liveness, and deletes its node and instance when the
// NodeClaim is deleted.
package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// CloudProvider launches, finds and deletes the instances of NodeClaims.
type CloudProvider interface {
	Create(ctx context.Context, claim *v1.NodeClaim) (*cloudprovider.Instance, error)
	Get(ctx context.Context, providerID string) (*cloudprovider.Instance, error)
	Delete(ctx context.Context, providerID string, holder cloudprovider.Holder) error
	// NodeClass is a node class's stamp, readiness and drift rules; nil
	// when it does not exist.
	NodeClass(ctx context.Context, name string) (*cloudprovider.NodeClass, error)
	// NodeClassWithTypes is NodeClass with the class's instance types
	// now, to tell whether a NodeClaim's instance type is still offered.
	NodeClassWithTypes(ctx context.Context, name string) (*cloudprovider.NodeClass, error)
	// NodeClassObject is an empty object of the node class kind, to watch.
	NodeClassObject() client.Object
}

// Nominations nominates the pods planned onto a NodeClaim to its node.
type Nominations interface {
	NominateTo(ctx context.Context, claim, node string) error
}

// Options are the lifecycle's timeouts.
type Options struct {
	// LaunchTimeout: a NodeClaim not launched this long after creation is
	// deleted.
	LaunchTimeout time.Duration
	// RegistrationTimeout: a NodeClaim whose node has not registered this
	// long after creation is deleted.
	RegistrationTimeout time.Duration
	// EphemeralTaintTimeout: after this long, a known ephemeral taint still
	// on the node is reported with the component that should remove it.
	EphemeralTaintTimeout time.Duration
	// Poll is how often a NodeClaim waiting for its node is looked at again.
	Poll time.Duration
	// IgnoreDRARequests: no NodeClaim waits for DRA drivers to publish
	// devices (--ignore-dra-requests).
	IgnoreDRARequests bool
}

// DefaultOptions are the reference timeouts.
func DefaultOptions() Options {
	return Options{LaunchTimeout: 5 * time.Minute, RegistrationTimeout: 15 * time.Minute, EphemeralTaintTimeout: 2 * time.Minute, Poll: 2 * time.Second}
}

// providerIDField indexes Nodes by spec.providerID.
const providerIDField = listing.NodeProviderID

// Controller is the NodeClaim lifecycle controller.
type Controller struct {
	Client   client.Client
	Cloud    CloudProvider
	Metrics  *metrics.Metrics
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Options  Options
	// Registrations receives each NodePool's registration outcomes (the
	// NodePool controller shows them, the provisioner backs off).
	Registrations *nodepoolhealth.Registrations
	// Nominations, when set, is told a NodeClaim's node as the node is
	// registered, before it can take pods, so the pods planned onto the
	// NodeClaim are nominated to it first (the provisioner's nominator).
	Nominations Nominations
	// APIReader reads objects past the cache, after a write failed on
	// a cached copy older than the API server's; Client when nil.
	APIReader client.Reader
	instances instanceFacts
	// launched holds the instance of each NodeClaim launched by this
	// process until the cache shows its provider ID: a reconcile that
	// reads the NodeClaim before then records that instance instead of
	// asking the cloud again.
	launched sync.Map // NodeClaim UID → *cloudprovider.Instance
	// wrote holds the resourceVersion of this process's last write of
	// each NodeClaim until the cache shows it.
	wrote sync.Map // NodeClaim UID → uint64
}

// SetupWithManager registers the controller and the Node index it uses;
// Node changes wake the NodeClaim they belong to, a NodePool's spec
// changes all of its NodeClaims (drift). Its status changes wake none:
// at a few thousand NodeClaims each status write of the NodePool would
// queue all of them ahead of the one whose node just registered.
//
// ResourceSlices wake the NodeClaim of their node (initialization waits
// for the DRA drivers' devices), on clusters that serve them.
func (c *Controller) SetupWithManager(_ context.Context, mgr manager.Manager) error {
	b := ctrl.ControllerManagedBy(mgr).Named("nodeclaim.lifecycle").For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.claimOfNode)).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfPool), ctrl.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(c.Cloud.NodeClassObject(), handler.EnqueueRequestsFromMapFunc(c.claimsOfClass))
	if _, err := mgr.GetRESTMapper().RESTMapping(resourcev1.SchemeGroupVersion.WithKind("ResourceSlice").GroupKind(), resourcev1.SchemeGroupVersion.Version); err == nil && !c.Options.IgnoreDRARequests {
		b = b.Watches(&resourcev1.ResourceSlice{}, handler.EnqueueRequestsFromMapFunc(c.claimOfSlice))
	}
	return b.Complete(c)
}

// claimOfSlice wakes the NodeClaim of the node a ResourceSlice is on.
func (c *Controller) claimOfSlice(ctx context.Context, o client.Object) []reconcile.Request {
	s := o.(*resourcev1.ResourceSlice)
	if s.Spec.NodeName == nil {
		return nil
	}
	node := &corev1.Node{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: *s.Spec.NodeName}, node); err != nil {
		return nil
	}
	return c.claimOfNode(ctx, node)
}

func (c *Controller) claimOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	if node.Spec.ProviderID == "" {
		return nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims, client.MatchingFields{listing.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims.Items))
	for _, nc := range claims.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nc)})
	}
	return out
}

// Reconcile moves one NodeClaim along its lifecycle.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.Client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if c.behind(nc) {
		// The cache does not show this process's last write yet (the
		// event of a write made before it, of the node or of the
		// NodeClaim's metadata, woke it): that write's own event
		// brings the NodeClaim back; deciding now would redo the write
		// on what it replaced.
		return reconcile.Result{RequeueAfter: c.Options.Poll}, nil
	}
	if err := c.addFinalizer(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	res, err := c.advance(ctx, nc)
	if !apierrors.IsConflict(err) {
		return res, err
	}
	// Decided on a cached NodeClaim older than the API server's (the
	// cache lags a busy API server): decided again at once on the
	// current one, rather than after the error's backoff.
	fresh := &v1.NodeClaim{}
	if gerr := c.reader().Get(ctx, req.NamespacedName, fresh); gerr != nil || !fresh.DeletionTimestamp.IsZero() {
		return res, err
	}
	return c.advance(ctx, fresh)
}

// behind reports whether nc is older than this process's last write of
// it. Resource versions are compared as the API server's numbers; one
// that is not a number is never behind.
func (c *Controller) behind(nc *v1.NodeClaim) bool {
	w, ok := c.wrote.Load(nc.UID)
	if !ok {
		return false
	}
	rv, err := strconv.ParseUint(nc.ResourceVersion, 10, 64)
	if err != nil || rv >= w.(uint64) {
		c.wrote.Delete(nc.UID)
		return false
	}
	return true
}

// written records a write of nc (its resourceVersion as written).
func (c *Controller) written(nc *v1.NodeClaim) {
	if rv, err := strconv.ParseUint(nc.ResourceVersion, 10, 64); err == nil {
		c.wrote.Store(nc.UID, rv)
	}
}

// reader reads past the cache.
func (c *Controller) reader() client.Reader {
	if c.APIReader != nil {
		return c.APIReader
	}
	return c.Client
}

// addFinalizer holds a new NodeClaim until its node and instance are
// gone.
func (c *Controller) addFinalizer(ctx context.Context, nc *v1.NodeClaim) error {
	if controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return nil
	}
	before := nc.DeepCopy()
	controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	if err := c.Client.Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("adding the finalizer to NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

// advance takes the NodeClaim as far as it goes now: launch, then its
// node's registration, initialization and drift, then liveness; its
// status is written once, at the end. A NodeClaim not yet Ready is looked
// at again after Poll.
func (c *Controller) advance(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	before := nc.DeepCopy()
	now := metav1.NewTime(c.Clock.Now())
	deleted, launchErr := c.launch(ctx, nc, now)
	if deleted {
		return reconcile.Result{}, nil
	}
	if launchErr == nil && nc.Status.ProviderID != "" {
		if err := c.followNode(ctx, nc, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	if deleted, err := c.liveness(ctx, nc); deleted || err != nil {
		return reconcile.Result{}, err
	}
	status, reason, message := readyCondition(nc.Status.Conditions)
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionReady, status, reason, message)
	if err := c.patch(ctx, before, nc); err != nil {
		return reconcile.Result{}, err
	}
	if after, ok := cloudprovider.RetryAfter(launchErr); ok {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	if launchErr != nil {
		return reconcile.Result{}, launchErr
	}
	if status != metav1.ConditionTrue {
		return reconcile.Result{RequeueAfter: c.Options.Poll}, nil
	}
	return reconcile.Result{}, nil
}

// followNode registers the launched NodeClaim's node and, once it has
// one, follows the node's initialization and drift.
func (c *Controller) followNode(ctx context.Context, nc *v1.NodeClaim, now metav1.Time) error {
	node, err := c.register(ctx, nc, now)
	if err != nil || node == nil {
		return err
	}
	if err := c.initialize(ctx, nc, node, now); err != nil {
		return err
	}
	return c.drift(ctx, nc, node, now)
}

// patch writes labels, annotations and owners (metadata) and status. Both patches carry the
// resourceVersion read, so a decision made on a stale NodeClaim fails and
// is made again on the current one instead of overwriting newer status.
func (c *Controller) patch(ctx context.Context, before, nc *v1.NodeClaim) error {
	status := nc.Status
	if !equalLabels(before.Labels, nc.Labels) || !equalLabels(before.Annotations, nc.Annotations) || len(before.OwnerReferences) != len(nc.OwnerReferences) {
		if err := c.Client.Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching NodeClaim %s: %w", nc.Name, err)
		}
		c.written(nc)
		nc.Status = status
		before = before.DeepCopy()
		before.ResourceVersion = nc.ResourceVersion
	}
	if equality.Semantic.DeepEqual(before.Status, nc.Status) {
		return nil // nothing to write: no request at all
	}
	if err := c.Client.Status().Patch(ctx, nc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching the status of NodeClaim %s: %w", nc.Name, err)
	}
	c.written(nc)
	return nil
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
