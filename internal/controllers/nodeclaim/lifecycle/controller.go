// Package lifecycle carries each NodeClaim through launch, registration,
// initialization and liveness, and deletes its node and instance when the
// NodeClaim is deleted.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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
	Delete(ctx context.Context, providerID string) error
	// NodeClass is a node class's stamp, readiness and drift rules; nil
	// when it does not exist.
	NodeClass(ctx context.Context, name string) (*cloudprovider.NodeClass, error)
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
func (c *Controller) SetupWithManager(_ context.Context, mgr manager.Manager) error {
	return ctrl.ControllerManagedBy(mgr).Named("nodeclaim.lifecycle").For(&v1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.claimOfNode)).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfPool), ctrl.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(c.Cloud.NodeClassObject(), handler.EnqueueRequestsFromMapFunc(c.claimsOfClass)).
		Complete(c)
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

// launch creates the instance once. Capacity and node class problems
// delete the NodeClaim so the provisioner can try elsewhere; other errors
// are retried.
func (c *Controller) launch(ctx context.Context, nc *v1.NodeClaim, now metav1.Time) (bool, error) {
	if nc.Status.ProviderID != "" {
		c.launched.Delete(nc.UID)
		return false, nil
	}
	var inst *cloudprovider.Instance
	var err error
	if known, ok := c.launched.Load(nc.UID); ok {
		inst = known.(*cloudprovider.Instance)
	} else if inst, err = c.Cloud.Create(ctx, nc); err == nil {
		c.launched.Store(nc.UID, inst)
		if inst.SubnetID != "" {
			// The launch answered where the instance runs and that it
			// is nodewright's: registration and drift need not ask.
			c.instances.remember(inst)
		}
	}
	switch {
	case cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsNodeClassNotReady(err):
		reason := v1.ReasonInsufficientCapacity
		if cloudprovider.IsNodeClassNotReady(err) {
			reason = v1.ReasonNodeClassNotReady
		}
		c.Recorder.Eventf(nc, corev1.EventTypeWarning, reason, "deleting NodeClaim %s, it cannot be launched: %v", nc.Name, err)
		logf.FromContext(ctx).Info("deleting NodeClaim, it cannot be launched", "reason", reason, "error", err.Error())
		return true, client.IgnoreNotFound(c.Client.Delete(ctx, nc))
	case cloudprovider.IsRetryLater(err):
		// Nothing was sent: not a failure, but the NodeClaim says why it
		// is not launched yet (one write: the message stays the same
		// while it waits).
		set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionLaunched, metav1.ConditionUnknown, v1.ReasonLaunchWaiting, err.Error())
		return false, err
	case err != nil:
		set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionLaunched, metav1.ConditionUnknown, v1.ReasonLaunchFailed, err.Error())
		return false, fmt.Errorf("launching NodeClaim %s: %w", nc.Name, err)
	}
	nc.Status.ProviderID, nc.Status.ImageID = inst.ProviderID, inst.ImageID
	nc.Status.Capacity, nc.Status.Allocatable = inst.Capacity, inst.Allocatable
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range inst.Labels {
		nc.Labels[k] = v
	}
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionLaunched, metav1.ConditionTrue, v1.ReasonLaunched,
		fmt.Sprintf("%s %s in %s", inst.CapacityType, inst.InstanceType, inst.Zone))
	logf.FromContext(ctx).Info("launched NodeClaim", "providerID", inst.ProviderID, "instanceType", inst.InstanceType,
		"zone", inst.Zone, "capacityType", inst.CapacityType, "imageID", inst.ImageID)
	return false, nil
}

