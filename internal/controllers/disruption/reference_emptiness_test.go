package disruption_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// The reference's emptiness_test.go. Its NodePool consolidates
// WhenEmpty with consolidateAfter 0s and a budget of 100%; its nodes are
// of the cheapest spot type, here an m5.large spot node (emptiness does
// not weigh prices). The reference's Consolidatable condition is what
// its own controller derives from consolidateAfter; nodewright derives
// the same from consolidateAfter, the node's initialization and its
// last pod event, so "without the condition" and "the condition False"
// become a node whose consolidateAfter has not yet passed.

const redEmpty = "Emptiness > "

var _ = restate("emptiness_test.go",
	refCase{ref: redEmpty + "Metrics > should correctly report eligible nodes",
		run: func(t *testing.T) {
			// The metric karpenter_voluntary_disruption_eligible_nodes
			// {reason="empty"} is set from the decision's EligibleBy.
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.pods("n", 1, "100m", "64Mi")
			if d := c.decide(); d.EligibleBy[v1.DisruptionReasonEmpty] != 0 || len(d.Commands) != 0 {
				t.Errorf("a node with a pod: eligible for emptiness %d, commands %q; want 0 and none", d.EligibleBy[v1.DisruptionReasonEmpty], commands(d))
			}
			c.objs.Pods = nil
			if d := c.decide(); d.EligibleBy[v1.DisruptionReasonEmpty] != 1 || commands(d) != "Empty[n]" {
				t.Errorf("the pod gone: eligible for emptiness %d, commands %q; want 1 and the node deleted", d.EligibleBy[v1.DisruptionReasonEmpty], commands(d))
			}
		}},

	refCase{ref: redEmpty + "Budgets > should allow all empty nodes to be disrupted",
		run: func(t *testing.T) { redEmptyBudget(t, 1, "100%", 10) }},
	refCase{ref: redEmpty + "Budgets > should allow no empty nodes to be disrupted",
		run: func(t *testing.T) { redEmptyBudget(t, 1, "0%", 0) }},
	refCase{ref: redEmpty + "Budgets > should only allow 3 empty nodes to be disrupted",
		run: func(t *testing.T) { redEmptyBudget(t, 1, "30%", 3) }},
	refCase{ref: redEmpty + "Budgets > should allow 2 nodes from each nodePool to be deleted",
		run: func(t *testing.T) { redEmptyBudget(t, 10, "50%", 2) }},
	refCase{ref: redEmpty + "Budgets > should allow all nodes from each nodePool to be deleted",
		run: func(t *testing.T) { redEmptyBudget(t, 10, "100%", 3) }},

	refCase{ref: redEmpty + "Emptiness > can delete empty nodes",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			if d := c.decide(); commands(d) != "Empty[n]" || len(d.Commands[0].Replacements) != 0 {
				t.Errorf("an empty node: %q, want it deleted", commands(d))
			}
		}},
	refCase{ref: redEmpty + "Emptiness > can delete empty and drifted nodes",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large", drifted)
			d := c.decide()
			if commands(d) != "Drifted[n]" || len(d.Commands[0].Replacements) != 0 {
				t.Errorf("an empty drifted node: %q, want it deleted by drift (drift comes first), without a replacement", commands(d))
			}
			if d.EligibleBy[v1.DisruptionReasonDrifted] != 1 {
				t.Errorf("eligible for drift %d, want 1", d.EligibleBy[v1.DisruptionReasonDrifted])
			}
		}},
	refCase{ref: redEmpty + "Emptiness > should ignore nodes without the consolidatable status condition",
		run: func(t *testing.T) {
			// Not consolidatable yet: initialized 10s ago, consolidateAfter 30s.
			c := redEmptiness(t)
			c.pool.Spec.Disruption.ConsolidateAfter = "30s"
			c.node("n", "m5.large", redInitialized(now.Add(-10*time.Second)))
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "consolidateAfter has not passed") {
				t.Errorf("a node not yet consolidatable: %q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redEmpty + "Emptiness > should ignore nodes with the karpenter.sh/do-not-disrupt annotation",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large", redNodeAnnotated(v1.AnnotationDoNotDisrupt, "true"))
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "the node is annotated karpenter.sh/do-not-disrupt=true") {
				t.Errorf("a node annotated do-not-disrupt: %q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redEmpty + "Emptiness > should delete nodes with the karpenter.sh/do-not-disrupt annotation set to false",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large", redNodeAnnotated(v1.AnnotationDoNotDisrupt, "false"))
			if d := c.decide(); commands(d) != "Empty[n]" {
				t.Errorf("do-not-disrupt=false: %q, want the empty node deleted", commands(d))
			}
		}},
	refCase{ref: redEmpty + "Emptiness > should ignore nodes that have pods",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.pods("n", 1, "100m", "64Mi")
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "WhenEmpty") {
				t.Errorf("a node with a pod under WhenEmpty: %q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redEmpty + "Emptiness > should ignore nodes with the consolidatable status condition set to false",
		run: func(t *testing.T) {
			// Not consolidatable: its last pod left 10s ago, consolidateAfter 30s.
			c := redEmptiness(t)
			c.pool.Spec.Disruption.ConsolidateAfter = "30s"
			c.node("n", "m5.large", func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.Status.LastPodEventTime = metav1.NewTime(now.Add(-10 * time.Second))
			})
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "consolidateAfter has not passed") {
				t.Errorf("a node whose pod just left: %q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: "Emptiness > can delete multiple empty nodes",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("a", "m5.large")
			c.node("b", "m5.large")
			if d := c.decide(); commands(d) != "Empty[a b]" {
				t.Errorf("two empty nodes: %q, want one command deleting both", commands(d))
			}
		}},
	refCase{ref: "Emptiness > considers pending pods when consolidating",
		run: func(t *testing.T) {
			// A 64-vCPU node with a 1-CPU pod, and a pending 62-CPU pod
			// that only that node holds: it is not replaced by a smaller
			// one (the policy here lets consolidation replace it).
			c := redEmptiness(t)
			c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
			c.node("big", "m5.16xlarge", onDemand)
			c.pods("big", 1, "1", "1Gi")
			c.objs.Pods = append(c.objs.Pods, redPending("huge", "62", "1Gi"))
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "big"), "pending pods are being placed") {
				t.Errorf("a pending pod the node holds: %q, blocked %q; want the node kept", commands(d), blocked(d, "big"))
			}
		}},
	refCase{ref: "Emptiness > will consider a node with a DaemonSet pod as empty",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.pods("n", 1, "100m", "64Mi", daemon)
			if d := c.decide(); commands(d) != "Empty[n]" {
				t.Errorf("a node with a DaemonSet pod: %q, want it deleted as empty", commands(d))
			}
		}},
	refCase{ref: "Emptiness > will consider a node with terminating Deployment pods as empty",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.pods("n", 3, "100m", "64Mi", redOwned("ReplicaSet"), redTerminating)
			if d := c.decide(); commands(d) != "Empty[n]" {
				t.Errorf("a node whose ReplicaSet pods are terminating: %q, want it deleted as empty", commands(d))
			}
		}},
	refCase{ref: "Emptiness > will not consider a node with a terminating StatefulSet pod as empty",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.pods("n", 1, "100m", "64Mi", redOwned("StatefulSet"), redTerminating)
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("a node with a terminating StatefulSet pod: %q, want it kept", commands(d))
			}
		}},
	refCase{ref: "Emptiness > should wait for the node TTL for empty nodes before consolidating",
		run: func(t *testing.T) {
			e := startController(t)
			redUpdatePool(t, e, func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty })
			redCtrlNode(t, e, "n", "m5.large", nil)
			e.reconcile(t) // decides
			if !redClaimExists(t, e, "nc-n") || tainted(t, e.kube, "n") {
				t.Fatal("the empty node went, or was tainted, before the validation delay")
			}
			e.clock.Step(5 * time.Second)
			e.reconcile(t)
			if !redClaimExists(t, e, "nc-n") {
				t.Fatal("the empty node went before the validation delay passed")
			}
			e.clock.Step(11 * time.Second)
			e.reconcile(t) // validates and deletes
			if redClaimExists(t, e, "nc-n") {
				t.Errorf("the empty node's NodeClaim stays after the validation delay; events %v", e.events())
			}
		}},
	refCase{ref: redEmpty + "Static NodePool > should not consolidate static NodePool nodes",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.pool.Spec.Replicas = ptr.To(int64(2))
			c.pool.Spec.Disruption = v1.Disruption{}
			c.node("a", "m5.large")
			c.node("b", "m5.large")
			d := c.decide()
			if len(d.Commands) != 0 || d.EligibleBy[v1.DisruptionReasonEmpty] != 0 || d.EligibleBy[v1.DisruptionReasonUnderutilized] != 0 {
				t.Errorf("empty nodes of a static NodePool: %q, eligible %v", commands(d), d.EligibleBy)
			}
			for _, n := range []string{"a", "b"} {
				if !strings.Contains(blocked(d, n), "NodePool is static") {
					t.Errorf("node %s: %q", n, blocked(d, n))
				}
			}
		}},

	// The reference counts buffer pods per node; nodewright places a
	// CapacityBuffer's pods on the nodes there (as pods of those nodes).
	refCase{ref: redEmpty + "Buffer pod protection > should not disrupt a node that hosts virtual buffer pods",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.buffer("web", 3, "100m")
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("a node holding 3 buffer pods: %q, want it kept", commands(d))
			}
		}},
	refCase{ref: redEmpty + "Buffer pod protection > should disrupt a node once buffer pods are cleared",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.buffer("web", 2, "100m")
			if d := c.decide(); len(d.Commands) != 0 {
				t.Fatalf("a node holding 2 buffer pods: %q, want it kept", commands(d))
			}
			c.objs.CapacityBuffers, c.objs.PodTemplates = nil, nil
			if d := c.decide(); commands(d) != "Empty[n]" {
				t.Errorf("the buffer gone: %q, want the node deleted", commands(d))
			}
		}},
	refCase{ref: redEmpty + "Buffer pod protection > should only protect the specific node with buffer pods, not others",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("a", "m5.large")
			c.node("b", "m5.large")
			c.buffer("web", 1, "100m")
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 1 || d.Commands[0].Reason != v1.DisruptionReasonEmpty {
				t.Fatalf("two nodes, one buffer pod: %q, want the node without it deleted", commands(d))
			}
			gone := d.Commands[0].NodeNames()[0]
			for _, n := range c.snapshot().Nodes {
				if hosts := len(n.Reschedulable()) > 0; hosts == (n.Name == gone) {
					t.Errorf("node %s holds buffer pods %v, and is deleted %v", n.Name, hosts, n.Name == gone)
				}
			}
		}},
	refCase{ref: redEmpty + "Buffer pod protection > should not consider a node with real pods AND buffer pods as empty",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.pods("n", 1, "100m", "64Mi")
			c.buffer("web", 2, "100m")
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("a node with a pod and buffer pods: %q, want it kept", commands(d))
			}
		}},
	refCase{ref: redEmpty + "Buffer pod protection > should protect multiple nodes that each host buffer pods",
		run: func(t *testing.T) {
			// Buffer pods of 1 CPU: an m5.large holds one, so 2 need both nodes.
			c := redEmptiness(t)
			c.node("a", "m5.large")
			c.node("b", "m5.large")
			c.buffer("web", 2, "1")
			d := c.decide()
			if len(d.Commands) != 0 {
				t.Errorf("two nodes each holding a buffer pod: %q, want both kept", commands(d))
			}
			for _, n := range c.snapshot().Nodes {
				if len(n.Reschedulable()) != 1 {
					t.Errorf("node %s holds %d buffer pods, want 1", n.Name, len(n.Reschedulable()))
				}
			}
		}},
	refCase{ref: redEmpty + "Buffer pod protection > should not protect a node with zero buffer pod count",
		run: func(t *testing.T) {
			c := redEmptiness(t)
			c.node("n", "m5.large")
			c.buffer("web", 0, "100m")
			if d := c.decide(); commands(d) != "Empty[n]" {
				t.Errorf("a buffer of 0 pods: %q, want the empty node deleted", commands(d))
			}
		}},
)

