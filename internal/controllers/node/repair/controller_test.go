package repair_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/controllers/node/repair"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// hold keeps a deleted NodeClaim readable, as termination's finalizer
// would, so the test sees what repair wrote on it.
const hold = "test.nodewright.dev/hold"

// fleet is one control plane with NodePools of nodes whose health the
// test sets, and node repair on the test's clock, one pass per call.
type fleet struct {
	t      *testing.T
	kube   client.Client
	clock  *clocktesting.FakeClock
	said   *record.FakeRecorder
	repair *repair.Controller
	log    []string
}

// t0 is when the failing conditions turned.
var t0 = time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

func newFleet(t *testing.T) *fleet {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	f := &fleet{t: t, kube: kube, clock: clocktesting.NewFakeClock(t0), said: record.NewFakeRecorder(1000)}
	f.repair = &repair.Controller{Client: kube, Recorder: f.said, Clock: f.clock, Log: logr.Discard(), Tolerations: nodepoolhealth.DefaultTolerations()}
	return f
}

func (f *fleet) pool(name string, budgets ...v1.Budget) {
	f.t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	if len(budgets) > 0 {
		np.Spec.Disruption.Budgets = budgets
	}
	if err := f.kube.Create(context.Background(), np); err != nil {
		f.t.Fatal(err)
	}
}

// node makes an initialized NodeClaim of the pool and its node, whose
// Ready condition is ready since the time given.
func (f *fleet) node(pool, name string, ready corev1.ConditionStatus, since time.Time) {
	f.t.Helper()
	ctx := context.Background()
	providerID := "aws:///us-east-1a/i-" + name
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool}, Finalizers: []string{hold}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := f.kube.Create(ctx, nc); err != nil {
		f.t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}
	if err := f.kube.Status().Update(ctx, nc); err != nil {
		f.t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool, v1.LabelRegistered: "true", v1.LabelInitialized: "true"}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := f.kube.Create(ctx, node); err != nil {
		f.t.Fatal(err)
	}
	f.setReady(name, ready, since)
}

func (f *fleet) setReady(name string, ready corev1.ConditionStatus, since time.Time) {
	f.t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := f.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		f.t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletNotReady",
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since)}}
	if err := f.kube.Status().Update(ctx, node); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fleet) annotate(name, key, value string) {
	f.t.Helper()
	node := &corev1.Node{}
	if err := f.kube.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		f.t.Fatal(err)
	}
	node.Annotations = map[string]string{key: value}
	if err := f.kube.Update(context.Background(), node); err != nil {
		f.t.Fatal(err)
	}
}

// pass makes one repair pass at the given time.
func (f *fleet) pass(at time.Time) {
	f.t.Helper()
	f.clock.SetTime(at)
	if err := f.repair.Repair(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

// replaced reports whether repair deleted the NodeClaim, and the
// termination deadline it wrote on it.
func (f *fleet) replaced(name string) (bool, string) {
	f.t.Helper()
	nc := &v1.NodeClaim{}
	if err := f.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			f.t.Fatalf("NodeClaim %s is gone: the test's finalizer should hold it", name)
		}
		f.t.Fatal(err)
	}
	return !nc.DeletionTimestamp.IsZero(), nc.Annotations[v1.AnnotationTerminationTimestamp]
}

// events are the events of reason about the node recorded so far (on the
// node and on its NodeClaim, which share names here).
func (f *fleet) events(reason, name string) []string {
	for len(f.said.Events) > 0 {
		f.log = append(f.log, <-f.said.Events)
	}
	var out []string
	for _, ev := range f.log {
		if strings.HasPrefix(ev, "Warning "+reason+" ") && strings.Contains(ev, "node "+name+" ") {
			out = append(out, ev)
		}
	}
	return out
}

