package nodepool_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/controllers/nodepool"
)

// The rollout counts a NodePool's NodeClaims as up to date, being
// replaced (drifted and tainted or deleting) or waiting, says what the
// drift budget allows, and when its window next opens while it allows
// nothing.
func TestRolloutCounts(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) // a Monday
	var claims []*v1.NodeClaim
	var nodes []*corev1.Node
	for i := range 10 {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("nc-", i)}}
		nc.Status.NodeName = fmt.Sprint("node-", i)
		nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}
		if i < 6 {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: v1.ReasonNodePoolDrifted})
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
		if i < 2 {
			node.Spec.Taints = []corev1.Taint{{Key: v1.TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}}
		}
		claims, nodes = append(claims, nc), append(nodes, node)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "20%"}}
	r := nodepool.RolloutOf(np, claims, nodes, now)
	if want := "4 of 10 nodes up to date, 2 being replaced, 4 waiting: budget 20% allows 2 at once"; r.Message() != want || !r.InProgress() {
		t.Errorf("message %q, want %q", r.Message(), want)
	}
	// A replacement still initializing is up to date, but no node the
	// budget's 20% is of; an unready node counts as one being replaced.
	launching := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-new"}}
	unready := nodes[9].DeepCopy()
	unready.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "40%"}}
	r = nodepool.RolloutOf(np, append(claims, launching), append(nodes[:9:9], unready), now)
	if want := "5 of 11 nodes up to date, 2 being replaced, 4 waiting: budget 40% allows 4 at once"; r.Message() != want || r.Allowance.Allowed != 1 {
		t.Errorf("with a replacement initializing and an unready node: message %q, %d more allowed; want %q, 1 more (4 less 2 replaced and 1 unready)", r.Message(), r.Allowance.Allowed, want)
	}
	// Business hours hold drift back: none is being replaced, and the
	// window that allows none closes at 17:00.
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: &metav1.Duration{Duration: 8 * time.Hour}}, {Nodes: "3"}}
	for _, n := range nodes {
		n.Spec.Taints = nil
	}
	r = nodepool.RolloutOf(np, claims, nodes, now)
	if want := "4 of 10 nodes up to date, 0 being replaced, 6 waiting: budget 0 allows 0 at once; next window 2026-11-23T17:00:00Z"; r.Message() != want {
		t.Errorf("message %q, want %q", r.Message(), want)
	}
	if r = nodepool.RolloutOf(np, claims[6:], nodes[6:], now); r.InProgress() {
		t.Errorf("no drifted NodeClaim: %+v", r)
	}
}
