package disruption_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// cluster builds snapshots of nodes of real instance types.
type cluster struct {
	t     testing.TB
	types map[string]*scheduling.InstanceType
	all   []*scheduling.InstanceType
	pool  *v1.NodePool
	objs  state.Objects
	// policy is the controller's --min-values-policy and
	// --preference-policy.
	policy scheduling.Policy
}

func newCluster(t testing.TB) *cluster {
	types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"}})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, types: map[string]*scheduling.InstanceType{}, all: types}
	for _, it := range types {
		c.types[it.Name] = it
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	np.Spec.Template.Spec.ExpireAfter = "720h"
	np.Spec.Disruption = v1.Disruption{ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []v1.Budget{{Nodes: "100%"}}}
	c.pool = np
	c.objs.NodePools = []*v1.NodePool{np}
	return c
}

// node adds an initialized node of the instance type (spot in
// us-east-1a unless capacityType says otherwise) and returns its name.
func (c *cluster) node(name, instanceType string, mutate ...func(*corev1.Node, *v1.NodeClaim)) string {
	it := c.types[instanceType]
	if it == nil {
		c.t.Fatalf("no instance type %s", instanceType)
	}
	labels := it.Requirements.Labels()
	labels[corev1.LabelHostname] = name
	labels[v1.LabelNodePool] = "default"
	labels[corev1.LabelTopologyZone] = "us-east-1a"
	labels[v1.LabelCapacityType] = v1.CapacityTypeSpot
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}}
	n.Spec.ProviderID = "aws:///us-east-1a/i-" + name
	n.Status.Allocatable, n.Status.Capacity = it.Allocatable.List(), it.Capacity.List()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name, Labels: map[string]string{v1.LabelNodePool: "default"}, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}}
	nc.Spec.ExpireAfter = "720h"
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	for _, m := range mutate {
		m(n, nc)
	}
	maps.Copy(nc.Labels, launchLabels(n)) // as launched
	c.objs.Nodes = append(c.objs.Nodes, n)
	c.objs.NodeClaims = append(c.objs.NodeClaims, nc)
	return name
}

func onDemand(n *corev1.Node, _ *v1.NodeClaim) {
	n.Labels[v1.LabelCapacityType] = v1.CapacityTypeOnDemand
}

// pods adds count running pods of the given CPU and memory to a node.
func (c *cluster) pods(node string, count int, cpu, memory string, mutate ...func(*corev1.Pod)) {
	for i := range count {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", node, cpu, i), Namespace: "default", Labels: map[string]string{"app": node}}}
		p.Spec.NodeName = node
		p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		for _, m := range mutate {
			m(p)
		}
		c.objs.Pods = append(c.objs.Pods, p)
	}
}

// cheapestSpot is the amd64 instance type with the cheapest spot offering
// in us-east-1a whose allocatable holds need.
func (c *cluster) cheapestSpot(need scheduling.Resources) string {
	best, price := "", 0.0
	for _, it := range c.all {
		if arch, _ := it.Requirements[corev1.LabelArchStable].Single(); arch != "amd64" || !need.Fits(it.Allocatable) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == "us-east-1a" && o.CapacityType == v1.CapacityTypeSpot && o.Available && (best == "" || o.Price < price) {
				best, price = it.Name, o.Price
			}
		}
	}
	return best
}

func (c *cluster) decide(opts ...func(*decide.Options)) *decide.Decision {
	// As the reference's suite runs: spot nodes may be replaced by spot.
	o := decide.DefaultOptions()
	o.SpotToSpot = true
	for _, m := range opts {
		m(&o)
	}
	s := state.Build(c.objs, state.Options{Now: now, Policy: c.policy, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: c.all,
		AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}}}})
	return decide.Decide(s, o)
}

func commands(d *decide.Decision) string {
	var out []string
	for _, c := range d.Commands {
		repl := ""
		for _, r := range c.Replacements {
			repl += " +" + r.InstanceType.Name
		}
		out = append(out, fmt.Sprintf("%s%v%s", c.Reason, c.NodeNames(), repl))
	}
	return strings.Join(out, "; ")
}

func blocked(d *decide.Decision, node string) string {
	for _, b := range d.Blocked {
		if b.Node == node {
			return b.String()
		}
	}
	return ""
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
}

