// Package controlplane runs a real, local Kubernetes control plane: etcd and
// kube-apiserver (through controller-runtime's envtest) with nodewright's
// CRDs installed, and optionally kube-scheduler and kube-controller-manager
// against it. Tests use it; so does the simulator.
//
// The binaries come from Install (hack/controlplane.sh, nodewright sim), which builds them from the
// k8s.io/kubernetes module pinned in module/k8s.go.mod.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodewright/nodewright/api/crds"
)

// DefaultServiceCIDR is the Service CIDR of the clusters nodewright's
// scenarios describe; kube-dns is at 172.20.0.10.
const DefaultServiceCIDR = "172.20.0.0/16"

// Options configure a control plane. The zero value starts etcd and
// kube-apiserver only, with binaries found by FindAssets.
type Options struct {
	// AssetsDir holds etcd, kube-apiserver and, when asked for,
	// kube-scheduler and kube-controller-manager. Empty means FindAssets.
	AssetsDir string
	// Scheduler starts kube-scheduler, which binds pods to nodes.
	Scheduler bool
	// ControllerManager starts kube-controller-manager: Deployments create
	// pods, PodDisruptionBudgets get a status, garbage is collected.
	ControllerManager bool
	// ServiceCIDR is the cluster's Service IP range; DefaultServiceCIDR
	// when empty.
	ServiceCIDR string
	// StartTimeout bounds the start of each component; one minute when zero.
	StartTimeout time.Duration
	// WorkDir receives the kubeconfig, certificates and component logs. A
	// temporary directory, removed by Stop, when empty.
	WorkDir string
	// FeatureGates are passed to kube-apiserver and kube-scheduler, such
	// as "NominatedNodeNameForExpectation=true".
	FeatureGates []string
	// NodeMonitorGracePeriod is how long kube-controller-manager waits for
	// a node's heartbeat before it marks the node NotReady (its default,
	// 50s, when zero). Simulated kubelets that report less often than real
	// ones need a longer one.
	NodeMonitorGracePeriod time.Duration
	// CRDs are installed instead of nodewright's when not nil (another
	// autoscaler's, to run it on the same control plane).
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// ComponentQPS and ComponentBurst are the API client rates of
// kube-scheduler and kube-controller-manager. Their defaults (50 and 20
// requests per second) would let the control plane itself, not
// nodewright, set the pace of every large workload: the ReplicaSet
// controller creates pods and the scheduler binds them through these
// clients.
const (
	ComponentQPS   = 2000
	ComponentBurst = 4000
)

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Config is an administrator's (system:masters) client configuration.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for the same administrator, for
	// kubectl and the other components.
	KubeconfigPath string

	assets     string
	env        *envtest.Environment
	components []*component
	workDir    string
	ownWorkDir bool
	reaper     *reaper
	// restarted are the kube-apiservers RestartAPIServer started.
	restarted []restartedProcess
}

// Start starts etcd, kube-apiserver with nodewright's CRDs installed and the
// components opts asks for. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	assets, err := opts.assets()
	if err != nil {
		return nil, err
	}
	opts.defaults()
	cp := &ControlPlane{workDir: opts.WorkDir, assets: assets}
	if err := cp.makeWorkDir(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, cp.Stop())
		}
	}()
	crdList := opts.CRDs
	if crdList == nil {
		if crdList, err = crds.All(); err != nil {
			return nil, err
		}
	}
	if cp.reaper, err = startReaper(); err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(assets, crdList, opts); err != nil {
		return nil, err
	}
	if err := cp.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := cp.startComponents(ctx, assets, opts); err != nil {
		return nil, err
	}
	return cp, nil
}

// writeKubeconfig writes the administrator's kubeconfig into the work
// directory.
func (cp *ControlPlane) writeKubeconfig() error {
	cp.KubeconfigPath = filepath.Join(cp.workDir, "kubeconfig")
	if err := os.WriteFile(cp.KubeconfigPath, cp.env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// startComponents starts kube-scheduler and kube-controller-manager, those
// the options ask for.
func (cp *ControlPlane) startComponents(ctx context.Context, assets string, opts Options) error {
	if opts.Scheduler {
		if err := cp.startComponent(ctx, assets, "kube-scheduler", opts.StartTimeout, opts.schedulerArgs()...); err != nil {
			return err
		}
	}
	if opts.ControllerManager {
		return cp.startComponent(ctx, assets, "kube-controller-manager", opts.StartTimeout, opts.controllerManagerArgs()...)
	}
	return nil
}

// assets is the directory of the binaries, checked to hold those the
// options need.
func (opts Options) assets() (string, error) {
	assets := opts.AssetsDir
	if assets == "" {
		var err error
		if assets, err = FindAssets(); err != nil {
			return "", err
		}
	}
	needed := []string{"etcd", "kube-apiserver"}
	if opts.Scheduler {
		needed = append(needed, "kube-scheduler")
	}
	if opts.ControllerManager {
		needed = append(needed, "kube-controller-manager")
	}
	return assets, checkAssets(assets, needed)
}

func (opts *Options) defaults() {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = time.Minute
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = DefaultServiceCIDR
	}
}

// makeWorkDir makes the work directory, a temporary one (removed at Stop)
// when none is given.
func (cp *ControlPlane) makeWorkDir() error {
	if cp.workDir != "" {
		if err := os.MkdirAll(cp.workDir, 0o750); err != nil {
			return fmt.Errorf("creating the control plane's work directory: %w", err)
		}
		return nil
	}
	dir, err := os.MkdirTemp("", "nodewright-controlplane-")
	if err != nil {
		return fmt.Errorf("creating the control plane's work directory: %w", err)
	}
	cp.workDir, cp.ownWorkDir = dir, true
	return nil
}

func (opts Options) schedulerArgs() []string {
	args := []string{"--leader-elect=false", fmt.Sprintf("--kube-api-qps=%d", ComponentQPS), fmt.Sprintf("--kube-api-burst=%d", ComponentBurst)}
	if len(opts.FeatureGates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(opts.FeatureGates, ","))
	}
	return args
}

