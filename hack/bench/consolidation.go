package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/state"
)

// consolidationResult is one consolidation measurement.
type consolidationResult struct {
	Nodes, Pods          int
	FirstDecision        float64 // seconds
	Rounds               int
	Converged            bool
	ConvergeSeconds      float64
	NodesAfter           int
	PriceBefore, Price   float64
	PackingBound         float64
	SlowestDecision      float64
	PeakRSSMiB           float64
	RemovedNodes, Launch int
}

var fragmentTypes = []string{"m5.2xlarge", "m5.4xlarge", "m5.4xlarge", "c5.4xlarge", "r5.2xlarge", "r5.4xlarge", "r5.4xlarge"}

// fragmented builds a cluster of n nodes of 2xlarge and 4xlarge types in
// three zones, spot and on-demand, each filled with workload-B pods to a
// random 20-90 % of its CPU or memory (about ten pods a node): what a
// cluster looks like after a day of scale-downs.
func fragmented(n int, seed uint64) (state.Objects, map[string]*cloudprovider.NodeClass, error) {
	types, err := instancetypes.Load(instancetypes.Options{Zones: account.Zones()})
	if err != nil {
		return state.Objects{}, nil, err
	}
	byName := map[string]*scheduling.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	rng := rand.New(rand.NewPCG(seed, seed)) //nolint:gosec // reproducible
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.ExpireAfter = v1.Never
	np.Spec.Disruption = v1.Disruption{ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []v1.Budget{{Nodes: "10%"}}}
	objs := state.Objects{NodePools: []*v1.NodePool{np}}
	cpus, mems := []string{"100m", "250m", "500m", "1000m", "1500m"}, []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	created := metav1.NewTime(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	podID := 0
	for i := range n {
		it := byName[fragmentTypes[rng.IntN(len(fragmentTypes))]]
		zone := account.Zones()[rng.IntN(3)]
		ct := v1.CapacityTypeSpot
		if rng.IntN(10) < 3 {
			ct = v1.CapacityTypeOnDemand
		}
		name := fmt.Sprintf("node-%d", i)
		labels := it.Requirements.Labels()
		labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, zone, ct, "default"
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created}}
		node.Spec.ProviderID = "aws:///" + zone + "/i-" + name
		node.Status.Capacity, node.Status.Allocatable = it.Capacity.List(), it.Allocatable.List()
		objs.Nodes = append(objs.Nodes, node)
		target := 0.2 + 0.7*rng.Float64()
		var used scheduling.Resources
		for {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", podID), Namespace: "default"}}
			p.Spec.NodeName = name
			p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpus[rng.IntN(len(cpus))]), corev1.ResourceMemory: resource.MustParse(mems[rng.IntN(len(mems))])}}}}
			p.Status.Phase = corev1.PodRunning
			req, _ := scheduling.PodRequests(p)
			next := used.Add(req.WithPods(1))
			if !next.Fits(it.Allocatable) || fraction(next, it.Allocatable) > target {
				break
			}
			used = next
			objs.Pods = append(objs.Pods, p)
			podID++
		}
	}
	amis := []scheduling.AMI{{ID: "ami-amd64", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{
		Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}
	return objs, map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: types, AMIs: amis}}, nil
}

// fraction is the larger of the CPU and memory shares used.
func fraction(used, alloc scheduling.Resources) float64 {
	return max(float64(used.CPU())/float64(alloc.CPU()), float64(used.Memory())/float64(alloc.Memory()))
}

// measureConsolidation decides once on a fragmented cluster of n nodes,
// then carries consolidation commands out at once, round after round,
// until a round decides nothing or maxRounds pass; it reports the first
// decision's time, the rounds, and the price against the packing bound
// of all the cluster's pods.
func measureConsolidation(n, maxRounds int) (*consolidationResult, error) {
	objs, classes, err := fragmented(n, 1)
	if err != nil {
		return nil, err
	}
	r := &consolidationResult{Nodes: n, Pods: len(objs.Pods)}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	opts := decide.DefaultOptions()
	started := time.Now()
	for round := 0; round < maxRounds; round++ {
		var applied bool
		objs, applied = r.consolidate(objs, round, state.Options{Now: now, NodeClasses: classes}, opts)
		r.Rounds = round + 1
		if !applied {
			r.Converged = true
			break
		}
	}
	r.ConvergeSeconds = time.Since(started).Seconds()
	r.NodesAfter = len(objs.Nodes)
	r.PeakRSSMiB = peakRSS()
	r.PackingBound = packingBound(objs, state.Options{Now: now, NodeClasses: classes})
	return r, nil
}

