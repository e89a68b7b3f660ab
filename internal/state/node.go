package state

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Node is a Node with its NodeClaim: either may be missing (a NodeClaim
// in flight has no Node yet; a node of a NodePool may have lost its
// NodeClaim, or never had one in a manifest).
type Node struct {
	// Name is the Node's name, or the NodeClaim's while it has no node.
	Name      string
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	NodePool  string
	// Pods are the pods bound to the node that have not finished.
	Pods []*corev1.Pod
	// Expected are pending pods planned or nominated onto the node while
	// it launches or initializes: they take its room.
	Expected []*corev1.Pod
	// Unsized is a NodeClaim in flight whose allocatable is not known
	// (no status yet, no instance type it lists is known).
	Unsized  bool
	sched    *scheduling.Node
	blockers []Blocker
	// drift and expireAfter are what lifetimes found.
	drift       cloudprovider.Drift
	expireAfter v1.NillableDuration
}

// pair matches NodeClaims to their Nodes by provider ID or node name.
func pair(claims []*v1.NodeClaim, nodes []*corev1.Node, bound map[string][]*corev1.Pod) []*Node {
	byProvider, byName := map[string]*corev1.Node{}, map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
		if n.Spec.ProviderID != "" {
			byProvider[n.Spec.ProviderID] = n
		}
	}
	taken := map[string]bool{}
	out := make([]*Node, 0, max(len(claims), len(nodes)))
	for _, nc := range claims {
		n := &Node{Name: nc.Name, NodeClaim: nc, NodePool: nc.Labels[v1.LabelNodePool]}
		node := byProvider[nc.Status.ProviderID]
		if node == nil || nc.Status.ProviderID == "" {
			node = byName[nc.Status.NodeName]
		}
		if node != nil && !taken[node.Name] {
			taken[node.Name] = true
			n.Name, n.Node, n.Pods = node.Name, node, bound[node.Name]
		}
		out = append(out, n)
	}
	for _, node := range nodes {
		if !taken[node.Name] {
			out = append(out, &Node{Name: node.Name, Node: node, NodePool: node.Labels[v1.LabelNodePool], Pods: bound[node.Name]})
		}
	}
	slices.SortFunc(out, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Managed reports a node of a NodePool.
func (n *Node) Managed() bool { return n.NodePool != "" }

// Registered reports a NodeClaim whose node exists (or a node without one).
func (n *Node) Registered() bool { return n.Node != nil }

// AwaitingItsNodeClaim reports a node of a NodePool that joined before
// its NodeClaim recorded the instance (EC2 starts an instance before
// CreateFleet answers, and a launch batch's member records its instance
// after the call): still tainted karpenter.sh/unregistered, never
// registered, paired with no NodeClaim. It is taken for a launching
// NodeClaim's node, not one of its own: it offers no room and is never
// disrupted; in its NodePool's usage a NodeClaim of the NodePool made
// before it and without a node yet counts it (usage).
func (n *Node) AwaitingItsNodeClaim() bool {
	return n.NodeClaim == nil && n.Node != nil && n.NodePool != "" && n.Node.Labels[v1.LabelRegistered] != "true" &&
		slices.ContainsFunc(n.Node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyUnregistered })
}

// Deleting reports a node or NodeClaim being deleted, or whose instance
// is terminating (its NodeClaim InstanceTerminating).
func (n *Node) Deleting() bool {
	return (n.Node != nil && !n.Node.DeletionTimestamp.IsZero()) || (n.NodeClaim != nil && !n.NodeClaim.DeletionTimestamp.IsZero()) ||
		n.NodeClaim != nil && conditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionInstanceTerminating)
}

// Launched reports a node whose instance runs: its NodeClaim is Launched
// (or records its instance, or is initialized); a node without one once
// it is initialized, as it is judged for the rest.
func (n *Node) Launched() bool {
	if n.NodeClaim == nil {
		return n.Initialized()
	}
	return conditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionLaunched) || n.NodeClaim.Status.ProviderID != "" || n.Initialized()
}

