package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/controllers/node/repair"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// repairing is node repair on the test's clock, one pass per call, over
// the operator (which drains and terminates what it deletes).
type repairing struct {
	*env
	repair *repair.Controller
	clock  *clocktesting.FakeClock
	said   *record.FakeRecorder
	log    []string
}

// startRepairing runs the operator without its own node repair, and a
// node repair acting after ready (and the node monitoring agent's
// conditions after the same time) that the test runs pass by pass.
func startRepairing(t *testing.T, ready time.Duration) *repairing {
	t.Helper()
	e := optest.Start(t, optest.Options{Configure: func(cfg *operator.Config) { cfg.NodeRepair = false }})
	e.DefaultNodeClass(t)
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &repairing{env: &env{Env: e, kube: e.Kube, account: e.Account}, clock: clocktesting.NewFakeClock(time.Now()), said: record.NewFakeRecorder(100)}
	tolerations := nodepoolhealth.DefaultTolerations()
	tolerations.Ready, tolerations.Agent, tolerations.Accelerator = ready, ready, ready
	r.repair = &repair.Controller{Client: e.Kube, Recorder: r.said, Clock: r.clock, Metrics: m, Log: logr.Discard(), Tolerations: tolerations}
	return r
}

// pass makes one repair pass at the clock's time.
func (r *repairing) pass(t *testing.T) {
	t.Helper()
	if err := r.repair.Repair(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// events are the events of reason about the node that repair recorded
// (on the node and on its NodeClaim).
func (r *repairing) events(reason, node string) []string {
	for len(r.said.Events) > 0 {
		r.log = append(r.log, <-r.said.Events)
	}
	var out []string
	for _, ev := range r.log {
		if strings.Contains(ev, " "+reason+" ") && strings.Contains(ev, "node "+node+" ") {
			out = append(out, ev)
		}
	}
	return out
}

// launched creates a NodeClaim and boots its node.
func (e *env) launched(t *testing.T, name string) *corev1.Node {
	t.Helper()
	e.create(t, newClaim(name))
	e.waitCondition(t, name, v1.ConditionLaunched, metav1.ConditionTrue)
	node := e.boot(t, e.claim(t, name), "")
	e.waitCondition(t, name, v1.ConditionRegistered, metav1.ConditionTrue)
	return node
}

// fail sets a node's condition, as the kubelet or the node monitoring
// agent would.
func (e *env) fail(t *testing.T, node *corev1.Node, cond corev1.NodeConditionType, status corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	before := node.DeepCopy()
	now := metav1.Now()
	c := corev1.NodeCondition{Type: cond, Status: status, Reason: "Failing", LastHeartbeatTime: now, LastTransitionTime: now}
	replaced := false
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == cond {
			node.Status.Conditions[i], replaced = c, true
		}
	}
	if !replaced {
		node.Status.Conditions = append(node.Status.Conditions, c)
	}
	if err := e.kube.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

func (e *env) gone(t *testing.T, name string) {
	t.Helper()
	e.waitFor(t, "NodeClaim "+name+" to be gone", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// A node whose kubelet reports NotReady past the toleration is replaced:
// its NodeClaim and instance go, and its pod is deleted although its
// PodDisruptionBudget allows no eviction (it does not run anyway).
func TestUnhealthyNodeIsRepaired(t *testing.T) {
	e := startRepairing(t, 2*time.Second)
	ctx := context.Background()
	node := e.launched(t, "sick")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "default", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "db", Image: "postgres"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
	}
	e.create(t, pod)
	e.create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	})
	// A healthy node stays.
	e.pass(t)
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "sick"}, &v1.NodeClaim{}); err != nil {
		t.Fatalf("the healthy node's NodeClaim: %v", err)
	}
	e.fail(t, node, corev1.NodeReady, corev1.ConditionFalse)
	// Within its toleration it stays: the clock reads the moment the
	// condition was stored with, however long the write took.
	e.clock.SetTime(readyChanged(t, e, node))
	e.pass(t)
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "sick"}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
		t.Fatalf("the node was replaced within its toleration (%v)", err)
	}
	if evs := e.events("NodeRepair", node.Name); len(evs) > 0 {
		t.Errorf("NodeRepair within the toleration: %q", evs)
	}
	e.clock.Step(2*time.Second + time.Second)
	e.pass(t)
	e.gone(t, "sick")
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); !apierrors.IsNotFound(err) {
		t.Errorf("the pod of the repaired node is still there (%v)", err)
	}
	for _, inst := range e.account.Instances() {
		if inst.State.Name != "terminated" {
			t.Errorf("instance %s is %s", *inst.InstanceId, inst.State.Name)
		}
	}
	if evs := e.events("NodeRepair", node.Name); len(evs) == 0 || !strings.Contains(evs[0], "Ready=False") {
		t.Errorf("NodeRepair events on the node: %q", evs)
	}
}

