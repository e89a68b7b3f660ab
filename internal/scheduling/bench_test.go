package scheduling_test

import (
	"fmt"
	"testing"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/workload"
)

func BenchmarkWorkloadA(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000, 20000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				in := workload.A(n, 1)
				plan := scheduling.Solve(in)
				b.ReportMetric(float64(len(plan.NodeClaims)), "nodes")
				b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
				b.ReportMetric(plan.Price(), "$/h")
			}
		})
	}
}

func BenchmarkWorkloadB(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in, err := workload.B(n, 1)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				plan := scheduling.Solve(in)
				b.ReportMetric(float64(len(plan.NodeClaims)), "nodes")
				b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
				b.ReportMetric(plan.Price(), "$/h")
			}
		})
	}
}
