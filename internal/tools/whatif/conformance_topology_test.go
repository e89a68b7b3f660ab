package whatif_test

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Helpers of the topology cases. The reference's pods carry the label
// test=test and its spread constraints select it; its zones test-zone-1/2/3
// are us-east-1a/b/c here, and its default instance type (4 CPU) is an
// m5.xlarge where a case needs a node that was launched earlier.

// topoSpread is one topology spread constraint over key selecting
// test=test; more adds fields (", minDomains: 3").
func topoSpread(key string, maxSkew int, when, more string) string {
	return fmt.Sprintf("{maxSkew: %d, topologyKey: %s, whenUnsatisfiable: %s, labelSelector: {matchLabels: {test: test}}%s}", maxSkew, key, when, more)
}

// topoSpec is a pod spec (flow style) of fields such as topoTSC's.
func topoSpec(fields ...string) string { return "{" + strings.Join(fields, ", ") + "}" }

// topoTSC is the topologySpreadConstraints field of a pod spec.
func topoTSC(constraints ...string) string {
	return "topologySpreadConstraints: [" + strings.Join(constraints, ", ") + "]"
}

const (
	zoneKey = "topology.kubernetes.io/zone"
	hostKey = "kubernetes.io/hostname"
	ctKey   = "karpenter.sh/capacity-type"
	archKey = "kubernetes.io/arch"
	dns     = "DoNotSchedule"
	anyway  = "ScheduleAnyway"
)

// topoPool is a NodePool of the EC2NodeClass default: template labels and
// requirements are flow style ("" for none), more are further lines of its
// template spec (indented six spaces) or of its spec (two spaces).
func topoPool(name, labels, requirements, more string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: %s}\nspec:\n  template:\n", name)
	if labels != "" {
		fmt.Fprintf(&b, "    metadata: {labels: %s}\n", labels)
	}
	b.WriteString("    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n")
	fmt.Fprintf(&b, "      requirements: %s\n", cmp.Or(requirements, "[]"))
	b.WriteString(more)
	return b.String()
}

// topoZones is a requirement of the zones named by their letters.
func topoZones(letters ...string) string {
	zones := make([]string, len(letters))
	for i, l := range letters {
		zones[i] = "us-east-1" + l
	}
	return fmt.Sprintf("{key: topology.kubernetes.io/zone, operator: In, values: [%s]}", strings.Join(zones, ", "))
}

// topoNode is a Node of NodePool default launched earlier: an
// instance type of topoTypes in a zone (letter), capacity type; more adds
// labels (", team: a").
func topoNode(name, instanceType, zone, capacityType, more string) string {
	t := topoTypes[instanceType]
	return fmt.Sprintf(`---
apiVersion: v1
kind: Node
metadata:
  name: %s
  labels: {karpenter.sh/nodepool: default, karpenter.k8s.aws/ec2nodeclass: default, node.kubernetes.io/instance-type: %s, topology.kubernetes.io/zone: us-east-1%s, karpenter.sh/capacity-type: %s, kubernetes.io/arch: %s, kubernetes.io/os: linux, kubernetes.io/hostname: %s%s}
status:
  capacity: %s
  allocatable: %s
`, name, instanceType, zone, capacityType, t.arch, name, more, t.allocatable, t.allocatable)
}

// topoTypes are the instance types the earlier nodes have.
var topoTypes = map[string]struct{ arch, allocatable string }{
	"m5.large":  {"amd64", `{cpu: 1930m, memory: 7000Mi, pods: "29", ephemeral-storage: 17Gi}`},
	"m5.xlarge": {"amd64", `{cpu: 3920m, memory: 14000Mi, pods: "58", ephemeral-storage: 17Gi}`},
	"m6g.large": {"arm64", `{cpu: 1930m, memory: 7000Mi, pods: "29", ephemeral-storage: 17Gi}`},
}

// topoPlainNode is a Node of no NodePool: labels and allocatable flow
// style ("" for none), taints a flow list ("" for none).
func topoPlainNode(name, labels, allocatable, taints string) string {
	s := fmt.Sprintf("---\napiVersion: v1\nkind: Node\nmetadata: {name: %s", name)
	if labels != "" {
		s += ", labels: " + labels
	}
	s += "}\n"
	if taints != "" {
		s += "spec: {taints: " + taints + "}\n"
	}
	if allocatable != "" {
		s += fmt.Sprintf("status: {capacity: %s, allocatable: %s}\n", allocatable, allocatable)
	}
	return s
}

// topoBound is a pod of namespace ns bound to node, in phase (Running
// unless said), with labels and requests as pod's.
func topoBound(name, ns, lbls, requests, node, phase, spec string) string {
	if lbls == "" {
		lbls = "{}"
	}
	if requests == "" {
		requests = "{}"
	}
	if phase == "" {
		phase = "Running"
	}
	if spec != "" {
		spec = ", " + strings.TrimSuffix(strings.TrimPrefix(spec, "{"), "}")
	}
	return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s, labels: %s}\nspec: {nodeName: %s, containers: [{name: c, image: busybox, resources: {requests: %s}}]%s}\nstatus: {phase: %s}\n",
		name, ns, lbls, node, requests, spec, phase)
}

// zoneAffinity is a required node affinity to the zones named by their
// letters; ctAffinity to capacity types (a flow list's items).
func zoneAffinity(letters ...string) string {
	return "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [" + topoZones(letters...) + "]}]}}}"
}

func ctAffinity(types string) string {
	return "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: karpenter.sh/capacity-type, operator: In, values: [" + types + "]}]}]}}}"
}

// podAff is a required pod affinity (or, affinity false, anti-affinity)
// over key to the pods labelled security=s2; more adds term fields
// (", namespaces: [x]").
func podAff(affinity bool, key, more string) string {
	return podTerm(affinity, true, key, s2Lbl, more)
}

// podAffTo is podAff to the pods labelled lbls (flow map).
func podAffTo(affinity bool, key, lbls string) string {
	return podTerm(affinity, true, key, lbls, "")
}

// podPref is a preferred pod affinity (anti-affinity) over key to the pods
// labelled lbls (flow map).
func podPref(affinity bool, key, lbls string) string {
	return podTerm(affinity, false, key, lbls, "")
}

func podTerm(affinity, required bool, key, lbls, more string) string {
	kind := "podAntiAffinity"
	if affinity {
		kind = "podAffinity"
	}
	term := fmt.Sprintf("{labelSelector: {matchLabels: %s}, topologyKey: %s%s}", lbls, key, more)
	if required {
		return fmt.Sprintf("affinity: {%s: {requiredDuringSchedulingIgnoredDuringExecution: [%s]}}", kind, term)
	}
	return fmt.Sprintf("affinity: {%s: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 50, podAffinityTerm: %s}]}}", kind, term)
}

// topoSelfAffBound is n running pods security=s2 with a self pod affinity
// over hostname on node, requesting requests.
func topoSelfAffBound(node string, n int, requests string) string {
	var s string
	for i := range n {
		s += topoBound(fmt.Sprintf("%s-%d", node, i), "default", s2Lbl, requests, node, "", topoSpec(podAff(true, hostKey, "")))
	}
	return s
}

// antiZoneEarlier is a node in each zone (letters) running one pod
// security=s2 with a zonal anti-affinity to its kind.
func antiZoneEarlier(letters ...string) string {
	var s string
	for _, l := range letters {
		s += topoNode("old-"+l, "m5.large", l, "spot", "") +
			topoBound("old-"+l+"-0", "default", s2Lbl, "", "old-"+l, "", topoSpec(podAff(false, zoneKey, "")))
	}
	return s
}

// topoPlaced: exactly n of the named pods are placed.
func topoPlaced(name string, n int) expectation {
	return func(o *outcome) error {
		placed := 0
		for _, p := range o.pods([]string{name}) {
			if o.at[p] != nil {
				placed++
			}
		}
		if placed != n {
			return fmt.Errorf("%d of %s placed, want %d", placed, name, n)
		}
		return nil
	}
}

// bothAffinities joins two affinity fields (podAff's, zoneAffinity's)
// into one.
func bothAffinities(a, b string) string {
	inner := func(s string) string {
		return strings.TrimSuffix(strings.TrimPrefix(s, "affinity: {"), "}")
	}
	return "affinity: {" + inner(a) + ", " + inner(b) + "}"
}

// topoNamespace is a Namespace with labels (flow style, "" for none).
func topoNamespace(name, labels string) string {
	if labels == "" {
		labels = "{}"
	}
	return fmt.Sprintf("---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: %s}\n", name, labels)
}

