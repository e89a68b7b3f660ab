// Command benchref runs nodewright and the reference autoscaler side by
// side on the same workloads and the same instance catalog (nodewright's
// catalog, converted to the reference's KWOK provider's instance-types
// file), and prints per workload and autoscaler the $/h of the nodes it
// launched, their count and its time to every pod Running; then, after
// the workload is scaled down, the same once consolidation is done.
//
//	go run ./hack/benchref -nodewright bin/nodewright -reference bin/reference [-runs 3] [-workloads gpu,zonal-spread]
//	go run ./hack/benchref -write-catalog types.json
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
)

type config struct {
	nodewright, reference string
	runs                  int
	only                  []string
	workDir               string
	// quiet is how long the nodes must stay as they are for a phase to
	// count as done.
	quiet, timeout time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.nodewright, "nodewright", "bin/nodewright", "the nodewright binary (make build)")
	flag.StringVar(&cfg.reference, "reference", "bin/reference", "the reference's programs (hack/reference/build.sh)")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of each workload per autoscaler; times are their medians")
	only := flag.String("workloads", "", "comma-separated workloads to run (default: all): "+strings.Join(names(), ", "))
	flag.StringVar(&cfg.workDir, "work-dir", "", "keep each run's logs under this directory")
	flag.DurationVar(&cfg.quiet, "quiet", time.Minute, "how long the nodes must stay unchanged, with every pod Running, for a phase to be done")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "how long a phase may take")
	writeCatalog := flag.String("write-catalog", "", "write nodewright's catalog as the reference's KWOK instance-types file to this path and stop")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	catalog, err := instancetypes.Load(instancetypes.Options{Zones: account.Zones()})
	if err != nil {
		fail(err)
	}
	file, err := kwokCatalog(catalog)
	if err != nil {
		fail(err)
	}
	if *writeCatalog != "" {
		if err := os.WriteFile(*writeCatalog, file, 0o600); err != nil {
			fail(err)
		}
		return
	}
	if *only != "" {
		cfg.only = strings.Split(*only, ",")
		for _, n := range cfg.only {
			if !slices.Contains(names(), n) {
				fail(fmt.Errorf("-workloads: no workload %q; there are %s", n, strings.Join(names(), ", ")))
			}
		}
	}
	if cfg.runs < 1 {
		fail(fmt.Errorf("-runs %d: give 1 or more", cfg.runs))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, file, prices(catalog), os.Stdout); err != nil {
		fail(err)
	}
}

func names() []string {
	out := make([]string, 0, len(workloads))
	for _, w := range workloads {
		out = append(out, w.name)
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchref:", err)
	os.Exit(1)
}

// phase is one phase's outcome: when every pod first ran (up) or the
// nodes last changed (down), and the nodes then.
type phase struct {
	took  time.Duration
	nodes int
	price float64
	types string
}

// result is one run of a workload by one autoscaler.
type result struct {
	up, settled, down phase
	err               error
}

func run(ctx context.Context, cfg config, catalog []byte, p priceOf, out io.Writer) error {
	nodewright, err := filepath.Abs(cfg.nodewright)
	if err != nil {
		return err
	}
	reference, err := filepath.Abs(cfg.reference)
	if err != nil {
		return err
	}
	for _, f := range []string{nodewright, filepath.Join(reference, "karpenter-kwok")} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%w (make build and hack/reference/build.sh make them)", err)
		}
	}
	assets, err := controlplane.FindAssets()
	if err != nil {
		return err
	}
	if err := controlplane.Install(ctx, assets, os.Stderr); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchref")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	types := filepath.Join(dir, "instance-types.json")
	if err := os.WriteFile(types, catalog, 0o600); err != nil {
		return err
	}
	var rows []row
	for _, w := range workloads {
		if cfg.only != nil && !slices.Contains(cfg.only, w.name) {
			continue
		}
		r := row{w: w}
		for i := range cfg.runs {
			work := func(who string) string {
				if cfg.workDir == "" {
					return ""
				}
				return filepath.Join(cfg.workDir, fmt.Sprintf("%s-%s-%d", w.name, who, i+1))
			}
			fmt.Fprintf(os.Stderr, "benchref: %s, run %d: nodewright\n", w.name, i+1)
			r.nw = append(r.nw, runNodewright(ctx, cfg, assets, nodewright, work("nodewright"), w))
			fmt.Fprintf(os.Stderr, "benchref: %s, run %d: the reference\n", w.name, i+1)
			r.ref = append(r.ref, runReference(ctx, cfg, assets, reference, types, work("reference"), w, p))
			if ctx.Err() != nil {
				break
			}
		}
		rows = append(rows, r)
		if ctx.Err() != nil {
			break
		}
	}
	write(out, cfg, rows)
	return ctx.Err()
}

// row is a workload's runs.
type row struct {
	w       workload
	nw, ref []result
}

// view is what a phase watches each second.
type view struct {
	// pods are the pods not being deleted; running those Running.
	pods, running int
	nodes         int
	price         float64
	// key changes whenever a node or NodeClaim comes, goes or changes
	// phase.
	key string
	// types counts the nodes by instance type.
	types string
}

