package metrics

import (
	"bufio"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/internal/state"
)

// Cluster is what the per-node and per-pod series are read from at each
// scrape: the nodes and pods the controller's cache holds, and whether
// nodewright manages each node. false: not known yet (the cache is
// starting), and no series are served.
type Cluster func() (nodes []*corev1.Node, pods []*corev1.Pod, managed func(*corev1.Node) bool, ok bool)

// Well-known node labels the reference's per-node and per-pod series
// carry, as label names.
var nodeLabels = []struct{ key, name string }{
	{"karpenter.sh/nodepool", "nodepool"}, {corev1.LabelTopologyZone, "zone"}, {corev1.LabelTopologyRegion, "region"},
	{corev1.LabelInstanceTypeStable, "instance_type"}, {corev1.LabelArchStable, "arch"}, {corev1.LabelOSStable, "os"},
	{"karpenter.sh/capacity-type", "capacity_type"}, {"karpenter.k8s.aws/instance-category", "instance_category"},
	{"karpenter.k8s.aws/instance-family", "instance_family"}, {"karpenter.k8s.aws/instance-generation", "instance_generation"},
	{"karpenter.k8s.aws/instance-size", "instance_size"},
}

// ClusterSeries are the reference's per-node gauges
// (karpenter_nodes_allocatable, _total_pod_requests, _total_pod_limits,
// _total_daemon_requests, _total_daemon_limits, _system_overhead,
// _current_lifetime_seconds), karpenter_pods_state and the pods'
// karpenter_pods_unbound_time_seconds and _unstarted_time_seconds, read
// from the cache at each scrape: nothing is kept between scrapes, so a
// node or pod that is gone leaves no series behind.
//
// They are written straight in the text exposition format rather than
// collected into a registry: at 50,000 pods and 2,700 nodes they are
// about 160,000 series, and the registry's objects for them took 88 MB
// and half a second per scrape (BenchmarkScrape); written as they are
// read, a scrape holds a buffer.
type ClusterSeries struct {
	cluster Cluster
	now     func() time.Time
	// planned reports a pod a provisioning decision planned room for.
	planned func(types.UID) bool
	// byResource are the per-node families by resource type.
	byResource                                     [6]family
	lifetime, state                                family
	unbound, unstarted, provUnbound, provUnstarted family
	undecided                                      family
	// conditions, when set, lists the objects whose conditions are
	// served (WithConditions).
	conditions             Conditions
	condCount, condSeconds family
}

// podKey are the label names of the per-pod time series.
var podKey = []string{"name", "namespace"}