// Initialized reports a node that finished initialization: its NodeClaim
// says so; for a node without one, its karpenter.sh/initialized label
// does, or it never registered through a NodeClaim (no
// karpenter.sh/registered label: a node of the user's, counted as
// initialized when it was created).
func (n *Node) Initialized() bool {
	if n.NodeClaim == nil {
		return n.Node != nil && !n.AwaitingItsNodeClaim() && (n.Node.Labels[v1.LabelInitialized] == "true" || n.Node.Labels[v1.LabelRegistered] == "")
	}
	return n.Node != nil && conditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionInitialized)
}

// InitializedAt is when the node finished initialization.
func (n *Node) InitializedAt() time.Time {
	if n.NodeClaim == nil {
		return n.Node.CreationTimestamp.Time
	}
	if c := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionInitialized); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// LastPodEvent is when a pod was last bound to or removed from the node:
// the NodeClaim's record (of pods that left, or were made with the node
// set), or the latest pod kube-scheduler bound there (its PodScheduled
// condition).
func (n *Node) LastPodEvent() time.Time {
	var last time.Time
	if n.NodeClaim != nil {
		last = n.NodeClaim.Status.LastPodEventTime.Time
	}
	for _, p := range n.Pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(last) {
				last = c.LastTransitionTime.Time
			}
		}
	}
	return last
}

// Capacity is the node's capacity: its NodeClaim's, else the Node's.
func (n *Node) Capacity() corev1.ResourceList {
	if n.NodeClaim != nil && len(n.NodeClaim.Status.Capacity) > 0 {
		return n.NodeClaim.Status.Capacity
	}
	if n.Node != nil {
		return n.Node.Status.Capacity
	}
	return nil
}

// Label is one of the node's labels (the NodeClaim's before it has a node).
func (n *Node) Label(key string) string {
	if n.Node != nil {
		if v, ok := n.Node.Labels[key]; ok {
			return v
		}
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels[key]
	}
	return ""
}

// Taints are the node's taints.
func (n *Node) Taints() []corev1.Taint {
	if n.Node != nil {
		return n.Node.Spec.Taints
	}
	return nil
}

// Disrupted reports a node tainted karpenter.sh/disrupted.
func (n *Node) Disrupted() bool {
	return slices.ContainsFunc(n.Taints(), func(t corev1.Taint) bool { return t.Key == v1.TaintKeyDisrupted })
}

// Rebooting reports a node node repair is rebooting (its NodeClaim's
// Rebooting condition is True).
func (n *Node) Rebooting() bool {
	return n.NodeClaim != nil && conditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionRebooting)
}

// Reschedulable are the node's pods that need a place elsewhere when it
// goes: not DaemonSet pods (the DaemonSet runs them wherever it runs),
// not static (mirror) pods.
func (n *Node) Reschedulable() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range n.Pods {
		if !OwnedByDaemonSet(p) && !mirror(p) {
			out = append(out, p)
		}
	}
	return out
}

func mirror(p *corev1.Pod) bool { return p.Annotations[corev1.MirrorPodAnnotationKey] != "" }

// Scheduling is the node as the scheduler sees it; nil when pods cannot
// be placed on it (cordoned, being deleted, unsized).
func (n *Node) Scheduling() *scheduling.Node { return n.sched }

// schedulingNode is the capacity the node offers new pods. A node still
// initializing keeps only the taints that stay (startup and ephemeral
// taints go), so pods are planned onto it rather than onto new
// NodeClaims; a NodeClaim in flight offers its status's allocatable, or
// the least any instance type it lists offers.
func (n *Node) schedulingNode(poolTypes, catalog []*scheduling.InstanceType) *scheduling.Node {
	if n.Deleting() || n.AwaitingItsNodeClaim() {
		return nil
	}
	if n.Node != nil {
		if n.Node.Spec.Unschedulable {
			return nil
		}
		sn := scheduling.NodeFromObject(n.Node, append(slices.Clone(n.Pods), n.Expected...))
		switch {
		case n.NodeClaim != nil && !n.Initialized():
			sn.Taints = InitializingTaints(n.Node.Spec.Taints, n.NodeClaim.Spec.StartupTaints)
			sn.Starting = 1
		case n.NodeClaim != nil:
			sn.Taints = notReadyTaintsLifted(n.Node.Spec.Taints)
		}
		return sn
	}
	nc := n.NodeClaim
	reqs := scheduling.LabelRequirements(nc.Labels)
	for _, r := range nc.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	alloc, _ := scheduling.ParseResources(nc.Status.Allocatable)
	if alloc.IsZero() {
		alloc = leastAllocatable(reqs, poolTypes)
	}
	if alloc.IsZero() {
		alloc = leastAllocatable(reqs, catalog)
	}
	if alloc.IsZero() {
		return nil
	}
	return &scheduling.Node{Name: nc.Name, Requirements: reqs, Taints: slices.Clone(nc.Spec.Taints), Allocatable: alloc, Pods: slices.Clone(n.Expected),
		Launching: nc.Status.ProviderID == "", Starting: 2}
}