// redEmptiness is the reference's emptiness cluster: a NodePool that
// consolidates WhenEmpty, at once, with a budget of 100%.
func redEmptiness(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool.Spec.Disruption = v1.Disruption{ConsolidateAfter: "0s", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, Budgets: []v1.Budget{{Nodes: "100%"}}}
	return c
}

// redEmptyBudget: pools NodePools (the default one alone, or pools of
// their own) of empty nodes (10 in the default one, 3 in each other)
// under a budget: each NodePool's budget for emptiness allows allowed,
// and one command deletes that many of each.
func redEmptyBudget(t *testing.T, pools int, nodes string, allowed int) {
	c := redEmptiness(t)
	names := []string{"default"}
	if pools == 1 {
		c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: nodes}}
		for i := range 10 {
			c.node(fmt.Sprintf("n%d", i), "m5.large")
		}
	} else {
		names = nil
		for i := range pools {
			name := fmt.Sprintf("np-%d", i)
			redPool(c, name, func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = "30s"
				np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: nodes}}
			})
			names = append(names, name)
			for j := range 3 {
				c.node(fmt.Sprintf("n-%d-%d", i, j), "m5.large", redIn(name))
			}
		}
	}
	d := c.decide()
	for _, name := range names {
		if got, ok := redAllowed(d, name, v1.DisruptionReasonEmpty); !ok || got != allowed {
			t.Errorf("NodePool %s: its budget for emptiness allows %d (reported %v), want %d", name, got, ok, allowed)
		}
	}
	want := allowed * len(names)
	switch {
	case want == 0 && len(d.Commands) != 0:
		t.Errorf("commands %q, want none", commands(d))
	case want > 0 && (len(d.Commands) != 1 || len(d.Commands[0].Nodes) != want || d.Commands[0].Reason != v1.DisruptionReasonEmpty):
		t.Errorf("commands %q, want one deleting %d empty nodes", commands(d), want)
	}
	per := map[string]int{}
	for _, cmd := range d.Commands {
		for _, n := range cmd.Nodes {
			per[n.NodePool]++
		}
	}
	for _, name := range names {
		if per[name] != allowed {
			t.Errorf("NodePool %s: %d nodes deleted, want %d", name, per[name], allowed)
		}
	}
}

