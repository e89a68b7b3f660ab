// Package state is the one step from the cluster's listed objects to what
// every decision reads: the scheduler's input (pending pods, the nodes and
// NodeClaims in flight that pods can use, DaemonSets, the NodePools that
// can launch with their usage) and the nodes disruption may act on, each
// with what keeps it. It is pure: no client, no clock, no cloud. The
// provisioner, disruption, simulate, userdata and doctor all call it, so
// they agree on which pods are pending, which nodes count and how much a
// NodePool uses.
package state

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Objects are the listed cluster objects a decision depends on. Manifests
// (simulate) and a live cluster's lists alike.
type Objects struct {
	NodePools  []*v1.NodePool
	NodeClaims []*v1.NodeClaim
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	DaemonSets []*appsv1.DaemonSet
	PDBs       []*policyv1.PodDisruptionBudget
	// Overlays change the price and capacity of the instance types they
	// select.
	Overlays []*v1alpha1.NodeOverlay
	// Namespaces, for pod affinity namespace selectors. A namespace a pod
	// is in that is not listed counts with just its name label.
	Namespaces []*corev1.Namespace
	// PVCs, PVs and StorageClasses, for the topology pods' volumes need.
	PVCs           []*corev1.PersistentVolumeClaim
	PVs            []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
	// CSINodes report how many volumes of each CSI driver nodes attach.
	CSINodes []*storagev1.CSINode
	// CapacityBuffers keep room for pods to come (listed with the
	// CapacityBuffer feature gate), with the PodTemplates they resolved to.
	CapacityBuffers []*v1beta1.CapacityBuffer
	PodTemplates    []*corev1.PodTemplate
	// DeviceClasses, ResourceClaims, ResourceClaimTemplates and
	// ResourceSlices, for the devices pods' claims need (DRA) and those
	// nodes have.
	DeviceClasses          []*resourcev1.DeviceClass
	ResourceClaims         []*resourcev1.ResourceClaim
	ResourceClaimTemplates []*resourcev1.ResourceClaimTemplate
	ResourceSlices         []*resourcev1.ResourceSlice
}

// Options are the facts from outside the objects.
type Options struct {
	Now time.Time
	// NodesWithoutClaims says the objects are a dump that may leave
	// NodeClaims out: a node of a NodePool without one stands for the
	// NodeClaim it was made from, and drifts and expires by its labels,
	// its age and its NodePool's template. A live cluster's node without
	// a NodeClaim is not nodewright's to replace: it neither drifts nor
	// expires.
	NodesWithoutClaims bool
	// NodeClasses are the resolved EC2NodeClasses by name; a NodePool
	// whose class is not here launches nothing.
	NodeClasses map[string]*cloudprovider.NodeClass
	// Backoff holds the registration backoffs the controller knows of
	// (a zero Until: none); a NodePool not in it backs off as its
	// status.registrationBackoff says.
	Backoff map[string]Backoff
	// Catalog sizes NodeClaims that have no allocatable in their status
	// yet (the least any instance type they list offers) when their
	// NodePool's types are not at hand.
	Catalog []*scheduling.InstanceType
	// Planned are pending pods an earlier decision planned onto a
	// NodeClaim (by name): one in flight, or a registered one whose node
	// had room for pods kube-scheduler had not tried. With the pods
	// nominated to a node (status.nominatedNodeName), they count as that
	// node's while it launches and initializes, and after as long as
	// kube-scheduler has not found them no room (NominationGrace after
	// the node initialized when it had): decisions do not move them, and
	// no room is planned twice.
	Planned         map[types.NamespacedName]string
	NominationGrace time.Duration
	// PlannedAt is when pods were last planned onto each NodeClaim of
	// Planned (a new one's creation): its pods
	// wait for it while the cache does not show it yet, for up to
	// UnseenGrace, rather than being planned again.
	PlannedAt   map[string]time.Time
	UnseenGrace time.Duration
	// DefaultSpread are the topology spread constraints kube-scheduler
	// gives pods that set none (its configuration's default
	// constraints); none when not given.
	DefaultSpread scheduling.SpreadDefaults
	// IgnoreDRARequests leaves pods with resource claims unplanned, as
	// Karpenter does by default (its --ignore-dra-requests).
	IgnoreDRARequests bool
	// Policy is how NodePools' minValues and pods' preferences are read
	// (Karpenter's --min-values-policy and --preference-policy).
	Policy scheduling.Policy
}

// Backoff is a NodePool's relaunch backoff: no launches before Until,
// after Failures registration timeouts in a row.
type Backoff struct {
	Until    time.Time
	Failures int
}

