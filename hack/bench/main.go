// Command bench measures the scheduler on workloads A and B at several
// sizes and prints pods/s, nodes, $/hour, peak memory and, for workload B,
// the ratio of the plan's price to three lower bounds: the fractional
// cover of total CPU and memory, the same with pod slots, and the
// configuration LP (scheduling.PackingLowerBound). The peak memory is
// measured before the bounds are computed. Each measurement runs
// in a fresh process so that its peak resident memory is its own.
//
// Usage: go run ./hack/bench [-sizes-a 1000,...] [-sizes-b 1000,...]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/scheduling/workload"
)

type result struct {
	Workload      string
	Pods          int
	Seconds       float64
	Nodes         int
	Unschedulable int
	Price         float64
	LowerBound    float64
	PodAwareBound float64
	PackingBound  float64
	PeakRSSMiB    float64
}

func main() {
	one := flag.String("one", "", "measure one WORKLOAD:PODS in this process (internal)")
	sizesA := flag.String("sizes-a", "1000,5000,10000,20000,50000", "workload A sizes")
	sizesB := flag.String("sizes-b", "1000,10000,50000", "workload B sizes")
	flag.Parse()
	if *one != "" {
		if err := measure(*one); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	format := "%-8s %7s %8s %8s %7s %13s %10s %11s %7s %15s %7s %13s %7s %12s\n"
	fmt.Printf(format, "workload", "pods", "seconds", "pods/s", "nodes", "unschedulable", "$/hour", "lower bound", "ratio", "pod-aware bound", "ratio", "packing bound", "ratio", "peak RSS MiB")
	for _, w := range []struct{ name, sizes string }{{"A", *sizesA}, {"B", *sizesB}} {
		for _, size := range strings.Split(w.sizes, ",") {
			r, err := child(w.name + ":" + size)
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			bound, ratio := boundColumns(r.LowerBound, r.Price)
			podBound, podRatio := boundColumns(r.PodAwareBound, r.Price)
			packBound, packRatio := boundColumns(r.PackingBound, r.Price)
			fmt.Printf(format, r.Workload, fmt.Sprint(r.Pods), fmt.Sprintf("%.2f", r.Seconds), fmt.Sprintf("%.0f", float64(r.Pods)/r.Seconds),
				fmt.Sprint(r.Nodes), fmt.Sprint(r.Unschedulable), fmt.Sprintf("%.2f", r.Price), bound, ratio, podBound, podRatio, packBound, packRatio, fmt.Sprintf("%.0f", r.PeakRSSMiB))
		}
	}
}

// boundColumns prints a lower bound and the price's ratio to it, or
// dashes when there is none.
func boundColumns(bound, price float64) (string, string) {
	if bound <= 0 {
		return "-", "-"
	}
	return fmt.Sprintf("%.2f", bound), fmt.Sprintf("%.3f", price/bound)
}

func child(spec string) (*result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(exe, "-one", spec).Output() //nolint:gosec,noctx // runs itself
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	r := &result{}
	return r, json.Unmarshal(out, r)
}

func measure(spec string) error {
	name, sizeText, _ := strings.Cut(spec, ":")
	size, err := strconv.Atoi(sizeText)
	if err != nil {
		return err
	}
	var in scheduling.Input
	switch name {
	case "A":
		in = workload.A(size, 1)
	case "B":
		if in, err = workload.B(size, 1); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown workload %q", name)
	}
	start := time.Now()
	plan := scheduling.Solve(in)
	elapsed := time.Since(start)
	r := result{Workload: name, Pods: size, Seconds: elapsed.Seconds(), Nodes: len(plan.NodeClaims),
		Unschedulable: len(plan.Unschedulable), Price: plan.Price(), PeakRSSMiB: peakRSS()}
	if name == "B" {
		r.LowerBound = workload.LowerBound(in)
		r.PodAwareBound = workload.PodAwareLowerBound(in)
		r.PackingBound, _ = scheduling.PackingLowerBound(in)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// peakRSS reads the process's peak resident set (VmHWM) in MiB.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 2 && fields[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(fields[1], 64)
			return kb / 1024
		}
	}
	return 0
}