// Decide-level helpers shared by the red* files.

// redPool adds a NodePool like the default one, changed by mutate.
func redPool(c *cluster, name string, mutate func(*v1.NodePool)) *v1.NodePool {
	np := c.pool.DeepCopy()
	np.Name = name
	if mutate != nil {
		mutate(np)
	}
	c.objs.NodePools = append(c.objs.NodePools, np)
	return np
}

// redIn puts a node in the NodePool.
func redIn(pool string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, nc *v1.NodeClaim) {
		n.Labels[v1.LabelNodePool] = pool
		nc.Labels[v1.LabelNodePool] = pool
	}
}

// redInitialized makes the node's NodeClaim initialized at the time.
func redInitialized(at time.Time) func(*corev1.Node, *v1.NodeClaim) {
	return func(_ *corev1.Node, nc *v1.NodeClaim) {
		for i := range nc.Status.Conditions {
			if nc.Status.Conditions[i].Type == v1.ConditionInitialized {
				nc.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
			}
		}
	}
}

func redNodeAnnotated(key, value string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[key] = value
	}
}

// redDrifted marks the NodeClaim Drifted (True, or the status given)
// since the time.
func redDrifted(status metav1.ConditionStatus, since time.Time) func(*corev1.Node, *v1.NodeClaim) {
	return func(_ *corev1.Node, nc *v1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: status, Reason: awsv1.ReasonAMIDrifted, LastTransitionTime: metav1.NewTime(since)})
	}
}

