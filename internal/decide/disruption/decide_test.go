package disruption_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	decide "github.com/nodewright/nodewright/internal/decide/disruption"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

var at = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// world is a cluster the decider is given: NodePools of m5 nodes on
// on-demand capacity, nodes with a pod each.
type world struct {
	t     *testing.T
	types []*scheduling.InstanceType
	objs  state.Objects
}

func newWorld(t *testing.T, reservations ...instancetypes.Reservation) *world {
	types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a"}, Reservations: reservations})
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, types: types}
}

// pool adds a NodePool of m5 types of the capacity types.
func (w *world) pool(name string, mutate func(*v1.NodePool), capacityTypes ...string) {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
	}
	np.Spec.Template.Spec.ExpireAfter = "720h"
	np.Spec.Disruption = v1.Disruption{ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []v1.Budget{{Nodes: "100%"}}}
	if mutate != nil {
		mutate(np)
	}
	w.objs.NodePools = append(w.objs.NodePools, np)
}

// node adds an initialized node of the type in the NodePool, with a pod
// of the CPU (none when empty).
func (w *world) node(pool, name, instanceType, cpu string, mutate ...func(*corev1.Node, *v1.NodeClaim)) {
	var it *scheduling.InstanceType
	for _, x := range w.types {
		if x.Name == instanceType {
			it = x
		}
	}
	if it == nil {
		w.t.Fatalf("no instance type %s", instanceType)
	}
	labels := it.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, pool
	created := metav1.NewTime(at.Add(-2 * time.Hour))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	n.Status.Allocatable, n.Status.Capacity = it.Allocatable.List(), it.Capacity.List()
	launched := maps.Clone(labels) // the launch labels the NodeClaim as its node, the kubelet's own hostname aside
	delete(launched, corev1.LabelHostname)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name, Labels: launched, CreationTimestamp: created}}
	nc.Spec.ExpireAfter = "720h"
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at.Add(-time.Hour))}}
	for _, m := range mutate {
		m(n, nc)
	}
	w.objs.Nodes, w.objs.NodeClaims = append(w.objs.Nodes, n), append(w.objs.NodeClaims, nc)
	if cpu == "" {
		return
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: name,
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	p.Status.Phase = corev1.PodRunning
	w.objs.Pods = append(w.objs.Pods, p)
}

func (w *world) decide(opts ...func(*decide.Options)) *decide.Decision {
	o := decide.DefaultOptions()
	for _, m := range opts {
		m(&o)
	}
	s := state.Build(w.objs, state.Options{Now: at, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: w.types,
		AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}}}})
	return decide.Decide(s, o)
}

func failing(cond corev1.NodeConditionType, reason string, since time.Duration) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: cond, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(at.Add(-since))})
	}
}

func uninitialized(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at.Add(-time.Hour))}}
}

func repairOnly(o *decide.Options) {
	o.Repair, o.Methods = nodepoolhealth.DefaultTolerations().Policies(), []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}
}

func why(d *decide.Decision, node string) string {
	var out []string
	for _, b := range d.Blocked {
		if b.Node == node {
			out = append(out, b.String())
		}
	}
	return strings.Join(out, "; ")
}

func names(d *decide.Decision) string {
	var out []string
	for _, c := range d.Commands {
		out = append(out, fmt.Sprintf("%s%v", c.Reason, c.NodeNames()))
	}
	return strings.Join(out, "; ")
}

