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

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// The reference's repair_test.go and repair_history_test.go: node repair
// as a disruption method.
//
// The reference's fake cloud provider's repair policy (condition BadNode
// False, 30 minutes, replace) becomes a nodewright repair policy of the
// same condition (Options.Repair takes any condition); the decision runs
// repair alone (Options.Methods), as the reference builds a controller
// with only its Repair method. Policies carry the reference's reason
// patterns and priorities; a set has one fallback (no pattern).

const (
	rrRepair  = "Repair > "
	rrHistory = "RebootHistory > "
	rrUninit  = rrRepair + "uninitialized nodes > "
	rrBadNode = corev1.NodeConditionType("BadNode")
)

// rrPolicy is a repair policy of a condition False: its toleration, its
// action, and its drain bound (nil: none); without a reason pattern, the
// set's fallback.
func rrPolicy(cond corev1.NodeConditionType, tol time.Duration, action nodepoolhealth.Action, drain *time.Duration) nodepoolhealth.Policy {
	return nodepoolhealth.Policy{Condition: cond, Status: corev1.ConditionFalse, Toleration: tol, Action: action, DrainBound: drain}
}

// rrFor is the policy for reasons matching the pattern, of the priority.
func rrFor(p nodepoolhealth.Policy, reason string, priority int) nodepoolhealth.Policy {
	p.Reason, p.Priority = reason, priority
	return p
}

// rrDur is a pointer to the duration.
func rrDur(d time.Duration) *time.Duration { return &d }

// rrDefault is the reference suite's policy: BadNode False for 30
// minutes replaces the node, its drain unbounded.
func rrDefault() nodepoolhealth.Policy {
	return rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, nil)
}

// rrOnly runs repair alone with the policies.
func rrOnly(policies ...nodepoolhealth.Policy) func(*decide.Options) {
	return func(o *decide.Options) {
		o.Repair = policies
		o.Methods = []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}
	}
}

// rrBad makes the node's condition False (with the reason) since the
// time.
func rrBad(cond corev1.NodeConditionType, reason string, since time.Time) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: cond, Status: corev1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(since)})
	}
}

// rrAnnotate annotates the Node.
func rrAnnotate(key, value string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[key] = value
	}
}

// rrUninitialized leaves the node registered but its NodeClaim never
// initialized.
func rrUninitialized(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
}

// rrCluster is a NodePool of healthy m5.large nodes ok0..ok{healthy-1}.
func rrCluster(t *testing.T, healthy int) *cluster {
	c := newCluster(t)
	for i := range healthy {
		c.node(fmt.Sprintf("ok%d", i), "m5.large")
	}
	return c
}

// rrBlocked is repair's notice of why the node stays, if any.
func rrBlocked(d *decide.Decision, node string) (decide.Blocked, bool) {
	for _, b := range d.Blocked {
		if b.Node == node && b.Method == v1.DisruptionReasonUnhealthy {
			return b, true
		}
	}
	return decide.Blocked{}, false
}

// rrRepaired checks that the decision repairs exactly the node, and
// returns its command.
func rrRepaired(t *testing.T, d *decide.Decision, node string) *decide.Command {
	t.Helper()
	if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonUnhealthy || d.Commands[0].Repair == nil || !slices.Equal(d.Commands[0].NodeNames(), []string{node}) {
		t.Fatalf("commands %q, want node %s repaired", commands(d), node)
	}
	return d.Commands[0]
}

// rrNotRepaired checks that the decision repairs nothing.
func rrNotRepaired(t *testing.T, d *decide.Decision) {
	t.Helper()
	if len(d.Commands) != 0 {
		t.Fatalf("commands %q, want none", commands(d))
	}
}

// rrBlockedAs checks that the node stays for the reason.
func rrBlockedAs(t *testing.T, d *decide.Decision, node string, reason decide.BlockedReason) decide.Blocked {
	t.Helper()
	b, ok := rrBlocked(d, node)
	if !ok || b.Reason != reason || b.Method != v1.DisruptionReasonUnhealthy {
		t.Fatalf("node %s blocked %+v (%v), want %s for repair", node, b, ok, reason)
	}
	return b
}

// rrRebooted records reboots repair requested at the times (the
// NodeClaim's reboot history), the last of which succeeded a minute on.
func rrRebooted(at ...time.Time) func(*corev1.Node, *v1.NodeClaim) {
	return func(_ *corev1.Node, nc *v1.NodeClaim) {
		for _, t := range at {
			metav1.SetMetaDataAnnotation(&nc.ObjectMeta, v1.AnnotationReboots, nodepoolhealth.RecordReboot(nc, t))
		}
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse, Reason: v1.ReasonRebootSucceeded, LastTransitionTime: metav1.NewTime(at[len(at)-1].Add(time.Minute))})
	}
}

// rrRebootPolicies are the reference's reboot specs' policies: BadNode
// False for the reason RebootMe reboots after 10 minutes; the required
// fallback replaces after 48 hours, longer than any case runs.
func rrRebootPolicies(drain *time.Duration) []nodepoolhealth.Policy {
	return []nodepoolhealth.Policy{rrFor(rrPolicy(rrBadNode, 10*time.Minute, nodepoolhealth.Reboot, drain), "RebootMe", 0), rrPolicy(rrBadNode, 48*time.Hour, nodepoolhealth.Replace, nil)}
}

// rrPriorities are the reference's priority specs' policies: LowPriority
// (the fallback, priority 10) and HighPriority (any reason, 90), both
// False for 30 minutes replacing.
func rrPriorities() []nodepoolhealth.Policy {
	return []nodepoolhealth.Policy{rrFor(rrPolicy("LowPriority", 30*time.Minute, nodepoolhealth.Replace, nil), "", 10),
		rrFor(rrPolicy("HighPriority", 30*time.Minute, nodepoolhealth.Replace, nil), ".*", 90)}
}

// Controller-level helpers.

// rrUninitializedInEnv leaves the NodeClaim registered, never initialized.
func rrUninitializedInEnv(t *testing.T, e *env, name string) {
	t.Helper()
	nc := rrClaim(t, e, name)
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}
	if err := e.kube.Status().Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
}

// rrRebootSucceeds ends the requested reboot as the reboot controller
// does when the node comes back, the failure still there (its condition
// transitions anew), and lets 11 minutes pass.
func rrRebootSucceeds(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	nc := rrClaim(t, e, "nc-sick")
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse, Reason: v1.ReasonRebootSucceeded, LastTransitionTime: metav1.NewTime(e.clock.Now())})
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "sick"}, n); err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == rrBadNode {
			n.Status.Conditions[i].LastTransitionTime = metav1.NewTime(e.clock.Now())
		}
	}
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(11 * time.Minute)
}