func TestEmptiness(t *testing.T) {
	c := newCluster(t)
	c.node("empty", "m5.large")
	c.pods("empty", 1, "100m", "64Mi", daemon)
	c.node("busy", "m5.large")
	c.pods("busy", 3, "500m", "1Gi")
	d := c.decide()
	if got := commands(d); !strings.HasPrefix(got, "Empty[empty]") {
		t.Errorf("commands %q, want the node with only a DaemonSet pod deleted first", got)
	}

	// consolidateAfter counts from the last pod event.
	c = newCluster(t)
	c.pool.Spec.Disruption.ConsolidateAfter = "2h"
	c.node("empty", "m5.large")
	if d := c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "empty"), "consolidateAfter has not passed") || !strings.Contains(blocked(d, "empty"), "until 2026-11-23T13:00:00Z") {
		t.Errorf("commands %q, blocked %q", commands(d), blocked(d, "empty"))
	}
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	if d := c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "empty"), "Never") {
		t.Errorf("consolidateAfter Never: commands %q, blocked %q", commands(d), blocked(d, "empty"))
	}
}

// Budgets: at most the tightest active budget, counting nodes already
// being disrupted.
func TestBudgets(t *testing.T) {
	c := newCluster(t)
	for i := range 10 {
		c.node(fmt.Sprintf("n%d", i), "m5.large")
	}
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%"}, {Nodes: "5"}, {Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}
	d := c.decide()
	if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 3 {
		t.Fatalf("30%% of 10 nodes: %q", commands(d))
	}
	if b := blocked(d, "n9"); b != "NodePool default allows 0 of 30% now (3 of its 10 nodes are being disrupted)" {
		t.Errorf("blocked by budget: %q", b)
	}
	d = c.decide(func(o *decide.Options) { o.InFlight = map[string]bool{"n0": true, "n1": true} })
	if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 1 {
		t.Errorf("two nodes in flight leave one of three: %q", commands(d))
	}
	// A budget window that is closed does not apply; an open one does.
	for schedule, want := range map[string]int{"0 11 * * *": 0, "0 9 * * *": 3, "@daily": 3, "30 11 * * 1": 0, "30 11 * * MON": 0, "30 11 * * tue-fri": 3, "0 11 * nov mon": 0} {
		c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%"}, {Nodes: "0", Schedule: &schedule, Duration: &metav1.Duration{Duration: 2 * time.Hour}}}
		d = c.decide()
		got := 0
		if len(d.Commands) > 0 {
			got = len(d.Commands[0].Nodes)
		}
		if got != want {
			t.Errorf("a 2h window opening at %q (now Monday 12:00): %d nodes disrupted, want %d", schedule, got, want)
		}
	}
	bad := "61 * * * *"
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%", Schedule: &bad, Duration: &metav1.Duration{Duration: time.Hour}}}
	if d = c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "n0"), "spec.disruption.budgets[0].schedule") {
		t.Errorf("an unreadable schedule must stop disruption and say so: %q, %q", commands(d), blocked(d, "n0"))
	}
}

// Underutilized nodes: pods that fit elsewhere go there; a node with
// room to spare is replaced by a cheaper one; a full node stays, saying
// why.
func TestConsolidation(t *testing.T) {
	c := newCluster(t)
	c.node("a", "m5.xlarge", onDemand)
	c.pods("a", 2, "500m", "512Mi")
	c.node("b", "m5.xlarge", onDemand)
	c.pods("b", 2, "500m", "512Mi")
	d := c.decide()
	if got := commands(d); got != "Underutilized[a b] +t3a.medium" && got != "Underutilized[a]" && got != "Underutilized[b]" {
		t.Errorf("two quarter-full on-demand m5.xlarge: %q", got)
	}
	if len(d.Commands) == 1 && d.Commands[0].Savings <= 0 {
		t.Errorf("a command that saves nothing: %+v", d.Commands[0])
	}

	// One big on-demand node with little on it: replaced by a cheaper one.
	c = newCluster(t)
	c.node("big", "m5.4xlarge", onDemand)
	c.pods("big", 2, "250m", "256Mi")
	d = c.decide()
	if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 || d.Commands[0].ReplacementPrice >= d.Commands[0].PricePerHour {
		t.Fatalf("an almost empty m5.4xlarge: %q", commands(d))
	}
	for _, it := range d.Commands[0].Replacements[0].InstanceTypes {
		if o, _ := it.CheapestOffering(d.Commands[0].Replacements[0].Requirements); o.Price >= d.Commands[0].PricePerHour {
			t.Errorf("replacement type %s costs $%.4f/h, not less than the node's $%.4f/h", it.Name, o.Price, d.Commands[0].PricePerHour)
		}
	}

	// A node of the cheapest spot type that fits its pod stays.
	c = newCluster(t)
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}})
	c.node("full", c.cheapestSpot(scheduling.MustParseResources("cpu=1500m,memory=1Gi,pods=3")))
	c.pods("full", 1, "1500m", "1Gi")
	d = c.decide()
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "full"), "no cheaper placement") {
		t.Errorf("a full t3a.small: %q, blocked %q", commands(d), blocked(d, "full"))
	}

	// WhenEmpty leaves underutilized nodes alone.
	c = newCluster(t)
	c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
	c.node("big", "m5.4xlarge", onDemand)
	c.pods("big", 2, "250m", "256Mi")
	if d = c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "big"), "WhenEmpty") {
		t.Errorf("WhenEmpty: %q, blocked %q", commands(d), blocked(d, "big"))
	}
}

