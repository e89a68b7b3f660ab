package scheduling_test

import (
	"fmt"
	"testing"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/workload"
)

// midScaleUp returns a decision's input in the middle of a scale-up:
// nodes (as a first decision planned them) running `running` pods of
// workload B, and `pending` more pods waiting.
func midScaleUp(b *testing.B, running, pending int) scheduling.Input {
	b.Helper()
	in, err := workload.B(running+pending, 1)
	if err != nil {
		b.Fatal(err)
	}
	placed := in
	placed.Pods = in.Pods[:running]
	first := scheduling.Solve(placed)
	if len(first.Unschedulable) > 0 {
		b.Fatalf("%d pods unschedulable in the first decision", len(first.Unschedulable))
	}
	for i, c := range first.NodeClaims {
		o := c.Offering
		labels := map[string]string{
			scheduling.LabelInstanceType: c.InstanceType.Name,
			scheduling.LabelZone:         o.Zone,
			"karpenter.sh/capacity-type": o.CapacityType,
			"karpenter.sh/nodepool":      c.NodePool,
			scheduling.LabelHostname:     fmt.Sprintf("node-%d", i),
		}
		in.Nodes = append(in.Nodes, &scheduling.Node{
			Name: fmt.Sprintf("node-%d", i), Requirements: scheduling.LabelRequirements(labels),
			Allocatable: c.InstanceType.Allocatable, Pods: c.Pods,
		})
	}
	in.Pods = in.Pods[running:]
	return in
}

// BenchmarkDecisionMidScaleUp is one decision of a 50,000-pod scale-up
// half way: what it allocates is what the controller's heap holds while
// it decides.
func BenchmarkDecisionMidScaleUp(b *testing.B) {
	for _, size := range []struct{ running, pending int }{{5000, 500}, {25000, 2000}} {
		in := midScaleUp(b, size.running, size.pending)
		b.Run(fmt.Sprintf("%d+%d", size.running, size.pending), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plan := scheduling.Solve(in)
				b.ReportMetric(float64(len(plan.NodeClaims)), "claims")
			}
		})
	}
}