// leastAllocatable is, per resource, the least that the instance types
// the requirements name offer: whichever launches, the pods must fit.
func leastAllocatable(reqs scheduling.Requirements, types []*scheduling.InstanceType) scheduling.Resources {
	names, ok := reqs[scheduling.LabelInstanceType]
	if !ok {
		return scheduling.Resources{}
	}
	var out scheduling.Resources
	found := false
	for _, it := range types {
		if !names.Has(it.Name) {
			continue
		}
		if !found {
			out, found = it.Allocatable, true
		}
		for i := range out {
			out[i] = min(out[i], it.Allocatable[i])
		}
	}
	return out
}

// InitializingTaints are the taints a node still initializing keeps: the
// ones other components remove once it is ready (startup taints and
// known ephemeral taints) are left out.
func InitializingTaints(taints, startup []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if _, ephemeral := EphemeralTaintOwner(t.Key); ephemeral {
			continue
		}
		if slices.ContainsFunc(startup, func(s corev1.Taint) bool { return s.Key == t.Key && s.Effect == t.Effect }) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Unready reports an initialized node whose kubelet says it is not Ready
// (its Ready condition False or Unknown): out of service as a node being
// disrupted is, so it counts against the NodePool's disruption budgets
// but the repair budget (being unready is what repair acts on).
func (n *Node) Unready() bool {
	return n.Node != nil && n.Initialized() && NodeUnready(n.Node)
}

// NodeUnready reports a node whose Ready condition is False or Unknown;
// a node that has none yet is not counted.
func NodeUnready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}

// notReady reports a node tainted not ready or unreachable: no place for
// pods evicted now.
func (n *Node) notReady() bool {
	return n.Node != nil && slices.ContainsFunc(n.Node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	})
}

// notReadyTaintsLifted are an initialized node's taints but the NoSchedule
// ones that mark it not ready for now (not-ready, unreachable,
// uninitialized): pods are planned onto it, as onto a node still
// starting, rather than onto a new node, while its NoExecute taints and
// every other taint keep pods off.
func notReadyTaintsLifted(taints []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		switch t.Key {
		case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, CloudProviderTaint:
			if t.Effect == corev1.TaintEffectNoSchedule {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// CloudProviderTaint is the taint a kubelet with --cloud-provider=external
// registers with; the cloud controller manager removes it.
const CloudProviderTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// ephemeralTaints are set and removed by other components; the value
// says who removes the taint.
var ephemeralTaints = map[string]string{
	corev1.TaintNodeNotReady:    "the node lifecycle controller, once the kubelet reports Ready",
	corev1.TaintNodeUnreachable: "the node lifecycle controller, once the kubelet reports again",
	CloudProviderTaint:          "the cloud controller manager, once it has initialised the node",
	v1.TaintKeyUnregistered:     "nodewright, when it registers the node",
}

// EphemeralTaintOwner says who removes a known ephemeral taint; false for
// other taints.
func EphemeralTaintOwner(key string) (string, bool) {
	if owner, ok := ephemeralTaints[key]; ok {
		return owner, true
	}
	if strings.HasPrefix(key, "readiness.k8s.io/") {
		return "the component that owns the readiness gate", true
	}
	return "", false
}
