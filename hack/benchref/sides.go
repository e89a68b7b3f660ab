package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/hack/refrun"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
)

// runNodewright runs a workload with nodewright's controllers (in their own
// process) on the simulated account, its instances booting at once and
// without EC2's request limits, as KWOK's nodes do.
func runNodewright(ctx context.Context, cfg config, assets, program, workDir string, w workload) (r result) {
	opts := runner.DefaultOptions()
	opts.AssetsDir, opts.ControllerProcess, opts.WorkDir = assets, program, workDir
	opts.Faults.RateLimits, opts.BootDelay = 0, 0
	sim, err := runner.Start(ctx, opts)
	if err != nil {
		r.err = err
		return r
	}
	defer func() { _ = sim.Stop() }()
	if r.err = sim.Apply(ctx, "pool", append([]byte(nodewrightPool), w.daemonSets()...)); r.err != nil {
		return r
	}
	look := func(start time.Time) func() (view, error) {
		return func() (view, error) {
			snap, err := sim.Snapshot(ctx, start)
			if err != nil {
				return view{}, err
			}
			v := view{pods: snap.Pods - snap.Terminating, running: snap.RunningPods, nodes: snap.Nodes, price: snap.PricePerHour}
			keys, types := make([]string, 0, len(snap.NodeClaims)), map[string]int{}
			for _, c := range snap.NodeClaims {
				keys = append(keys, c.Name+"/"+c.Phase)
				types[c.InstanceType]++
			}
			slices.Sort(keys)
			v.key, v.types = strings.Join(keys, ","), countTypes(types)
			return v, nil
		}
	}
	none := func() error { return nil }
	if r.err = sim.Apply(ctx, "up", w.manifest(false)); r.err != nil {
		return r
	}
	if r.up, r.settled, r.err = watch(ctx, cfg, w.pods(false), look(time.Now()), none); r.err != nil {
		return r
	}
	if r.err = sim.Apply(ctx, "down", w.manifest(true)); r.err != nil {
		return r
	}
	_, r.down, r.err = watch(ctx, cfg, w.pods(true), look(time.Now()), none)
	return r
}

// runReference runs a workload with the reference's KWOK provider choosing
// from the converted catalog; its nodes are priced from the catalog by
// their instance type, capacity type and zone.
func runReference(ctx context.Context, cfg config, assets, dir, types, workDir string, w workload, p priceOf) (r result) {
	ref, err := refrun.Start(ctx, refrun.Options{Assets: assets, Dir: dir, WorkDir: workDir, InstanceTypes: types})
	if err != nil {
		r.err = err
		return r
	}
	defer ref.Stop()
	if r.err = refrun.Apply(ctx, ref.Kube, append([]byte(referencePool), w.daemonSets()...)); r.err != nil {
		return r
	}
	look := func() (view, error) { return referenceView(ctx, ref.Kube, p) }
	exited := func() error {
		if ref.Exited() {
			return fmt.Errorf("the reference's provider exited: see %s", ref.Log())
		}
		return nil
	}
	if r.err = refrun.Apply(ctx, ref.Kube, w.manifest(false)); r.err != nil {
		return r
	}
	if r.up, r.settled, r.err = watch(ctx, cfg, w.pods(false), look, exited); r.err != nil {
		return r
	}
	if r.err = refrun.Apply(ctx, ref.Kube, w.manifest(true)); r.err != nil {
		return r
	}
	_, r.down, r.err = watch(ctx, cfg, w.pods(true), look, exited)
	return r
}

// referenceView reads the pods, nodes and NodeClaims of the reference's
// cluster.
func referenceView(ctx context.Context, kube client.Client, p priceOf) (view, error) {
	var v view
	pods, nodes, claims := &corev1.PodList{}, &corev1.NodeList{}, &v1.NodeClaimList{}
	for _, list := range []client.ObjectList{pods, nodes, claims} {
		if err := kube.List(ctx, list); err != nil {
			return v, err
		}
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		v.pods++
		if pod.Status.Phase == corev1.PodRunning {
			v.running++
		}
	}
	keys, types := []string{}, map[string]int{}
	for _, n := range nodes.Items {
		it, ct, zone := n.Labels[corev1.LabelInstanceTypeStable], n.Labels[v1.LabelCapacityType], n.Labels[corev1.LabelTopologyZone]
		price, ok := p[[3]string{it, ct, zone}]
		if !ok {
			return v, fmt.Errorf("node %s: %s %s in %s is not in the catalog", n.Name, it, ct, zone)
		}
		v.nodes++
		v.price += price
		types[it]++
		keys = append(keys, n.Name+"/"+cmp.Or(deleting(n.DeletionTimestamp != nil), "node"))
	}
	for _, c := range claims.Items {
		keys = append(keys, c.Name+"/"+cmp.Or(deleting(c.DeletionTimestamp != nil), "claim"))
	}
	slices.Sort(keys)
	v.key, v.types = strings.Join(keys, ","), countTypes(types)
	return v, nil
}

func deleting(b bool) string {
	if b {
		return "deleting"
	}
	return ""
}

// countTypes is "3 × m5.large, 1 × c6g.xlarge", most first.
func countTypes(types map[string]int) string {
	names := slices.Collect(maps.Keys(types))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(types[b]-types[a], strings.Compare(a, b)) })
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%d × %s", types[n], n))
	}
	return strings.Join(parts, ", ")
}
