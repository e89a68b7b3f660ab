// Command bench measures the scheduler on workloads A and B at several
// sizes and prints pods/s, nodes, $/hour, peak memory and, for workload B,
// the ratio of the plan's price to three lower bounds: the fractional
// cover of total CPU and memory, the same with pod slots, and the
// configuration LP (scheduling.PackingLowerBound). The peak memory is
// measured before the bounds are computed. Each measurement runs
// in a fresh process so that its peak resident memory is its own.
//
// It also measures disruption on fragmented clusters: the time of a full
// decision, and the price consolidation converges to against the packing
// lower bound of the cluster's pods.
//
// Usage: go run ./hack/bench [-sizes-a 1000,...] [-sizes-b 1000,...] [-consolidation 500,5000] [-rounds N]
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
	"github.com/nodewright/nodewright/internal/sim/workload"
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
	sizesC := flag.String("consolidation", "500,5000", "fragmented cluster sizes (nodes) for consolidation; empty to skip")
	rounds := flag.Int("rounds", 300, "most consolidation rounds carried out before giving up on convergence")
	flag.Parse()
	if *one != "" {
		if err := measure(*one, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *sizesA != "" || *sizesB != "" {
		schedulingTable(*sizesA, *sizesB)
	}
	if *sizesC != "" {
		consolidationTable(*sizesC)
	}
}

func schedulingTable(sizesA, sizesB string) {
	format := "%-8s %7s %8s %8s %7s %13s %10s %11s %7s %15s %7s %13s %7s %12s\n"
	fmt.Printf(format, "workload", "pods", "seconds", "pods/s", "nodes", "unschedulable", "$/hour", "lower bound", "ratio", "pod-aware bound", "ratio", "packing bound", "ratio", "peak RSS MiB")
	for _, w := range []struct{ name, sizes string }{{"A", sizesA}, {"B", sizesB}} {
		if w.sizes == "" {
			continue
		}
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

// consolidationTable prints, per fragmented cluster size, the time of a
// full disruption decision and how consolidation converges against the
// packing lower bound of the cluster's pods.
func consolidationTable(sizes string) {
	format := "%7s %7s %13s %14s %7s %10s %9s %11s %10s %10s %13s %7s %12s\n"
	fmt.Printf("\nconsolidation of fragmented clusters (workload-B pods on mid-sized nodes)\n")
	fmt.Printf(format, "nodes", "pods", "decision (s)", "slowest (s)", "rounds", "converged", "seconds", "nodes after", "$/h before", "$/h after", "packing bound", "ratio", "peak RSS MiB")
	for _, size := range strings.Split(sizes, ",") {
		r := &consolidationResult{}
		if err := runChild("C:"+size, r); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		ratio := "-"
		if r.PackingBound > 0 {
			ratio = fmt.Sprintf("%.3f", r.Price/r.PackingBound)
		}
		fmt.Printf(format, fmt.Sprint(r.Nodes), fmt.Sprint(r.Pods), fmt.Sprintf("%.2f", r.FirstDecision), fmt.Sprintf("%.2f", r.SlowestDecision),
			fmt.Sprint(r.Rounds), fmt.Sprint(r.Converged), fmt.Sprintf("%.0f", r.ConvergeSeconds), fmt.Sprint(r.NodesAfter),
			fmt.Sprintf("%.2f", r.PriceBefore), fmt.Sprintf("%.2f", r.Price), fmt.Sprintf("%.2f", r.PackingBound), ratio, fmt.Sprintf("%.0f", r.PeakRSSMiB))
	}
}

func child(spec string) (*result, error) {
	r := &result{}
	return r, runChild(spec, r)
}

// runChild measures spec in a fresh process and decodes its result.
func runChild(spec string, into any) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{"-one", spec}, os.Args[1:]...)
	out, err := exec.Command(exe, args...).Output() //nolint:gosec,noctx // runs itself
	if err != nil {
		return fmt.Errorf("%s: %w", spec, err)
	}
	return json.Unmarshal(out, into)
}

func measure(spec string, rounds int) error {
	name, sizeText, _ := strings.Cut(spec, ":")
	size, err := strconv.Atoi(sizeText)
	if err != nil {
		return err
	}
	if name == "C" {
		r, err := measureConsolidation(size, rounds)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(r)
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