// topoCounts counts the pods of namespace ns whose labels match selector
// by their node's key, as the reference's ExpectSkew: pods bound before
// count unless finished or being deleted.
func topoCounts(o *outcome, ns, key, selector string) (map[string]int, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	nodes := map[string]*corev1.Node{}
	for _, n := range o.objs.Nodes {
		nodes[n.Name] = n
	}
	byDomain := map[string]int{}
	for _, p := range o.objs.Pods {
		if p.Namespace != ns || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if at := o.at[p.Name]; at != nil {
			v, ok := at.label(key)
			if !ok {
				return nil, fmt.Errorf("pod %s is on %s, which leaves %s open", p.Name, at.name, key)
			}
			byDomain[v]++
			continue
		}
		n := nodes[p.Spec.NodeName]
		if n == nil || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if v, ok := n.Labels[key]; ok {
			byDomain[v]++
		} else if key == corev1.LabelHostname {
			byDomain[n.Name]++
		}
	}
	return byDomain, nil
}

// topoSkew is skew as the reference counts it (topoCounts): only the
// pods of namespace ns, not those finished or being deleted.
func topoSkew(ns, key, selector string, counts ...int) expectation {
	return func(o *outcome) error {
		byDomain, err := topoCounts(o, ns, key, selector)
		if err != nil {
			return err
		}
		got := slices.Sorted(maps.Values(byDomain))
		want := slices.Sorted(slices.Values(counts))
		if !slices.Equal(got, want) {
			return fmt.Errorf("pods %s of %s by %s: %v (%v), want %v", selector, ns, key, got, byDomain, want)
		}
		return nil
	}
}

// topoBounded: counted by key (topoCounts, namespace default), no domain
// holds more than most pods (-1: any), and the fullest and emptiest
// domain that hold any differ by at most maxSkew (-1: any).
func topoBounded(key, selector string, most, maxSkew int) expectation {
	return func(o *outcome) error {
		byDomain, err := topoCounts(o, "default", key, selector)
		if err != nil {
			return err
		}
		counts := slices.Sorted(maps.Values(byDomain))
		if len(counts) == 0 {
			return nil
		}
		if hi := counts[len(counts)-1]; most >= 0 && hi > most {
			return fmt.Errorf("pods %s by %s: %v, want at most %d in each", selector, key, byDomain, most)
		}
		if d := counts[len(counts)-1] - counts[0]; maxSkew >= 0 && d > maxSkew {
			return fmt.Errorf("pods %s by %s: %v, skew %d, want at most %d", selector, key, byDomain, d, maxSkew)
		}
		return nil
	}
}

// topoEarlier is a node launched earlier (topoNode, no more labels) with
// n running pods test=test of spec on it, named after it.
func topoEarlier(node, instanceType, zone, capacityType string, n int, spec string) string {
	s := topoNode(node, instanceType, zone, capacityType, "")
	for i := range n {
		s += topoBound(fmt.Sprintf("%s-%d", node, i), "default", testLbl, "", node, "", spec)
	}
	return s
}

var (
	zoneTSC   = topoTSC(topoSpread(zoneKey, 1, dns, ""))
	hostTSC   = topoTSC(topoSpread(hostKey, 1, dns, ""))
	ctTSC     = topoTSC(topoSpread(ctKey, 1, dns, ""))
	testLbl   = "{test: test}"
	hzTSC     = topoTSC(topoSpread(zoneKey, 1, dns, ""), topoSpread(hostKey, 3, dns, ""))
	chTSC     = topoTSC(topoSpread(ctKey, 1, dns, ""), topoSpread(hostKey, 3, dns, ""))
	czTSC     = topoTSC(topoSpread(ctKey, 1, dns, ""), topoSpread(zoneKey, 1, dns, ""))
	s2Lbl     = "{security: s2}"
	s2HostTSC = "topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {security: s2}}}]"
	// onDemandPool, volumeInZoneA and appMinDomainsTSC: the volume cases'
	// NodePool, a PersistentVolume in zone a with its claim test-pvc, and
	// their spread over zones with minDomains 3 selecting app=test.
	onDemandPool  = topoPool("default", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]", "")
	volumeInZoneA = `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: test-pv}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: test-pvc, namespace: default}
spec: {volumeName: test-pv, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
status: {phase: Bound}
`
	appMinDomainsTSC = "topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: test}}, minDomains: 3}]"
	// taintedFooBar and mismatchFooBar: two nodes of 100m CPU carrying
	// fake-label foo and bar, tainted, or labelled selector=mismatch.
	taintedFooBar = topoPlainNode("node1", "{fake-label: foo}", "{cpu: 100m}", "[{key: taintname, value: taintvalue, effect: NoSchedule}]") +
		topoPlainNode("node2", "{fake-label: bar}", "{cpu: 100m}", "[{key: taintname, value: taintvalue, effect: NoSchedule}]")
	mismatchFooBar = topoPlainNode("node1", "{fake-label: foo, selector: mismatch}", "{cpu: 100m}", "") +
		topoPlainNode("node2", "{fake-label: bar, selector: mismatch}", "{cpu: 100m}", "")
	// largePool launches m5.large only, where a case needs room for
	// more pods than the cheapest types hold.
	largePool = topoPool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]", "")
	// xlargePool launches m5.xlarge only (3.92 CPU allocatable): with
	// pods of 700m it holds five, as the reference's default instance type.
	xlargePool = topoPool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]", "")
)