func (opts Options) controllerManagerArgs() []string {
	args := []string{
		"--leader-elect=false",
		"--controllers=*,-serviceaccount-token",
		"--use-service-account-credentials=false",
		"--service-cluster-ip-range=" + opts.ServiceCIDR,
		fmt.Sprintf("--kube-api-qps=%d", ComponentQPS), fmt.Sprintf("--kube-api-burst=%d", ComponentBurst),
	}
	if opts.NodeMonitorGracePeriod > 0 {
		args = append(args, "--node-monitor-grace-period="+opts.NodeMonitorGracePeriod.String())
	}
	return args
}

// startAPIServer starts etcd and kube-apiserver through envtest and checks
// that the two processes it started still run. envtest picks free ports
// by opening and closing them, and calls a process started once its
// health URL answers: under load another control plane (a parallel test
// package) can take the port in between, and then answer that health
// check while ours has already exited, leaving this kube-apiserver on a
// stranger's etcd. Such a start is stopped and made again on new ports.
func (cp *ControlPlane) startAPIServer(assets string, crdList []*apiextensionsv1.CustomResourceDefinition, opts Options) error {
	const attempts = 3
	var err error
	for range attempts {
		cp.env = newEnvironment(assets, crdList, opts)
		before := children()
		cp.Config, err = cp.env.Start()
		running := cp.watchStarted(before)
		if err != nil {
			return fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err)
		}
		if running["etcd"] && running["kube-apiserver"] {
			return nil
		}
		err = fmt.Errorf("starting etcd and kube-apiserver from %s: envtest called them started, but of the two only %v still run (another process took a port it had picked)", assets, slices.Sorted(maps.Keys(running)))
		if stopErr := cp.env.Stop(); stopErr != nil {
			return errors.Join(err, stopErr)
		}
		cp.env = nil
	}
	return err
}

// newEnvironment is the envtest environment that starts etcd and
// kube-apiserver with the CRDs installed.
func newEnvironment(assets string, crdList []*apiextensionsv1.CustomResourceDefinition, opts Options) *envtest.Environment {
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDs:                     crdList,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	apiServer := env.ControlPlane.GetAPIServer().Configure()
	apiServer.Set("service-cluster-ip-range", opts.ServiceCIDR)
	// Room for thousands of pods created, bound and started at once.
	apiServer.Set("max-requests-inflight", "1600")
	apiServer.Set("max-mutating-requests-inflight", "800")
	if gates := strings.Join(opts.FeatureGates, ","); gates != "" {
		apiServer.Set("feature-gates", gates)
	}
	return env
}

// watchStarted hands the process group leaders started since before (etcd
// and kube-apiserver, started by envtest) to the reaper, and returns
// their names.
func (cp *ControlPlane) watchStarted(before map[int]string) map[string]bool {
	running := map[string]bool{}
	for pid, c := range childProcesses() {
		if _, ok := before[pid]; !ok && c.leader {
			cp.reaper.watch(pid)
			running[c.name] = true
		}
	}
	return running
}

// Stop stops every component, then kube-apiserver and etcd, and removes a
// temporary work directory.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.components) - 1; i >= 0; i-- {
		cp.components[i].stop()
	}
	cp.components = nil
	for _, p := range cp.restarted {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	cp.restarted = nil
	if cp.env != nil {
		errs = append(errs, cp.env.Stop())
		cp.env = nil
	}
	if cp.reaper != nil {
		cp.reaper.stop()
		cp.reaper = nil
	}
	if cp.ownWorkDir {
		errs = append(errs, os.RemoveAll(cp.workDir))
		cp.ownWorkDir = false
	}
	return errors.Join(errs...)
}

// Kubectl returns a kubectl command (built with the control plane) that
// talks to this control plane as its administrator.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if err := checkAssets(cp.assets, []string{"kubectl"}); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(cp.assets, "kubectl"), args...) //nolint:gosec // our own kubectl
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath)
	return cmd, nil
}

// MetricsURL is the /metrics address of a component started with the
// control plane ("kube-scheduler", "kube-controller-manager"); empty when
// it is not running.
func (cp *ControlPlane) MetricsURL(name string) string {
	for _, c := range cp.components {
		if c.name == name {
			return fmt.Sprintf("https://127.0.0.1:%d/metrics", c.port)
		}
	}
	return ""
}

// Components are the programs a control plane may run, as CPUSeconds
// names them.
var Components = []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}

// CPUSeconds is the CPU time each program of the control plane has spent
// so far, by its name in Components.
func (cp *ControlPlane) CPUSeconds() map[string]float64 {
	out := map[string]float64{}
	for _, c := range childProcesses() {
		// The kernel keeps the first 15 bytes of a command's name.
		i := slices.IndexFunc(Components, func(name string) bool { return strings.HasPrefix(name, c.name) })
		if i >= 0 {
			out[Components[i]] += c.cpu
		}
	}
	return out
}

// WorkDir is where the kubeconfig and the component logs are.
func (cp *ControlPlane) WorkDir() string { return cp.workDir }
