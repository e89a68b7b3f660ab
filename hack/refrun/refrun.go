// Package refrun runs the reference autoscaler for the benchmarks: its KWOK
// cloud provider and the KWOK controller (built into bin/reference by
// hack/reference/build.sh) on a control plane of their own with the
// reference's CRDs.
package refrun

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
)

// Options say where the programs are and how to run them.
type Options struct {
	// Assets is the control plane's directory.
	Assets string
	// Dir is bin/reference: the programs, CRDs and KWOK stages.
	Dir string
	// WorkDir, when set, keeps the control plane's and the programs' logs.
	WorkDir string
	// InstanceTypes, when set, is the instance-types file the provider
	// chooses from instead of its own.
	InstanceTypes string
}

// Reference is the reference running on its control plane.
type Reference struct {
	Plane *controlplane.ControlPlane
	// Kube reads the cluster; its scheme knows karpenter.sh/v1, whose
	// NodePool and NodeClaim nodewright shares with the reference.
	Kube client.Client
	// Provider is the reference's process.
	Provider *exec.Cmd
	kwok     *exec.Cmd
	// Logs is the directory of the programs' logs.
	Logs string
}

// Start starts a control plane (with kube-scheduler and
// kube-controller-manager) with the reference's CRDs, KWOK and the
// reference's KWOK provider.
func Start(ctx context.Context, opts Options) (*Reference, error) {
	crds, err := readCRDs(filepath.Join(opts.Dir, "crds"))
	if err != nil {
		return nil, err
	}
	popts := controlplane.Options{AssetsDir: opts.Assets, Scheduler: true, ControllerManager: true, CRDs: crds, WorkDir: opts.WorkDir}
	if opts.WorkDir != "" {
		if err := os.MkdirAll(opts.WorkDir, 0o750); err != nil {
			return nil, err
		}
	}
	plane, err := controlplane.Start(ctx, popts)
	if err != nil {
		return nil, err
	}
	r := &Reference{Plane: plane, Logs: filepath.Dir(plane.KubeconfigPath)}
	scheme, err := operator.Scheme()
	if err != nil {
		r.Stop()
		return nil, err
	}
	if r.Kube, err = client.New(plane.Config, client.Options{Scheme: scheme}); err != nil {
		r.Stop()
		return nil, err
	}
	if r.kwok, err = startKWOK(ctx, opts.Dir, plane.KubeconfigPath, r.Logs); err != nil {
		r.Stop()
		return nil, err
	}
	if r.Provider, err = startProvider(ctx, opts, plane.KubeconfigPath, r.Logs); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// Stop stops the programs and the control plane.
func (r *Reference) Stop() {
	for _, p := range []*exec.Cmd{r.Provider, r.kwok} {
		if p != nil {
			stopProcess(p)
		}
	}
	_ = r.Plane.Stop()
}

// Log is the provider's log file.
func (r *Reference) Log() string { return filepath.Join(r.Logs, "reference.log") }

// Exited says whether the provider has stopped.
func (r *Reference) Exited() bool { return r.Provider.ProcessState != nil }

// AwaitRunning waits until at least pods pods are Running, the deadline
// passes or the provider exits.
func (r *Reference) AwaitRunning(ctx context.Context, pods int, deadline time.Time) error {
	for {
		running, err := RunningPods(ctx, r.Kube)
		switch {
		case err != nil:
			return err
		case running >= pods:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("the reference: %d of %d pods Running by the deadline", running, pods)
		case r.Exited():
			return fmt.Errorf("the reference's provider exited: see %s", r.Log())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Figures are the provider process's peak RSS and CPU seconds so far.
func (r *Reference) Figures() (peakRSS int64, cpuSeconds float64) {
	proc := "/proc/" + strconv.Itoa(r.Provider.Process.Pid)
	if data, err := os.ReadFile(proc + "/status"); err == nil {
		peakRSS = runner.PeakRSSFromStatus(string(data))
	}
	return peakRSS, controlplane.ProcessCPUSeconds(r.Provider.Process.Pid)
}

// startKWOK runs KWOK on the nodes the reference's KWOK provider makes,
// with KWOK's fast node and pod stages.
func startKWOK(ctx context.Context, dir, kubeconfig, logs string) (*exec.Cmd, error) {
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

// startProvider runs the reference's KWOK provider against the control
// plane, without leader election.
func startProvider(ctx context.Context, opts Options, kubeconfig, logs string) (*exec.Cmd, error) {
	metrics, err := controlplane.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	health, err := controlplane.FreePort(ctx)
	if err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "SYSTEM_NAMESPACE=kube-system"}
	args := []string{"--disable-leader-election", "--metrics-port=" + strconv.Itoa(metrics), "--health-probe-port=" + strconv.Itoa(health), "--log-level=error"}
	if opts.InstanceTypes != "" {
		args = append(args, "--instance-types-file-path="+opts.InstanceTypes)
	}
	return startLogged(filepath.Join(logs, "reference.log"), filepath.Join(opts.Dir, "karpenter-kwok"), env, args...)
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

// Apply creates every object of a manifest, or updates it where it
// exists.
func Apply(ctx context.Context, kube client.Client, manifest []byte) error {
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
		err = kube.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			old := &unstructured.Unstructured{}
			old.SetGroupVersionKind(obj.GroupVersionKind())
			if err = kube.Get(ctx, client.ObjectKeyFromObject(obj), old); err == nil {
				obj.SetResourceVersion(old.GetResourceVersion())
				err = kube.Update(ctx, obj)
			}
		}
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// RunningPods counts the pods Running.
func RunningPods(ctx context.Context, kube client.Client) (int, error) {
	pods := &corev1.PodList{}
	if err := kube.List(ctx, pods); err != nil {
		return 0, err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	return running, nil
}