// Consolidation looks at the nodes cheapest to disrupt first: pods
// annotated karpenter.sh/disruption-cost, or of higher priority, make
// their node dearer, and a node near its expiry cheaper.
func TestDisruptionCostOrdersConsolidation(t *testing.T) {
	managed := false
	first := func(mutate func(c *cluster)) string {
		c := newCluster(t)
		c.node("a", "m5.4xlarge", onDemand)
		c.pods("a", 2, "250m", "256Mi")
		c.node("b", "m5.4xlarge", onDemand)
		c.pods("b", 2, "250m", "256Mi")
		mutate(c)
		d := c.decide(func(o *decide.Options) {
			o.MaxSingleNode, o.MaxMultiNode, o.PodDeletionCostManagement = 1, 1, managed
		})
		if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 1 {
			t.Fatalf("want one single-node command: %q", commands(d))
		}
		return d.Commands[0].Nodes[0].Name
	}
	if got := first(func(*cluster) {}); got != "a" {
		t.Errorf("equal nodes: %s consolidated first, want a (by name)", got)
	}
	if got := first(func(c *cluster) {
		for _, p := range c.objs.Pods {
			if p.Spec.NodeName == "a" {
				p.Annotations = map[string]string{v1.AnnotationDisruptionCost: "2000000000"}
			}
		}
	}); got != "b" {
		t.Errorf("a's pods annotated with a high disruption cost: %s consolidated, want b", got)
	}
	// The ReplicaSet controller's pod deletion cost weighs the same, unless
	// nodewright writes it itself (PodDeletionCostManagement).
	deletionCost := func(c *cluster) {
		for _, p := range c.objs.Pods {
			if p.Spec.NodeName == "a" {
				p.Annotations = map[string]string{v1.AnnotationPodDeletionCost: "2000000000"}
			}
		}
	}
	if got := first(deletionCost); got != "b" {
		t.Errorf("a's pods with a high pod deletion cost: %s consolidated, want b", got)
	}
	managed = true
	if got := first(deletionCost); got != "a" {
		t.Errorf("a's pods with a high pod deletion cost nodewright wrote: %s consolidated, want a (by name)", got)
	}
	managed = false
	if got := first(func(c *cluster) {
		for _, p := range c.objs.Pods {
			if p.Spec.NodeName == "a" {
				p.Spec.Priority = ptr.To[int32](1000000000)
			}
		}
	}); got != "b" {
		t.Errorf("a's pods of high priority: %s consolidated, want b", got)
	}
	if got := first(func(c *cluster) {
		for _, nc := range c.objs.NodeClaims {
			nc.Spec.ExpireAfter = "720h"
			if nc.Status.NodeName == "b" {
				nc.CreationTimestamp = metav1.NewTime(now.Add(-700 * time.Hour))
			}
		}
	}); got != "b" {
		t.Errorf("b close to expiring: %s consolidated, want b", got)
	}
}

// A spot node is replaced by spot only when enough cheaper spot types
// keep the replacement diverse.
func TestSpotToSpotNeedsDiversity(t *testing.T) {
	c := newCluster(t)
	c.node("spot", "t3a.large")
	c.pods("spot", 1, "100m", "128Mi")
	d := c.decide(func(o *decide.Options) { o.SpotToSpotMinTypes = 1000 })
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "spot"), "fewer than the 1000 that keep it diverse") {
		t.Errorf("%q, blocked %q", commands(d), blocked(d, "spot"))
	}
}