// Snapshot is the cluster as decisions see it.
type Snapshot struct {
	Now time.Time
	// Pending are the pods nodewright should find room for: the
	// CapacityBuffers' pods (Virtual) that no node has room for among them.
	Pending []*corev1.Pod
	// Leaving are the pods of nodes being deleted that will need room
	// elsewhere: room is found for them before they are evicted, as for
	// pending pods.
	Leaving []*corev1.Pod
	// Nodes pair each Node with its NodeClaim: registered nodes, and
	// NodeClaims in flight (no node yet). Sorted by name.
	Nodes []*Node
	// NodePools are the NodePools that can launch now, in name order.
	// The static ones among them (spec.replicas) launch no node for pods.
	NodePools []*scheduling.NodePool
	// Static are the static NodePools that can launch now, by name: they
	// keep their number of nodes, which pods use like any node.
	Static map[string]*scheduling.NodePool
	// Skipped are the NodePools that cannot, with why.
	Skipped []SkippedNodePool
	// Objects are the NodePools by name (all of them).
	Pools      map[string]*v1.NodePool
	DaemonSets []*appsv1.DaemonSet
	// OverlayEffects say, per NodeOverlay name, which instance types it
	// changed and where it lost to another.
	OverlayEffects map[string]*OverlayEffect
	// NodeClasses are the resolved node classes by name.
	NodeClasses map[string]*cloudprovider.NodeClass
	// Usage is each NodePool's capacity in use, "nodes" its node count:
	// one per NodeClaim, and one per node of the NodePool without one.
	Usage map[string]corev1.ResourceList
	pdbs  map[string][]budget
	// namespaces are the namespaces' labels.
	namespaces map[string]map[string]string
	volumes    *volumes
	spread     scheduling.SpreadDefaults
	policy     scheduling.Policy
	// nominated are nodes that pending pods are nominated to.
	nominated map[string][]*corev1.Pod
	expected  int
	// rechecks are the expected pods whose place is judged again after a
	// time rather than on an event.
	rechecks int
	// Buffers say, per CapacityBuffer, how many of its pods have room.
	Buffers []BufferRoom
	// dump: the objects may leave NodeClaims out (Options.NodesWithoutClaims).
	dump bool
	dra  *DRA
}

// Build makes the snapshot.
func Build(o Objects, opts Options) *Snapshot {
	s := &Snapshot{Now: opts.Now, NodeClasses: opts.NodeClasses, Pools: map[string]*v1.NodePool{}, Static: map[string]*scheduling.NodePool{}, DaemonSets: o.DaemonSets,
		pdbs: budgetsByNamespace(o.PDBs), nominated: map[string][]*corev1.Pod{}, dump: opts.NodesWithoutClaims}
	s.namespaces = namespaceLabels(o.Namespaces, o.Pods)
	s.volumes = newVolumes(o)
	bindOverlayDrivers(o.Overlays) // before the cluster's devices are counted
	s.dra = newDRA(o, opts.IgnoreDRARequests)
	s.spread = opts.DefaultSpread
	s.policy = opts.Policy
	pods := s.sortPods(o.Pods)
	s.Nodes = pair(o.NodeClaims, o.Nodes, pods.bound)
	keepRestarting(s.Nodes, pods.restarting)
	s.lifetimes(o.NodePools, opts.NodeClasses, opts.NodesWithoutClaims)
	s.Usage = usage(s.Nodes)
	virtual := virtualPods(o.CapacityBuffers, o.PodTemplates)
	s.Pending = s.expect(slices.Concat(pods.pending, virtual), opts)
	s.Leaving = s.leaving(pods.restarting)
	types := s.nodePools(o, opts)
	s.sizeNodes(types, o.CSINodes, opts.Catalog)
	if len(virtual) > 0 {
		s.hostBuffers(virtual)
		s.sizeNodes(types, o.CSINodes, opts.Catalog)
	}
	return s
}

// podsByState are the pods pending, bound to a node (by node name), and
// those of StatefulSets being deleted from a node (to restart elsewhere).
type podsByState struct {
	pending           []*corev1.Pod
	bound, restarting map[string][]*corev1.Pod
}

// keepRestarting counts a StatefulSet's pod being deleted from a node
// that stays as that node's until it is gone: it still runs there, and
// the node is not empty while it does (its pod comes back, with the same
// name and claims, wherever kube-scheduler puts it). On a node being
// deleted it needs room elsewhere instead (see leaving).
func keepRestarting(nodes []*Node, restarting map[string][]*corev1.Pod) {
	for _, n := range nodes {
		if n.Node != nil && !n.Deleting() {
			n.Pods = append(n.Pods, restarting[n.Node.Name]...)
		}
	}
}

