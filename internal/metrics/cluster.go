package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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

// clusterCollector serves the reference's per-node gauges
// (karpenter_nodes_allocatable, _total_pod_requests, _total_pod_limits,
// _total_daemon_requests, _total_daemon_limits, _system_overhead,
// _current_lifetime_seconds), karpenter_pods_state and the pods'
// karpenter_pods_unbound_time_seconds and _unstarted_time_seconds, computed at each
// scrape from the cache: nothing is kept between scrapes, so a node or
// pod that is gone leaves no series behind.
type clusterCollector struct {
	cluster Cluster
	now     func() time.Time
	// nodeLabels are the label names of the per-node families (with
	// resource_type last where they are by resource), podState those of
	// karpenter_pods_state.
	nodeLabels, podState                           []string
	allocatable, podRequests, podLimits, daemonReq gaugeFamily
	daemonLimits, overhead, lifetime, state        gaugeFamily
	unbound, unstarted, provUnbound, provUnstarted gaugeFamily
	undecided                                      gaugeFamily
	// planned reports a pod a provisioning decision planned room for.
	planned func(types.UID) bool
}

// podKey are the label names of the per-pod time series.
var podKey = []string{"name", "namespace"}

// NewClusterCollector makes the collector of the per-node and per-pod
// series.
func NewClusterCollector(cluster Cluster, now func() time.Time, planned func(types.UID) bool) prometheus.Collector {
	labels := make([]string, 0, len(nodeLabels)+3)
	for _, l := range nodeLabels {
		labels = append(labels, l.name)
	}
	labels = append(labels, "node_name", "phase", "managed")
	withResource := append(slices.Clone(labels), "resource_type")
	node := func(name, help string) gaugeFamily {
		return newGaugeFamily("karpenter_nodes_"+name, help, withResource)
	}
	podState := []string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"}
	return &clusterCollector{
		cluster: cluster, now: now, planned: planned, nodeLabels: labels, podState: podState,
		provUnbound:   newGaugeFamily("karpenter_pods_provisioning_unbound_time_seconds", "How long a pod nodewright planned room for, not bound yet, has existed.", podKey),
		provUnstarted: newGaugeFamily("karpenter_pods_provisioning_unstarted_time_seconds", "How long a pod nodewright planned room for, not running yet, has existed.", podKey),
		undecided:     newGaugeFamily("karpenter_pods_provisioning_scheduling_undecided_time_seconds", "How long a pending pod no provisioning decision has planned room for yet has existed.", podKey),
		allocatable:   node("allocatable", "What a node offers pods, by resource."),
		podRequests:   node("total_pod_requests", "What the pods on a node (not DaemonSet pods) request, by resource."),
		podLimits:     node("total_pod_limits", "The limits of the pods on a node (not DaemonSet pods), by resource."),
		daemonReq:     node("total_daemon_requests", "What the DaemonSet pods on a node request, by resource."),
		daemonLimits:  node("total_daemon_limits", "The limits of the DaemonSet pods on a node, by resource."),
		overhead:      node("system_overhead", "What a node reserves for the system (capacity less allocatable), by resource."),
		lifetime:      newGaugeFamily("karpenter_nodes_current_lifetime_seconds", "How long a node has existed.", labels),
		unbound:       newGaugeFamily("karpenter_pods_unbound_time_seconds", "How long a pod not bound to a node yet has existed.", podKey),
		unstarted:     newGaugeFamily("karpenter_pods_unstarted_time_seconds", "How long a pod not running yet has existed.", podKey),
		state:         newGaugeFamily("karpenter_pods_state", "1 per pod, labelled with where it is and how it is.", podState),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range []gaugeFamily{c.allocatable, c.podRequests, c.podLimits, c.daemonReq, c.daemonLimits, c.overhead, c.lifetime, c.state, c.unbound, c.unstarted,
		c.provUnbound, c.provUnstarted, c.undecided} {
		ch <- f.desc
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	nodes, pods, managed, ok := c.cluster()
	if !ok {
		return
	}
	byNode := make(map[string][]*corev1.Pod, len(nodes))
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	l := labelPairs{}
	nodeByName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		nodeByName[n.Name] = n
		c.collectNode(ch, l, n, byNode[n.Name], managed(n))
	}
	for _, p := range pods {
		c.collectPod(ch, l, p, nodeByName[p.Spec.NodeName], managed)
	}
}

// collectNode sends one node's series.
func (c *clusterCollector) collectNode(ch chan<- prometheus.Metric, l labelPairs, n *corev1.Node, pods []*corev1.Pod, managed bool) {
	values := make([]string, 0, len(nodeLabels)+3)
	for _, nl := range nodeLabels {
		values = append(values, n.Labels[nl.key])
	}
	labels := l.pairs(c.nodeLabels, append(values, n.Name, string(n.Status.Phase), boolLabel(managed))...)
	withResource := make([]*dto.LabelPair, len(labels)+1)
	copy(withResource, labels)
	podReq, podLim, dsReq, dsLim := podTotals(pods)
	for _, f := range []struct {
		family gaugeFamily
		list   corev1.ResourceList
	}{{c.allocatable, n.Status.Allocatable}, {c.podRequests, podReq}, {c.podLimits, podLim}, {c.daemonReq, dsReq}, {c.daemonLimits, dsLim}, {c.overhead, overhead(n)}} {
		for name, q := range f.list {
			withResource[len(labels)] = l.pair("resource_type", string(name))
			ch <- f.family.series(value(q), withResource...)
		}
	}
	ch <- c.lifetime.series(c.now().Sub(n.CreationTimestamp.Time).Seconds(), labels...)
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

// collectPod sends a pod's state.
func (c *clusterCollector) collectPod(ch chan<- prometheus.Metric, l labelPairs, p *corev1.Pod, n *corev1.Node, managed func(*corev1.Node) bool) {
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
	ch <- c.state.series(1, l.pairs(c.podState, p.Name, p.Namespace, owner, p.Spec.NodeName,
		boolLabel(p.Spec.NodeName != ""), pool, zone, arch, ct, it, string(p.Status.Phase), boolLabel(ready), boolLabel(isManaged))...)
	if !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	age := c.now().Sub(p.CreationTimestamp.Time).Seconds()
	planned := c.planned != nil && c.planned(p.UID)
	key := l.pairs(podKey, p.Name, p.Namespace)
	if p.Spec.NodeName == "" {
		ch <- c.unbound.series(age, key...)
		if planned {
			ch <- c.provUnbound.series(age, key...)
		} else {
			ch <- c.undecided.series(age, key...)
		}
	}
	ch <- c.unstarted.series(age, key...)
	if planned {
		ch <- c.provUnstarted.series(age, key...)
	}
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