// Balanced acts only when the share of cost saved is at least the share
// of pods moved.
func TestBalanced(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	// Two nodes; moving the busy one's many pods saves little.
	c.node("busy", "c5.2xlarge", onDemand)
	c.pods("busy", 30, "200m", "256Mi")
	c.node("other", "m5.4xlarge", onDemand)
	c.pods("other", 1, "6", "24Gi")
	d := c.decide()
	for _, cmd := range d.Commands {
		for _, n := range cmd.Nodes {
			if n.Name == "busy" {
				t.Errorf("Balanced moved 30 pods: %q", commands(d))
			}
		}
	}
	// The scores it weighed are kept, the busy node's rejected.
	rejected := false
	for _, s := range d.Scores {
		rejected = rejected || (!s.Approved && s.Score < 1 && s.Moves == 30)
	}
	if !rejected {
		t.Errorf("scores %+v, want the busy node's 30 pods rejected", d.Scores)
	}
}

func pdb(allowed int32, app string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "pdb-" + app, Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

func drifted(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: awsv1.ReasonAMIDrifted})
}

// Drift replaces a drifted node, keeping PodDisruptionBudgets and
// do-not-disrupt unless the NodeClaim has a terminationGracePeriod.
func TestDrift(t *testing.T) {
	c := newCluster(t)
	c.node("old", "m5.large", drifted)
	c.pods("old", 2, "500m", "512Mi")
	d := c.decide()
	if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonDrifted || len(d.Commands[0].Replacements) != 1 {
		t.Fatalf("drifted node: %q", commands(d))
	}
	c.objs.PDBs = []*policyv1.PodDisruptionBudget{pdb(0, "old")}
	if d = c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "old"), "PodDisruptionBudget default/pdb-old allows 0 disruptions now") {
		t.Errorf("drift against a PDB: %q, blocked %q", commands(d), blocked(d, "old"))
	}
	c.objs.NodeClaims[0].Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	if d = c.decide(); len(d.Commands) != 1 {
		t.Errorf("drift with a terminationGracePeriod waits for the PDB in the drain, not here: %q, blocked %q", commands(d), blocked(d, "old"))
	}
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}
	if d = c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "old"), "allows 0 of 0") {
		t.Errorf("a drift budget of 0: %q, blocked %q", commands(d), blocked(d, "old"))
	}
}

// A drift decided while another drifted node is being replaced places
// that node's pods too: its replacement is not initialized yet, so room
// on the nodes that stay must not be given to both. Here one node has
// room for one of the two pods: the command launches a replacement
// rather than count on it. Only the methods asked for decide.
func TestDriftBesideACommandInFlight(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "3"}}
	c.node("first", "m5.large", drifted)
	c.pods("first", 1, "1500m", "512Mi")
	c.node("second", "m5.large", drifted)
	c.pods("second", 1, "1500m", "512Mi")
	c.node("room", "m5.large")
	d := c.decide(func(o *decide.Options) {
		o.InFlight = map[string]bool{"first": true}
		o.Methods = []v1.DisruptionReason{v1.DisruptionReasonDrifted}
	})
	if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "second" || len(d.Commands[0].Replacements) != 1 {
		t.Errorf("drift beside a command in flight: %q; want second replaced by a new node (the free room is the first's pod's)", commands(d))
	}
	d = c.decide(func(o *decide.Options) {
		o.InFlight = map[string]bool{"first": true}
		o.Methods = []v1.DisruptionReason{v1.DisruptionReasonEmpty}
	})
	if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonEmpty || d.Commands[0].NodeNames()[0] != "room" {
		t.Errorf("only emptiness asked for: %q", commands(d))
	}
}