// sortPods sorts the pods by state, and notes where pending ones are
// nominated to.
func (s *Snapshot) sortPods(pods []*corev1.Pod) podsByState {
	out := podsByState{bound: map[string][]*corev1.Pod{}, restarting: map[string][]*corev1.Pod{}}
	for _, p := range pods {
		switch {
		case p.Spec.NodeName != "" && !p.DeletionTimestamp.IsZero() && ownedBy(p, "StatefulSet"):
			out.restarting[p.Spec.NodeName] = append(out.restarting[p.Spec.NodeName], p)
		case Pending(p):
			out.pending = append(out.pending, p)
			if p.Status.NominatedNodeName != "" {
				s.nominated[p.Status.NominatedNodeName] = append(s.nominated[p.Status.NominatedNodeName], p)
			}
		case p.Spec.NodeName != "" && !finished(p):
			out.bound[p.Spec.NodeName] = append(out.bound[p.Spec.NodeName], p)
		}
	}
	return out
}

// nodePools sorts the NodePools into those that launch (with their
// instance types, overlaid) and those that do not, and why; it returns
// each launching NodePool's instance types.
func (s *Snapshot) nodePools(o Objects, opts Options) map[string][]*scheduling.InstanceType {
	pools := slices.Clone(o.NodePools)
	slices.SortFunc(pools, func(a, b *v1.NodePool) int { return strings.Compare(a.Name, b.Name) })
	types := map[string][]*scheduling.InstanceType{}
	overlays := SortOverlays(o.Overlays)
	s.OverlayEffects = map[string]*OverlayEffect{}
	for _, np := range pools {
		s.Pools[np.Name] = np
		skip, class := launchable(np, opts)
		if skip != nil {
			s.Skipped = append(s.Skipped, *skip)
			continue
		}
		types[np.Name] = ApplyOverlays(np, class.InstanceTypes, overlays, s.OverlayEffects)
		sp := scheduling.NodePoolFromObject(np, types[np.Name], class.AMIs, s.Usage[np.Name])
		withUserDataTaints(sp, class.RegistrationTaints)
		if sp.Static {
			s.Static[np.Name] = sp
		}
		s.NodePools = append(s.NodePools, sp)
	}
	return types
}

// sizeNodes gives every node what the scheduler sees of it (its room and
// volume attach limits) and its blockers.
func (s *Snapshot) sizeNodes(types map[string][]*scheduling.InstanceType, csi []*storagev1.CSINode, catalog []*scheduling.InstanceType) {
	csiNodes := make(map[string]*storagev1.CSINode, len(csi))
	for _, c := range csi {
		csiNodes[c.Name] = c
	}
	for _, n := range s.Nodes {
		n.sched = n.schedulingNode(types[n.NodePool], catalog)
		if n.sched != nil {
			var requested []string
			if n.NodeClaim != nil && n.NodeClaim.Annotations[v1.AnnotationRequestedDRADrivers] != "" {
				requested = strings.Split(n.NodeClaim.Annotations[v1.AnnotationRequestedDRADrivers], ",")
			}
			s.dra.size(n.sched, n.NodeClaim == nil || n.Initialized(), slices.Concat(types[n.NodePool], catalog), requested)
		}
		if n.sched != nil && n.Node != nil {
			if limits := attachLimits(csiNodes[n.Node.Name]); limits != nil {
				n.sched.VolumeLimits, n.sched.Attached = limits, s.volumes.attached(n.sched.Pods)
			}
		}
		if n.Node == nil && n.sched == nil && !n.Deleting() {
			n.Unsized = true
		}
		n.blockers = s.blockers(n)
	}
}

// withUserDataTaints adds to a NodePool the taints its node class's user
// data registers every node with: its nodes have them too.
func withUserDataTaints(sp *scheduling.NodePool, taints []corev1.Taint) {
	for _, t := range taints {
		if !slices.ContainsFunc(sp.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
			sp.Taints = append(slices.Clip(sp.Taints), t)
			sp.UserDataTaints = append(sp.UserDataTaints, t)
		}
	}
}

// NodeClassOf is the resolved node class a NodePool uses; nil when it is
// not known.
func (s *Snapshot) NodeClassOf(np *v1.NodePool) *cloudprovider.NodeClass {
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		return s.NodeClasses[ref.Name]
	}
	return nil
}