// NewClusterSeries makes the per-node and per-pod series of a cluster.
func NewClusterSeries(cluster Cluster, now func() time.Time, planned func(types.UID) bool) *ClusterSeries {
	labels := make([]string, 0, len(nodeLabels)+3)
	for _, l := range nodeLabels {
		labels = append(labels, l.name)
	}
	labels = append(labels, "node_name", "phase", "managed")
	withResource := append(slices.Clone(labels), "resource_type")
	node := func(name, help string) family {
		return newFamily("karpenter_nodes_"+name, help, withResource)
	}
	condCount, condSeconds := conditionFamilies()
	return &ClusterSeries{
		cluster: cluster, now: now, planned: planned, condCount: condCount, condSeconds: condSeconds,
		byResource: [6]family{
			node("allocatable", "What a node offers pods, by resource."),
			node("total_pod_requests", "What the pods on a node (not DaemonSet pods) request, by resource."),
			node("total_pod_limits", "The limits of the pods on a node (not DaemonSet pods), by resource."),
			node("total_daemon_requests", "What the DaemonSet pods on a node request, by resource."),
			node("total_daemon_limits", "The limits of the DaemonSet pods on a node, by resource."),
			node("system_overhead", "What a node reserves for the system (capacity less allocatable), by resource."),
		},
		lifetime: newFamily("karpenter_nodes_current_lifetime_seconds", "How long a node has existed.", labels),
		state: newFamily("karpenter_pods_state", "1 per pod, labelled with where it is and how it is.",
			[]string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"}),
		unbound:       newFamily("karpenter_pods_unbound_time_seconds", "How long a pod not bound to a node yet has existed.", podKey),
		unstarted:     newFamily("karpenter_pods_unstarted_time_seconds", "How long a pod not running yet has existed.", podKey),
		provUnbound:   newFamily("karpenter_pods_provisioning_unbound_time_seconds", "How long a pod nodewright planned room for, not bound yet, has existed.", podKey),
		provUnstarted: newFamily("karpenter_pods_provisioning_unstarted_time_seconds", "How long a pod nodewright planned room for, not running yet, has existed.", podKey),
		undecided:     newFamily("karpenter_pods_provisioning_scheduling_undecided_time_seconds", "How long a pending pod no provisioning decision has planned room for yet has existed.", podKey),
	}
}

// WriteTo writes the series in the text exposition format, each family's
// series together; a family without series is left out.
func (c *ClusterSeries) WriteTo(w io.Writer) (int64, error) {
	out := &textWriter{w: bufio.NewWriterSize(w, 64<<10)}
	if nodes, pods, managed, ok := c.cluster(); ok {
		c.writeNodes(out, nodes, pods, managed)
		c.writePods(out, nodes, pods, managed)
	}
	c.writeConditions(out)
	return out.written, out.flush()
}

// writeNodes writes the per-node families, family by family.
func (c *ClusterSeries) writeNodes(out *textWriter, nodes []*corev1.Node, pods []*corev1.Pod, managed func(*corev1.Node) bool) {
	byNode := make(map[string][]*corev1.Pod, len(nodes))
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	labels := make([][]string, len(nodes))
	lists := make([][6]corev1.ResourceList, len(nodes))
	for i, n := range nodes {
		// Room for one more value: resource_type, appended per series.
		values := make([]string, 0, len(nodeLabels)+4)
		for _, nl := range nodeLabels {
			values = append(values, n.Labels[nl.key])
		}
		labels[i] = append(values, n.Name, string(n.Status.Phase), boolLabel(managed(n)))
		podReq, podLim, dsReq, dsLim := podTotals(byNode[n.Name])
		lists[i] = [6]corev1.ResourceList{n.Status.Allocatable, withZeros(podReq), withZeros(podLim), withZeros(dsReq), withZeros(dsLim), overhead(n)}
	}
	for f := range c.byResource {
		for i := range nodes {
			for name, q := range lists[i][f] {
				out.series(&c.byResource[f], value(q), append(labels[i], string(name))...)
			}
		}
	}
	for i, n := range nodes {
		out.series(&c.lifetime, c.now().Sub(n.CreationTimestamp.Time).Seconds(), labels[i]...)
	}
}

// withZeros is a node's total with a zero CPU and memory where its pods
// ask for none: a node without DaemonSet pods still has its
// karpenter_nodes_total_daemon_requests series, so a sum of pod and
// daemon requests over a NodePool keeps it.
func withZeros(l corev1.ResourceList) corev1.ResourceList {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := l[name]; !ok {
			if l == nil {
				l = corev1.ResourceList{}
			}
			l[name] = resource.Quantity{}
		}
	}
	return l
}

// podTotals are what pods request and their limits, DaemonSet pods apart.
func podTotals(pods []*corev1.Pod) (podReq, podLim, dsReq, dsLim corev1.ResourceList) {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, p := range pods {
		req = resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{Reuse: req})
		lim = resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{Reuse: lim})
		if state.OwnedByDaemonSet(p) {
			dsReq, dsLim = add(dsReq, req), add(dsLim, lim)
		} else {
			podReq, podLim = add(podReq, req), add(podLim, lim)
		}
	}
	return podReq, podLim, dsReq, dsLim
}

