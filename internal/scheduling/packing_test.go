package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// Interchangeable pods of many sizes on the real catalog: every pod is
// placed, the independent verifier accepts the plan, the same input gives
// the same plan, and its price is close to the configuration LP's lower
// bound on any plan.
func TestInterchangeablePodsArePackedNearTheLowerBound(t *testing.T) {
	cpus := []string{"100m", "500m", "1500m"}
	mems := []string{"256Mi", "1Gi", "4Gi"}
	ps := make([]*corev1.Pod, 0, 450)
	for i := range 450 {
		ps = append(ps, newPod(fmt.Sprintf("app-%d", i), cpus[i%3], mems[(i/3)%3]))
	}
	in := scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: ps}
	plan := solve(t, in)
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("every pod fits: %v", reasons(plan))
	}
	again := scheduling.Solve(in)
	if fmt.Sprint(placement(plan)) != fmt.Sprint(placement(again)) || plan.Price() != again.Price() {
		t.Error("the same input should give the same plan")
	}
	bound, ok := scheduling.PackingLowerBound(in)
	if !ok {
		t.Fatal("no lower bound")
	}
	if plan.Price() < bound*(1-1e-9) {
		t.Fatalf("the plan costs $%.4f/h, below the lower bound $%.4f/h: the bound is wrong", plan.Price(), bound)
	}
	if ratio := plan.Price() / bound; ratio > 1.10 {
		t.Errorf("the plan costs $%.4f/h, %.3f× the lower bound $%.4f/h; within 10%% expected", plan.Price(), ratio, bound)
	}
	t.Logf("$%.4f/h on %d nodes, lower bound $%.4f/h", plan.Price(), len(plan.NodeClaims), bound)
}