// Expiration waits for neither budgets nor do-not-disrupt pods, and
// launches a replacement for pods that would have no place.
func TestExpiration(t *testing.T) {
	c := newCluster(t)
	c.node("old", "m5.large", func(_ *corev1.Node, nc *v1.NodeClaim) { nc.Spec.ExpireAfter = "1h" })
	c.pods("old", 2, "500m", "512Mi", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	c.node("young", "m5.large", func(_ *corev1.Node, nc *v1.NodeClaim) { nc.Spec.ExpireAfter = "3h" })
	c.pods("young", 3, "500m", "512Mi")
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
	d := c.decide()
	if got := commands(d); len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonExpired || d.Commands[0].NodeNames()[0] != "old" || len(d.Commands[0].Replacements) != 1 {
		t.Errorf("expired node: %q", got)
	}
	if !strings.Contains(blocked(d, "young"), "allows 0 of 0") && !strings.Contains(blocked(d, "young"), "do-not-disrupt") {
		t.Errorf("the young node stays for its budget: %q", blocked(d, "young"))
	}
}

// Nodes whose pods may not move stay, with the pod named.
func TestDoNotDisrupt(t *testing.T) {
	c := newCluster(t)
	c.node("big", "m5.4xlarge", onDemand)
	c.pods("big", 1, "250m", "256Mi", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	d := c.decide()
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "big"), "pod default/big-250m-0 is annotated karpenter.sh/do-not-disrupt=true") {
		t.Errorf("%q, blocked %q", commands(d), blocked(d, "big"))
	}
}

// While pods nodewright can place are pending, consolidation waits: it
// would remove capacity the scale-up is about to use. A pending pod no
// NodePool can take does not hold it back.
func TestConsolidationWaitsForScaleUp(t *testing.T) {
	pending := func(name string, selector map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		p.Spec.NodeSelector = selector
		p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		return p
	}
	c := newCluster(t)
	c.node("empty", "m5.xlarge", onDemand)
	c.node("a", "m5.xlarge", onDemand)
	c.pods("a", 2, "500m", "512Mi")
	c.objs.Pods = append(c.objs.Pods, pending("waiting", nil))
	d := c.decide()
	if len(d.Commands) != 0 {
		t.Errorf("a pending pod nodewright can place: consolidation should wait, got %q", commands(d))
	}
	for node, method := range map[string]v1.DisruptionReason{"empty": v1.DisruptionReasonEmpty, "a": v1.DisruptionReasonUnderutilized} {
		for _, b := range d.Blocked {
			if b.Node == node && (b.Method != method || !strings.Contains(b.String(), "1 pending pods are being placed")) {
				t.Errorf("node %s: %s %q, want the %s consolidation waiting for the scale-up", node, b.Method, b.String(), method)
			}
		}
	}

	c.objs.Pods[len(c.objs.Pods)-1] = pending("typo", map[string]string{"pod-type": "armapps"})
	if d := c.decide(); len(d.Commands) == 0 {
		t.Errorf("a pending pod no NodePool can take should not hold consolidation back: blocked %q, %q", blocked(d, "empty"), blocked(d, "a"))
	}

	// kube-scheduler has not tried the pods yet: they are a scale-up under
	// way whether or not a plan would place them.
	for i := range 3 {
		fresh := pending(fmt.Sprintf("fresh-%d", i), map[string]string{"pod-type": "armapps"})
		fresh.Status.Conditions = nil
		c.objs.Pods = append(c.objs.Pods, fresh)
	}
	d = c.decide()
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "empty"), "3 pending pods are being placed") {
		t.Errorf("pods kube-scheduler has not tried: commands %q, blocked %q; want consolidation waiting for the 3 of them", commands(d), blocked(d, "empty"))
	}
}

// A static NodePool's nodes are never consolidated; a drifted or expired
// one is replaced through the pool (no plan of its own), within budgets.
func TestStaticNodePoolsAreReplacedNotConsolidated(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Replicas = ptr.To(int64(3))
	c.node("empty", "m5.large")
	c.node("idle", "m5.2xlarge")
	c.pods("idle", 1, "100m", "64Mi")
	c.node("old", "m5.large", drifted)
	c.pods("old", 2, "500m", "1Gi")
	d := c.decide()
	if got := commands(d); got != "Drifted[old]" {
		t.Fatalf("commands %q, want only the drifted node replaced", got)
	}
	if cmd := d.Commands[0]; !cmd.Static || len(cmd.Replacements) != 0 {
		t.Errorf("the drift command is static %v with %d planned replacements; want the pool to launch the replacement", cmd.Static, len(cmd.Replacements))
	}
	for _, n := range []string{"empty", "idle"} {
		if b := blocked(d, n); !strings.Contains(b, "NodePool is static") {
			t.Errorf("node %s: %q, want it left alone as a static NodePool's", n, b)
		}
	}
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}}
	if d := c.decide(); len(d.Commands) != 0 {
		t.Errorf("a budget of 0 for drift: commands %q", commands(d))
	}
}