// register finds the NodeClaim's Node and, the first time, makes it the
// NodeClaim's: finalizer, owner, labels, taints; then removes
// karpenter.sh/unregistered. A node that registered without that taint is
// reported, never silently accepted.
func (c *Controller) register(ctx context.Context, nc *v1.NodeClaim, now metav1.Time) (*corev1.Node, error) {
	node, err := c.nodeOf(ctx, nc, now)
	if err != nil || node == nil {
		return nil, err
	}
	nc.Status.NodeName = node.Name
	if node.Labels[v1.LabelRegistered] == "true" {
		// Registered earlier; the status write of that reconcile may not
		// have landed, so the condition is rebuilt from the node.
		restoreRegistered(nc, node, now)
		return node, nil
	}
	// Before the node is taken over (finalizer, owner, labels, taints):
	// is it on an instance nodewright launched?
	inst, err := c.foreignInstance(ctx, nc)
	if err != nil {
		return nil, err
	}
	if inst != nil {
		set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionRegistered, metav1.ConditionFalse, v1.ReasonInstanceNotOwned,
			fmt.Sprintf("node %s runs on instance %s, which nodewright did not launch (it lacks nodewright's tags), so nodewright leaves the node alone; delete NodeClaim %s", node.Name, inst.InstanceID, nc.Name))
		return nil, nil
	}
	hadUnregistered := hasTaint(node.Spec.Taints, v1.TaintKeyUnregistered, corev1.TaintEffectNoExecute)
	registeredWith := taintList(node.Spec.Taints)
	// The pods planned onto the NodeClaim are nominated to the node while
	// karpenter.sh/unregistered still keeps others off it.
	if c.Nominations != nil {
		if err := c.Nominations.NominateTo(ctx, nc.Name, node.Name); err != nil {
			return nil, err
		}
	}
	if err := c.takeOver(ctx, nc, node, registeredWith); errors.Is(err, errRegisteredMeanwhile) {
		// Another reconcile registered it since the cache's copy: its
		// registration is recorded, not counted again.
		restoreRegistered(nc, node, now)
		return node, nil
	} else if err != nil {
		return nil, err
	}
	c.registered(ctx, nc, node, now, registeredWith, hadUnregistered)
	return node, nil
}

// nodeOf is the node with the NodeClaim's provider ID; nil, with the
// Registered condition saying why, while there is none or more than one.
func (c *Controller) nodeOf(ctx context.Context, nc *v1.NodeClaim, now metav1.Time) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes, client.MatchingFields{providerIDField: nc.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("finding the node of NodeClaim %s: %w", nc.Name, err)
	}
	switch len(nodes.Items) {
	case 0:
		if !isTrue(nc.Status.Conditions, v1.ConditionRegistered) {
			set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionRegistered, metav1.ConditionUnknown, v1.ReasonNodeNotFound,
				fmt.Sprintf("no node has registered with provider ID %s yet", nc.Status.ProviderID))
		}
		return nil, nil
	case 1:
		return &nodes.Items[0], nil
	}
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionRegistered, metav1.ConditionFalse, v1.ReasonMultipleNodesFound,
		fmt.Sprintf("%d nodes have provider ID %s", len(nodes.Items), nc.Status.ProviderID))
	return nil, nil
}

// restoreRegistered sets the Registered condition of a node registered
// earlier, from the taints it recorded registering with.
func restoreRegistered(nc *v1.NodeClaim, node *corev1.Node, now metav1.Time) {
	if isTrue(nc.Status.Conditions, v1.ConditionRegistered) {
		return
	}
	registeredWith, recorded := node.Annotations[AnnotationRegisteredTaints]
	reason, msg := registrationOutcome(node, registeredWith, !recorded || strings.Contains(registeredWith, v1.TaintKeyUnregistered+":NoExecute"))
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionRegistered, metav1.ConditionTrue, reason, msg)
}

// foreignInstance is the NodeClaim's instance when nodewright did not
// launch it (it lacks nodewright's tags); nil when nodewright did or the
// instance is gone.
func (c *Controller) foreignInstance(ctx context.Context, nc *v1.NodeClaim) (*cloudprovider.Instance, error) {
	inst, err := c.instances.get(ctx, c.Cloud, nc.Status.ProviderID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("finding the instance of NodeClaim %s: %w", nc.Name, err)
	case inst != nil && inst.Foreign:
		return inst, nil
	}
	return nil, nil
}