// expect keeps pending pods planned or nominated onto a node that is
// still launching or initializing on that node, as pods it expects; the
// others stay pending. Once the node is initialized, a pod kube-scheduler
// has not looked at yet stays its own until kube-scheduler finds no room
// for it (an event); one it found no room for before stays for the grace.
func (s *Snapshot) expect(pending []*corev1.Pod, opts Options) []*corev1.Pod {
	if len(opts.Planned) == 0 && !slices.ContainsFunc(pending, func(p *corev1.Pod) bool { return p.Status.NominatedNodeName != "" }) {
		return pending
	}
	byName := map[string]*Node{}
	for _, n := range s.Nodes {
		byName[n.Name] = n
		if n.NodeClaim != nil {
			byName[n.NodeClaim.Name] = n
		}
	}
	var out []*corev1.Pod
	for _, p := range pending {
		target := opts.Planned[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		if target == "" {
			target = p.Status.NominatedNodeName
		}
		n := byName[target]
		if at, planned := opts.PlannedAt[target]; n == nil && planned && opts.Now.Sub(at) < opts.UnseenGrace {
			// Its NodeClaim was created a moment ago and the cache does
			// not show it yet: planning the pod again would launch twice.
			s.expected++
			s.rechecks++
			continue
		}
		if n == nil || n.Deleting() || !waitsFor(p, n, opts) {
			out = append(out, p)
			continue
		}
		n.Expected = append(n.Expected, p)
		s.expected++
		if MarkedUnschedulable(p) {
			s.rechecks++
		}
	}
	return out
}

// waitsFor reports whether a pod planned onto a node still counts as
// the node's: while the node comes up, and after as long as kube-scheduler
// has not found it no room (at 50,000 pods its queue takes minutes to
// reach every pod: planning them again meanwhile would cost much and
// change nothing), or within the grace when it had.
func waitsFor(p *corev1.Pod, n *Node, opts Options) bool {
	return !n.Initialized() || !MarkedUnschedulable(p) || opts.Now.Sub(n.InitializedAt()) < opts.NominationGrace
}

// namespaceLabels are the labels of the namespaces, and of those pods are
// in that are not listed (their name label only, which every namespace
// has).
func namespaceLabels(namespaces []*corev1.Namespace, pods []*corev1.Pod) map[string]map[string]string {
	out := make(map[string]map[string]string, len(namespaces))
	for _, ns := range namespaces {
		lbls := maps.Clone(ns.Labels)
		if lbls == nil {
			lbls = map[string]string{}
		}
		lbls[corev1.LabelMetadataName] = ns.Name
		out[ns.Name] = lbls
	}
	for _, p := range pods {
		if _, ok := out[p.Namespace]; !ok {
			out[p.Namespace] = map[string]string{corev1.LabelMetadataName: p.Namespace}
		}
	}
	return out
}

// Expecting counts the pending pods that count as a launching or
// initializing node's: a decision must look again once that node is up.
func (s *Snapshot) Expecting() int { return s.expected }

// Rechecks counts the expected pods whose place a decision must judge
// again after a time: those kube-scheduler found no room for (pending
// again NominationGrace after their node initialized) and those planned
// onto a NodeClaim the cache does not show yet. The others change only
// on an event (kube-scheduler finds no room for them, their node goes).
func (s *Snapshot) Rechecks() int { return s.rechecks }

// Usage is each NodePool's capacity in use, with "nodes" its node count:
// one per NodeClaim (being deleted or not: it still costs), and one per
// node of the NodePool without a NodeClaim, but for the nodes awaiting
// a NodeClaim that has no node yet (Node.AwaitingItsNodeClaim), which
// count as that NodeClaim's.
func Usage(claims []*v1.NodeClaim, nodes []*corev1.Node) map[string]corev1.ResourceList {
	return usage(pair(claims, nodes, nil))
}

func usage(nodes []*Node) map[string]corev1.ResourceList {
	covering := coveringClaims(nodes)
	out := map[string]corev1.ResourceList{}
	for _, n := range nodes {
		if n.NodePool == "" {
			continue
		}
		claim, covered := covering[n]
		if !covered {
			out[n.NodePool] = scheduling.AddNodeUsage(out[n.NodePool], n.Capacity())
			continue
		}
		// Its NodeClaim counts the node; the node's capacity stands for
		// the NodeClaim's until the launch records it.
		if len(claim.NodeClaim.Status.Capacity) == 0 {
			out[n.NodePool] = scheduling.AddCapacity(out[n.NodePool], n.Capacity())
		}
	}
	return out
}

// coveringClaims matches the nodes awaiting their NodeClaim with the
// NodeClaims of their NodePool that have no node yet: each such
// NodeClaim covers at most one node created after it, the oldest first.
// A node no NodeClaim covers counts as a node of its own.
func coveringClaims(nodes []*Node) map[*Node]*Node {
	claims, early := map[string][]*Node{}, map[string][]*Node{}
	for _, n := range nodes {
		switch {
		case n.NodeClaim != nil && n.Node == nil && n.NodeClaim.DeletionTimestamp.IsZero():
			claims[n.NodePool] = append(claims[n.NodePool], n)
		case n.AwaitingItsNodeClaim():
			early[n.NodePool] = append(early[n.NodePool], n)
		}
	}
	oldestFirst := func(a, b *Node) int {
		return cmp.Or(a.CreatedAt().Compare(b.CreatedAt()), strings.Compare(a.Name, b.Name))
	}
	out := map[*Node]*Node{}
	for pool, waiting := range early {
		free := claims[pool]
		slices.SortFunc(free, oldestFirst)
		slices.SortFunc(waiting, oldestFirst)
		for _, node := range waiting {
			if len(free) > 0 && !free[0].CreatedAt().After(node.CreatedAt()) {
				out[node], free = free[0], free[1:]
			}
		}
	}
	return out
}

// Pending reports a pod nodewright should find room for: not bound, not
// a DaemonSet's, not finished or being deleted, not gated, and either
// marked unschedulable by kube-scheduler, or not looked at by it yet
// (kube-scheduler's default scheduler name; a manifest has no phase at
// all). kube-scheduler looks at new pods one at a time — 10,000 new pods
// would wait minutes for it to say none fits — while a decision places
// them all at once, on room already there first: a pod that fits on a
// node still goes there, through kube-scheduler.
func Pending(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || finished(p) || len(p.Spec.SchedulingGates) > 0 || OwnedByDaemonSet(p) {
		return false
	}
	if p.Status.Phase == "" && len(p.Status.Conditions) == 0 {
		return true
	}
	if MarkedUnschedulable(p) {
		return true
	}
	looked := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
	return !looked && p.Status.Phase == corev1.PodPending && (p.Spec.SchedulerName == "" || p.Spec.SchedulerName == corev1.DefaultSchedulerName)
}

// MarkedUnschedulable reports a pod kube-scheduler has tried and found no
// node for.
func MarkedUnschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// finished pods neither need room nor hold any.
func finished(p *corev1.Pod) bool {
	return !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// OwnedByDaemonSet reports a DaemonSet's pod.
func OwnedByDaemonSet(p *corev1.Pod) bool { return ownedBy(p, "DaemonSet") }

func ownedBy(p *corev1.Pod, kind string) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == kind })
}