// allRunning says whether every pod runs and at least want exist.
func (v view) allRunning(want int) bool {
	return v.pods >= want && v.running == v.pods
}

// watch polls look each second: up measures when every pod first runs,
// then both wait until the nodes have been unchanged, with every pod
// running, for cfg.quiet. It returns the phase at the first moment every
// pod ran and at the last change of the nodes.
func watch(ctx context.Context, cfg config, want int, look func() (view, error), exited func() error) (first, last phase, err error) {
	start := time.Now()
	lastKey, lastChange, seenRunning := "", start, false
	var lastView view
	for {
		v, err := look()
		if err != nil {
			return first, last, err
		}
		now := time.Now()
		if v.key != lastKey {
			lastKey, lastChange = v.key, now
		}
		if !seenRunning && v.allRunning(want) {
			seenRunning, first = true, phase{took: now.Sub(start), nodes: v.nodes, price: v.price, types: v.types}
		}
		if seenRunning && v.allRunning(want) && now.Sub(lastChange) >= cfg.quiet {
			lastView = v
			return first, phase{took: lastChange.Sub(start), nodes: lastView.nodes, price: lastView.price, types: lastView.types}, nil
		}
		if err := exited(); err != nil {
			return first, last, err
		}
		if now.Sub(start) > cfg.timeout {
			return first, last, fmt.Errorf("after %s: %d of %d pods Running (want %d), nodes still changing %s ago", cfg.timeout, v.running, v.pods, want, now.Sub(lastChange).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return first, last, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// median is the median of the runs' values (the runs that worked).
func median(rs []result, of func(result) float64) (float64, bool) {
	var xs []float64
	for _, r := range rs {
		if r.err == nil {
			xs = append(xs, of(r))
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2], true
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2, true
}

func write(out io.Writer, cfg config, rows []row) {
	fmt.Fprintf(out, "Same catalog (nodewright's, %s), on-demand, amd64 and arm64; medians of %d run(s); times to every pod Running (up) and to the last node change after the scale-down (down)\n\n", account.Region, cfg.runs)
	fmt.Fprintln(out, "| workload | autoscaler | up $/h | up nodes | up time | settled $/h | settled nodes | down $/h | down nodes | down time |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|")
	var costlier []string
	for _, r := range rows {
		for _, side := range []struct {
			name string
			rs   []result
		}{{"nodewright", r.nw}, {"reference", r.ref}} {
			fmt.Fprintf(out, "| %s | %s | %s |\n", r.w.name, side.name, strings.Join(cells(side.rs), " | "))
		}
		for _, p := range []struct {
			name string
			of   func(result) float64
		}{
			{"up", func(x result) float64 { return x.up.price }},
			{"settled", func(x result) float64 { return x.settled.price }},
			{"down", func(x result) float64 { return x.down.price }},
		} {
			nw, ok1 := median(r.nw, p.of)
			ref, ok2 := median(r.ref, p.of)
			if ok1 && ok2 && nw > ref+1e-6 {
				costlier = append(costlier, fmt.Sprintf("%s %s: nodewright $%.4f/h, the reference $%.4f/h", r.w.name, p.name, nw, ref))
			}
		}
	}
	fmt.Fprintln(out)
	for _, r := range rows {
		for _, side := range []struct {
			name string
			rs   []result
		}{{"nodewright", r.nw}, {"reference", r.ref}} {
			for i, x := range side.rs {
				if x.err != nil {
					fmt.Fprintf(out, "%s, %s, run %d: %v\n", r.w.name, side.name, i+1, x.err)
					continue
				}
				fmt.Fprintf(out, "%s, %s, run %d: up %s; settled %s; down %s\n", r.w.name, side.name, i+1, x.up.types, x.settled.types, x.down.types)
			}
		}
	}
	if len(costlier) > 0 {
		fmt.Fprintln(out, "\nnodewright costlier than the reference:\n  "+strings.Join(costlier, "\n  "))
	} else {
		fmt.Fprintln(out, "\nnodewright is nowhere costlier than the reference.")
	}
}

func cells(rs []result) []string {
	cell := func(of func(result) float64, format string) string {
		v, ok := median(rs, of)
		if !ok {
			return "failed"
		}
		return fmt.Sprintf(format, v)
	}
	return []string{
		cell(func(x result) float64 { return x.up.price }, "%.4f"),
		cell(func(x result) float64 { return float64(x.up.nodes) }, "%.0f"),
		cell(func(x result) float64 { return x.up.took.Seconds() }, "%.0f s"),
		cell(func(x result) float64 { return x.settled.price }, "%.4f"),
		cell(func(x result) float64 { return float64(x.settled.nodes) }, "%.0f"),
		cell(func(x result) float64 { return x.down.price }, "%.4f"),
		cell(func(x result) float64 { return float64(x.down.nodes) }, "%.0f"),
		cell(func(x result) float64 { return x.down.took.Seconds() }, "%.0f s"),
	}
}