// Room is planned once: a rollout of three drifted nodes, one command a
// decision, each decided while the earlier ones are in flight. Each
// command's replacements are for its own node's pods alone — the earlier
// commands' replacements keep theirs — so the rollout launches what the
// pods need and no pod is placed twice. Without the earlier commands'
// room (Options.Planned), every later command would plan replacements
// for their pods again.
func TestRoomPlannedOnceForCommandsInFlight(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "6"}}
	for _, name := range []string{"a", "b", "c"} {
		c.node(name, "m5.4xlarge", drifted, onDemand)
		c.pods(name, 3, "3", "10Gi")
	}
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c"}})
	inFlight, planned := map[string]bool{}, []decide.Room(nil)
	placed := map[string]string{}
	for round := range 3 {
		d := c.decide(func(o *decide.Options) {
			o.InFlight, o.Planned = inFlight, planned
			o.Methods = []v1.DisruptionReason{v1.DisruptionReasonDrifted}
		})
		if len(d.Commands) != 1 {
			t.Fatalf("round %d: %q", round, commands(d))
		}
		cmd := d.Commands[0]
		node := cmd.NodeNames()[0]
		pods := 0
		for _, r := range cmd.Replacements {
			for _, p := range r.Pods {
				if p.Spec.NodeName != node {
					t.Errorf("round %d: the replacement of %s is planned for pod %s of %s, whose room was planned already", round, node, p.Name, p.Spec.NodeName)
				}
				if by, twice := placed[p.Name]; twice {
					t.Errorf("pod %s placed by the commands of %s and %s", p.Name, by, node)
				}
				placed[p.Name] = node
				pods++
			}
		}
		if pods != 3 {
			t.Errorf("round %d: %d pods on %s's replacements (%q), want its 3", round, pods, node, commands(d))
		}
		inFlight[node] = true
		planned = append(planned, decide.RoomOf(cmd))
	}
	if len(placed) != 9 {
		t.Errorf("%d of 9 pods have replacement room", len(placed))
	}
}

// The room of a command decided earlier in the same decision is kept
// too: a budget that lets every drifted node go at once, and the
// commands' replacements together hold each pod once.
func TestRoomPlannedOnceInOneDecision(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	c.node("old", "m5.4xlarge", drifted, onDemand)
	c.pods("old", 3, "3", "10Gi")
	c.node("young", "m5.4xlarge", onDemand)
	c.pods("young", 1, "1", "1Gi")
	c.node("spare", "m5.4xlarge", onDemand)
	d := c.decide()
	seen := map[string]bool{}
	for _, cmd := range d.Commands {
		for _, r := range cmd.Replacements {
			for _, p := range r.Pods {
				if seen[p.Name] {
					t.Errorf("pod %s placed twice: %q", p.Name, commands(d))
				}
				seen[p.Name] = true
			}
		}
		for _, m := range cmd.Moves {
			for _, p := range m.Pods {
				if seen[p.Name] {
					t.Errorf("pod %s placed twice: %q", p.Name, commands(d))
				}
				seen[p.Name] = true
			}
		}
	}
}

// Where the cheapest home for a node's pods is several small nodes,
// single-node consolidation still replaces the node by one that holds
// them all when that costs less: an m5.8xlarge with a 1-CPU pod and two
// of 500m is not kept for want of a one-node plan.
func TestSingleNodeConsolidationFindsOneNodeForPodsTheCheapestPlanSplits(t *testing.T) {
	c := newCluster(t)
	c.node("big", "m5.8xlarge", onDemand)
	c.pods("big", 1, "1", "1Gi")
	c.pods("big", 2, "500m", "512Mi")
	d := c.decide()
	if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 || len(d.Commands[0].Replacements[0].Pods) != 3 {
		t.Fatalf("commands %q, blocked %q; want big replaced by one node with its three pods", commands(d), blocked(d, "big"))
	}
	if cmd := d.Commands[0]; cmd.ReplacementPrice >= cmd.PricePerHour {
		t.Errorf("replacement $%.4f/h, node $%.4f/h: not cheaper", cmd.ReplacementPrice, cmd.PricePerHour)
	}
}