func redOwned(kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: strings.ToLower(kind), Controller: ptr.To(true)}}
	}
}

func redTerminating(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
}

func redAnnotated(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

// redPending is a pod kube-scheduler found no node for.
func redPending(name, cpu, memory string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}}
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	return p
}

// redAllowed is what the NodePool's budget for the reason allows, as the
// decision reports it (karpenter_nodepools_allowed_disruptions), and
// whether it reports it.
func redAllowed(d *decide.Decision, pool string, reason v1.DisruptionReason) (int, bool) {
	for _, a := range d.Allowances {
		if a.NodePool == pool && a.Reason == reason {
			return a.Allowed, true
		}
	}
	return 0, false
}

// redDecideAt decides as c.decide does, at another time.
func redDecideAt(c *cluster, at time.Time, opts ...func(*decide.Options)) *decide.Decision {
	o := decide.DefaultOptions()
	for _, m := range opts {
		m(&o)
	}
	s := state.Build(c.objs, state.Options{Now: at, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: c.all,
		AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}}}})
	return decide.Decide(s, o)
}

// redRounds decides rounds times, each with the nodes of the earlier
// rounds' commands in flight (and their room), and returns every command.
func redRounds(c *cluster, rounds int, opts ...func(*decide.Options)) []*decide.Command {
	inFlight := map[string]bool{}
	var planned []decide.Room
	var out []*decide.Command
	for range rounds {
		d := c.decide(append(slices.Clone(opts), func(o *decide.Options) { o.InFlight, o.Planned = inFlight, planned })...)
		for _, cmd := range d.Commands {
			out = append(out, cmd)
			for _, n := range cmd.NodeNames() {
				inFlight[n] = true
			}
			if !cmd.Static {
				planned = append(planned, decide.RoomOf(cmd))
			}
		}
	}
	return out
}