// takeOver makes the node the NodeClaim's: it records the taints the node
// registered with, adds the finalizer, the NodeClaim as owner, its labels
// and taints, and marks the node registered. A patch refused because the
// node changed since it was read (the kubelet's status, the cloud
// controller manager's taint) is made again on the node read afresh.
func (c *Controller) takeOver(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, registeredWith string) error {
	err := c.patchTakenOver(ctx, nc, node, registeredWith)
	for tries := 1; apierrors.IsConflict(err) && tries < takeOverTries; tries++ {
		fresh := &corev1.Node{}
		if gerr := c.reader().Get(ctx, client.ObjectKeyFromObject(node), fresh); gerr != nil {
			return fmt.Errorf("registering %s for NodeClaim %s: %w", describeNode(node), nc.Name, gerr)
		}
		*node = *fresh
		if node.Labels[v1.LabelRegistered] == "true" {
			return errRegisteredMeanwhile
		}
		err = c.patchTakenOver(ctx, nc, node, registeredWith)
	}
	return err
}

// errRegisteredMeanwhile: the node read afresh was registered by an
// earlier reconcile whose write the cache did not show yet.
var errRegisteredMeanwhile = errors.New("registered meanwhile")

// takeOverTries bounds the registration patches of one reconcile.
const takeOverTries = 3

func (c *Controller) patchTakenOver(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, registeredWith string) error {
	before := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[AnnotationRegisteredTaints] = registeredWith
	controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
	if err := controllerutil.SetOwnerReference(nc, node, c.Client.Scheme()); err != nil {
		return err
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	node.Spec.Taints = syncedTaints(node, nc)
	node.Labels[v1.LabelRegistered] = "true"
	// The patch carries the node's resourceVersion: if another component
	// (the cloud controller manager removing its uninitialized taint) wrote
	// the node since it was read, the patch fails and is made again on the
	// current node, so a removed taint is never written back.
	if err := c.Client.Patch(ctx, node, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("registering %s for NodeClaim %s: %w", describeNode(node), nc.Name, err)
	}
	return nil
}

// syncedTaints are the node's taints without karpenter.sh/unregistered,
// with the NodeClaim's taints and startup taints added unless the node is
// labelled not to sync them.
func syncedTaints(node *corev1.Node, nc *v1.NodeClaim) []corev1.Taint {
	if node.Labels[v1.LabelDoNotSyncTaints] == "true" {
		return mergeTaints(node.Spec.Taints, nil)
	}
	return mergeTaints(node.Spec.Taints, append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...))
}

// registered records a registration: the Registered condition, the
// NodePool's registration health and metrics; a node that registered
// without karpenter.sh/unregistered is also a Warning event.
func (c *Controller) registered(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, now metav1.Time, registeredWith string, hadUnregistered bool) {
	reason, msg := registrationOutcome(node, registeredWith, hadUnregistered)
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionRegistered, metav1.ConditionTrue, reason, msg)
	c.Registrations.Registered(nc.Labels[v1.LabelNodePool])
	c.Metrics.NodeClaimRegistered(nc.Labels[v1.LabelNodePool], nc.Labels[corev1.LabelTopologyZone], now.Sub(nc.CreationTimestamp.Time))
	log := logf.FromContext(ctx).WithValues("Node", node.Name)
	if !hadUnregistered {
		c.Recorder.Event(nc, corev1.EventTypeWarning, reason, msg)
		log.Info("registered NodeClaim without "+v1.TaintKeyUnregistered, "registeredWithTaints", registeredWith, "reason", reason)
	} else {
		// nodeAge: how long the node waited to be registered.
		log.Info("registered NodeClaim", "after", now.Sub(nc.CreationTimestamp.Time), "nodeAge", now.Sub(node.CreationTimestamp.Time))
	}
}

// AnnotationRegisteredTaints records on a node the taints it registered
// with, before nodewright changed them.
const AnnotationRegisteredTaints = "nodewright.dev/registered-taints"