// rrStart starts the controller with repair alone, by the policies, and
// metrics of its own registry.
func rrStart(t *testing.T, policies ...nodepoolhealth.Policy) (*env, *prometheus.Registry) {
	t.Helper()
	e := startController(t)
	e.ctrl.Config.Repair = policies
	e.ctrl.Config.Methods = []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl.Metrics = m
	return e, reg
}

// rrEnvNode creates an initialized on-demand node of the type with its
// NodeClaim in the NodePool (changed by mutate before it is created), and
// a pod on it unless empty.
func rrEnvNode(t *testing.T, e *env, name, instanceType string, empty bool, mutate func(*v1.NodeClaim)) {
	t.Helper()
	rrEnvNodeIn(t, e, "default", name, instanceType, empty, mutate)
}

func rrEnvNodeIn(t *testing.T, e *env, pool, name, instanceType string, empty bool, mutate func(*v1.NodeClaim)) {
	t.Helper()
	ctx := context.Background()
	var spec *scheduling.InstanceType
	for _, x := range e.ctrl.NodeClasses.(classes).types {
		if x.Name == instanceType {
			spec = x
		}
	}
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, pool
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	e.create(t, n)
	n.Status.Capacity, n.Status.Allocatable = spec.Capacity.List(), spec.Allocatable.List()
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name, Labels: launchLabels(n)}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}}
	if mutate != nil {
		mutate(nc)
	}
	conditions := nc.Status.Conditions
	e.create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = append([]metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}, conditions...)
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if empty {
		return
	}
	e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}})
}

// rrBreak makes the node's condition False now, and lets ago pass (a
// condition cannot be older than its node, which the API server made
// now).
func rrBreak(t *testing.T, e *env, name string, cond corev1.NodeConditionType, ago time.Duration) {
	t.Helper()
	n := &corev1.Node{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: cond, Status: corev1.ConditionFalse, Reason: "RebootMe", LastTransitionTime: metav1.NewTime(e.clock.Now())})
	if err := e.kube.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(ago)
}

// rrClaim is the NodeClaim as it is; nil when it is gone.
func rrClaim(t *testing.T, e *env, name string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return nc
}

// rrGone reports a NodeClaim deleted (gone, or being deleted).
func rrGone(t *testing.T, e *env, name string) bool {
	nc := rrClaim(t, e, name)
	return nc == nil || !nc.DeletionTimestamp.IsZero()
}

// rrMade are the NodeClaims the controller made (not nc-*).
func rrMade(t *testing.T, e *env) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.kube.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(nc v1.NodeClaim) bool { return strings.HasPrefix(nc.Name, "nc-") })
}

// rrDecideAndStart decides, waits the validation delay and starts the
// command.
func rrDecideAndStart(t *testing.T, e *env) {
	t.Helper()
	e.reconcile(t)
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
}

// rrLaunch registers and initializes a replacement NodeClaim's node.
func rrLaunch(t *testing.T, e *env, nc v1.NodeClaim) {
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
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, nc.Labels[v1.LabelNodePool]
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	e.create(t, n)
	n.Status.Capacity, n.Status.Allocatable = it.Capacity.List(), it.Allocatable.List()
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	cur := rrClaim(t, e, nc.Name)
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	maps.Copy(cur.Labels, launchLabels(n)) // as launched
	if err := e.kube.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.ProviderID, cur.Status.NodeName = n.Spec.ProviderID, name
	cur.Status.Capacity, cur.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	cur.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	if err := e.kube.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
}

// rrCount is the value of the counter of name with the labels (others
// any); 0 when there is none.
func rrCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// rrTerminateAt is the NodeClaim's termination deadline annotation.
func rrTerminateAt(t *testing.T, e *env, name string) string {
	nc := rrClaim(t, e, name)
	if nc == nil {
		t.Fatalf("NodeClaim %s is gone", name)
	}
	return nc.Annotations[v1.AnnotationTerminationTimestamp]
}

// rrReboot decides a reboot of a node failing 11 minutes, the NodeClaim
// changed by mutate, and returns the NodeClaim once it is started.
func rrReboot(t *testing.T, drain *time.Duration, mutate func(*v1.NodeClaim)) (*env, *prometheus.Registry, *v1.NodeClaim) {
	t.Helper()
	e, reg := rrStart(t, rrRebootPolicies(drain)...)
	rrEnvNode(t, e, "sick", "m5.large", true, mutate)
	rrBreak(t, e, "sick", rrBadNode, 11*time.Minute)
	rrDecideAndStart(t, e)
	nc := rrClaim(t, e, "nc-sick")
	if nc == nil || !nc.DeletionTimestamp.IsZero() {
		t.Fatal("a reboot deleted the NodeClaim")
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonRebootRequested {
		t.Fatalf("Rebooting condition %+v, want True RebootRequested", c)
	}
	return e, reg, nc
}

// rrStatic makes the default NodePool static: replicas, and a node limit
// unless limit is "".
func rrStatic(c *cluster, replicas int64, limit string) {
	c.pool.Spec.Replicas = &replicas
	if limit != "" {
		c.pool.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse(limit)}
	}
}

