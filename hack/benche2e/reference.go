package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/controlplane"
	"github.com/nodewright/nodewright/internal/fake/runner"
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
	crds, err := readCRDs(filepath.Join(dir, "crds"))
	if err != nil {
		return f, err
	}
	opts := controlplane.Options{AssetsDir: assets, Scheduler: true, ControllerManager: true, CRDs: crds}
	if cfg.logDir != "" {
		opts.WorkDir = filepath.Join(cfg.logDir, fmt.Sprintf("reference-%d", pods))
		if err := os.MkdirAll(opts.WorkDir, 0o750); err != nil {
			return f, err
		}
	}
	plane, err := controlplane.Start(ctx, opts)
	if err != nil {
		return f, err
	}
	defer func() { _ = plane.Stop() }()
	kube, err := client.New(plane.Config, client.Options{})
	if err != nil {
		return f, err
	}
	logs := filepath.Dir(plane.KubeconfigPath)
	kwok, err := startReferenceKWOK(ctx, dir, plane.KubeconfigPath, logs)
	if err != nil {
		return f, err
	}
	defer stopProcess(kwok)
	provider, err := startReferenceProvider(ctx, dir, plane.KubeconfigPath, logs)
	if err != nil {
		return f, err
	}
	defer stopProcess(provider)
	if err := applyAll(ctx, kube, []byte(referenceNodePool)); err != nil {
		return f, err
	}
	start, planeBefore := time.Now(), plane.CPUSeconds()
	if err := applyAll(ctx, kube, workload); err != nil {
		return f, err
	}
	if err := awaitRunning(ctx, kube, provider, pods, start.Add(timeout), filepath.Join(logs, "reference.log")); err != nil {
		return f, err
	}
	f.allRunning, f.plane = time.Since(start), map[string]float64{}
	for name, spent := range plane.CPUSeconds() {
		f.plane[name] = spent - planeBefore[name]
	}
	nodes := &corev1.NodeList{}
	if err := kube.List(ctx, nodes); err == nil {
		f.nodes = len(nodes.Items)
	}
	f.peakRSS, f.cpuSeconds = processFigures(provider.Process.Pid)
	return f, nil
}

// awaitRunning waits until the pods are Running, the deadline passes or
// the provider exits.
func awaitRunning(ctx context.Context, kube client.Client, provider *exec.Cmd, pods int, deadline time.Time, log string) error {
	for {
		running, err := runningPods(ctx, kube)
		switch {
		case err != nil:
			return err
		case running >= pods:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("the reference: %d of %d pods Running by the deadline", running, pods)
		case provider.ProcessState != nil:
			return fmt.Errorf("the reference's provider exited: see %s", log)
		}
		time.Sleep(time.Second)
	}
}

// processFigures are a process's peak RSS and CPU seconds so far.
func processFigures(pid int) (peakRSS int64, cpuSeconds float64) {
	proc := "/proc/" + strconv.Itoa(pid)
	if data, err := os.ReadFile(proc + "/status"); err == nil {
		peakRSS = runner.PeakRSSFromStatus(string(data))
	}
	return peakRSS, controlplane.ProcessCPUSeconds(pid)
}

// startReferenceKWOK runs KWOK on the nodes the reference's KWOK provider
// makes, with KWOK's fast node and pod stages.
func startReferenceKWOK(ctx context.Context, dir, kubeconfig, logs string) (*exec.Cmd, error) {
	stages, err := filepath.Glob(filepath.Join(dir, "stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return nil, fmt.Errorf("no KWOK stages in %s: run hack/reference/build.sh", filepath.Join(dir, "stages"))
	}
	port, err := controlplane.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	return startLogged(filepath.Join(logs, "kwok.log"), filepath.Join(dir, "kwok"), nil,
		"--kubeconfig="+kubeconfig, "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--config="+strings.Join(stages, ","), "--server-address=127.0.0.1:"+strconv.Itoa(port), "--cidr=10.0.0.0/8")
}

// startReferenceProvider runs the reference's KWOK provider against the
// control plane, without leader election.
func startReferenceProvider(ctx context.Context, dir, kubeconfig, logs string) (*exec.Cmd, error) {
	metrics, err := controlplane.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	health, err := controlplane.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "SYSTEM_NAMESPACE=kube-system"}
	return startLogged(filepath.Join(logs, "reference.log"), filepath.Join(dir, "karpenter-kwok"), env,
		"--disable-leader-election", "--metrics-port="+strconv.Itoa(metrics), "--health-probe-port="+strconv.Itoa(health), "--log-level=error")
}

// startLogged starts a program with its output in a log file; it dies
// with this process.
func startLogged(logPath, program string, env []string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(program, args...) //nolint:gosec,noctx // the built reference programs; stopProcess ends them
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", program, err)
	}
	go func() { _ = cmd.Wait(); _ = log.Close() }()
	return cmd, nil
}

func stopProcess(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(time.Second)
	_ = cmd.Process.Kill()
}

// readCRDs reads every CRD of a directory's YAML files.
func readCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s: run hack/reference/build.sh", dir)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// applyAll creates every object of a manifest.
func applyAll(ctx context.Context, kube client.Client, manifest []byte) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil || len(obj.Object) == 0 {
			continue
		}
		if err := kube.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// runningPods counts the pods Running.
func runningPods(ctx context.Context, kube client.Client) (int, error) {
	pods := &corev1.PodList{}
	if err := kube.List(ctx, pods); err != nil {
		return 0, err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running, nil
}