// overhead is what a node reserves for the system: capacity less
// allocatable.
func overhead(n *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, capacity := range n.Status.Capacity {
		if alloc, ok := n.Status.Allocatable[name]; ok {
			capacity.Sub(alloc)
			out[name] = capacity
		}
	}
	return out
}

// writePods writes each pod's state, then the waiting pods' times, family
// by family.
func (c *ClusterSeries) writePods(out *textWriter, nodes []*corev1.Node, pods []*corev1.Pod, managed func(*corev1.Node) bool) {
	nodeByName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		nodeByName[n.Name] = n
	}
	for _, p := range pods {
		c.writeState(out, p, nodeByName[p.Spec.NodeName], managed)
	}
	now := c.now()
	waiting := make([]*corev1.Pod, 0, len(pods))
	planned := make(map[*corev1.Pod]bool)
	for _, p := range pods {
		if !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		waiting = append(waiting, p)
		if c.planned != nil && c.planned(p.UID) {
			planned[p] = true
		}
	}
	for _, f := range []struct {
		family *family
		counts func(*corev1.Pod) bool
	}{
		{&c.unbound, func(p *corev1.Pod) bool { return p.Spec.NodeName == "" }},
		{&c.provUnbound, func(p *corev1.Pod) bool { return p.Spec.NodeName == "" && planned[p] }},
		{&c.undecided, func(p *corev1.Pod) bool { return p.Spec.NodeName == "" && !planned[p] }},
		{&c.unstarted, func(*corev1.Pod) bool { return true }},
		{&c.provUnstarted, func(p *corev1.Pod) bool { return planned[p] }},
	} {
		for _, p := range waiting {
			if f.counts(p) {
				out.series(f.family, now.Sub(p.CreationTimestamp.Time).Seconds(), p.Name, p.Namespace)
			}
		}
	}
}

// writeState writes a pod's karpenter_pods_state series.
func (c *ClusterSeries) writeState(out *textWriter, p *corev1.Pod, n *corev1.Node, managed func(*corev1.Node) bool) {
	owner := ""
	if len(p.OwnerReferences) > 0 {
		owner = p.OwnerReferences[0].Kind + "/" + p.OwnerReferences[0].Name
	}
	var pool, zone, arch, ct, it string
	isManaged := false
	if n != nil {
		pool, zone, arch = n.Labels["karpenter.sh/nodepool"], n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelArchStable]
		ct, it = n.Labels["karpenter.sh/capacity-type"], n.Labels[corev1.LabelInstanceTypeStable]
		isManaged = managed(n)
	}
	ready := false
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	out.series(&c.state, 1, p.Name, p.Namespace, owner, p.Spec.NodeName, boolLabel(p.Spec.NodeName != ""),
		pool, zone, arch, ct, it, string(p.Status.Phase), boolLabel(ready), boolLabel(isManaged))
}

func add(to, more corev1.ResourceList) corev1.ResourceList {
	if to == nil {
		to = corev1.ResourceList{}
	}
	for name, q := range more {
		sum := to[name]
		sum.Add(q)
		to[name] = sum
	}
	return to
}

// value is a quantity as a series value: cores for CPU, a count or bytes
// otherwise.
func value(q resource.Quantity) float64 { return q.AsApproximateFloat64() }

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// FamilyDoc describes one family of series.
type FamilyDoc struct {
	Name, Help, Type string
	Labels           []string
}

// ClusterFamilies are the families ClusterSeries writes, for the metrics
// reference.
func ClusterFamilies() []FamilyDoc {
	c := NewClusterSeries(nil, nil, nil)
	families := append(c.byResource[:], c.lifetime, c.state, c.unbound, c.unstarted, c.provUnbound, c.provUnstarted, c.undecided, c.condCount, c.condSeconds)
	out := make([]FamilyDoc, 0, len(families))
	for _, f := range families {
		out = append(out, FamilyDoc{Name: f.name, Help: f.help, Type: "gauge", Labels: slices.Clone(f.labels)})
	}
	return out
}