var _ = restate("repair_test.go",
	refCase{ref: rrRepair + "should pre-spin a replacement and terminate the unhealthy node only after the replacement is healthy",
		run: func(t *testing.T) {
			e, reg := rrStart(t, rrDefault())
			rrEnvNode(t, e, "sick", "m5.large", false, nil)
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			rrDecideAndStart(t, e)
			made := rrMade(t, e)
			if len(made) != 1 {
				t.Fatalf("replacements %d, want one launched before the node goes", len(made))
			}
			if rrGone(t, e, "nc-sick") {
				t.Fatal("the unhealthy node went before its replacement was ready")
			}
			repairs := map[string]string{"nodepool": "default", "condition": string(rrBadNode)}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", repairs); got != 0 {
				t.Errorf("node_repairs_total %v before the node goes, want 0", got)
			}
			e.reconcile(t)
			if rrGone(t, e, "nc-sick") {
				t.Fatal("the unhealthy node went before its replacement was ready")
			}
			rrLaunch(t, e, made[0])
			e.reconcile(t)
			if !rrGone(t, e, "nc-sick") {
				t.Error("the replacement ready: the unhealthy node's NodeClaim was not deleted")
			}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", repairs); got != 1 {
				t.Errorf("node_repairs_total %v, want 1", got)
			}
		}},
	refCase{ref: rrRepair + "should delete an empty unhealthy node without pre-spinning a replacement",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
			if len(cmd.Replacements) != 0 || cmd.Static {
				t.Errorf("replacements %q, want the empty node deleted without one", commands(&decide.Decision{Commands: []*decide.Command{cmd}}))
			}
		}},
	refCase{ref: rrRepair + "should commit an in-place reboot (no replacement, no termination) for a RebootNode policy",
		run: func(t *testing.T) {
			e, reg, nc := rrReboot(t, rrDur(5*time.Minute), nil)
			if got := nc.Annotations[v1.AnnotationRebootTerminationGracePeriod]; got != "5m0s" {
				t.Errorf("reboot drain bound %q, want 5m0s", got)
			}
			if made := rrMade(t, e); len(made) != 0 {
				t.Errorf("a reboot launched %d NodeClaims", len(made))
			}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", map[string]string{"nodepool": "default", "condition": string(rrBadNode)}); got != 1 {
				t.Errorf("node_repairs_total %v, want 1", got)
			}
			if events := e.events(); !has(events, "NodeRepair", "rebooting it") {
				t.Errorf("events %v, want NodeRepair saying it reboots the node", events)
			}
			// The next round does not request it again nor take the node
			// for anything else: it is being rebooted.
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			again := rrClaim(t, e, "nc-sick")
			if c := meta.FindStatusCondition(again.Status.Conditions, v1.ConditionRebooting); c == nil || c.Reason != v1.ReasonRebootRequested || !c.LastTransitionTime.Equal(&meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting).LastTransitionTime) {
				t.Errorf("Rebooting after the next rounds %+v, want the request as it was", c)
			}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", map[string]string{"nodepool": "default"}); got != 1 {
				t.Errorf("node_repairs_total %v after the next rounds, want 1", got)
			}
		}},
	refCase{ref: rrRepair + "should leave the reboot TGP annotation unset (unbounded) when neither policy nor NodeClaim sets one",
		run: func(t *testing.T) {
			_, _, nc := rrReboot(t, nil, nil)
			if got, ok := nc.Annotations[v1.AnnotationRebootTerminationGracePeriod]; ok {
				t.Errorf("reboot drain bound %q, want none", got)
			}
		}},
	refCase{ref: rrRepair + "should inherit the NodeClaim's TGP as the reboot bound when the policy sets none",
		run: func(t *testing.T) {
			_, _, nc := rrReboot(t, nil, func(nc *v1.NodeClaim) {
				nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 7 * time.Minute}
			})
			if got := nc.Annotations[v1.AnnotationRebootTerminationGracePeriod]; got != "7m0s" {
				t.Errorf("reboot drain bound %q, want the NodeClaim's 7m0s", got)
			}
		}},
	refCase{ref: rrRepair + "should remove a stale reboot TGP annotation when the new reboot is unbounded",
		run: func(t *testing.T) {
			_, _, nc := rrReboot(t, nil, func(nc *v1.NodeClaim) {
				nc.Annotations = map[string]string{v1.AnnotationRebootTerminationGracePeriod: "5m0s"}
			})
			if got, ok := nc.Annotations[v1.AnnotationRebootTerminationGracePeriod]; ok {
				t.Errorf("reboot drain bound %q left from before, want none", got)
			}
		}},
	refCase{ref: rrRepair + "reboot history > should escalate to replacement when the fault recurs after two successful reboots",
		run: func(t *testing.T) {
			// Through the controller: each reboot it requests is recorded
			// on the NodeClaim; the third failure within the day replaces.
			e, _, _ := rrReboot(t, nil, nil)
			rrRebootSucceeds(t, e)
			rrDecideAndStart(t, e)
			nc := rrClaim(t, e, "nc-sick")
			if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting); c == nil || c.Reason != v1.ReasonRebootRequested {
				t.Fatalf("second failure: Rebooting %+v, want a second reboot requested", c)
			}
			if got := len(nodepoolhealth.Reboots(nc, e.clock.Now())); got != 2 {
				t.Fatalf("reboot history %q, want 2 reboots", nc.Annotations[v1.AnnotationReboots])
			}
			rrRebootSucceeds(t, e)
			rrDecideAndStart(t, e)
			if made := rrMade(t, e); len(made) != 0 {
				t.Fatalf("an empty node's replacement launched %d NodeClaims", len(made))
			}
			if !rrGone(t, e, "nc-sick") {
				t.Fatal("the third failure within a day did not replace the node")
			}
			if events := e.events(); !has(events, "NodeRepair", "rebooted 2 times within 24h0m0s") {
				t.Errorf("events %v, want NodeRepair saying the node was rebooted twice that day", events)
			}
		}},
	refCase{ref: rrRepair + "reboot history > should reboot again once earlier reboots age out of the window",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), rrRebooted(now.Add(-25*time.Hour)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick")
			if cmd.Repair.Action != nodepoolhealth.Reboot || len(cmd.Replacements) != 0 {
				t.Errorf("rebooted 25 h ago: action %s, want a reboot again", cmd.Repair.Action)
			}
		}},
	refCase{ref: rrRepair + "should not repair before the toleration duration elapses",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-10*time.Minute)))
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if _, ok := rrBlocked(d, "sick"); ok {
				t.Errorf("a node within its toleration was reported: %q", blocked(d, "sick"))
			}
			if p := d.Health["default"]; p == nil || len(p.Unhealthy) != 1 || !p.Unhealthy[0].Due.Equal(now.Add(20*time.Minute)) {
				t.Errorf("health %+v, want the node due in 20 minutes", p)
			}
		}},
	refCase{ref: rrRepair + "should use a matching reason-specific policy instead of the fallback",
		run: func(t *testing.T) {
			policies := rrOnly(rrFor(rrPolicy(rrBadNode, 10*time.Minute, nodepoolhealth.Replace, nil), "^FastFailure$", 0), rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, nil))
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "FastFailure", now.Add(-11*time.Minute)))
			rrRepaired(t, c.decide(policies), "sick")
			// The fallback alone would wait 30 minutes.
			c = rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "SlowFailure", now.Add(-11*time.Minute)))
			rrNotRepaired(t, c.decide(policies))
		}},
	refCase{ref: rrRepair + "should preserve condition age across a reason-only change",
		run: func(t *testing.T) {
			// The condition is an hour old (since the node's creation):
			// with a reason only the 2 h fallback matches, the node waits;
			// once its reason is one the 30-minute policy matches, that
			// policy's toleration is measured from the same transition.
			policies := rrOnly(rrFor(rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, nil), "^ImmediateReason$", 0), rrPolicy(rrBadNode, 2*time.Hour, nodepoolhealth.Replace, nil))
			created := func(n *corev1.Node, _ *v1.NodeClaim) { n.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour)) }
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", created, rrBad(rrBadNode, "UnknownReason", now.Add(-time.Hour)))
			rrNotRepaired(t, c.decide(policies))
			c = rrCluster(t, 4)
			c.node("sick", "m5.large", created, rrBad(rrBadNode, "ImmediateReason", now.Add(-time.Hour)))
			rrRepaired(t, c.decide(policies), "sick")
		}},
	refCase{ref: rrRepair + "should suppress an eligible fallback while a matching reason-specific policy is waiting",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "PrefixFastFailureSuffix", now.Add(-10*time.Minute)))
			d := c.decide(rrOnly(rrFor(rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, nil), "FastFailure", 0), rrPolicy(rrBadNode, 0, nodepoolhealth.Replace, nil)))
			rrNotRepaired(t, d)
			if p := d.Health["default"]; p == nil || len(p.Unhealthy) != 1 || !p.Unhealthy[0].Due.Equal(now.Add(20*time.Minute)) {
				t.Errorf("health %+v, want the node due when the reason's policy is, in 20 minutes", p)
			}
		}},
	refCase{ref: rrRepair + "should use the condition fallback for an unknown reason",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "UnknownFailure", now.Add(-31*time.Minute)))
			rrRepaired(t, c.decide(rrOnly(rrFor(rrPolicy(rrBadNode, 10*time.Minute, nodepoolhealth.Replace, nil), "^KnownFailure$", 0), rrDefault())), "sick")
		}},
	refCase{ref: rrRepair + "should not repair a node carrying the do-not-repair annotation",
		better: "the veto is said once (a NodeRepairBlocked warning on the Node and on its NodeClaim) and again only when it changes, as every reason a node stays is, rather than every round; nodewright doctor lists the node (node-unhealthy) for as long as it stays",
		run: func(t *testing.T) {
			e, _ := rrStart(t, rrDefault())
			rrEnvNode(t, e, "sick", "m5.large", false, nil)
			n := &corev1.Node{}
			if err := e.kube.Get(context.Background(), client.ObjectKey{Name: "sick"}, n); err != nil {
				t.Fatal(err)
			}
			n.Annotations = map[string]string{v1.AnnotationDoNotRepair: "true"}
			if err := e.kube.Update(context.Background(), n); err != nil {
				t.Fatal(err)
			}
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			rrDecideAndStart(t, e)
			if rrGone(t, e, "nc-sick") || len(rrMade(t, e)) != 0 || tainted(t, e.kube, "sick") {
				t.Fatal("a node annotated do-not-repair was repaired")
			}
			events := e.events()
			told := 0
			for _, ev := range events {
				if strings.Contains(ev, "NodeRepairBlocked") && strings.Contains(ev, v1.AnnotationDoNotRepair) {
					told++
				}
			}
			if told != 2 || !has(events, "NodeRepairBlocked", "kind=NodeClaim", v1.AnnotationDoNotRepair) {
				t.Errorf("events %v, want NodeRepairBlocked naming do-not-repair on the Node and the NodeClaim", events)
			}
			e.reconcile(t)
			if again := e.events(); has(again, "NodeRepairBlocked") {
				t.Errorf("the same veto told again: %v", again)
			}
		}},
	refCase{ref: rrRepair + "should not reboot a node carrying the do-not-repair annotation",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), rrAnnotate(v1.AnnotationDoNotRepair, "true"))
			d := c.decide(rrOnly(rrRebootPolicies(rrDur(5 * time.Minute))...))
			rrNotRepaired(t, d)
			if b := rrBlockedAs(t, d, "sick", decide.BlockedDoNotRepair); !strings.Contains(b.String(), v1.AnnotationDoNotRepair) {
				t.Errorf("blocked %q, want it to name the annotation", b.String())
			}
		}},
	refCase{ref: rrRepair + "should report the do-not-repair veto ahead of an unbounded drain",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrAnnotate(v1.AnnotationDoNotRepair, "true"))
			c.pods("sick", 1, "100m", "128Mi", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if b := rrBlockedAs(t, d, "sick", decide.BlockedDoNotRepair); strings.Contains(b.String(), "terminationGracePeriod") {
				t.Errorf("blocked %q, want the veto, not the unbounded drain", b.String())
			}
		}},
	refCase{ref: rrRepair + "should not report the do-not-repair veto while the node is still within its policy's toleration",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now), rrAnnotate(v1.AnnotationDoNotRepair, "true"))
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if b, ok := rrBlocked(d, "sick"); ok {
				t.Errorf("reported within the toleration: %q", b.String())
			}
		}},
	refCase{ref: rrRepair + "should still repair a node carrying only the do-not-disrupt annotation",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrAnnotate(v1.AnnotationDoNotDisrupt, "true"))
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrRepair + "should still repair a node whose do-not-repair annotation is not \"true\"",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrAnnotate(v1.AnnotationDoNotRepair, "false"))
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrRepair + "should not repair when the disruption budget is zero",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			rrBlockedAs(t, d, "sick", decide.BlockedByBudget)
		}},
	refCase{ref: rrRepair + "should repair with the full policy decision once a blocking budget lifts",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			policy := rrOnly(rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(5*time.Minute)))
			rrNotRepaired(t, c.decide(policy))
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
			cmd := rrRepaired(t, c.decide(policy), "sick")
			if cmd.Repair.DrainBound == nil || *cmd.Repair.DrainBound != 5*time.Minute || cmd.Repair.Action != nodepoolhealth.Replace {
				t.Errorf("repair %+v, want the policy's replacement with its 5m drain bound", cmd.Repair)
			}
		}},
	refCase{ref: rrRepair + "should stop repairing a NodePool when more than 20% of its nodes are unhealthy",
		run: func(t *testing.T) {
			// One of ten past its toleration, two more just failing: three
			// unhealthy is more than a fifth (2), and the fresh ones count.
			c := rrCluster(t, 7)
			c.node("sick0", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.node("sick1", "m5.large", rrBad(rrBadNode, "", now))
			c.node("sick2", "m5.large", rrBad(rrBadNode, "", now))
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			b := rrBlockedAs(t, d, "sick0", decide.BlockedRepairHeld)
			if !strings.Contains(b.String(), "3 of the 10 nodes of NodePool default are unhealthy") {
				t.Errorf("blocked %q, want it to say three of ten are unhealthy", b.String())
			}
			for _, n := range []string{"sick1", "sick2"} {
				if b, ok := rrBlocked(d, n); ok {
					t.Errorf("%s within its toleration reported: %q", n, b.String())
				}
			}
			if p := d.Health["default"]; p == nil || !p.Held() {
				t.Errorf("health %+v, want repair held", p)
			}
		}},
	refCase{ref: rrRepair + "should round the repair circuit-breaker threshold up for small NodePools",
		run: func(t *testing.T) {
			c := rrCluster(t, 2)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrRepair + "should repair the higher-priority condition first",
		run: func(t *testing.T) {
			c := rrCluster(t, 8)
			c.node("low", "m5.large", rrBad("LowPriority", "", now.Add(-31*time.Minute)))
			c.node("high", "m5.large", rrBad("HighPriority", "", now.Add(-31*time.Minute)))
			rrRepaired(t, c.decide(rrOnly(rrPriorities()...)), "high")
		}},
	refCase{ref: rrRepair + "should break a tie by node name between candidates resolved at different times",
		run: func(t *testing.T) {
			c := rrCluster(t, 8)
			c.node("broken-b", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.node("broken-a", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			d := c.decide(rrOnly(rrDefault()))
			rrRepaired(t, d, "broken-a")
			if b := rrBlockedAs(t, d, "broken-b", decide.BlockedNextRound); b.Node != "broken-b" {
				t.Errorf("blocked %+v", b)
			}
		}},
	refCase{ref: rrRepair + "should build every candidate of a pass as of one time",
		run: func(t *testing.T) {
			// Two nodes alike (age, expireAfter, pods), failing as long: a
			// decision weighs them at one time, so their costs tie and the
			// name decides, whichever is listed first.
			c := rrCluster(t, 8)
			c.node("twin-b", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.node("twin-a", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.pods("twin-b", 1, "100m", "128Mi")
			c.pods("twin-a", 1, "100m", "128Mi")
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "twin-a")
		}},
	refCase{ref: rrRepair + "should not score a node using a reason-specific policy that does not match",
		run: func(t *testing.T) {
			// The Diagnostic node's reason matches only the fallback
			// (priority 10), not the ^Critical$ policy (90): the
			// MediumPriority node (50) goes first.
			c := rrCluster(t, 8)
			c.node("fallback", "m5.large", rrBad("Diagnostic", "Unknown", now.Add(-31*time.Minute)))
			c.node("medium", "m5.large", rrBad("MediumPriority", "", now.Add(-31*time.Minute)))
			rrRepaired(t, c.decide(rrOnly(
				rrFor(rrPolicy("Diagnostic", 30*time.Minute, nodepoolhealth.Replace, nil), "^Critical$", 90),
				rrFor(rrPolicy("Diagnostic", 30*time.Minute, nodepoolhealth.Replace, nil), "", 10),
				rrFor(rrPolicy("MediumPriority", 30*time.Minute, nodepoolhealth.Replace, nil), ".*", 50))), "medium")
		}},
	refCase{ref: rrRepair + "should not score a node using a matching policy whose toleration has not elapsed",
		run: func(t *testing.T) {
			// The waiting node's reason matches a priority-100 policy an
			// hour away and a priority-0 one of no toleration: it scores
			// by the one eligible, below the MediumPriority node (50).
			c := rrCluster(t, 8)
			c.node("waiting", "m5.large", rrBad("Diagnostic", "failure", now))
			c.node("medium", "m5.large", rrBad("MediumPriority", "", now))
			rrRepaired(t, c.decide(rrOnly(
				rrFor(rrPolicy("Diagnostic", time.Hour, nodepoolhealth.Replace, nil), "^failure$", 100),
				rrFor(rrPolicy("Diagnostic", 0, nodepoolhealth.Replace, nil), "failure", 0),
				rrPolicy("Diagnostic", 0, nodepoolhealth.Replace, nil),
				rrFor(rrPolicy("MediumPriority", 0, nodepoolhealth.Replace, nil), ".*", 50))), "medium")
		}},
	refCase{ref: rrRepair + "should resolve the governing condition using only policies matching its reason",
		run: func(t *testing.T) {
			// Of the node's conditions, Diagnostic (reason Unknown) matches
			// the fallback (10 minutes' drain), not ^Critical$ (none), and
			// MediumPriority matches its own (5): the shortest bound of the
			// policies that match is the drain's.
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad("Diagnostic", "Unknown", now.Add(-31*time.Minute)), rrBad("MediumPriority", "", now.Add(-31*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(
				rrFor(rrPolicy("Diagnostic", 30*time.Minute, nodepoolhealth.Replace, rrDur(0)), "^Critical$", 90),
				rrFor(rrPolicy("Diagnostic", 30*time.Minute, nodepoolhealth.Replace, rrDur(10*time.Minute)), "", 10),
				rrFor(rrPolicy("MediumPriority", 30*time.Minute, nodepoolhealth.Replace, rrDur(5*time.Minute)), ".*", 50))), "sick")
			if b := cmd.Repair.DrainBound; b == nil || *b != 5*time.Minute {
				t.Errorf("drain bound %v, want 5m", b)
			}
			if cmd.Repair.Condition.Type != "MediumPriority" {
				t.Errorf("governing condition %s, want MediumPriority (priority 50 over the fallback's 10)", cmd.Repair.Condition.Type)
			}
		}},
	refCase{ref: rrRepair + "should order a node by its most urgent condition, not just its highest-priority one",
		run: func(t *testing.T) {
			// A's low condition, 150 minutes past its toleration, scores
			// 0 + 5; its fresh high one 1 + 0.1; B's high one, 90 minutes
			// past, 1 + 3. A's best, 5, is above B's 4. The action's
			// condition is still A's high-priority one.
			old := func(n *corev1.Node, _ *v1.NodeClaim) { n.CreationTimestamp = metav1.NewTime(now.Add(-4 * time.Hour)) }
			c := rrCluster(t, 8)
			c.node("a", "m5.large", old, rrBad("LowPriority", "", now.Add(-180*time.Minute)), rrBad("HighPriority", "", now.Add(-33*time.Minute)))
			c.node("b", "m5.large", old, rrBad("HighPriority", "", now.Add(-120*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrPriorities()...)), "a")
			if cmd.Repair.Condition.Type != "HighPriority" {
				t.Errorf("governing condition %s, want HighPriority (priority 90)", cmd.Repair.Condition.Type)
			}
		}},
	refCase{ref: rrRepair + "should stamp a forceful (immediate) termination deadline before requesting deletion",
		run: func(t *testing.T) {
			e, _ := rrStart(t, rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(0)))
			rrEnvNode(t, e, "sick", "m5.large", true, func(nc *v1.NodeClaim) { nc.Finalizers = []string{"test.nodewright.dev/keep"} })
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			e.reconcile(t)
			if got := rrTerminateAt(t, e, "nc-sick"); got != "" {
				t.Fatalf("deadline %q stamped when the command was decided", got)
			}
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			if got, want := rrTerminateAt(t, e, "nc-sick"), e.clock.Now().UTC().Format(time.RFC3339); got != want {
				t.Errorf("deadline %q, want now (%s)", got, want)
			}
			if !rrGone(t, e, "nc-sick") {
				t.Error("the NodeClaim was not deleted")
			}
		}},
	refCase{ref: rrRepair + "should preserve an existing earlier termination deadline",
		run: func(t *testing.T) {
			e, _ := rrStart(t, rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(10*time.Minute)))
			rrEnvNode(t, e, "sick", "m5.large", false, func(nc *v1.NodeClaim) { nc.Finalizers = []string{"test.nodewright.dev/keep"} })
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			e.reconcile(t) // decides
			e.clock.Step(16 * time.Second)
			e.reconcile(t) // validates, taints, launches the replacement
			repl := redReplacements(t, e)
			if len(repl) != 1 {
				t.Fatalf("replacements %d, want 1; events %v", len(repl), e.events())
			}
			redLaunch(t, e, &repl[0], true)
			// Another writer (an interruption's deadline) sets an earlier
			// time while the command waits for its replacement.
			earlier := e.clock.Now().Add(2 * time.Minute).UTC().Format(time.RFC3339)
			nc := &v1.NodeClaim{}
			if err := e.kube.Get(context.Background(), client.ObjectKey{Name: "nc-sick"}, nc); err != nil {
				t.Fatal(err)
			}
			nc.Annotations = map[string]string{v1.AnnotationTerminationTimestamp: earlier}
			if err := e.kube.Update(context.Background(), nc); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			if got := rrTerminateAt(t, e, "nc-sick"); got != earlier {
				t.Errorf("deadline %q, want the earlier one set before the command acted (%s), not now + 10m", got, earlier)
			}
			if !rrGone(t, e, "nc-sick") {
				t.Error("the NodeClaim was not deleted")
			}
		}},
	refCase{ref: rrRepair + "should retry a failed termination-deadline patch without losing the deadline",
		run: func(t *testing.T) {
			e, _ := rrStart(t, rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(0)))
			rrEnvNode(t, e, "sick", "m5.large", true, func(nc *v1.NodeClaim) { nc.Finalizers = []string{"test.nodewright.dev/keep"} })
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			e.reconcile(t)
			fail := 1
			watching, err := client.NewWithWatch(e.plane.Config, client.Options{Scheme: e.kube.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			e.ctrl.Client = interceptor.NewClient(watching, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if nc, ok := obj.(*v1.NodeClaim); ok && fail > 0 && nc.Annotations[v1.AnnotationTerminationTimestamp] != "" {
						fail--
						return apierrors.NewServiceUnavailable("injected termination deadline patch failure")
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			e.clock.Step(16 * time.Second)
			if err := e.ctrl.Reconcile(context.Background()); err == nil {
				t.Fatal("the failed patch was not reported")
			}
			if got := rrTerminateAt(t, e, "nc-sick"); got != "" || rrGone(t, e, "nc-sick") {
				t.Fatalf("after the failed patch: deadline %q, deleted %v; want neither", got, rrGone(t, e, "nc-sick"))
			}
			e.reconcile(t)
			if got, want := rrTerminateAt(t, e, "nc-sick"), e.clock.Now().UTC().Format(time.RFC3339); got != want {
				t.Errorf("deadline after the retry %q, want %s", got, want)
			}
			if !rrGone(t, e, "nc-sick") {
				t.Error("the NodeClaim was not deleted after the retry")
			}
		}},
	refCase{ref: rrRepair + "should stamp min(policy TGP, NodeClaim TGP) before requesting deletion",
		run: func(t *testing.T) {
			e, _ := rrStart(t, rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(20*time.Minute)))
			rrEnvNode(t, e, "sick", "m5.large", true, func(nc *v1.NodeClaim) {
				nc.Finalizers = []string{"test.nodewright.dev/keep"}
				nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 5 * time.Minute}
			})
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			rrDecideAndStart(t, e)
			if got, want := rrTerminateAt(t, e, "nc-sick"), e.clock.Now().Add(5*time.Minute).UTC().Format(time.RFC3339); got != want {
				t.Errorf("deadline %q, want now + 5m (%s), the NodeClaim's shorter bound", got, want)
			}
		}},
	refCase{ref: rrRepair + "should act on and meter the highest-priority eligible condition",
		run: func(t *testing.T) {
			low := rrFor(rrPolicy("LowPriority", 30*time.Minute, nodepoolhealth.Replace, rrDur(15*time.Minute)), "", 10)
			high := rrFor(rrPolicy("HighPriority", 30*time.Minute, nodepoolhealth.Replace, rrDur(5*time.Minute)), ".*", 90)
			e, reg := rrStart(t, low, high)
			rrEnvNode(t, e, "sick", "m5.large", true, func(nc *v1.NodeClaim) { nc.Finalizers = []string{"test.nodewright.dev/keep"} })
			rrBreak(t, e, "sick", "LowPriority", 31*time.Minute)
			rrBreak(t, e, "sick", "HighPriority", 31*time.Minute)
			rrDecideAndStart(t, e)
			if got, want := rrTerminateAt(t, e, "nc-sick"), e.clock.Now().Add(5*time.Minute).UTC().Format(time.RFC3339); got != want {
				t.Errorf("deadline %q, want now + 5m (%s), the high-priority policy's bound", got, want)
			}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", map[string]string{"nodepool": "default", "condition": "HighPriority"}); got != 1 {
				t.Errorf("node_repairs_total{condition=HighPriority} %v, want 1", got)
			}
		}},
	refCase{ref: rrRepair + "should neither terminate nor stamp a deadline when the replacement never becomes healthy",
		run: func(t *testing.T) {
			e, _ := rrStart(t, rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(10*time.Minute)))
			rrEnvNode(t, e, "sick", "m5.large", false, nil)
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			rrDecideAndStart(t, e)
			if len(rrMade(t, e)) != 1 {
				t.Fatal("no replacement launched")
			}
			e.clock.Step(time.Minute)
			e.reconcile(t)
			if rrGone(t, e, "nc-sick") || rrTerminateAt(t, e, "nc-sick") != "" {
				t.Errorf("the replacement not ready: NodeClaim deleted %v, deadline %q; want neither", rrGone(t, e, "nc-sick"), rrTerminateAt(t, e, "nc-sick"))
			}
		}},
	refCase{ref: rrRepair + "should not bypass a blocking pod without a bounded drain",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.pods("sick", 1, "100m", "128Mi", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if b := rrBlockedAs(t, d, "sick", decide.BlockedRepairUnbounded); !strings.Contains(b.String(), "terminationGracePeriod") {
				t.Errorf("blocked %q, want it to say a terminationGracePeriod bounds the drain", b.String())
			}
		}},
	refCase{ref: rrRepair + "should size replacement capacity for a blocking pod when the drain is bounded",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.pods("sick", 1, "100m", "128Mi", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
			cmd := rrRepaired(t, c.decide(rrOnly(rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(5*time.Minute)))), "sick")
			if len(cmd.Replacements) != 1 || len(cmd.Replacements[0].Pods) != 1 || cmd.Replacements[0].Pods[0].Name != "sick-100m-0" {
				t.Fatalf("replacements %q, want one holding the do-not-disrupt pod", commands(&decide.Decision{Commands: []*decide.Command{cmd}}))
			}
		}},
	refCase{ref: rrRepair + "should repair a static NodePool with a one-for-one replacement from the same pool",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			rrStatic(c, 5, "")
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
			if !cmd.Static || len(cmd.Replacements) != 0 {
				t.Errorf("command static %v with %d planned replacements, want the static NodePool's own replacement (its controller launches one from the template)", cmd.Static, len(cmd.Replacements))
			}
		}},
	refCase{ref: rrRepair + "should honor a static NodePool node limit before reserving replacement capacity",
		better: "at its node limit a static NodePool's unhealthy node is repaired all the same: deleted without a replacement first (the static controller launches one into the room it leaves), as the reference does behind its TerminateFirstRepair gate; a broken node kept for want of room helps no one",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			rrStatic(c, 5, "5")
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
			if !cmd.Static {
				t.Error("not a static NodePool's command")
			}
		}},
	refCase{ref: rrRepair + "should release a static replacement reservation when command admission loses a race",
		moot: "the reference's NodePool node-count reservations (ReserveNodeCount/ReleaseNodeCount) and its queue's admission race; nodewright reserves nothing: a static command's room is the NodePool's usage in each round's snapshot (staticRoom), and a node already in a command is never taken again (TestRepairReboots checks \"already being disrupted\")"},
	refCase{ref: rrRepair + "should propagate replacement simulation errors",
		moot: "an error listing pods inside the reference's scheduling simulation; nodewright's decision is a pure function of a snapshot the controller lists before deciding, so a listing error ends the round before any decision (controller.go Reconcile returns it)"},
	refCase{ref: rrRepair + "should explicitly exclude standalone NodeClaims that have no safe replacement template",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("standalone", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), func(n *corev1.Node, nc *v1.NodeClaim) {
				delete(n.Labels, v1.LabelNodePool)
				delete(nc.Labels, v1.LabelNodePool)
			})
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if got := blocked(d, "standalone"); !strings.Contains(got, "nothing repairs, replaces or consolidates it") {
				t.Errorf("blocked %q, want it to say no NodePool repairs it", got)
			}
		}},
	refCase{ref: rrRepair + "should not repair a node whose condition does not match any policy",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad("SomeOtherCondition", "", now.Add(-31*time.Minute)))
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if p := d.Health["default"]; p != nil && len(p.Unhealthy) != 0 {
				t.Errorf("health %+v, want no node unhealthy", p)
			}
		}},
	refCase{ref: rrRepair + "should not repair when the NodeRepair feature gate is disabled",
		run: func(t *testing.T) {
			// --node-repair=false: operator.go passes no policies.
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			d := c.decide(rrOnly())
			rrNotRepaired(t, d)
			if d.Health != nil {
				t.Errorf("health %v without repair", d.Health)
			}
		}},
	refCase{ref: rrRepair + "should not repair when --legacy-node-repair is set",
		run: func(t *testing.T) {
			// --legacy-node-repair: operator.go gives disruption no policies
			// (the repair controller repairs outside it).
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			d := c.decide(rrOnly())
			rrNotRepaired(t, d)
			if d.EligibleBy[v1.DisruptionReasonUnhealthy] != 0 {
				t.Errorf("eligible %v", d.EligibleBy)
			}
		}},
	refCase{ref: rrUninit + "should repair an unhealthy node that never initialized",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized)
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
			// Through the controller: the NodeClaim is deleted, and counted.
			e, reg := rrStart(t, rrDefault())
			rrEnvNode(t, e, "sick", "m5.large", true, nil)
			rrUninitializedInEnv(t, e, "nc-sick")
			rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
			rrDecideAndStart(t, e)
			if !rrGone(t, e, "nc-sick") {
				t.Fatalf("the node that never initialized was not repaired; events %v", e.events())
			}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", map[string]string{"nodepool": "default", "condition": string(rrBadNode)}); got != 1 {
				t.Errorf("node_repairs_total %v, want 1", got)
			}
		}},
	refCase{ref: rrUninit + "should not repair a node that never registered",
		run: func(t *testing.T) {
			// A NodeClaim without a node: nothing to repair.
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.objs.Nodes = c.objs.Nodes[:4]
			rrNotRepaired(t, c.decide(rrOnly(rrDefault())))
		}},
	refCase{ref: rrUninit + "should not repair before the toleration duration elapses",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-29*time.Minute)), rrUninitialized)
			rrNotRepaired(t, c.decide(rrOnly(rrDefault())))
		}},
	refCase{ref: rrUninit + "should repair without disruption budget",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized)
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrUninit + "should not consume disruption budget for initialized nodes",
		run: func(t *testing.T) {
			// A budget of one node: the node that never initialized, being
			// deleted by its repair, takes none of it, so an initialized
			// node failing next is repaired too.
			c := rrCluster(t, 5)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
			c.node("uninit", "m5.large", rrBad(rrBadNode, "", now.Add(-62*time.Minute)), rrUninitialized, func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.DeletionTimestamp, nc.Finalizers = &metav1.Time{Time: now.Add(-time.Minute)}, []string{v1.TerminationFinalizer}
			})
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrUninit + "should measure the toleration from when the last reboot finished",
		run: func(t *testing.T) {
			// Failing for 69 minutes, but a reboot finished 29 minutes ago:
			// the toleration runs from its end.
			rebootEnded := func(ago time.Duration) func(*corev1.Node, *v1.NodeClaim) {
				return func(_ *corev1.Node, nc *v1.NodeClaim) {
					nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse, Reason: v1.ReasonRebootSucceeded, LastTransitionTime: metav1.NewTime(now.Add(-ago))})
				}
			}
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-69*time.Minute)), rrUninitialized, rebootEnded(29*time.Minute))
			rrNotRepaired(t, c.decide(rrOnly(rrDefault())))
			c = rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-71*time.Minute)), rrUninitialized, rebootEnded(31*time.Minute))
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrUninit + "should not repair a rebooting node",
		run: func(t *testing.T) {
			rebooting := func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionTrue, Reason: v1.ReasonRebootIssued, LastTransitionTime: metav1.NewTime(now)})
			}
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized, rebooting)
			rrNotRepaired(t, c.decide(rrOnly(rrDefault())))
			// Initialized too, a node being rebooted is left to the reboot.
			c = rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rebooting)
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if !strings.Contains(blocked(d, "sick"), "already being disrupted") {
				t.Errorf("blocked %q, want it left to the reboot", blocked(d, "sick"))
			}
		}},
	refCase{ref: rrUninit + "should repair a node nominated for pending pods",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized)
			pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "waiting", Namespace: "default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "sick"}}
			c.objs.Pods = append(c.objs.Pods, pending)
			rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick")
		}},
	refCase{ref: rrUninit + "should not repair a node carrying the do-not-repair annotation",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized, rrAnnotate(v1.AnnotationDoNotRepair, "true"))
			rrNotRepaired(t, c.decide(rrOnly(rrDefault())))
		}},
	refCase{ref: rrUninit + "should stop repairing a NodePool when more than 20% of its nodes are unhealthy",
		run: func(t *testing.T) {
			c := rrCluster(t, 1)
			c.node("sick0", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized)
			c.node("sick1", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrUninitialized)
			d := c.decide(rrOnly(rrDefault()))
			rrNotRepaired(t, d)
			if p := d.Health["default"]; p == nil || !p.Held() {
				t.Errorf("health %+v, want two of three unhealthy to hold repair", p)
			}
		}},
)