// topologyCases: topology_test.go of the reference's scheduling tests.
var topologyCases = []conformanceCase{
	{
		ref: "topology: Zonal > should balance pods across zones (match labels)",
		objects: pods(4, "p", "{app: web}", "", `{topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
  whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}`),
		want: []expectation{scheduled("p-*"), skew("topology.kubernetes.io/zone", "app=web", 1, 1, 2)},
	},

	// Topology (top level)
	{
		ref: "topology: Topology > should ignore unknown topology keys",
		objects: pod("spread", testLbl, "", topoSpec(topoTSC(topoSpread("unknown", 1, dns, "")))) +
			pod("plain", "", "", ""),
		want: []expectation{notScheduled("spread"), scheduled("plain")},
	},
	{
		ref: "topology: Topology > should not spread when a nil label selector is defined",
		objects: pods(2, "p", testLbl, "", topoSpec(
			"topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]")),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 2)},
	},

	// Zonal
	{
		ref: "topology: Zonal > should balance pods across zones (match expressions)",
		objects: pods(4, "p", testLbl, "", topoSpec(
			"topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchExpressions: [{key: test, operator: In, values: [test]}]}}]")),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 1, 1, 2)},
	},
	{
		ref:     "topology: Zonal > should respect NodePool zonal constraints",
		objects: topoPool("default", "", "["+topoZones("a", "b", "c")+"]", "") + pods(4, "p", testLbl, "", topoSpec(zoneTSC)),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 1, 1, 2)},
	},
	{
		ref:     "topology: Zonal > should respect NodePool zonal constraints (subset) with requirements",
		objects: topoPool("default", "", "["+topoZones("a", "b")+"]", "") + pods(4, "p", testLbl, "", topoSpec(zoneTSC)),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 2, 2)},
	},
	{
		ref:     "topology: Zonal > should respect NodePool zonal constraints (subset) with labels",
		objects: topoPool("default", "{topology.kubernetes.io/zone: us-east-1a}", "", "") + pods(4, "p", testLbl, "", topoSpec(zoneTSC)),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 4)},
	},
	{
		ref:     "topology: Zonal > should respect NodePool zonal constraints (subset) with requirements and labels",
		objects: topoPool("default", "{topology.kubernetes.io/zone: us-east-1a}", "["+topoZones("a", "b")+"]", "") + pods(4, "p", testLbl, "", topoSpec(zoneTSC)),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 4)},
	},
	{
		ref: "topology: Zonal > should respect NodePool zonal constraints (subset) with labels across NodePools",
		objects: topoPool("default", "{topology.kubernetes.io/zone: us-east-1a}", "["+topoZones("a", "b")+"]", "") +
			topoPool("second", "{topology.kubernetes.io/zone: us-east-1b}", "", "") +
			pods(4, "p", testLbl, "", topoSpec(zoneTSC)),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 2, 2)},
	},
	{
		// The first pod was launched earlier into zone c, before the NodePool was limited to a and b.
		ref: "topology: Zonal > should respect NodePool zonal constraints (existing pod)",
		objects: topoPool("default", "", "["+topoZones("a", "b")+"]", "") +
			topoNode("old-c", "m5.large", "c", "spot", "") +
			topoBound("first", "default", testLbl, "{cpu: 1100m}", "old-c", "", "") +
			pods(6, "p", testLbl, "{cpu: 1100m}", topoSpec(zoneTSC)),
		want: []expectation{skew(zoneKey, "test=test", 1, 2, 2)},
	},
	{
		ref: "topology: Zonal > should schedule to the non-minimum domain if its all that's available",
		objects: topoPool("default", "", "["+topoZones("c")+"]", "") +
			topoNode("old-a", "m5.large", "a", "spot", "") + topoNode("old-b", "m5.large", "b", "spot", "") +
			topoBound("first-a", "default", testLbl, "{cpu: 1100m}", "old-a", "", "") +
			topoBound("first-b", "default", testLbl, "{cpu: 1100m}", "old-b", "", "") +
			pods(10, "p", testLbl, "{cpu: 1100m}", topoSpec(topoTSC(topoSpread(zoneKey, 5, dns, "")))),
		want: []expectation{skew(zoneKey, "test=test", 1, 1, 6)},
	},
	{
		// Nine pods spread 3/3/3, then those outside zone a were deleted: their nodes stay, empty.
		ref: "topology: Zonal > should only schedule to minimum domains if already violating max skew",
		objects: topoNode("old-a", "m5.xlarge", "a", "spot", "") + topoNode("old-b", "m5.xlarge", "b", "spot", "") +
			topoNode("old-c", "m5.xlarge", "c", "spot", "") +
			topoBound("first-0", "default", testLbl, "{cpu: 1100m}", "old-a", "", topoSpec(zoneTSC)) +
			topoBound("first-1", "default", testLbl, "{cpu: 1100m}", "old-a", "", topoSpec(zoneTSC)) +
			topoBound("first-2", "default", testLbl, "{cpu: 1100m}", "old-a", "", topoSpec(zoneTSC)) +
			pods(3, "p", testLbl, "{cpu: 1100m}", topoSpec(zoneTSC)),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 3, 1, 2)},
	},
	{
		ref: "topology: Zonal > should not violate max-skew when unsat = do not schedule",
		objects: topoPool("default", "", "["+topoZones("b", "c")+"]", "") +
			topoNode("old-a", "m5.large", "a", "spot", "") +
			topoBound("first", "default", testLbl, "{cpu: 1100m}", "old-a", "", topoSpec(zoneTSC)) +
			pods(10, "p", testLbl, "{cpu: 1100m}", topoSpec(zoneTSC)),
		want: []expectation{skew(zoneKey, "test=test", 1, 2, 2)},
	},
	{
		ref: "topology: Zonal > should not violate max-skew when unsat = do not schedule (discover domains)",
		objects: topoPool("default", "", "["+topoZones("b", "c")+"]", "") +
			topoNode("old-a", "m5.large", "a", "spot", "") +
			topoBound("first", "default", testLbl, "{cpu: 1100m}", "old-a", "", "") +
			pods(10, "p", testLbl, "{cpu: 1100m}", topoSpec(zoneTSC)),
		want: []expectation{skew(zoneKey, "test=test", 1, 2, 2)},
	},
	{
		ref: "topology: Zonal > should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain",
		objects: topoPlainNode("first", "{topology.kubernetes.io/zone: us-east-1a}", "", "") +
			topoPlainNode("second", "{topology.kubernetes.io/zone: us-east-1b}", "", "") +
			topoPlainNode("third", "", "", "") + topoNamespace("wrong", "") +
			topoBound("no-labels", "default", "", "", "first", "", "") +
			pod("waiting", testLbl, "", "{schedulingGates: [{name: hold}]}") + // pending, not for provisioning
			topoBound("no-domain", "default", testLbl, "", "third", "", "") +
			topoBound("other-ns", "wrong", testLbl, "", "first", "", "") +
			"---\napiVersion: v1\nkind: Pod\nmetadata: {name: terminating, namespace: default, labels: {test: test}, deletionTimestamp: \"2030-01-01T00:00:00Z\"}\nspec: {containers: [{name: c, image: busybox}]}\n" +
			topoBound("failed", "default", testLbl, "", "first", "Failed", "") +
			topoBound("succeeded", "default", testLbl, "", "first", "Succeeded", "") +
			topoBound("run-0", "default", testLbl, "", "first", "", "") +
			topoBound("run-1", "default", testLbl, "", "first", "", "") +
			topoBound("run-2", "default", testLbl, "", "second", "", "") +
			pods(2, "p", testLbl, "", topoSpec(zoneTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", zoneKey, "test=test", 2, 2, 1)},
	},
	{
		// The reference checks the skew of a selector-less spread over the one plain pod.
		ref:     "topology: Zonal > should match all pods when labelSelector is not specified",
		objects: pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), skew(zoneKey, "", 1)},
	},
	{
		// Five pods fit the reference's nodes; here m5.large (the cheapest types hold four pods).
		ref:     "topology: Zonal > should handle interdependent selectors",
		objects: largePool + pods(5, "p", "", "", topoSpec(hostTSC)),
		want:    []expectation{sameNode("p-*"), newNodes(1)},
	},
	{
		ref: "topology: Zonal > should respect minDomains constraints",
		objects: topoPool("default", "", "["+topoZones("a", "b")+"]", "") +
			pods(3, "p", testLbl, "", topoSpec(topoTSC(topoSpread(zoneKey, 1, dns, ", minDomains: 3")))),
		want: []expectation{skew(zoneKey, "test=test", 1, 1)},
	},
	{
		ref: "topology: Zonal > satisfied minDomains constraints (equal) should allow expected pod scheduling",
		objects: topoPool("default", "", "["+topoZones("a", "b", "c")+"]", "") +
			pods(11, "p", testLbl, "", topoSpec(topoTSC(topoSpread(zoneKey, 1, dns, ", minDomains: 3")))),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 4, 4, 3)},
	},
	{
		ref: "topology: Zonal > satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling",
		objects: topoPool("default", "", "["+topoZones("a", "b", "c")+"]", "") +
			pods(11, "p", testLbl, "", topoSpec(topoTSC(topoSpread(zoneKey, 1, dns, ", minDomains: 2")))),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 4, 4, 3)},
	},

	// Hostname
	{
		ref:     "topology: Hostname > should balance pods across nodes",
		objects: pods(4, "p", testLbl, "", topoSpec(hostTSC)),
		want:    []expectation{scheduled("p-*"), skew(hostKey, "test=test", 1, 1, 1, 1)},
	},
	{
		ref:     "topology: Hostname > should balance pods on the same hostname up to maxskew",
		objects: pods(4, "p", testLbl, "", topoSpec(topoTSC(topoSpread(hostKey, 4, dns, "")))),
		want:    []expectation{scheduled("p-*"), skew(hostKey, "test=test", 4)},
	},
	{
		ref: "topology: Hostname > balance multiple deployments with hostname topology spread",
		objects: pods(2, "one", "{app: app1}", "", "{topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: app1}}}]}") +
			pods(2, "two", "{app: app2}", "", "{topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: app2}}}]}"),
		want: []expectation{scheduled("one-*", "two-*"), newNodes(2), apart("one-*"), apart("two-*")},
	},
	{
		ref: "topology: Hostname > balance multiple deployments with hostname topology spread & varying arch",
		objects: pods(2, "one", "{app: app1}", "", "{nodeSelector: {kubernetes.io/arch: amd64}, topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: app1}}}]}") +
			pods(2, "two", "{app: app2}", "", "{nodeSelector: {kubernetes.io/arch: arm64}, topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: app2}}}]}"),
		want: []expectation{scheduled("one-*", "two-*"), newNodes(4), nodeLabel(archKey, []string{"amd64"}, "one-*"), nodeLabel(archKey, []string{"arm64"}, "two-*")},
	},

	// CapacityType
	{
		ref:     "topology: CapacityType > should balance pods across capacity types",
		objects: pods(4, "p", testLbl, "", topoSpec(ctTSC)),
		want:    []expectation{scheduled("p-*"), skew(ctKey, "test=test", 2, 2)},
	},
	{
		ref:     "topology: CapacityType > should respect NodePool capacity type constraints",
		objects: topoPool("default", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}]", "") + pods(4, "p", testLbl, "", topoSpec(ctTSC)),
		want:    []expectation{scheduled("p-*"), skew(ctKey, "test=test", 2, 2)},
	},
	{
		ref: "topology: CapacityType > should not violate max-skew when unsat = do not schedule (capacity type)",
		objects: topoPool("default", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]", "") +
			topoNode("old-spot", "m5.large", "a", "spot", "") +
			topoBound("first", "default", testLbl, "{cpu: 1100m}", "old-spot", "", topoSpec(ctTSC)) +
			pods(5, "p", testLbl, "{cpu: 1100m}", topoSpec(ctTSC)),
		want: []expectation{skew(ctKey, "test=test", 1, 2)},
	},
	{
		ref: "topology: CapacityType > should violate max-skew when unsat = schedule anyway (capacity type)",
		objects: topoPool("default", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]", "") +
			topoNode("old-spot", "m5.large", "a", "spot", "") +
			topoBound("first", "default", testLbl, "{cpu: 1100m}", "old-spot", "", "") +
			pods(5, "p", testLbl, "{cpu: 1100m}", topoSpec(topoTSC(topoSpread(ctKey, 1, anyway, "")))),
		want: []expectation{scheduled("p-*"), skew(ctKey, "test=test", 1, 5)},
	},
	{
		ref: "topology: CapacityType > should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain",
		objects: topoPlainNode("first", "{karpenter.sh/capacity-type: spot}", "", "") +
			topoPlainNode("second", "{karpenter.sh/capacity-type: on-demand}", "", "") +
			topoPlainNode("third", "", "", "") + topoNamespace("wrong", "") +
			topoBound("no-labels", "default", "", "", "first", "", "") +
			pod("waiting", testLbl, "", "{schedulingGates: [{name: hold}]}") + // pending, not for provisioning
			topoBound("no-domain", "default", testLbl, "", "third", "", "") +
			topoBound("other-ns", "wrong", testLbl, "", "first", "", "") +
			"---\napiVersion: v1\nkind: Pod\nmetadata: {name: terminating, namespace: default, labels: {test: test}, deletionTimestamp: \"2030-01-01T00:00:00Z\"}\nspec: {containers: [{name: c, image: busybox}]}\n" +
			topoBound("failed", "default", testLbl, "", "first", "Failed", "") +
			topoBound("succeeded", "default", testLbl, "", "first", "Succeeded", "") +
			topoBound("run-0", "default", testLbl, "", "first", "", "") +
			topoBound("run-1", "default", testLbl, "", "first", "", "") +
			topoBound("run-2", "default", testLbl, "", "second", "", "") +
			pods(2, "p", testLbl, "", topoSpec(ctTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", ctKey, "test=test", 2, 3)},
	},
	{
		ref:     "topology: CapacityType > should match all pods when labelSelector is not specified",
		objects: pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), skew(ctKey, "", 1)},
	},
	{
		// The earlier on-demand pod is in zone a; the new pods may only go to spot in zone b, so the
		// on-demand domain does not count for them.
		ref: "topology: CapacityType > should balance pods across capacity-types (node required affinity constrained)",
		objects: topoNode("old-od", "m5.large", "a", "on-demand", "") +
			topoBound("first", "default", testLbl, "", "old-od", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1a, karpenter.sh/capacity-type: on-demand}}") +
			pods(5, "p", testLbl, "", topoSpec(ctTSC, "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}, {key: karpenter.sh/capacity-type, operator: In, values: [spot]}]}]}}}")),
		want: []expectation{scheduled("p-*"), skew(ctKey, "test=test", 1, 5)},
	},
	{
		// The earlier on-demand node holds one pod and has no room for a 2-CPU pod.
		ref: "topology: CapacityType > should balance pods across capacity-types (no constraints)",
		objects: topoPool("default", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]", "") +
			topoNode("old-od", "m5.large", "a", "on-demand", "") +
			topoBound("first", "default", testLbl, "", "old-od", "", "") +
			pods(5, "p", testLbl, "{cpu: \"2\"}", topoSpec(ctTSC)),
		want: []expectation{skew(ctKey, "test=test", 1, 2)},
	},
	{
		ref: "topology: CapacityType > should balance pods across arch (no constraints)",
		objects: topoPool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [arm64]}]", "") +
			topoNode("old-amd", "m5.large", "a", "on-demand", "") +
			topoBound("first", "default", testLbl, "", "old-amd", "", "") +
			pods(5, "p", testLbl, "{cpu: \"2\"}", topoSpec(topoTSC(topoSpread(archKey, 1, dns, "")))),
		want: []expectation{skew(archKey, "test=test", 1, 2)},
	},
	// Combined Hostname and Zonal Topology: the reference provisions four
	// batches in turn; each case here is one batch, the earlier ones as
	// nodes already running their pods.
	{
		ref:     "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (hostname and zonal) (batch 1 of 4)",
		objects: pods(2, "p", testLbl, "", topoSpec(hzTSC)),
		want:    []expectation{scheduled("p-*"), topoSkew("default", zoneKey, "test=test", 1, 1), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (hostname and zonal) (batch 2 of 4)",
		objects: topoEarlier("a1", "m5.xlarge", "a", "spot", 1, topoSpec(hzTSC)) + topoEarlier("b1", "m5.xlarge", "b", "spot", 1, topoSpec(hzTSC)) +
			pods(3, "p", testLbl, "", topoSpec(hzTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", zoneKey, "test=test", 2, 2, 1), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (hostname and zonal) (batch 3 of 4)",
		objects: topoEarlier("a1", "m5.xlarge", "a", "spot", 2, topoSpec(hzTSC)) + topoEarlier("b1", "m5.xlarge", "b", "spot", 2, topoSpec(hzTSC)) +
			topoEarlier("c1", "m5.xlarge", "c", "spot", 1, topoSpec(hzTSC)) +
			pods(5, "p", testLbl, "", topoSpec(hzTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", zoneKey, "test=test", 4, 3, 3), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (hostname and zonal) (batch 4 of 4)",
		objects: topoEarlier("a1", "m5.xlarge", "a", "spot", 3, topoSpec(hzTSC)) + topoEarlier("a2", "m5.xlarge", "a", "spot", 1, topoSpec(hzTSC)) +
			topoEarlier("b1", "m5.xlarge", "b", "spot", 3, topoSpec(hzTSC)) + topoEarlier("c1", "m5.xlarge", "c", "spot", 3, topoSpec(hzTSC)) +
			pods(11, "p", testLbl, "", topoSpec(hzTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", zoneKey, "test=test", 7, 7, 7), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		// A custom label the NodePools require spreads 4:1 over spot and on-demand.
		ref: "topology: Combined Hostname and Zonal Topology > should balance pods across NodePool requirements",
		objects: topoPool("spot", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [spot]}, {key: capacity.spread.4-1, operator: In, values: [\"2\", \"3\", \"4\", \"5\"]}]", "") +
			topoPool("on-demand", "", "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}, {key: capacity.spread.4-1, operator: In, values: [\"1\"]}]", "") +
			pods(20, "p", testLbl, "", topoSpec(topoTSC(topoSpread("capacity.spread.4-1", 1, dns, "")))),
		want: []expectation{scheduled("p-*"), skew("capacity.spread.4-1", "test=test", 4, 4, 4, 4, 4), skew(ctKey, "test=test", 4, 16)},
	},
	{
		// NodePool b, the only one for zone c, has a CPU limit of 0: zone c is a domain no pod can reach.
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (zonal and hostname, one NodePool disabled)",
		objects: topoPool("default", "", "["+topoZones("a", "b")+"]", "") +
			topoPool("b", "", "["+topoZones("c")+"]", "  limits: {cpu: \"0\"}\n") +
			pods(10, "p", testLbl, "", topoSpec(topoTSC(topoSpread(zoneKey, 1, dns, ""), topoSpread(hostKey, 1, anyway, "")))),
		want: []expectation{topoSkew("default", zoneKey, "test=test", 1, 1), topoSkew("default", hostKey, "test=test", 1, 1)},
	},
	{
		ref:     "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (capacity type and hostname) (batch 1 of 4)",
		objects: pods(2, "p", testLbl, "", topoSpec(chTSC)),
		want:    []expectation{scheduled("p-*"), topoSkew("default", ctKey, "test=test", 1, 1), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (capacity type and hostname) (batch 2 of 4)",
		objects: topoEarlier("s1", "m5.xlarge", "a", "spot", 1, topoSpec(chTSC)) + topoEarlier("o1", "m5.xlarge", "b", "on-demand", 1, topoSpec(chTSC)) +
			pods(3, "p", testLbl, "", topoSpec(chTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", ctKey, "test=test", 3, 2), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (capacity type and hostname) (batch 3 of 4)",
		objects: topoEarlier("s1", "m5.xlarge", "a", "spot", 3, topoSpec(chTSC)) + topoEarlier("o1", "m5.xlarge", "b", "on-demand", 2, topoSpec(chTSC)) +
			pods(5, "p", testLbl, "", topoSpec(chTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", ctKey, "test=test", 5, 5), topoBounded(hostKey, "test=test", 3, -1)},
	},
	{
		ref: "topology: Combined Hostname and Zonal Topology > should spread pods while respecting both constraints (capacity type and hostname) (batch 4 of 4)",
		objects: topoEarlier("s1", "m5.xlarge", "a", "spot", 3, topoSpec(chTSC)) + topoEarlier("s2", "m5.xlarge", "b", "spot", 2, topoSpec(chTSC)) +
			topoEarlier("o1", "m5.xlarge", "b", "on-demand", 3, topoSpec(chTSC)) + topoEarlier("o2", "m5.xlarge", "c", "on-demand", 2, topoSpec(chTSC)) +
			pods(11, "p", testLbl, "", topoSpec(chTSC)),
		want: []expectation{scheduled("p-*"), topoSkew("default", ctKey, "test=test", 11, 10), topoBounded(hostKey, "test=test", 3, -1)},
	},

	// MatchLabelKeys
	{
		ref: "topology: MatchLabelKeys > should support matchLabelKeys",
		objects: pods(2, "a", "{test: test, test-label: value-a}", "", topoSpec(topoTSC(topoSpread(hostKey, 1, dns, ", matchLabelKeys: [test-label]")))) +
			pods(2, "b", "{test: test, test-label: value-b}", "", topoSpec(topoTSC(topoSpread(hostKey, 1, dns, ", matchLabelKeys: [test-label]")))),
		want: []expectation{scheduled("a-*", "b-*"), skew(hostKey, "test=test", 2, 2)},
	},
	{
		ref:     "topology: MatchLabelKeys > should ignore unknown labels specified in matchLabelKeys",
		objects: pods(4, "p", testLbl, "", topoSpec(topoTSC(topoSpread(hostKey, 1, dns, ", matchLabelKeys: [test-label]")))),
		want:    []expectation{scheduled("p-*"), skew(hostKey, "test=test", 1, 1, 1, 1)},
	},

	// NodeTaintsPolicy: two tainted nodes of no NodePool, too small for the
	// pods, carry the domains foo and bar; the NodePool launches baz.
	{
		ref: "topology: NodeTaintsPolicy > should balance pods across a label (NodeTaintsPolicy=ignore)",
		objects: topoPool("default", "{fake-label: baz}", "", "") + taintedFooBar +
			pods(5, "p", testLbl, "{cpu: \"1\"}", topoSpec(topoTSC(topoSpread("fake-label", 1, dns, ", nodeTaintsPolicy: Ignore")))),
		want: []expectation{skew("fake-label", "test=test", 1)},
	},
	{
		ref: "topology: NodeTaintsPolicy > should balance pods across a label (NodeTaintsPolicy=honor)",
		objects: topoPool("default", "{fake-label: baz}", "", "") + taintedFooBar +
			pods(5, "p", testLbl, "{cpu: \"1\"}", topoSpec(topoTSC(topoSpread("fake-label", 1, dns, ", nodeTaintsPolicy: Honor")))),
		want: []expectation{scheduled("p-*"), skew("fake-label", "test=test", 5)},
	},
	{
		ref: "topology: NodeTaintsPolicy > should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=ignore)",
		objects: topoPool("default", "", "[{key: fake-label, operator: In, values: [foo]}]", "") +
			topoPool("tainted", "", "[{key: fake-label, operator: In, values: [bar]}]", "      taints: [{key: taint-key, value: taint-value, effect: NoSchedule}]\n") +
			pods(2, "p", testLbl, "", topoSpec(topoTSC(topoSpread("fake-label", 1, dns, ", nodeTaintsPolicy: Ignore")))),
		want: []expectation{skew("fake-label", "test=test", 1)},
	},
	{
		ref: "topology: NodeTaintsPolicy > should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=honor)",
		objects: topoPool("default", "", "[{key: fake-label, operator: In, values: [foo]}]", "") +
			topoPool("tainted", "", "[{key: fake-label, operator: In, values: [bar]}]", "      taints: [{key: taint-key, value: taint-value, effect: NoSchedule}]\n") +
			pods(2, "p", testLbl, "", topoSpec(topoTSC(topoSpread("fake-label", 1, dns, ", nodeTaintsPolicy: Honor")))),
		want: []expectation{scheduled("p-*"), skew("fake-label", "test=test", 2)},
	},
	{
		ref: "topology: NodeTaintsPolicy > should balance pods across a label when mutually exclusive NodePools (by taints) share domains (NodeTaintsPolicy=honor)",
		objects: topoPool("np0", "", "[{key: fake-label, operator: In, values: [foo, bar]}]", "      taints: [{key: taint-key, value: nodepool-0, effect: NoSchedule}]\n") +
			topoPool("np1", "", "[{key: fake-label, operator: In, values: [foo, baz]}]", "      taints: [{key: taint-key, value: nodepool-1, effect: NoSchedule}]\n") +
			pods(2, "zero", testLbl, "", topoSpec(topoTSC(topoSpread("fake-label", 1, dns, ", nodeTaintsPolicy: Honor")), "tolerations: [{key: taint-key, value: nodepool-0, effect: NoSchedule}]")) +
			pods(4, "one", testLbl, "", topoSpec(topoTSC(topoSpread("fake-label", 1, dns, ", nodeTaintsPolicy: Honor")), "tolerations: [{key: taint-key, value: nodepool-1, effect: NoSchedule}]")),
		want: []expectation{scheduled("zero-*", "one-*"), skew("fake-label", "test=test", 3, 2, 1)},
	},

	// NodeAffinityPolicy: two nodes of no NodePool, too small for the pods,
	// carry the domains foo and bar and a label the pods' selector refuses.
	{
		ref: "topology: NodeAffinityPolicy > should balance pods across a label (NodeAffinityPolicy=ignore)",
		objects: topoPool("default", "{fake-label: baz, selector: value}", "", "") + mismatchFooBar +
			pods(5, "p", testLbl, "{cpu: \"1\"}", topoSpec("nodeSelector: {selector: value}", topoTSC(topoSpread("fake-label", 1, dns, ", nodeAffinityPolicy: Ignore")))),
		want: []expectation{skew("fake-label", "test=test", 1)},
	},
	{
		ref: "topology: NodeAffinityPolicy > should balance pods across a label (NodeAffinityPolicy=honor)",
		objects: topoPool("default", "{fake-label: baz, selector: value}", "", "") + mismatchFooBar +
			pods(5, "p", testLbl, "{cpu: \"1\"}", topoSpec("nodeSelector: {selector: value}", topoTSC(topoSpread("fake-label", 1, dns, ", nodeAffinityPolicy: Honor")))),
		want: []expectation{scheduled("p-*"), skew("fake-label", "test=test", 5)},
	},

	// Combined Zonal and Capacity Type Topology: four batches in turn.
	{
		ref:     "topology: Combined Zonal and Capacity Type Topology > should spread pods while respecting both constraints (batch 1 of 4)",
		objects: pods(2, "p", testLbl, "", topoSpec(czTSC)),
		want:    []expectation{scheduled("p-*"), topoBounded(ctKey, "test=test", 1, -1), topoBounded(zoneKey, "test=test", 1, -1)},
	},
	{
		ref: "topology: Combined Zonal and Capacity Type Topology > should spread pods while respecting both constraints (batch 2 of 4)",
		objects: topoEarlier("sa", "m5.xlarge", "a", "spot", 1, topoSpec(czTSC)) + topoEarlier("ob", "m5.xlarge", "b", "on-demand", 1, topoSpec(czTSC)) +
			pods(3, "p", testLbl, "", topoSpec(czTSC)),
		want: []expectation{scheduled("p-*"), topoBounded(ctKey, "test=test", 3, -1), topoBounded(zoneKey, "test=test", 2, -1)},
	},
	{
		ref: "topology: Combined Zonal and Capacity Type Topology > should spread pods while respecting both constraints (batch 3 of 4)",
		objects: topoEarlier("sa", "m5.xlarge", "a", "spot", 1, topoSpec(czTSC)) + topoEarlier("ob", "m5.xlarge", "b", "on-demand", 1, topoSpec(czTSC)) +
			topoEarlier("sc", "m5.xlarge", "c", "spot", 1, topoSpec(czTSC)) + topoEarlier("oa", "m5.xlarge", "a", "on-demand", 1, topoSpec(czTSC)) +
			topoEarlier("sb", "m5.xlarge", "b", "spot", 1, topoSpec(czTSC)) +
			pods(3, "p", testLbl, "", topoSpec(czTSC)),
		want: []expectation{scheduled("p-*"), topoBounded(ctKey, "test=test", 5, -1), topoBounded(zoneKey, "test=test", 4, -1)},
	},
	{
		ref: "topology: Combined Zonal and Capacity Type Topology > should spread pods while respecting both constraints (batch 4 of 4)",
		objects: topoEarlier("sa", "m5.xlarge", "a", "spot", 2, topoSpec(czTSC)) + topoEarlier("ob", "m5.xlarge", "b", "on-demand", 2, topoSpec(czTSC)) +
			topoEarlier("sc", "m5.xlarge", "c", "spot", 1, topoSpec(czTSC)) + topoEarlier("oa", "m5.xlarge", "a", "on-demand", 1, topoSpec(czTSC)) +
			topoEarlier("sb", "m5.xlarge", "b", "spot", 1, topoSpec(czTSC)) + topoEarlier("oc", "m5.xlarge", "c", "on-demand", 1, topoSpec(czTSC)) +
			pods(11, "p", testLbl, "", topoSpec(czTSC)),
		want: []expectation{scheduled("p-*"), topoBounded(ctKey, "test=test", 11, -1), topoBounded(zoneKey, "test=test", 7, -1)},
	},

	// Combined Hostname, Zonal, and Capacity Type Topology
	{
		// The reference provisions batches of 1 to 14 pods in turn; here the largest batch into an empty cluster.
		ref:     "topology: Combined Hostname, Zonal, and Capacity Type Topology > should spread pods while respecting all constraints",
		objects: pods(14, "p", testLbl, "", topoSpec(topoTSC(topoSpread(ctKey, 1, dns, ""), topoSpread(zoneKey, 2, dns, ""), topoSpread(hostKey, 3, dns, "")))),
		want: []expectation{scheduled("p-*"), topoBounded(ctKey, "test=test", -1, 1), topoBounded(zoneKey, "test=test", -1, 2),
			topoBounded(hostKey, "test=test", -1, 3)},
	},

	// Combined Zonal Topology and Node Affinity
	{
		ref: "topology: Combined Zonal Topology and Node Affinity > should limit spread options by nodeSelector",
		objects: pods(5, "a", testLbl, "", topoSpec(zoneTSC, "nodeSelector: {topology.kubernetes.io/zone: us-east-1a}")) +
			pods(10, "b", testLbl, "", topoSpec(zoneTSC, "nodeSelector: {topology.kubernetes.io/zone: us-east-1b}")),
		want: []expectation{scheduled("a-*", "b-*"), skew(zoneKey, "test=test", 5, 10)},
	},
	{
		ref:     "topology: Combined Zonal Topology and Node Affinity > should limit spread options by node requirements",
		objects: pods(10, "p", testLbl, "", topoSpec(zoneTSC, zoneAffinity("a", "b"))),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 5, 5)},
	},
	{
		ref:     "topology: Combined Zonal Topology and Node Affinity > should limit spread options by required node affinity (batch 1 of 3)",
		objects: pods(6, "p", testLbl, "", topoSpec(zoneTSC, zoneAffinity("a", "b"))),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 3, 3)},
	},
	{
		ref: "topology: Combined Zonal Topology and Node Affinity > should limit spread options by required node affinity (batch 2 of 3)",
		objects: topoPool("default", "", "["+topoZones("a", "b", "c")+"]", "") +
			topoEarlier("a1", "m5.xlarge", "a", "spot", 3, topoSpec(zoneTSC, zoneAffinity("a", "b"))) +
			topoEarlier("b1", "m5.xlarge", "b", "spot", 3, topoSpec(zoneTSC, zoneAffinity("a", "b"))) +
			pod("p", testLbl, "", topoSpec(zoneTSC, zoneAffinity("b", "c"))),
		want: []expectation{scheduled("p"), skew(zoneKey, "test=test", 3, 3, 1)},
	},
	{
		ref: "topology: Combined Zonal Topology and Node Affinity > should limit spread options by required node affinity (batch 3 of 3)",
		objects: topoPool("default", "", "["+topoZones("a", "b", "c")+"]", "") +
			topoEarlier("a1", "m5.xlarge", "a", "spot", 3, topoSpec(zoneTSC, zoneAffinity("a", "b"))) +
			topoEarlier("b1", "m5.xlarge", "b", "spot", 3, topoSpec(zoneTSC, zoneAffinity("a", "b"))) +
			topoEarlier("c1", "m5.xlarge", "c", "spot", 1, topoSpec(zoneTSC, zoneAffinity("b", "c"))) +
			pods(5, "p", testLbl, "", topoSpec(zoneTSC)),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 4, 4, 4)},
	},
	{
		ref: "topology: Combined Zonal Topology and Node Affinity > should not limit spread options by preferred node affinity",
		objects: pods(6, "p", testLbl, "", topoSpec(zoneTSC,
			"affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}]}}]}}")),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "test=test", 2, 2, 2)},
	},

	// Combined Capacity Type Topology and Node Affinity
	{
		ref: "topology: Combined Capacity Type Topology and Node Affinity > should limit spread options by nodeSelector",
		objects: pods(5, "s", testLbl, "", topoSpec(topoTSC(topoSpread(ctKey, 1, anyway, "")), "nodeSelector: {karpenter.sh/capacity-type: spot}")) +
			pods(5, "o", testLbl, "", topoSpec(topoTSC(topoSpread(ctKey, 1, anyway, "")), "nodeSelector: {karpenter.sh/capacity-type: on-demand}")),
		want: []expectation{scheduled("s-*", "o-*"), skew(ctKey, "test=test", 5, 5)},
	},
	{
		ref:     "topology: Combined Capacity Type Topology and Node Affinity > should limit spread options by node affinity (capacity type) (batch 1 of 3)",
		objects: pods(3, "p", testLbl, "", topoSpec(ctTSC, ctAffinity("spot"))),
		want:    []expectation{scheduled("p-*"), skew(ctKey, "test=test", 3)},
	},
	{
		ref: "topology: Combined Capacity Type Topology and Node Affinity > should limit spread options by node affinity (capacity type) (batch 2 of 3)",
		objects: topoEarlier("s1", "m5.xlarge", "a", "spot", 3, topoSpec(ctTSC, ctAffinity("spot"))) +
			pod("p", testLbl, "", topoSpec(ctTSC, ctAffinity("on-demand, spot"))),
		want: []expectation{scheduled("p"), skew(ctKey, "test=test", 3, 1)},
	},
	{
		ref: "topology: Combined Capacity Type Topology and Node Affinity > should limit spread options by node affinity (capacity type) (batch 3 of 3)",
		objects: topoEarlier("s1", "m5.xlarge", "a", "spot", 3, topoSpec(ctTSC, ctAffinity("spot"))) +
			topoEarlier("o1", "m5.xlarge", "a", "on-demand", 1, topoSpec(ctTSC, ctAffinity("on-demand, spot"))) +
			pods(5, "p", testLbl, "", topoSpec(ctTSC)),
		want: []expectation{scheduled("p-*"), skew(ctKey, "test=test", 5, 4)},
	},
	// Pod Affinity/Anti-Affinity
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should schedule a pod with empty pod affinity and anti-affinity",
		objects: pod("p", "", "", "{affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: []}, podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: []}}}"),
		want:    []expectation{scheduled("p")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should respect pod affinity (hostname)",
		objects: pods(10, "p", testLbl, "", topoSpec(hostTSC)) + pod("target", s2Lbl, "", "") +
			pod("follower", "", "", topoSpec(podAff(true, hostKey, ""))),
		want: []expectation{sameNode("target", "follower")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should respect pod affinity (arch)",
		objects: pod("target", s2Lbl, "{cpu: \"2\"}", topoSpec(s2HostTSC, "nodeSelector: {kubernetes.io/arch: arm64}")) +
			pod("follower", s2Lbl, "{cpu: \"1\"}", topoSpec(s2HostTSC, podAff(true, archKey, ""))),
		want: []expectation{nodeLabel(archKey, []string{"arm64"}, "target", "follower"), apart("target", "follower")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should respect self pod affinity (hostname)",
		objects: pods(3, "p", s2Lbl, "", topoSpec(podAff(true, hostKey, ""))),
		want:    []expectation{sameNode("p-*")},
	},
	{
		// The reference's node holds five pods: here an m5.xlarge holds five pods of 700m.
		ref:     "topology: Pod Affinity/Anti-Affinity > should respect self pod affinity for first empty topology domain only (hostname) (batch 1 of 2)",
		objects: xlargePool + pods(10, "p", s2Lbl, "{cpu: 700m}", topoSpec(podAff(true, hostKey, ""))),
		want:    []expectation{newNodes(1), topoPlaced("p-*", 5)},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should respect self pod affinity for first empty topology domain only (hostname) (batch 2 of 2)",
		objects: xlargePool + topoNode("full", "m5.xlarge", "a", "spot", "") +
			topoSelfAffBound("full", 5, "{cpu: 700m}") +
			pods(10, "p", s2Lbl, "{cpu: 700m}", topoSpec(podAff(true, hostKey, ""))),
		want: []expectation{notScheduled("p-*")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should respect self pod affinity for first empty topology domain only (hostname/constrained zones)",
		objects: topoNode("old-a", "m5.large", "a", "spot", "") + topoSelfAffBound("old-a", 1, "{}") +
			pods(10, "p", s2Lbl, "", topoSpec(bothAffinities(podAff(true, hostKey, ""), zoneAffinity("b", "c")))),
		want: []expectation{notScheduled("p-*")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should respect self pod affinity (zone)",
		objects: pods(3, "p", s2Lbl, "", topoSpec(podAff(true, zoneKey, ""))),
		want:    []expectation{sameNode("p-*")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should respect self pod affinity (zone w/ constraint)",
		objects: pods(3, "p", s2Lbl, "", topoSpec(bothAffinities(podAff(true, zoneKey, ""), zoneAffinity("c")))),
		want:    []expectation{sameNode("p-*"), nodeLabel(zoneKey, []string{"us-east-1c"}, "p-*")},
	},
	{
		ref:    "topology: Pod Affinity/Anti-Affinity > should allow two nodes to be created when two pods with matching affinities have incompatible selectors",
		better: "as kube-scheduler: once pod one runs in us-east-1b, pod two's required affinity needs us-east-1b, which its own selector excludes, so no node can run it; the reference launches a node in us-east-1c that pod two could never be bound to",
		objects: pod("one", "{security: s1}", "", topoSpec(bothAffinities(podAffTo(true, zoneKey, "{security: s1}"), zoneAffinity("b")))) +
			pod("two", "{security: s1}", "", topoSpec(bothAffinities(podAffTo(true, zoneKey, "{security: s1}"), zoneAffinity("c")))),
		want: []expectation{nodeLabel(zoneKey, []string{"us-east-1b"}, "one"), notScheduled("two"), newNodes(1)},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should allow violation of preferred pod affinity",
		objects: pods(10, "p", testLbl, "", topoSpec(hostTSC)) + pod("follower", "", "", topoSpec(podPref(true, hostKey, s2Lbl))),
		want:    []expectation{scheduled("follower")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should allow violation of preferred pod anti-affinity",
		objects: pods(3, "spread", testLbl, "", topoSpec(zoneTSC)) +
			pods(10, "avoid", "", "", topoSpec(podPref(false, zoneKey, testLbl))),
		want: []expectation{scheduled("avoid-*")},
	},
	{
		// The reference repeats this ten times over, nodes of the earlier rounds staying.
		ref:     "topology: Pod Affinity/Anti-Affinity > should separate nodes using simple pod anti-affinity on hostname",
		objects: pod("avoider", "", "", topoSpec(podAff(false, hostKey, ""))) + pod("target", s2Lbl, "", ""),
		want:    []expectation{apart("avoider", "target")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone",
		objects: pod("za", s2Lbl, "{cpu: \"2\"}", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1a}}") +
			pod("zb", s2Lbl, "{cpu: \"2\"}", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1b}}") +
			pod("zc", s2Lbl, "{cpu: \"2\"}", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1c}}") +
			pod("avoider", "", "", topoSpec(podAff(false, zoneKey, ""))),
		want: []expectation{scheduled("za", "zb", "zc"), notScheduled("avoider")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (other schedules first)",
		better:  zoneBetter,
		objects: pod("target", s2Lbl, "{cpu: \"2\"}", "") + pod("avoider", "", "", topoSpec(podAff(false, zoneKey, ""))),
		want:    []expectation{scheduled("target", "avoider"), distinct(zoneKey, "target", "avoider")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity (arch)",
		objects: pod("target", s2Lbl, "{cpu: \"2\"}", topoSpec(s2HostTSC, "nodeSelector: {kubernetes.io/arch: arm64}")) +
			pod("avoider", s2Lbl, "{cpu: \"1\"}", topoSpec(s2HostTSC, podAff(false, archKey, ""))),
		want: []expectation{nodeLabel(archKey, []string{"arm64"}, "target"), nodeLabel(archKey, []string{"amd64"}, "avoider")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should violate preferred pod anti-affinity on zone (inverse)",
		objects: pod("za", "", "{cpu: \"2\"}", topoSpec(podPref(false, zoneKey, s2Lbl), "nodeSelector: {topology.kubernetes.io/zone: us-east-1a}")) +
			pod("zb", "", "{cpu: \"2\"}", topoSpec(podPref(false, zoneKey, s2Lbl), "nodeSelector: {topology.kubernetes.io/zone: us-east-1b}")) +
			pod("zc", "", "{cpu: \"2\"}", topoSpec(podPref(false, zoneKey, s2Lbl), "nodeSelector: {topology.kubernetes.io/zone: us-east-1c}")) +
			pod("target", s2Lbl, "", ""),
		want: []expectation{scheduled("za", "zb", "zc", "target")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (inverse)",
		objects: pod("za", "", "{cpu: \"2\"}", topoSpec(podAff(false, zoneKey, ""), "nodeSelector: {topology.kubernetes.io/zone: us-east-1a}")) +
			pod("zb", "", "{cpu: \"2\"}", topoSpec(podAff(false, zoneKey, ""), "nodeSelector: {topology.kubernetes.io/zone: us-east-1b}")) +
			pod("zc", "", "{cpu: \"2\"}", topoSpec(podAff(false, zoneKey, ""), "nodeSelector: {topology.kubernetes.io/zone: us-east-1c}")) +
			pod("target", s2Lbl, "", ""),
		want: []expectation{scheduled("za", "zb", "zc"), notScheduled("target")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (Schrödinger) (batch 1 of 2)",
		better:  zoneBetter,
		objects: pod("anywhere", "", "{cpu: \"2\"}", topoSpec(podAff(false, zoneKey, ""))) + pod("target", s2Lbl, "", ""),
		want:    []expectation{scheduled("anywhere", "target"), distinct(zoneKey, "anywhere", "target")},
	},
	{
		// The pod of the first batch now runs on a node in zone a.
		ref: "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (Schrödinger) (batch 2 of 2)",
		objects: topoNode("old-a", "m5.large", "a", "spot", "") +
			topoBound("anywhere", "default", "", "{cpu: \"2\"}", "old-a", "", topoSpec(podAff(false, zoneKey, ""))) +
			pod("target", s2Lbl, "", ""),
		want: []expectation{scheduled("target"), notNodeLabel(zoneKey, []string{"us-east-1a"}, "target")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should not violate pod anti-affinity on zone (inverse w/existing nodes)",
		objects: topoNode("old-a", "m5.xlarge", "a", "spot", "") + topoNode("old-b", "m5.xlarge", "b", "spot", "") + topoNode("old-c", "m5.xlarge", "c", "spot", "") +
			topoBound("za", "default", "", "{cpu: \"2\"}", "old-a", "", topoSpec(podAff(false, zoneKey, ""), "nodeSelector: {topology.kubernetes.io/zone: us-east-1a}")) +
			topoBound("zb", "default", "", "{cpu: \"2\"}", "old-b", "", topoSpec(podAff(false, zoneKey, ""), "nodeSelector: {topology.kubernetes.io/zone: us-east-1b}")) +
			topoBound("zc", "default", "", "{cpu: \"2\"}", "old-c", "", topoSpec(podAff(false, zoneKey, ""), "nodeSelector: {topology.kubernetes.io/zone: us-east-1c}")) +
			pod("target", s2Lbl, "", ""),
		want: []expectation{notScheduled("target")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should violate preferred pod anti-affinity on zone (inverse w/existing nodes)",
		objects: topoNode("old-a", "m5.xlarge", "a", "spot", "") + topoNode("old-b", "m5.xlarge", "b", "spot", "") + topoNode("old-c", "m5.xlarge", "c", "spot", "") +
			topoBound("za", "default", "", "{cpu: \"2\"}", "old-a", "", topoSpec(podPref(false, zoneKey, s2Lbl), "nodeSelector: {topology.kubernetes.io/zone: us-east-1a}")) +
			topoBound("zb", "default", "", "{cpu: \"2\"}", "old-b", "", topoSpec(podPref(false, zoneKey, s2Lbl), "nodeSelector: {topology.kubernetes.io/zone: us-east-1b}")) +
			topoBound("zc", "default", "", "{cpu: \"2\"}", "old-c", "", topoSpec(podPref(false, zoneKey, s2Lbl), "nodeSelector: {topology.kubernetes.io/zone: us-east-1c}")) +
			pod("target", s2Lbl, "", ""),
		want: []expectation{scheduled("target")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should allow violation of a pod affinity preference with a conflicting required constraint",
		objects: pod("target", s2Lbl, "", "") +
			pods(3, "p", testLbl, "", topoSpec(hostTSC, podPref(true, hostKey, s2Lbl))),
		want: []expectation{scheduled("target", "p-*"), skew(hostKey, "test=test", 1, 1, 1)},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should support pod anti-affinity with a zone topology (batch 1 of 4)",
		better:  zoneBetter,
		objects: pods(3, "p", s2Lbl, "", topoSpec(podAff(false, zoneKey, ""))),
		want:    []expectation{scheduled("p-*"), topoSkew("default", zoneKey, "", 1, 1, 1)},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should support pod anti-affinity with a zone topology (batch 2 of 4)",
		better:  zoneBetter,
		objects: antiZoneEarlier("a") + pods(3, "p", s2Lbl, "", topoSpec(podAff(false, zoneKey, ""))),
		want:    []expectation{topoPlaced("p-*", 2), topoSkew("default", zoneKey, "", 1, 1, 1)},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should support pod anti-affinity with a zone topology (batch 3 of 4)",
		objects: antiZoneEarlier("a", "b") + pods(3, "p", s2Lbl, "", topoSpec(podAff(false, zoneKey, ""))),
		want:    []expectation{topoSkew("default", zoneKey, "", 1, 1, 1)},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should support pod anti-affinity with a zone topology (batch 4 of 4)",
		objects: antiZoneEarlier("a", "b", "c") + pods(3, "p", s2Lbl, "", topoSpec(podAff(false, zoneKey, ""))),
		want:    []expectation{notScheduled("p-*"), topoSkew("default", zoneKey, "", 1, 1, 1)},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should not schedule pods with affinity to a non-existent pod",
		objects: pods(10, "p", "", "", topoSpec(podAff(true, zoneKey, ""))),
		want:    []expectation{notScheduled("p-*")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should support pod affinity with zone topology (unconstrained target) (batch 1 of 2)",
		better:  zoneBetter,
		objects: pods(10, "p", "", "", topoSpec(podAff(true, zoneKey, ""))) + pod("target", s2Lbl, "", ""),
		want:    []expectation{scheduled("p-*", "target"), skew(zoneKey, "", 11)},
	},
	{
		// The target of the first batch now runs on a node in zone a.
		ref: "topology: Pod Affinity/Anti-Affinity > should support pod affinity with zone topology (unconstrained target) (batch 2 of 2)",
		objects: topoNode("old-a", "m5.large", "a", "spot", "") + topoBound("target", "default", s2Lbl, "", "old-a", "", "") +
			pods(10, "p", "", "", topoSpec(podAff(true, zoneKey, ""))),
		want: []expectation{scheduled("p-*"), skew(zoneKey, "", 11)},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should support pod affinity with zone topology (constrained target)",
		objects: pod("target", s2Lbl, "", topoSpec(zoneAffinity("a"))) +
			pods(10, "p", "", "", topoSpec(podAff(true, zoneKey, ""))),
		want: []expectation{scheduled("target", "p-*"), skew(zoneKey, "", 11)},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should handle multiple dependent affinities",
		objects: pod("db", "{type: db, spread: spread}", "", "") +
			pod("web", "{type: web, spread: spread}", "", topoSpec(podAffTo(true, hostKey, "{type: db, spread: spread}"))) +
			pod("cache", "{type: cache, spread: spread}", "", topoSpec(podAffTo(true, hostKey, "{type: web, spread: spread}"))) +
			pod("ui", "{type: ui, spread: spread}", "", topoSpec(podAffTo(true, hostKey, "{type: cache, spread: spread}"))),
		want: []expectation{scheduled("db", "web", "cache", "ui")},
	},
	{
		ref:     "topology: Pod Affinity/Anti-Affinity > should fail to schedule pods with unsatisfiable dependencies",
		objects: pod("db", "{type: db, spread: spread}", "", topoSpec(podAffTo(true, hostKey, "{type: web, spread: spread}"))),
		want:    []expectation{notScheduled("db")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should filter pod affinity topologies by namespace, no matching pods",
		objects: topoNamespace("other-ns-no-match", "") + pods(10, "p", testLbl, "", topoSpec(hostTSC)) +
			strings.Replace(pod("target", s2Lbl, "", ""), "namespace: default", "namespace: other-ns-no-match", 1) +
			pod("follower", "", "", topoSpec(podAff(true, hostKey, ""))),
		want: []expectation{scheduled("target"), notScheduled("follower")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should filter pod affinity topologies by namespace, matching pods namespace list",
		objects: topoNamespace("other-ns-list", "") + pods(10, "p", testLbl, "", topoSpec(hostTSC)) +
			strings.Replace(pod("target", s2Lbl, "", ""), "namespace: default", "namespace: other-ns-list", 1) +
			pod("follower", "", "", topoSpec(podAff(true, hostKey, ", namespaces: [other-ns-list]"))),
		want: []expectation{sameNode("target", "follower")},
	},
	{
		ref: "topology: Pod Affinity/Anti-Affinity > should filter pod affinity topologies by namespace, empty namespace selector",
		objects: topoNamespace("empty-ns-selector", "{foo: bar}") + pods(10, "p", testLbl, "", topoSpec(hostTSC)) +
			strings.Replace(pod("target", s2Lbl, "", ""), "namespace: default", "namespace: empty-ns-selector", 1) +
			pod("follower", "", "", topoSpec(podAff(true, hostKey, ", namespaceSelector: {}"))),
		want: []expectation{sameNode("target", "follower")},
	},

	// DefaultConstraints
	{
		ref: "topology: DefaultConstraints > should be a no-op when no default constraints are configured",
		objects: `---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {test: test}}
  template:
    metadata: {labels: {test: test}}
    spec: {containers: [{name: c, image: busybox}]}
`,
		want: []expectation{sameNode("rs-*")},
	},

	// Taints (the plan does not show a node's taints: these cases check
	// where the pods go)
	{
		ref:     "topology: Taints > should taint nodes with NodePool taints",
		objects: topoPool("default", "", "", "      taints: [{key: test, value: bar, effect: NoSchedule}]\n") + pod("p", "", "", "{tolerations: [{operator: Exists, effect: NoSchedule}]}"),
		want:    []expectation{scheduled("p")},
	},
	{
		// The reference's two batches in one: the pods that do not tolerate the taint cannot use the
		// nodes launched for those that do either.
		ref: "topology: Taints > should schedule pods that tolerate NodePool constraints",
		objects: topoPool("default", "", "", "      taints: [{key: test-key, value: test-value, effect: NoSchedule}]\n") +
			pod("exists", "", "", "{tolerations: [{key: test-key, operator: Exists, effect: NoSchedule}]}") +
			pod("equal", "", "", "{tolerations: [{key: test-key, value: test-value, operator: Equal, effect: NoSchedule}]}") +
			pod("none", "", "", "") +
			pod("other-key", "", "", "{tolerations: [{key: invalid, operator: Exists}]}") +
			pod("other-value", "", "", "{tolerations: [{key: test-key, operator: Equal, effect: NoSchedule}]}"),
		want: []expectation{scheduled("exists", "equal"), notScheduled("none", "other-key", "other-value")},
	},
	{
		ref:     "topology: Taints > should provision nodes with taints and schedule pods if the taint is only a startup taint",
		objects: topoPool("default", "", "", "      startupTaints: [{key: ignore-me, value: nothing-to-see-here, effect: NoSchedule}]\n") + pod("p", "", "", ""),
		want:    []expectation{scheduled("p")},
	},
	{
		ref:     "topology: Taints > should not generate taints for OpExists",
		objects: pod("p", "", "", "{tolerations: [{key: test-key, operator: Exists, effect: NoExecute}]}"),
		want:    []expectation{scheduled("p")},
	},

	// Topology with Volume Requirements
	{
		ref:     "topology: Topology with Volume Requirements > should schedule pod with PVC and TSC minDomains=3 when pods are spread across 3 zones (batch 1 of 2)",
		objects: onDemandPool + volumeInZoneA + pods(3, "p", "{app: test}", "", topoSpec(appMinDomainsTSC)),
		want:    []expectation{scheduled("p-*"), skew(zoneKey, "app=test", 1, 1, 1)},
	},
	{
		ref: "topology: Topology with Volume Requirements > should schedule pod with PVC and TSC minDomains=3 when pods are spread across 3 zones (batch 2 of 2)",

		objects: onDemandPool + volumeInZoneA +
			topoNode("old-a", "m5.large", "a", "on-demand", "") + topoNode("old-b", "m5.large", "b", "on-demand", "") + topoNode("old-c", "m5.large", "c", "on-demand", "") +
			topoBound("p-0", "default", "{app: test}", "", "old-a", "", topoSpec(appMinDomainsTSC)) +
			topoBound("p-1", "default", "{app: test}", "", "old-b", "", topoSpec(appMinDomainsTSC)) +
			topoBound("p-2", "default", "{app: test}", "", "old-c", "", topoSpec(appMinDomainsTSC)) +
			pod("with-pvc", "{app: test}", "", topoSpec(appMinDomainsTSC, "volumes: [{name: data, persistentVolumeClaim: {claimName: test-pvc}}]")),
		want: []expectation{nodeLabel(zoneKey, []string{"us-east-1a"}, "with-pvc"), skew(zoneKey, "app=test", 1, 1, 2)},
	},
}

// zoneBetter is why nodewright places pods with zonal (anti-)affinity to
// pods planned in the same decision at once.
const zoneBetter = "nodewright fixes a planned NodeClaim's zone when it plans it (the launch keeps to it), so zonal (anti-)affinity to a pod planned in the same decision is met at once; the reference leaves the zone open until launch and places these pods only in a later round"
