package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// initialize waits until the node is Ready, its startup and known
// ephemeral taints are gone and the extended resources its pods request
// are registered.
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, now metav1.Time) error {
	if isTrue(nc.Status.Conditions, v1.ConditionInitialized) {
		return nil
	}
	status, reason, message := c.initialization(nc, node)
	if status == metav1.ConditionTrue {
		var err error
		if status, reason, message, err = c.devicesPublished(ctx, nc, node); err != nil {
			return err
		}
	}
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

// resourceNotRegistered says which extended resource the NodeClaim's pods
// request that the node does not report yet, "" when it reports them
// all. Only what they request: a type's capacity can hold resources a
// node has only when its launch asks (EFA interfaces), which a node
// launched for other pods never reports.
func resourceNotRegistered(nc *v1.NodeClaim, node *corev1.Node) string {
	for name, q := range nc.Spec.Resources.Requests {
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

// devicesPublished is the Initialized condition as far as DRA goes: True
// once every driver the NodeClaim was launched for (its
// requested-dra-drivers) has published a complete pool of the node's
// devices, Unknown before.
func (c *Controller) devicesPublished(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) (metav1.ConditionStatus, string, string, error) {
	wanted := strings.TrimSpace(nc.Annotations[v1.AnnotationRequestedDRADrivers])
	if wanted == "" || c.Options.IgnoreDRARequests {
		return metav1.ConditionTrue, v1.ReasonInitialized, "", nil
	}
	list := &resourcev1.ResourceSliceList{}
	if err := c.Client.List(ctx, list); err != nil {
		return "", "", "", fmt.Errorf("listing ResourceSlices for %s: %w", describeNode(node), err)
	}
	complete := completePools(list.Items, node.Name)
	for _, driver := range strings.Split(wanted, ",") {
		driver = strings.TrimSpace(driver)
		if driver == "" || complete[driver] {
			continue
		}
		return metav1.ConditionUnknown, v1.ReasonDRADriverPoolsNotPublished, fmt.Sprintf(
			"DRA driver %s has not published the devices of %s (no complete pool of ResourceSlices) for the pods' resource claims; "+
				"its kubelet plugin runs as a DaemonSet: check that the driver is installed, that its DaemonSet tolerates the node's taints and selects it, and its pod's logs on the node",
			driver, describeNode(node)), nil
	}
	return metav1.ConditionTrue, v1.ReasonInitialized, "", nil
}

// completePools are the drivers that have a complete pool of the node's
// devices: as many ResourceSlices of the pool's newest generation as the
// pool says it has.
func completePools(items []resourcev1.ResourceSlice, node string) map[string]bool {
	type pool struct{ driver, name string }
	type seen struct{ generation, count, want int64 }
	pools := map[pool]*seen{}
	for i := range items {
		s := &items[i]
		if !onNode(s, node) {
			continue
		}
		key := pool{s.Spec.Driver, s.Spec.Pool.Name}
		p := pools[key]
		switch {
		case p == nil || s.Spec.Pool.Generation > p.generation:
			pools[key] = &seen{generation: s.Spec.Pool.Generation, count: 1, want: s.Spec.Pool.ResourceSliceCount}
		case s.Spec.Pool.Generation == p.generation:
			p.count++
		}
	}
	out := map[string]bool{}
	for key, p := range pools {
		if p.count >= p.want {
			out[key.driver] = true
		}
	}
	return out
}

// onNode reports a ResourceSlice of the node's own devices: it names the
// node, or the node owns it.
func onNode(s *resourcev1.ResourceSlice, node string) bool {
	if s.Spec.NodeName != nil && *s.Spec.NodeName == node {
		return true
	}
	for _, ref := range s.OwnerReferences {
		if ref.Kind == "Node" && ref.Name == node {
			return true
		}
	}
	return false
}