// With the default policies: a node that registered but never initialized
// is repaired outside a budget of zero; of two initialized nodes, the one
// whose policy ranks higher (a fatal GPU XID over a NotReady kubelet: its
// toleration is shorter, so it is further past it) goes first.
func TestRepairTakesTheNodesAsTheReferenceRanksThem(t *testing.T) {
	w := newWorld(t)
	w.pool("default", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} }, v1.CapacityTypeOnDemand)
	for i := range 8 {
		w.node("default", fmt.Sprintf("ok%d", i), "m5.large", "100m")
	}
	w.node("default", "booting", "m5.large", "", uninitialized, failing(corev1.NodeReady, "KubeletNotReady", 31*time.Minute))
	d := w.decide(repairOnly)
	if got := names(d); got != "Unhealthy[booting]" {
		t.Errorf("commands %q, want the node that never initialized repaired despite the budget of 0", got)
	}

	w = newWorld(t)
	w.pool("default", nil, v1.CapacityTypeOnDemand)
	for i := range 8 {
		w.node("default", fmt.Sprintf("ok%d", i), "m5.large", "100m")
	}
	w.node("default", "notready", "m5.large", "100m", failing(corev1.NodeReady, "KubeletNotReady", 40*time.Minute))
	w.node("default", "gpu", "m5.large", "100m", failing(nodepoolhealth.ConditionAcceleratedHardwareReady, "NvidiaXID79Error", 40*time.Minute))
	d = w.decide(repairOnly)
	if got := names(d); got != "Unhealthy[gpu]" {
		t.Errorf("commands %q, want the fatal XID (30 minutes past its toleration) before NotReady (10)", got)
	}
	if got := why(d, "notready"); !strings.Contains(got, "another Unhealthy command goes first") {
		t.Errorf("notready: %q", got)
	}
}

// Balanced scores each Balanced NodePool's part of a command: a command
// taking nodes of a Balanced NodePool and another is weighed for the
// Balanced one only, by its share of the savings.
func TestBalancedScoresEachNodePoolsPart(t *testing.T) {
	w := newWorld(t)
	w.pool("bal", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced }, v1.CapacityTypeOnDemand)
	w.pool("other", nil, v1.CapacityTypeOnDemand)
	w.node("bal", "b", "m5.2xlarge", "100m")
	w.node("other", "o", "m5.2xlarge", "100m")
	d := w.decide()
	if len(d.Commands) == 0 {
		t.Fatalf("no command; b %q, o %q", why(d, "b"), why(d, "o"))
	}
	for _, c := range d.Commands {
		for _, sc := range c.Scores {
			if sc.NodePool != "bal" || !sc.Approved || sc.Score < decide.BalancedThreshold {
				t.Errorf("command %v scored %+v: only the Balanced NodePool is weighed, and approved", c.NodeNames(), sc)
			}
		}
	}
	if len(d.Scores) == 0 {
		t.Error("nothing scored")
	}
}

// A static NodePool that launches only into a full reservation: its node
// in the reservation goes first; an older one outside it, looked at
// before, stays and says why.
func TestStaticNodePoolIntoFullReservations(t *testing.T) {
	w := newWorld(t, instancetypes.Reservation{ID: "cr-1", InstanceType: "m5.large", Zone: "us-east-1a", Available: 0})
	replicas := int64(2)
	w.pool("static", func(np *v1.NodePool) { np.Spec.Replicas = &replicas }, v1.CapacityTypeReserved)
	drifted := func(_ *corev1.Node, nc *v1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(at.Add(-time.Hour))})
	}
	reserved := func(n *corev1.Node, _ *v1.NodeClaim) { n.Labels[v1.LabelCapacityType] = v1.CapacityTypeReserved }
	w.node("static", "in", "m5.large", "", drifted, reserved)
	older := func(_ *corev1.Node, nc *v1.NodeClaim) { nc.CreationTimestamp = metav1.NewTime(at.Add(-48 * time.Hour)) }
	w.node("static", "out", "m5.large", "", drifted, older) // drift looks at it first
	d := w.decide(func(o *decide.Options) { o.Methods = []v1.DisruptionReason{v1.DisruptionReasonDrifted} })
	if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "in" || !d.Commands[0].TerminateFirst {
		t.Fatalf("commands %q, want the reserved node deleted first", names(d))
	}
	if got := why(d, "out"); !strings.Contains(got, "capacity reservations, which are full") {
		t.Errorf("out: %q, want it kept: it holds no slot", got)
	}
}

// A NodeClaim of a NodePool that is gone is left alone, and says so.
func TestNodesOfNoNodePoolSayWhy(t *testing.T) {
	w := newWorld(t)
	w.pool("default", nil, v1.CapacityTypeOnDemand)
	w.node("gone", "orphan", "m5.2xlarge", "100m")
	d := w.decide()
	if len(d.Commands) != 0 || !strings.Contains(why(d, "orphan"), "its NodePool gone does not exist") {
		t.Errorf("commands %q, orphan %q", names(d), why(d, "orphan"))
	}
}