// consolidate is one round: it decides once on objs, records the decision
// in r, and carries out the commands that remove empty or underutilized
// nodes. It reports whether it carried any out.
func (r *consolidationResult) consolidate(objs state.Objects, round int, so state.Options, opts decide.Options) (state.Objects, bool) {
	snap := state.Build(objs, so)
	t := time.Now()
	d := decide.Decide(snap, opts)
	took := time.Since(t).Seconds()
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "round %d: %.3fs %d commands %s\n", round, took, len(d.Commands), describeCommands(d))
	}
	r.SlowestDecision = max(r.SlowestDecision, took)
	if round == 0 {
		r.FirstDecision, r.PriceBefore = took, d.PricePerHour
	}
	r.Price = d.PricePerHour
	applied := false
	for _, c := range d.Commands {
		if c.Reason != v1.DisruptionReasonEmpty && c.Reason != v1.DisruptionReasonUnderutilized {
			continue
		}
		objs = apply(objs, c, round)
		r.RemovedNodes += len(c.Nodes)
		r.Launch += len(c.Replacements)
		r.Price = d.PricePerHourAfter
		applied = true
	}
	return objs, applied
}

// packingBound is the packing lower bound of all the cluster's pods on the
// NodePools' instance types, as if none were bound yet.
func packingBound(objs state.Objects, so state.Options) float64 {
	pods := make([]*corev1.Pod, 0, len(objs.Pods))
	for _, p := range objs.Pods {
		q := p.DeepCopy()
		q.Spec.NodeName = ""
		pods = append(pods, q)
	}
	snap := state.Build(state.Objects{NodePools: objs.NodePools}, so)
	bound, _ := scheduling.PackingLowerBound(scheduling.Input{NodePools: snap.NodePools, Pods: pods})
	return bound
}

// apply carries a command out at once: its nodes go, its pods move where
// the plan put them, its replacements come up as nodes of their cheapest
// offering.
func apply(objs state.Objects, c *decide.Command, round int) state.Objects {
	gone := map[string]bool{}
	for _, n := range c.Nodes {
		gone[n.Name] = true
	}
	moved := map[*corev1.Pod]string{}
	for _, m := range c.Moves {
		for _, p := range m.Pods {
			moved[p] = m.Node
		}
	}
	for i, repl := range c.Replacements {
		name := fmt.Sprintf("replacement-%d-%d", round, i)
		objs.Nodes = append(objs.Nodes, replacementNode(repl, name))
		for _, p := range repl.Pods {
			moved[p] = name
		}
	}
	objs.Nodes = remainingNodes(objs.Nodes, gone)
	objs.Pods = movePods(objs.Pods, moved, gone)
	return objs
}

// replacementNode is the node a replacement comes up as, in its cheapest
// offering.
func replacementNode(repl *scheduling.PlannedNodeClaim, name string) *corev1.Node {
	labels := repl.InstanceType.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, repl.Offering.Zone, repl.Offering.CapacityType, "default"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	node.Spec.ProviderID = "aws:///" + repl.Offering.Zone + "/i-" + name
	node.Status.Capacity, node.Status.Allocatable = repl.InstanceType.Capacity.List(), repl.InstanceType.Allocatable.List()
	return node
}

// remainingNodes are the nodes that are not gone.
func remainingNodes(nodes []*corev1.Node, gone map[string]bool) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if !gone[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

// movePods puts the moved pods on their new nodes and drops the pods of
// the nodes that are gone.
func movePods(pods []*corev1.Pod, moved map[*corev1.Pod]string, gone map[string]bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if to, ok := moved[p]; ok {
			q := p.DeepCopy()
			q.Spec.NodeName = to
			out = append(out, q)
			continue
		}
		if !gone[p.Spec.NodeName] {
			out = append(out, p)
		}
	}
	return out
}

func describeCommands(d *decide.Decision) string {
	out := ""
	for _, c := range d.Commands {
		out += fmt.Sprintf("[%s %d nodes -> %d, saves %.3f, %d pods] ", c.Reason, len(c.Nodes), len(c.Replacements), c.Savings, c.Pods)
	}
	return out
}