// Repair is held while more than a fifth of a NodePool is unhealthy (two
// of two nodes): both nodes stay and say why; once one recovers, the
// other is replaced. The node monitoring agent's conditions count too.
func TestRepairIsHeldWhileMuchOfTheNodePoolIsUnhealthy(t *testing.T) {
	e := startRepairing(t, time.Second)
	ctx := context.Background()
	// The NodePool (consolidation off: its nodes stay empty) shows why.
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	pool.Spec.Disruption.ConsolidateAfter = v1.Never
	e.create(t, pool)
	repairAllowed := func(want metav1.ConditionStatus, fragment string) {
		t.Helper()
		e.waitFor(t, "NodePool default NodeRepairAllowed="+string(want), func(ctx context.Context) (bool, error) {
			if err := e.kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
				return false, err
			}
			c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionNodeRepairAllowed)
			return c != nil && c.Status == want && strings.Contains(c.Message, fragment), nil
		})
	}
	a, b := e.launched(t, "a"), e.launched(t, "b")
	repairAllowed(metav1.ConditionTrue, "")
	e.fail(t, a, corev1.NodeReady, corev1.ConditionUnknown)
	e.fail(t, b, "KernelReady", corev1.ConditionFalse)
	e.clock.SetTime(time.Now().Add(2 * time.Second)) // both past their toleration
	e.pass(t)
	if evs := e.events("NodeRepairBlocked", a.Name); len(evs) == 0 {
		t.Errorf("no NodeRepairBlocked on %s", a.Name)
	}
	evs := e.events("NodeRepairBlocked", b.Name)
	if len(evs) == 0 || !strings.Contains(evs[0], "KernelReady=False") || !strings.Contains(evs[0], "2 of the 2 nodes of NodePool default are unhealthy") {
		t.Errorf("NodeRepairBlocked on %s: %q", b.Name, evs)
	}
	e.pass(t) // a pass that keeps holding says nothing new
	if again := e.events("NodeRepairBlocked", b.Name); len(again) != len(evs) {
		t.Errorf("NodeRepairBlocked said again on the next pass: %q", again)
	}
	repairAllowed(metav1.ConditionFalse, "2 of the 2 nodes of NodePool default are unhealthy")
	for _, name := range []string{"a", "b"} {
		nc := &v1.NodeClaim{}
		if err := e.kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
			t.Fatalf("NodeClaim %s was repaired while repair is held (%v)", name, err)
		}
	}
	e.fail(t, a, corev1.NodeReady, corev1.ConditionTrue)
	e.pass(t)
	e.gone(t, "b")
	repairAllowed(metav1.ConditionTrue, "")
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "a"}, &v1.NodeClaim{}); err != nil {
		t.Errorf("the recovered node's NodeClaim: %v", err)
	}
}

// A node annotated karpenter.sh/do-not-repair=true (or whose NodeClaim
// is) stays however long it is unhealthy, and says why; without the
// annotation it is replaced.
func TestDoNotRepairKeepsAnUnhealthyNode(t *testing.T) {
	e := startRepairing(t, 2*time.Second)
	ctx := context.Background()
	node := e.launched(t, "kept")
	for _, other := range []string{"a", "b", "c", "d"} { // four healthy nodes keep the NodePool under a fifth unhealthy
		e.launched(t, other)
	}
	before := node.DeepCopy()
	node.Annotations = map[string]string{v1.AnnotationDoNotRepair: "true"}
	if err := e.kube.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.fail(t, node, corev1.NodeReady, corev1.ConditionFalse)
	e.clock.SetTime(time.Now().Add(time.Minute))
	e.pass(t)
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "kept"}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
		t.Fatalf("the do-not-repair node was replaced (%v)", err)
	}
	if evs := e.events("NodeRepairBlocked", node.Name); len(evs) == 0 || !strings.Contains(evs[0], v1.AnnotationDoNotRepair) {
		t.Errorf("NodeRepairBlocked events: %q", evs)
	}
	// Off the Node and on its NodeClaim, it holds the same.
	fresh := &corev1.Node{}
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
		t.Fatal(err)
	}
	before = fresh.DeepCopy()
	fresh.Annotations = nil
	if err := e.kube.Patch(ctx, fresh, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	beforeClaim := nc.DeepCopy()
	nc.Annotations = map[string]string{v1.AnnotationDoNotRepair: "true"}
	if err := e.kube.Patch(ctx, nc, client.MergeFrom(beforeClaim)); err != nil {
		t.Fatal(err)
	}
	e.pass(t)
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "kept"}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
		t.Fatalf("the node whose NodeClaim says do-not-repair was replaced (%v)", err)
	}
	beforeClaim = nc.DeepCopy()
	nc.Annotations = nil
	if err := e.kube.Patch(ctx, nc, client.MergeFrom(beforeClaim)); err != nil {
		t.Fatal(err)
	}
	e.pass(t)
	e.gone(t, "kept")
}

// Repair is a disruption reason (Unhealthy) its NodePool's budgets limit:
// a budget of 0 for Unhealthy holds an unhealthy node back, saying so;
// once the budget allows one, it is replaced.
func TestRepairKeepsToTheBudgets(t *testing.T) {
	e := startRepairing(t, 2*time.Second)
	ctx := context.Background()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}}}
	e.create(t, np)
	node := e.launched(t, "sick")
	for _, other := range []string{"a", "b", "c", "d"} {
		e.launched(t, other)
	}
	e.fail(t, node, corev1.NodeReady, corev1.ConditionFalse)
	e.clock.SetTime(time.Now().Add(time.Minute))
	e.pass(t)
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "sick"}, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
		t.Fatalf("the budget of 0 did not hold the node (%v)", err)
	}
	if evs := e.events("NodeRepairBlocked", node.Name); len(evs) == 0 || !strings.Contains(evs[0], "budgets for Unhealthy") || !strings.Contains(evs[0], "allows 0 of 0") {
		t.Errorf("NodeRepairBlocked events: %q", evs)
	}
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}}}
	if err := e.kube.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	e.pass(t)
	e.gone(t, "sick")
}

// readyChanged is when the node's Ready condition last changed, as
// stored.
func readyChanged(t *testing.T, e *repairing, node *corev1.Node) time.Time {
	t.Helper()
	fresh := &corev1.Node{}
	if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(node), fresh); err != nil {
		t.Fatal(err)
	}
	for _, c := range fresh.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time
		}
	}
	t.Fatalf("node %s has no Ready condition", node.Name)
	return time.Time{}
}