// registrationOutcome is the Registered reason and message: a node that
// registered without karpenter.sh/unregistered is reported with the taints
// it had and the likely cause.
func registrationOutcome(node *corev1.Node, registeredWith string, hadUnregistered bool) (string, string) {
	if hadUnregistered {
		return v1.ReasonRegistered, ""
	}
	return v1.ReasonUnregisteredTaintMissing, fmt.Sprintf("%s registered without the taint %s:NoExecute (it registered with %s), so it was usable before nodewright synced the NodePool's taints and startupTaints onto it. "+
		"The node's user data replaced its registration taints: check the EC2NodeClass's ValidationSucceeded condition or run `nodewright doctor`; custom startup taints belong in the NodePool's spec.template.spec.startupTaints",
		describeNode(node), v1.TaintKeyUnregistered, registeredWith)
}

// initialize waits until the node is Ready, its startup and known
// ephemeral taints are gone and the extended resources its instance type
// promises are registered.
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, now metav1.Time) error {
	if isTrue(nc.Status.Conditions, v1.ConditionInitialized) {
		return nil
	}
	status, reason, message := c.initialization(nc, node)
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionInitialized, status, reason, message)
	if status != metav1.ConditionTrue || node.Labels[v1.LabelInitialized] == "true" {
		return nil
	}
	before := node.DeepCopy()
	node.Labels[v1.LabelInitialized] = "true"
	if err := c.Client.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("labelling %s initialized: %w", describeNode(node), err)
	}
	c.Metrics.NodeClaimInitialized(nc.Labels[v1.LabelNodePool], now.Sub(nc.CreationTimestamp.Time))
	logf.FromContext(ctx).Info("initialized NodeClaim", "Node", node.Name, "after", now.Sub(nc.CreationTimestamp.Time))
	return nil
}

// initialization is the Initialized condition: False with the first thing
// the node still waits for, True once it waits for nothing.
func (c *Controller) initialization(nc *v1.NodeClaim, node *corev1.Node) (metav1.ConditionStatus, string, string) {
	if !nodeReady(node) {
		return metav1.ConditionFalse, v1.ReasonNodeNotReady, describeNode(node) + " is not Ready"
	}
	if msg := startupTaintLeft(nc, node); msg != "" {
		return metav1.ConditionFalse, v1.ReasonStartupTaintsExist, msg
	}
	if msg := c.ephemeralTaintLeft(nc, node); msg != "" {
		return metav1.ConditionFalse, v1.ReasonEphemeralTaintsExist, msg
	}
	if msg := resourceNotRegistered(nc, node); msg != "" {
		return metav1.ConditionFalse, v1.ReasonResourceNotRegistered, msg
	}
	return metav1.ConditionTrue, v1.ReasonInitialized, ""
}

// nodeReady reports a node whose Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// startupTaintLeft says which of the NodeClaim's startup taints is still
// on the node, "" when none is.
func startupTaintLeft(nc *v1.NodeClaim, node *corev1.Node) string {
	for _, t := range nc.Spec.StartupTaints {
		if hasTaint(node.Spec.Taints, t.Key, t.Effect) {
			return fmt.Sprintf("startup taint %s is still on %s; the component that owns it (a CNI or device plugin, for example) removes it when the node is ready", t.ToString(), describeNode(node))
		}
	}
	return ""
}

// ephemeralTaintLeft says which known ephemeral taint is still on the
// node and who removes it, and, once that is overdue, for how long; ""
// when none is.
func (c *Controller) ephemeralTaintLeft(nc *v1.NodeClaim, node *corev1.Node) string {
	for _, t := range node.Spec.Taints {
		owner, ephemeral := ephemeralOwner(t.Key)
		if !ephemeral {
			continue
		}
		msg := fmt.Sprintf("taint %s is still on %s; it is removed by %s", t.ToString(), describeNode(node), owner)
		if since := c.Clock.Since(registeredAt(nc)); since > c.Options.EphemeralTaintTimeout {
			msg += fmt.Sprintf(", which has not happened %s after registration", since.Round(time.Second))
			if t.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
				msg += ": check that the cloud controller manager is running and can reach the node"
			}
		}
		return msg
	}
	return ""
}

