package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/hack/refrun"
)

// referenceNodePool is the reference's NodePool and node class for the
// scale scenario: amd64, spot or on-demand, as the scenario's NodePool
// (its instance categories are AWS's, which the KWOK provider's instance
// types do not have).
const referenceNodePool = `
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
`

// referenceFigures measure one run of the reference.
type referenceFigures struct {
	allRunning time.Duration
	nodes      int
	peakRSS    int64
	cpuSeconds float64
	// plane is the CPU time the control plane's programs spent while the
	// pods came up.
	plane map[string]float64
}

// runReference runs the reference autoscaler's KWOK provider and the KWOK
// controller (dir: bin/reference, made by hack/reference/build.sh) on a
// control plane of their own with the reference's CRDs, applies its
// NodePool, then the scaled manifest's Deployments, and measures the time
// until every pod is Running.
func runReference(ctx context.Context, cfg config, assets, dir string, workload []byte, pods int, timeout time.Duration) (referenceFigures, error) {
	var f referenceFigures
	opts := refrun.Options{Assets: assets, Dir: dir}
	if cfg.logDir != "" {
		opts.WorkDir = filepath.Join(cfg.logDir, fmt.Sprintf("reference-%d", pods))
	}
	ref, err := refrun.Start(ctx, opts)
	if err != nil {
		return f, err
	}
	defer ref.Stop()
	if err := refrun.Apply(ctx, ref.Kube, []byte(referenceNodePool)); err != nil {
		return f, err
	}
	start, planeBefore := time.Now(), ref.Plane.CPUSeconds()
	if err := refrun.Apply(ctx, ref.Kube, workload); err != nil {
		return f, err
	}
	if err := ref.AwaitRunning(ctx, pods, start.Add(timeout)); err != nil {
		return f, err
	}
	f.allRunning, f.plane = time.Since(start), map[string]float64{}
	for name, spent := range ref.Plane.CPUSeconds() {
		f.plane[name] = spent - planeBefore[name]
	}
	nodes := &corev1.NodeList{}
	if err := ref.Kube.List(ctx, nodes); err == nil {
		f.nodes = len(nodes.Items)
	}
	f.peakRSS, f.cpuSeconds = ref.Figures()
	return f, nil
}