// Controller-level helpers.

func redUpdatePool(t *testing.T, e *env, mutate func(*v1.NodePool)) {
	t.Helper()
	np := &v1.NodePool{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	mutate(np)
	if err := e.kube.Update(context.Background(), np); err != nil {
		t.Fatal(err)
	}
}

// redCtrlNode creates an initialized on-demand node of the instance type
// in the default NodePool, with its NodeClaim (changed by mutate before
// its status is written) and no pods.
func redCtrlNode(t *testing.T, e *env, name, instanceType string, mutate func(*v1.NodeClaim)) {
	t.Helper()
	ctx := context.Background()
	var spec *scheduling.InstanceType
	for _, x := range e.ctrl.NodeClasses.(classes).types {
		if x.Name == instanceType {
			spec = x
		}
	}
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	e.create(t, n)
	n.Status.Capacity, n.Status.Allocatable = spec.Capacity.List(), spec.Allocatable.List()
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name, Labels: launchLabels(n)}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}}
	e.create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}
	if mutate != nil {
		mutate(nc)
	}
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
}

// redCtrlPod binds a pod of the CPU to the node.
func redCtrlPod(t *testing.T, e *env, name, node, cpu string) {
	t.Helper()
	e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}})
}

func redClaimExists(t *testing.T, e *env, name string) bool {
	t.Helper()
	nc := &v1.NodeClaim{}
	err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil && nc.DeletionTimestamp.IsZero()
}

// redClaims are the NodeClaims not being deleted.
func redClaims(t *testing.T, e *env) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.kube.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(nc v1.NodeClaim) bool { return !nc.DeletionTimestamp.IsZero() })
}

// redReplacements are the NodeClaims the controller made (not nc-*).
func redReplacements(t *testing.T, e *env) []v1.NodeClaim {
	return slices.DeleteFunc(redClaims(t, e), func(nc v1.NodeClaim) bool { return strings.HasPrefix(nc.Name, "nc-") })
}

// redLaunch makes a replacement NodeClaim's node: registered, and
// initialized when ready.
func redLaunch(t *testing.T, e *env, nc *v1.NodeClaim, ready bool) {
	t.Helper()
	ctx := context.Background()
	var it *scheduling.InstanceType
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			for _, x := range e.ctrl.NodeClasses.(classes).types {
				if x.Name == r.Values[0] {
					it = x
				}
			}
		}
	}
	if it == nil {
		t.Fatalf("replacement %s names no instance type", nc.Name)
	}
	name := "node-" + nc.Name
	labels := it.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}); err != nil {
		e.create(t, n)
	}
	n.Status.Capacity, n.Status.Allocatable = it.Capacity.List(), it.Allocatable.List()
	cur := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: nc.Name}, cur); err != nil {
		t.Fatal(err)
	}
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	maps.Copy(cur.Labels, launchLabels(n)) // as launched
	if err := e.kube.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.ProviderID, cur.Status.NodeName = n.Spec.ProviderID, name
	cur.Status.Capacity, cur.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	if ready {
		cur.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	}
	if err := e.kube.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity, node.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	if err := e.kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
}