// resourceNotRegistered says which extended resource the instance type
// promises the node does not report yet, "" when it reports them all.
func resourceNotRegistered(nc *v1.NodeClaim, node *corev1.Node) string {
	for name, q := range nc.Status.Capacity {
		if !isExtendedResource(name) || q.IsZero() {
			continue
		}
		if have, ok := node.Status.Allocatable[name]; !ok || have.IsZero() {
			return fmt.Sprintf("%s does not report resource %s yet; its device plugin registers it", describeNode(node), name)
		}
	}
	return ""
}

// isExtendedResource reports a resource a device plugin registers: any
// but cpu, memory, pods and ephemeral storage, which the kubelet reports.
func isExtendedResource(name corev1.ResourceName) bool {
	return name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourcePods && name != corev1.ResourceEphemeralStorage
}

// registeredAt is when the Registered condition last turned True.
func registeredAt(nc *v1.NodeClaim) time.Time {
	for _, c := range nc.Status.Conditions {
		if c.Type == v1.ConditionRegistered && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return nc.CreationTimestamp.Time
}

// liveness deletes NodeClaims that did not launch or register in time,
// saying why.
func (c *Controller) liveness(ctx context.Context, nc *v1.NodeClaim) (bool, error) {
	age := c.Clock.Since(nc.CreationTimestamp.Time)
	var reason, msg string
	switch {
	case !isTrue(nc.Status.Conditions, v1.ConditionLaunched) && age > c.Options.LaunchTimeout:
		reason, msg = v1.ReasonLaunchTimeout, fmt.Sprintf("NodeClaim %s was not launched within %s", nc.Name, c.Options.LaunchTimeout)
	case !isTrue(nc.Status.Conditions, v1.ConditionRegistered) && age > c.Options.RegistrationTimeout:
		reason, msg = v1.ReasonRegistrationTimeout, fmt.Sprintf("no node registered for NodeClaim %s within %s", nc.Name, c.Options.RegistrationTimeout)
		if err := c.registrationFailed(ctx, nc); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	msg += firstProblem(nc.Status.Conditions)
	c.Recorder.Event(nc, corev1.EventTypeWarning, reason, msg)
	logf.FromContext(ctx).Info("deleting NodeClaim", "reason", reason, "message", msg)
	return true, client.IgnoreNotFound(c.Client.Delete(ctx, nc))
}

// registrationFailed records with the NodePool's registration outcomes
// that a node did not register in time.
func (c *Controller) registrationFailed(ctx context.Context, nc *v1.NodeClaim) error {
	cause := "the instance launched but no node registered: check that the node role is mapped in aws-auth (or an EC2_LINUX access entry), that the instance can reach the API server, and its user data (nodewright doctor)"
	pool := nc.Labels[v1.LabelNodePool]
	// A backoff an earlier process left in the NodePool's status goes
	// on counting (this timeout may come before the NodePool
	// controller took it up).
	np := &v1.NodePool{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: pool}, np); client.IgnoreNotFound(err) != nil {
		return err
	} else if err == nil {
		c.Registrations.RestoreFrom(np)
	}
	c.Registrations.TimedOut(pool, string(nc.UID), c.Clock.Now(), cause)
	return nil
}

// firstProblem is "; " and the type and message of the first condition
// but Ready that is not True and says why, "" when there is none.
func firstProblem(conds []metav1.Condition) string {
	for _, cond := range conds {
		if cond.Status != metav1.ConditionTrue && cond.Message != "" && cond.Type != v1.ConditionReady {
			return "; " + cond.Type + ": " + cond.Message
		}
	}
	return ""
}

// finalize deletes the NodeClaim's node and waits until it is gone (the
// node's own finalizer drains it, PodDisruptionBudgets holding until the
// terminationGracePeriod deadline, and terminates the instance), then
// deletes the instance until it is gone, then releases the NodeClaim.
func (c *Controller) finalize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	if known, ok := c.launched.Load(nc.UID); ok && nc.Status.ProviderID == "" {
		// Launched, but deleted before its instance was recorded.
		nc = nc.DeepCopy()
		nc.Status.ProviderID = known.(*cloudprovider.Instance).ProviderID
	}
	if nc.Status.ProviderID == "" {
		return c.release(ctx, nc)
	}
	return c.terminate(ctx, nc)
}