var _ = restate("repair_history_test.go",
	refCase{ref: rrHistory + "escalates after two committed reboots",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), rrRebooted(now.Add(-3*time.Hour), now.Add(-time.Hour)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick")
			if cmd.Repair.Action != nodepoolhealth.Replace || !cmd.Repair.Escalated {
				t.Errorf("after two reboots today: %s (escalated %v), want a replacement", cmd.Repair.Action, cmd.Repair.Escalated)
			}
			c = rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), rrRebooted(now.Add(-time.Hour)))
			if cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick"); cmd.Repair.Action != nodepoolhealth.Reboot {
				t.Errorf("after one reboot today: %s, want another reboot", cmd.Repair.Action)
			}
		}},
	refCase{ref: rrHistory + "does not record reboots while resolving",
		run: func(t *testing.T) {
			// Deciding changes nothing: decided three times, the node is
			// rebooted each time (the history is the NodeClaim's
			// nodewright.dev/reboots, which only a requested reboot writes).
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)))
			for i := range 3 {
				if cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick"); cmd.Repair.Action != nodepoolhealth.Reboot {
					t.Fatalf("decision %d: %s, want a reboot", i+1, cmd.Repair.Action)
				}
			}
		}},
	refCase{ref: rrHistory + "keys history by NodeClaim UID",
		run: func(t *testing.T) {
			// The history lives on the NodeClaim: a successor NodeClaim of
			// the same node name starts without it.
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), func(_ *corev1.Node, nc *v1.NodeClaim) { nc.Name = "nc-successor" })
			if cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick"); cmd.Repair.Action != nodepoolhealth.Reboot {
				t.Errorf("successor: %s, want a reboot", cmd.Repair.Action)
			}
			c = rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), rrRebooted(now.Add(-2*time.Hour), now.Add(-time.Hour)))
			if cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick"); cmd.Repair.Action != nodepoolhealth.Replace {
				t.Errorf("the rebooted NodeClaim itself: %s, want a replacement", cmd.Repair.Action)
			}
		}},
	refCase{ref: rrHistory + "preserves replacement action and requires a current decision",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)), rrRebooted(now.Add(-time.Hour)))
			if cmd := rrRepaired(t, c.decide(rrOnly(rrDefault())), "sick"); cmd.Repair.Action != nodepoolhealth.Replace {
				t.Errorf("a replace policy with reboot history: %s, want a replacement", cmd.Repair.Action)
			}
			c = rrCluster(t, 4)
			c.node("healthy", "m5.large", rrRebooted(now.Add(-time.Hour)))
			rrNotRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)))
		}},
	refCase{ref: rrHistory + "uses a sliding window",
		run: func(t *testing.T) {
			c := rrCluster(t, 4)
			c.node("sick", "m5.large", rrBad(rrBadNode, "RebootMe", now.Add(-11*time.Minute)), rrRebooted(now.Add(-25*time.Hour), now.Add(-12*time.Hour)))
			if cmd := rrRepaired(t, c.decide(rrOnly(rrRebootPolicies(nil)...)), "sick"); cmd.Repair.Action != nodepoolhealth.Reboot {
				t.Errorf("reboots 25 h and 12 h ago: %s, want a reboot (one within the day)", cmd.Repair.Action)
			}
			// The record keeps the reboots of the last day, two at most.
			nc := &v1.NodeClaim{}
			for _, ago := range []time.Duration{30 * time.Hour, 20 * time.Hour, 10 * time.Hour, time.Hour} {
				metav1.SetMetaDataAnnotation(&nc.ObjectMeta, v1.AnnotationReboots, nodepoolhealth.RecordReboot(nc, now.Add(-ago)))
			}
			if got, want := nc.Annotations[v1.AnnotationReboots], now.Add(-10*time.Hour).Format(time.RFC3339)+","+now.Add(-time.Hour).Format(time.RFC3339); got != want {
				t.Errorf("history %q, want %q", got, want)
			}
		}},
	refCase{ref: rrHistory + "bounds concurrent commits at the escalation threshold",
		moot: "the concurrency of the reference's in-memory reboot history; nodewright keeps the history on the NodeClaim (nodewright.dev/reboots), written with the reboot request under the API server's optimistic locking (intent.RequestReboot), so two writers cannot both record a reboot past the threshold"},
	refCase{ref: rrHistory + "logs reboot escalation with the command",
		moot: "a key of the reference's command log line; nodewright's NodeRepair event says what repair does (\"replacing it\" or \"rebooting it\", Repair.Describe), checked by \"should commit an in-place reboot (no replacement, no termination) for a RebootNode policy\""},
)