// A node NotReady past its toleration (30 minutes) is replaced: its
// NodeClaim is deleted with a termination deadline already past (its
// pods do not run, so the drain does not wait for their budgets), and
// the node and NodeClaim say why. Within the toleration it stays, and
// says when it will be replaced, once; the NodePool's healthy nodes stay.
func TestRepairReplacesANodeUnhealthyPastItsToleration(t *testing.T) {
	f := newFleet(t)
	f.pool("web")
	for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
		f.node("web", n, corev1.ConditionTrue, t0.Add(-time.Hour))
	}
	f.node("web", "web-sick", corev1.ConditionFalse, t0)

	f.pass(t0.Add(29 * time.Minute))
	f.pass(t0.Add(29*time.Minute + 30*time.Second))
	if gone, _ := f.replaced("web-sick"); gone {
		t.Fatal("the node was replaced within its toleration")
	}
	due := t0.Add(30 * time.Minute).UTC().Format(time.RFC3339)
	if evs := f.events(v1.ReasonNodeUnhealthy, "web-sick"); len(evs) != 2 || !strings.Contains(evs[0], "Ready=False") || !strings.Contains(evs[0], due) {
		t.Errorf("NodeUnhealthy events within the toleration: %q; want one on the node and one on its NodeClaim, naming the condition and %s", evs, due)
	}

	f.pass(t0.Add(31 * time.Minute))
	gone, deadline := f.replaced("web-sick")
	if !gone || deadline != due {
		t.Errorf("past the toleration: NodeClaim deleted %v, termination deadline %q; want deleted with %s", gone, deadline, due)
	}
	if evs := f.events(v1.ReasonNodeRepair, "web-sick"); len(evs) != 2 || !strings.Contains(evs[0], "replacing it") {
		t.Errorf("NodeRepair events: %q", evs)
	}
	for _, n := range []string{"web-1", "web-2", "web-3", "web-4"} {
		if gone, _ := f.replaced(n); gone {
			t.Errorf("healthy node %s was replaced", n)
		}
	}
}

// Repair is held while more than a fifth of a NodePool is unhealthy: a
// wide failure (a zone, a bad AMI) is not repaired node by node into
// more failures. Both nodes stay and say why; once one recovers, the
// other is replaced.
func TestRepairIsHeldWhileMuchOfANodePoolIsUnhealthy(t *testing.T) {
	f := newFleet(t)
	f.pool("batch")
	for _, n := range []string{"batch-1", "batch-2", "batch-3"} {
		f.node("batch", n, corev1.ConditionTrue, t0.Add(-time.Hour))
	}
	f.node("batch", "batch-a", corev1.ConditionFalse, t0)
	f.node("batch", "batch-b", corev1.ConditionUnknown, t0.Add(time.Minute))

	f.pass(t0.Add(40 * time.Minute))
	for _, n := range []string{"batch-a", "batch-b"} {
		if gone, _ := f.replaced(n); gone {
			t.Errorf("%s was replaced while two of five nodes are unhealthy", n)
		}
		if evs := f.events(v1.ReasonNodeRepairBlocked, n); len(evs) == 0 {
			t.Errorf("%s: no NodeRepairBlocked event saying repair is held", n)
		}
	}

	f.setReady("batch-a", corev1.ConditionTrue, t0.Add(41*time.Minute))
	f.pass(t0.Add(42 * time.Minute))
	if gone, _ := f.replaced("batch-a"); gone {
		t.Error("the node that recovered was replaced")
	}
	if gone, _ := f.replaced("batch-b"); !gone {
		t.Error("once one node recovered, the other unhealthy node was not replaced")
	}
}

// A node annotated karpenter.sh/do-not-repair stays however long it is
// unhealthy, and says so; a NodePool whose budgets allow no Unhealthy
// disruption keeps its unhealthy node, naming the budget.
func TestDoNotRepairAndBudgetsKeepAnUnhealthyNode(t *testing.T) {
	f := newFleet(t)
	f.pool("keep")
	for _, n := range []string{"keep-1", "keep-2", "keep-3", "keep-4"} {
		f.node("keep", n, corev1.ConditionTrue, t0.Add(-time.Hour))
	}
	f.node("keep", "keep-sick", corev1.ConditionFalse, t0)
	f.annotate("keep-sick", v1.AnnotationDoNotRepair, "true")

	f.pool("frozen", v1.Budget{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}})
	for _, n := range []string{"frozen-1", "frozen-2", "frozen-3", "frozen-4"} {
		f.node("frozen", n, corev1.ConditionTrue, t0.Add(-time.Hour))
	}
	f.node("frozen", "frozen-sick", corev1.ConditionFalse, t0)

	f.pass(t0.Add(2 * time.Hour))
	if gone, _ := f.replaced("keep-sick"); gone {
		t.Error("a node annotated do-not-repair was replaced")
	}
	if evs := f.events(v1.ReasonNodeRepairBlocked, "keep-sick"); len(evs) == 0 || !strings.Contains(evs[0], v1.AnnotationDoNotRepair) {
		t.Errorf("do-not-repair: events %q, want NodeRepairBlocked naming the annotation", evs)
	}
	if gone, _ := f.replaced("frozen-sick"); gone {
		t.Error("a node was replaced although its NodePool's budgets allow no Unhealthy disruption")
	}
	if evs := f.events(v1.ReasonNodeRepairBlocked, "frozen-sick"); len(evs) == 0 || !strings.Contains(evs[0], "budgets") {
		t.Errorf("budget: events %q, want NodeRepairBlocked naming the budgets", evs)
	}
}