// Input is the scheduler's input: the pending pods, and every node and
// NodeClaim in flight that pods can be placed on. Nodes in without are
// left out and their pods that would need a new place are pending too.
func (s *Snapshot) Input(without map[string]bool) scheduling.Input {
	return s.input(without, slices.Concat(s.Pending, s.Leaving), false)
}

// Reschedule is what disruption asks: where would the pods of the nodes
// in without go if those nodes went? Only initialized nodes take them (a
// pod evicted now cannot run on a node still launching or initializing:
// it would wait, and the provisioner would launch for it again); the pods
// pending now are left to the provisioner.
func (s *Snapshot) Reschedule(without map[string]bool) scheduling.Input {
	return s.input(without, nil, true)
}

func (s *Snapshot) input(without map[string]bool, pending []*corev1.Pod, initializedOnly bool) scheduling.Input {
	in := scheduling.Input{NodePools: s.NodePools, DaemonSets: s.DaemonSets, Pods: pending, Namespaces: s.namespaces, DefaultSpread: s.spread, Policy: s.policy}
	for _, n := range s.Nodes {
		if without[n.Name] {
			if initializedOnly || !n.Deleting() { // a deleting node's pods are Leaving
				in.Pods = append(in.Pods, n.Reschedulable()...)
			}
			continue
		}
		if initializedOnly && (!n.Initialized() || n.notReady()) {
			continue
		}
		if n.sched != nil {
			in.Nodes = append(in.Nodes, n.sched)
		}
	}
	in.Volumes = s.volumes.topology(in.Pods)
	in.Devices = s.dra.demand(in.Pods, s.NodePools, in.Nodes)
	return in
}

// ConditionTrue reports a condition of type t with status True.
func conditionTrue(conds []metav1.Condition, t string) bool {
	return meta.IsStatusConditionTrue(conds, t)
}
