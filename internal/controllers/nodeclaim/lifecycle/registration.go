package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

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