// terminate deletes the nodes of a launched NodeClaim and waits until they
// are gone, then its instance; a NodeClaim whose instance nodewright did
// not launch is released with its node and instance left alone.
func (c *Controller) terminate(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes, client.MatchingFields{providerIDField: nc.Status.ProviderID}); err != nil {
		return reconcile.Result{}, err
	}
	if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return n.DeletionTimestamp.IsZero() }) {
		// Before a node is deleted: is it on an instance nodewright
		// launched? Asked of the cloud now, not of what it said earlier
		// (deleting the instance checks again).
		c.instances.forget(nc.Status.ProviderID)
		inst, err := c.foreignInstance(ctx, nc)
		if err != nil {
			return reconcile.Result{}, err
		}
		if inst != nil {
			c.Recorder.Eventf(nc, corev1.EventTypeWarning, v1.ReasonInstanceNotOwned, "NodeClaim %s points at instance %s, which nodewright did not launch; its node and instance are left alone", nc.Name, inst.InstanceID)
			return c.release(ctx, nc)
		}
	}
	if err := c.deleteNodes(ctx, nodes.Items); err != nil {
		return reconcile.Result{}, err
	}
	if slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return controllerutil.ContainsFinalizer(&n, v1.TerminationFinalizer) }) {
		// The termination controller drains the node and terminates
		// the instance; the node's deletion brings the NodeClaim back.
		return reconcile.Result{RequeueAfter: c.Options.Poll}, nil
	}
	// No node to drain: none, or only nodes this NodeClaim never took
	// over (its kubelet registered before the NodeClaim recorded the
	// instance, or before the NodeClaim was deleted), which nothing
	// drains and whose kubelet registers again while the instance runs.
	return c.terminateInstance(ctx, nc)
}

// deleteNodes deletes the nodes not being deleted yet; the termination
// controller drains each and terminates its instance.
func (c *Controller) deleteNodes(ctx context.Context, nodes []corev1.Node) error {
	for i := range nodes {
		node := &nodes[i]
		if !node.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", describeNode(node), err)
		}
		logf.FromContext(ctx).Info("deleted node", "Node", node.Name)
	}
	return nil
}

// terminateInstance terminates the NodeClaim's instance, coming back until
// it is gone, then releases the NodeClaim; an instance nodewright did not
// launch is reported and left running.
func (c *Controller) terminateInstance(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	err := c.Cloud.Delete(ctx, nc.Status.ProviderID)
	switch {
	case err == nil:
		return reconcile.Result{RequeueAfter: c.Options.Poll}, nil // still terminating
	case cloudprovider.IsNotOwned(err):
		c.Recorder.Eventf(nc, corev1.EventTypeWarning, v1.ReasonInstanceNotOwned, "NodeClaim %s points at an instance nodewright did not launch: %v; terminate it yourself if it should go", nc.Name, err)
	case !cloudprovider.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("terminating the instance of NodeClaim %s: %w", nc.Name, err)
	}
	return c.release(ctx, nc)
}

// release removes the NodeClaim's finalizer: its instance is gone, or not
// nodewright's.
func (c *Controller) release(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	before := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	if err := c.Client.Patch(ctx, nc, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	c.launched.Delete(nc.UID)
	c.wrote.Delete(nc.UID)
	c.instances.forget(nc.Status.ProviderID)
	c.Metrics.NodeClaimTerminated(nc.Labels[v1.LabelNodePool], nc.Labels[v1.LabelCapacityType], nc.Labels[corev1.LabelTopologyZone], nc.Status.NodeName != "")
	logf.FromContext(ctx).Info("terminated NodeClaim", "providerID", nc.Status.ProviderID)
	return reconcile.Result{}, nil
}
