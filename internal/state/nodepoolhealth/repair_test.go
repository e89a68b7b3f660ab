package nodepoolhealth_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func node(name, pool string, conds ...corev1.NodeCondition) (*corev1.Node, *v1.NodeClaim) {
	id := "aws:///us-east-1a/i-" + name
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool}},
		Spec: corev1.NodeSpec{ProviderID: id}, Status: corev1.NodeStatus{Conditions: conds}}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name}, Status: v1.NodeClaimStatus{ProviderID: id}}
	return n, nc
}

func because(c corev1.NodeCondition, reason string) corev1.NodeCondition {
	c.Reason = reason
	return c
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, since time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(since)}
}

func assess(nodes ...func() (*corev1.Node, *v1.NodeClaim)) map[string]*nodepoolhealth.Pool {
	var ns []*corev1.Node
	var cs []*v1.NodeClaim
	for _, f := range nodes {
		n, c := f()
		ns, cs = append(ns, n), append(cs, c)
	}
	return nodepoolhealth.Assess(cs, ns, nodepoolhealth.DefaultTolerations().Policies(), t0.Add(time.Hour))
}

func mk(name, pool string, conds ...corev1.NodeCondition) func() (*corev1.Node, *v1.NodeClaim) {
	return func() (*corev1.Node, *v1.NodeClaim) { return node(name, pool, conds...) }
}

// Each failing condition comes due after its own toleration (30 minutes,
// 10 for an accelerator fault of a named XID, 30 for another); the one
// due first counts. Healthy and True conditions do not make a node
// unhealthy.
func TestUnhealthyNodesComeDueAfterTheirToleration(t *testing.T) {
	pools := assess(
		mk("ok", "np", cond(corev1.NodeReady, corev1.ConditionTrue, t0), cond("KernelReady", corev1.ConditionTrue, t0)),
		mk("notready", "np", cond(corev1.NodeReady, corev1.ConditionFalse, t0)),
		mk("lost", "np", cond(corev1.NodeReady, corev1.ConditionUnknown, t0.Add(time.Minute))),
		mk("gpu", "np", cond(corev1.NodeReady, corev1.ConditionTrue, t0), because(cond("AcceleratedHardwareReady", corev1.ConditionFalse, t0.Add(5*time.Minute)), "NvidiaXID79Error"),
			cond("StorageReady", corev1.ConditionFalse, t0)),
		mk("gpu2", "np", because(cond("AcceleratedHardwareReady", corev1.ConditionFalse, t0.Add(5*time.Minute)), "NvidiaXID13Error")),
		mk("other", "np", cond(corev1.NodeReady, corev1.ConditionTrue, t0), cond("DiskPressure", corev1.ConditionTrue, t0)),
	)
	p := pools["np"]
	if p.Nodes != 6 || p.Allowed != 2 {
		t.Fatalf("NodePool np: %d nodes, %d allowed unhealthy; want 6 and 2", p.Nodes, p.Allowed)
	}
	want := []struct {
		node string
		due  time.Time
		cond corev1.NodeConditionType
	}{
		{"gpu", t0.Add(15 * time.Minute), "AcceleratedHardwareReady"},
		{"notready", t0.Add(30 * time.Minute), corev1.NodeReady},
		{"lost", t0.Add(31 * time.Minute), corev1.NodeReady},
		{"gpu2", t0.Add(35 * time.Minute), "AcceleratedHardwareReady"},
	}
	if len(p.Unhealthy) != len(want) {
		t.Fatalf("%d unhealthy nodes, want %d", len(p.Unhealthy), len(want))
	}
	for i, w := range want {
		u := p.Unhealthy[i]
		if u.Node.Name != w.node || !u.Due.Equal(w.due) || u.Condition.Type != w.cond || u.NodeClaim == nil {
			t.Errorf("unhealthy %d: %s %s due %s; want %s %s due %s", i, u.Node.Name, u.Condition.Type, u.Due, w.node, w.cond, w.due)
		}
	}
	if !p.Held() {
		t.Errorf("4 of 6 unhealthy (more than 20%%) must hold repair")
	}
}

// Up to a fifth of a NodePool's nodes, rounded up, may be unhealthy for
// repair to act; nodes without a NodeClaim or being deleted are not
// repaired, and NodePools are counted apart.
func TestRepairHoldsPastAFifthOfTheNodePool(t *testing.T) {
	sick := cond(corev1.NodeReady, corev1.ConditionFalse, t0)
	pools := assess(
		mk("a1", "a", sick), mk("a2", "a", sick), mk("a3", "a"), mk("a4", "a"), mk("a5", "a"), mk("a6", "a"),
		mk("b1", "b", sick),
	)
	if a := pools["a"]; a.Allowed != 2 || len(a.Unhealthy) != 2 || a.Held() {
		t.Errorf("NodePool a: %d allowed, %d unhealthy, held %v; want 2, 2, not held", a.Allowed, len(a.Unhealthy), a.Held())
	}
	if b := pools["b"]; b.Allowed != 1 || b.Held() {
		t.Errorf("NodePool b (its only node unhealthy): %d allowed, held %v; want 1 and not held", b.Allowed, b.Held())
	}
	stranger, _ := node("x", "a", sick)
	deleting, dc := node("d", "a", sick)
	dc.DeletionTimestamp = &metav1.Time{Time: t0}
	got := nodepoolhealth.Assess([]*v1.NodeClaim{dc}, []*corev1.Node{stranger, deleting}, nodepoolhealth.DefaultTolerations().Policies(), t0)
	if a := got["a"]; a == nil || len(a.Unhealthy) != 0 || a.Nodes != 1 {
		t.Errorf("a node without a NodeClaim and one being deleted: %+v; want 1 node, none to repair", a)
	}
}

func TestTolerationsMustBePositive(t *testing.T) {
	tol := nodepoolhealth.DefaultTolerations()
	tol.Agent = 0
	if err := tol.Validate(); err == nil {
		t.Error("a zero toleration was accepted")
	}
	if err := nodepoolhealth.DefaultTolerations().Validate(); err != nil {
		t.Error(err)
	}
}
