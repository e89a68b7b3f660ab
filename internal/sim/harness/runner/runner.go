// Package runner runs nodewright end to end on one machine: a real control
// plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager),
// the simulated AWS account, simulated kubelets and cloud controller
// manager, and the operator, wired as in production.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/aws/interruption"
	"github.com/nodewright/nodewright/internal/manifest"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
)

// Options configure a simulation.
type Options struct {
	// BootDelay is how long an instance takes to boot its kubelet, plus up
	// to BootJitter (the same for an instance every time).
	BootDelay, BootJitter time.Duration
	// CloudControllerManager runs the simulated cloud controller manager,
	// which removes the uninitialized taint CCMDelay after registration.
	CloudControllerManager bool
	CCMDelay               time.Duration
	Operator               operator.Config
	// WorkDir keeps the kubeconfig and logs; a temporary directory when
	// empty.
	WorkDir string
	// AssetsDir holds the control-plane binaries; found automatically when
	// empty.
	AssetsDir string
	Log       logr.Logger
	// Pending and ShuttingDown are how long instances stay in those
	// states.
	Pending, ShuttingDown time.Duration
	// Faults the simulated account injects into every API call.
	Faults simaws.Faults
	// NoCapacity lists offerings ("spot:m5.large:us-east-1a") that fail
	// with InsufficientInstanceCapacity.
	NoCapacity []string
	// NoNominationGate starts kube-apiserver and kube-scheduler without
	// the NominatedNodeNameForExpectation feature gate.
	NoNominationGate bool
	// ControllerProcess runs the controllers as `nodewright controller
	// --cloud aws` from this binary, in their own process, against the
	// account's HTTP endpoint (empty: in this process, on the account's
	// in-process APIs).
	ControllerProcess string
	// Replicas is how many controller processes run (ControllerProcess;
	// 0: one). Set Operator.LeaderElection for more than one, as the
	// chart runs them: KillController then kills the leader.
	Replicas int
	// ControllerEnv is added to the controller process's environment
	// (GOMEMLIMIT=400MiB, say): what a Deployment's env would set for
	// nodewright alone, not for the control plane or this process.
	ControllerEnv []string
	// AWSEndpoint, when set, is an AWS account reached over its API
	// (moto, LocalStack, an account of one's own) that the simulation
	// runs against instead of the simulated one: the controllers run in
	// their own process (ControllerProcess) with --cloud aws against it,
	// and the simulated kubelets join its running instances, reading
	// their user data there. The account must be set up as for an EKS
	// cluster named Operator.ClusterName; faults, capacity and
	// interruptions of the simulated account do not apply.
	AWSEndpoint string
	// DeferControllers leaves nodewright's controllers off until
	// StartControllers (to set the cluster up as another autoscaler left it).
	DeferControllers bool
	// InterruptionNotice is how long after an interruption warning an
	// instance is reclaimed (two minutes on AWS).
	InterruptionNotice time.Duration
	// SpotInterruptions interrupts running spot instances at a rate
	// (none when Count is 0).
	SpotInterruptions SpotInterruptions
	// Settle is how long the cluster must stay done and undisrupted for a
	// watch to end: long enough for a disruption decision to show
	// (default: the validation delay and two disruption rounds).
	Settle time.Duration
}

// SimRepairAfter is how long the simulation bears a failing node.
const SimRepairAfter = time.Minute

// DefaultOptions boot nodes in two seconds with the cloud controller
// manager running and the operator at its reference settings, polling fast.
func DefaultOptions() Options {
	cfg := operator.DefaultConfig()
	cfg.ClusterName = account.ClusterName
	cfg.KubernetesVersion = simaws.KubernetesVersion
	cfg.MetricsAddr, cfg.HealthAddr = "0", "0"
	cfg.BatchIdle, cfg.BatchMax = 500*time.Millisecond, 3*time.Second
	cfg.Lifecycle.Poll = time.Second
	cfg.Disruption.Poll, cfg.Disruption.ValidationDelay = 2*time.Second, 5*time.Second
	// A failing node is replaced after a minute, not half an hour: a
	// scenario shows repair in the time it takes to watch.
	cfg.Repair.Ready, cfg.Repair.Agent, cfg.Repair.Accelerator = SimRepairAfter, SimRepairAfter, SimRepairAfter
	// A repair drain waits 10 s for pods whose eviction is refused.
	cfg.Repair.Drain = 10 * time.Second
	cfg.RepairInterval = 2 * time.Second
	// The account's EventBridge rules feed an interruption queue, and
	// nodewright reads it, as an installation following docs/install-eks.md does.
	cfg.Interruption = interruption.DefaultOptions(InterruptionQueue)
	return Options{InterruptionNotice: interruption.Notice, BootDelay: 2 * time.Second, CloudControllerManager: true, CCMDelay: 2 * time.Second, Operator: cfg, Log: logr.Discard(),
		Pending: time.Second, ShuttingDown: 2 * time.Second,
		// EC2 throttles as it does an account with the default limits.
		Faults: simaws.Faults{RateLimits: 1}}
}

// Sim is a running simulation.
type Sim struct {
	Plane    *controlplane.ControlPlane
	Account  *simaws.Account
	Kube     client.Client
	Kubelets *kubelet.Simulator
	// cache serves the lists of the kubelets, the cloud controller
	// manager and the snapshots: a large simulation would otherwise list
	// every pod several times a second.
	cache    cache.Cache
	requests *metrics.KubeRequests
	figures  Figures
	// AWSEndpoint serves the account in the AWS protocols.
	AWSEndpoint string
	// external says AWSEndpoint is not the simulated account.
	external         bool
	aws              *http.Server
	replicas         []*replica
	controllerPath   string
	controllerEnv    []string
	startControllers func() error
	// controllerKubeconfig impersonates the chart's service account.
	controllerKubeconfig string
	log                  logr.Logger
	controllerConfig     operator.Config
	// machines are what the simulated kubelets run on.
	machines kubelet.Machines
	claims   map[string]bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errs     chan error
	settle   time.Duration
}

// Start starts the control plane, the simulated account, kubelets and
// cloud controller manager, and the operator.
func Start(ctx context.Context, opts Options) (*Sim, error) {
	noCapacity, err := parseOfferings(opts.NoCapacity)
	if err != nil {
		return nil, err
	}
	var gates []string
	if !opts.NoNominationGate {
		gates = append(gates, "NominatedNodeNameForExpectation=true")
	}
	plane, err := controlplane.Start(ctx, controlplane.Options{Scheduler: true, ControllerManager: true, WorkDir: opts.WorkDir, AssetsDir: opts.AssetsDir, FeatureGates: gates,
		NodeMonitorGracePeriod: NodeMonitorGracePeriod})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Sim{Plane: plane, Account: simaws.NewAccount(), cancel: cancel, errs: make(chan error, 4), settle: opts.Settle, log: opts.Log}
	if s.settle == 0 {
		s.settle = opts.Operator.Disruption.ValidationDelay + 2*opts.Operator.Disruption.Poll
	}
	if opts.AWSEndpoint != "" {
		// The external account has no interruption queue of the sim's.
		opts.Operator.Interruption.Queue = ""
	}
	s.seedAccount(opts, noCapacity)
	for _, step := range []func(context.Context, Options) error{s.connect, s.startAWS, s.prepareControllers, s.startNodes} {
		if err := step(ctx, opts); err != nil {
			return nil, errors.Join(err, s.Stop())
		}
	}
	return s, nil
}

// seedAccount seeds the simulated account with the options' faults,
// transitions, interruption queue and offerings without capacity.
func (s *Sim) seedAccount(opts Options, noCapacity [][]string) {
	s.Account.Seed()
	s.Account.SetFaults(opts.Faults)
	s.Account.SetTransitions(opts.Pending, opts.ShuttingDown)
	if opts.Operator.Interruption.Queue != "" {
		s.Account.SetEventQueue(opts.Operator.Interruption.Queue, opts.InterruptionNotice)
	}
	for _, parts := range noCapacity {
		s.Account.SetUnavailable(parts[0], parts[1], parts[2], true)
	}
}

// connect makes the simulation's client and the cache it watches with.
func (s *Sim) connect(ctx context.Context, _ Options) error {
	scheme, err := operator.Scheme()
	if err != nil {
		return err
	}
	if s.Kube, err = client.New(s.Plane.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if s.cache, err = watchCache(s.Plane.Config, scheme); err != nil {
		return err
	}
	if err := kubelet.IndexPods(ctx, s.cache); err != nil {
		return err
	}
	s.goRun(func() error { return s.cache.Start(ctx) })
	if !s.cache.WaitForCacheSync(ctx) {
		return errors.New("the simulation's cache did not sync")
	}
	s.requests, err = metrics.NewKubeRequests(ctrlmetrics.Registry)
	return err
}

// startAWS serves the simulated account over HTTP, or connects to the
// external AWS endpoint the options name, whose instances the simulated
// kubelets then run on.
func (s *Sim) startAWS(ctx context.Context, opts Options) error {
	s.machines = s.Account
	if opts.AWSEndpoint == "" {
		return s.serveAWS()
	}
	if opts.ControllerProcess == "" {
		return errors.New("an external AWS endpoint needs the controllers in their own process")
	}
	s.AWSEndpoint, s.external = opts.AWSEndpoint, true
	var err error
	s.machines, err = s.externalMachines(ctx, opts)
	return err
}

// prepareControllers installs the chart's RBAC and starts the controllers
// (in this process, or in their own), unless the options defer them.
func (s *Sim) prepareControllers(ctx context.Context, opts Options) error {
	var gates []string
	if opts.Operator.PodDeletionCostManagement {
		gates = append(gates, "podDeletionCostManagement")
	}
	if opts.Operator.CapacityBuffer {
		gates = append(gates, "capacityBuffer")
	}
	controllerConfig, err := charts.InstallRBAC(ctx, s.Kube, s.Plane.Config, opts.Operator.ClusterName, gates...)
	if err != nil {
		return err
	}
	s.startControllers = func() error {
		if opts.ControllerProcess != "" {
			s.Account.ServeOverHTTP()
			if s.controllerKubeconfig, err = charts.WriteKubeconfig(s.Plane.KubeconfigPath); err != nil {
				return err
			}
			s.controllerEnv = opts.ControllerEnv
			for range max(opts.Replicas, 1) {
				if err := s.StartController(opts.ControllerProcess, opts.Operator); err != nil {
					return err
				}
			}
			return nil
		}
		mgr, err := Operator(ctx, controllerConfig, opts.Operator, s.Account, opts.Log.WithName("operator"))
		if err != nil {
			return err
		}
		s.goRun(func() error { return mgr.Start(ctx) })
		return nil
	}
	if opts.DeferControllers {
		return nil
	}
	return s.StartControllers()
}

// startNodes runs the simulated kubelets and cloud controller manager,
// and the spot interruptions the options ask for.
func (s *Sim) startNodes(ctx context.Context, opts Options) error {
	s.Kubelets = &kubelet.Simulator{Kube: s.Kube, Reader: s.cache, Account: s.machines, Clock: clock.RealClock{}, BootDelay: opts.BootDelay, BootJitter: opts.BootJitter,
		Heartbeat: Heartbeat, DRADelay: DRADelay, Log: opts.Log.WithName("kubelets")}
	if opts.SpotInterruptions.Count > 0 {
		s.goRun(func() error { return s.interruptSpot(ctx, opts.SpotInterruptions) })
	}
	statePath := filepath.Join(filepath.Dir(s.Plane.KubeconfigPath), simaws.StateFile)
	nodes := &Nodes{Kubelets: s.Kubelets, Every: 500 * time.Millisecond, Log: opts.Log,
		CCM: &kubelet.CloudControllerManager{Kube: s.Kube, Reader: s.cache, Clock: clock.RealClock{}, Delay: opts.CCMDelay, Enabled: opts.CloudControllerManager},
		// Other processes (nodewright doctor --cloud sim) read the
		// account from beside the kubeconfig.
		Tick: func(ctx context.Context) {
			if err := s.Account.SaveState(statePath); err != nil && ctx.Err() == nil {
				opts.Log.Error(err, "saving the simulated account", "path", statePath)
			}
		}}
	s.goRun(func() error { return nodes.Run(ctx) })
	return nil
}

// StartControllers starts nodewright's controllers, when Options.DeferControllers
// left them off.
func (s *Sim) StartControllers() error { return s.startControllers() }

// Heartbeat is how often the simulated kubelets report their nodes Ready
// again, and NodeMonitorGracePeriod how long kube-controller-manager waits
// for it: a real kubelet reports every 10 s, which for 5,000 nodes would
// be 500 writes a second spent on nothing a simulation looks at.
const (
	Heartbeat              = time.Minute
	NodeMonitorGracePeriod = 5 * time.Minute
)

// watchCache caches what the simulation reads: pods, nodes, the
// aws-auth ConfigMap, nodewright's objects and its own events, without
// managed fields.
func watchCache(rc *rest.Config, scheme *runtime.Scheme) (cache.Cache, error) {
	return cache.New(rc, cache.Options{
		Scheme:           scheme,
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Event{}: {Field: fields.OneTermEqualSelector("source", "nodewright")},
		},
	})
}

func (s *Sim) goRun(f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil {
			s.errs <- err
		}
	}()
}

// Stop stops everything and the control plane.
func (s *Sim) Stop() error {
	s.StopController(false)
	if s.aws != nil {
		_ = s.aws.Close()
	}
	s.cancel()
	s.wg.Wait()
	var errs []error
	for {
		select {
		case err := <-s.errs:
			errs = append(errs, err)
			continue
		default:
		}
		break
	}
	errs = append(errs, s.Plane.Stop())
	return errors.Join(errs...)
}

// Apply creates or updates every object of a multi-document YAML manifest,
// as `kubectl apply` would (server-side apply).
func (s *Sim) Apply(ctx context.Context, name string, data []byte) error {
	applied := 0
	for _, d := range manifest.Split(data) {
		if d.Empty() {
			continue
		}
		js, err := yaml.YAMLToJSON(d.Body)
		if err != nil {
			return manifest.Errorf(name, d, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return manifest.Errorf(name, d, err)
		}
		applied++
		if act, ok := s.simulationKinds(ctx)[obj.GroupVersionKind()]; ok {
			if err := act(js); err != nil {
				return manifest.Errorf(name, d, err)
			}
			continue
		}
		if obj.GetNamespace() == "" {
			if mapping, err := s.Kube.RESTMapper().RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version); err == nil && mapping.Scope.Name() == "namespace" {
				obj.SetNamespace("default")
			}
		}
		if err := s.Kube.Patch(ctx, obj, client.Apply, client.FieldOwner("nodewright-sim"), client.ForceOwnership); err != nil {
			return manifest.Errorf(name, d, fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err))
		}
	}
	if applied == 0 {
		return fmt.Errorf("%s: no documents to apply", name)
	}
	return nil
}

// simulationKinds are the simulation's own kinds of document, which act
// on the simulated kubelets and account instead of being applied.
func (s *Sim) simulationKinds(ctx context.Context) map[schema.GroupVersionKind]func([]byte) error {
	return map[schema.GroupVersionKind]func([]byte) error{
		kubeletFailureKind: func(js []byte) error { return s.failKubelets(ctx, js) },
		interruptionKind:   s.interrupt,
		capacityKind:       s.setCapacity,
	}
}

// kubeletFailureKind is the simulation's own kind of document: it breaks
// the kubelets of nodes of a NodePool (see KubeletFailure).
var kubeletFailureKind = schema.GroupVersionKind{Group: "sim.nodewright.dev", Version: "v1", Kind: "KubeletFailure"}

// KubeletFailure makes the kubelets of Nodes nodes (1 when 0) of NodePool
// report Conditions, e.g. {Ready: "False"}, {KernelReady: "False"} or,
// with a reason, {AcceleratedHardwareReady: "False/NvidiaXID63Error"}:
//
//	apiVersion: sim.nodewright.dev/v1
//	kind: KubeletFailure
//	spec: {nodePool: general, nodes: 1, conditions: {Ready: "False"}}
type KubeletFailure struct {
	Spec struct {
		NodePool   string            `json:"nodePool"`
		Nodes      int               `json:"nodes"`
		Conditions map[string]string `json:"conditions"`
	} `json:"spec"`
}

// failKubelets carries out a KubeletFailure on the NodePool's nodes that
// run healthy now, by name.
func (s *Sim) failKubelets(ctx context.Context, js []byte) error {
	f := &KubeletFailure{}
	if err := json.Unmarshal(js, f); err != nil {
		return fmt.Errorf("KubeletFailure: %w", err)
	}
	if f.Spec.NodePool == "" || len(f.Spec.Conditions) == 0 {
		return errors.New("KubeletFailure: spec.nodePool and spec.conditions are required, e.g. {nodePool: general, conditions: {Ready: \"False\"}}")
	}
	var conds []string
	for _, k := range slices.Sorted(maps.Keys(f.Spec.Conditions)) {
		conds = append(conds, k+"="+f.Spec.Conditions[k])
	}
	nodes := &corev1.NodeList{}
	if err := s.Kube.List(ctx, nodes, client.MatchingLabels{v1.LabelNodePool: f.Spec.NodePool}); err != nil {
		return err
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	want := max(f.Spec.Nodes, 1)
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if want == 0 {
			break
		}
		if !n.DeletionTimestamp.IsZero() || n.Annotations[kubelet.ConditionsAnnotation] != "" {
			continue
		}
		before := n.DeepCopy()
		metav1.SetMetaDataAnnotation(&n.ObjectMeta, kubelet.ConditionsAnnotation, strings.Join(conds, ","))
		if err := s.Kube.Patch(ctx, n, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("KubeletFailure on node %s: %w", n.Name, err)
		}
		want--
	}
	if want > 0 {
		return fmt.Errorf("KubeletFailure: NodePool %s has %d healthy nodes, fewer than spec.nodes %d", f.Spec.NodePool, max(f.Spec.Nodes, 1)-want, max(f.Spec.Nodes, 1))
	}
	return nil
}

// Step is one manifest a simulation applies, after the previous step has
// settled.
type Step struct {
	Name     string
	Manifest []byte
	// Until, when set, is what the step waits for besides a settled
	// cluster (up to the timeout): a change the step expects, which a
	// loaded machine may bring later than the settle time.
	Until func(*Snapshot) bool
}

// StepResult is how a step ended, and the disruptions during it.
type StepResult struct {
	Name        string    `json:"name"`
	Snapshot    *Snapshot `json:"snapshot"`
	Disruptions []string  `json:"disruptions"`
	Figures     Figures   `json:"figures"`
}

// Figures measure a step: how fast it ran and what it cost the API server.
type Figures struct {
	// FirstNodeReady and AllRunning are the times from applying the step
	// to the first Ready NodeClaim and to every pod Running (zero: never).
	FirstNodeReady time.Duration `json:"firstNodeReady"`
	AllRunning     time.Duration `json:"allRunning"`
	// NodeClaims counts every NodeClaim seen during the step, deleted
	// ones too.
	NodeClaims int `json:"nodeClaims"`
	// Requests are nodewright's requests to the API server during the
	// step, by "verb resource".
	Requests map[string]float64 `json:"requests"`
	// RequestSeconds are the seconds nodewright waited for the API
	// server's answers during the step (watches left out), by "verb
	// resource".
	RequestSeconds map[string]float64 `json:"requestSeconds,omitempty"`
	// APIServerRequests are every client's requests to kube-apiserver
	// during the step (watches left out), by "verb resource[/subresource]",
	// as kube-apiserver counts them; APIServerWatchEvents the watch events
	// it sent, by resource, and their bytes under "RESOURCE bytes".
	APIServerRequests    map[string]float64 `json:"apiServerRequests,omitempty"`
	APIServerWatchEvents map[string]float64 `json:"apiServerWatchEvents,omitempty"`
	// PeakRSS is the peak resident memory of the process that ran the
	// controllers, in bytes, and Process names it.
	PeakRSS int64  `json:"peakRSSBytes"`
	Process string `json:"process"`
	// CPUSeconds is the CPU time (user and system) that process spent
	// during the step.
	CPUSeconds float64 `json:"cpuSeconds"`
	// ControlPlaneCPUSeconds is the CPU time each program of the control
	// plane spent during the step, by controlplane.Components' names.
	ControlPlaneCPUSeconds map[string]float64 `json:"controlPlaneCPUSeconds"`
	// AWSCalls and AWSThrottled are the calls to the simulated AWS
	// account during the step (attempts, retries included) and those it
	// throttled, by action.
	AWSCalls     map[string]int `json:"awsCalls"`
	AWSThrottled map[string]int `json:"awsThrottled"`
	// ExternalAWS is the endpoint of the account the step ran against
	// when it is not the simulated one: its calls are not counted.
	ExternalAWS string `json:"externalAWS,omitempty"`
}

// RequestsPerNodeClaim is nodewright's requests to the API server over
// the NodeClaims the step saw.
func (f Figures) RequestsPerNodeClaim() float64 {
	if f.NodeClaims == 0 {
		return 0
	}
	total := 0.0
	for _, n := range f.Requests {
		total += n
	}
	return total / float64(f.NodeClaims)
}

// RunSteps applies each step in turn, watching each until it settles
// (every pod Running on Ready NodeClaims, no disruption in flight) or
// times out; timeout and stall apply to each step. A step that ends with
// pods not Running or NodeClaims not Ready stops the run with a
// *NotConvergedError, after the results so far.
func (s *Sim) RunSteps(ctx context.Context, steps []Step, timeout, stall time.Duration, progress func(*Snapshot)) ([]StepResult, error) {
	var out []StepResult
	seen := 0
	for _, st := range steps {
		before, secondsBefore := s.requestCounts(ctx)
		planeBeforeRequests, watchBefore, _ := s.planeRequests(ctx) // unread metrics: no such figures
		awsBefore, cpuBefore, planeBefore := s.Account.Stats(), s.cpuSeconds(), s.Plane.CPUSeconds()
		if err := s.Apply(ctx, st.Name, st.Manifest); err != nil {
			return out, err
		}
		s.figures, s.claims = Figures{}, nil
		snap, err := s.watch(ctx, timeout, stall, progress, st.Until)
		if err != nil {
			return out, err
		}
		res := StepResult{Name: st.Name, Snapshot: snap, Disruptions: []string{}, Figures: s.figures}
		counts, seconds := s.requestCounts(ctx)
		res.Figures.Requests, res.Figures.RequestSeconds = since(counts, before), since(seconds, secondsBefore)
		if planeRequests, watchEvents, err := s.planeRequests(ctx); err == nil && planeBeforeRequests != nil {
			res.Figures.APIServerRequests, res.Figures.APIServerWatchEvents = since(planeRequests, planeBeforeRequests), since(watchEvents, watchBefore)
		}
		if s.external {
			res.Figures.ExternalAWS = s.AWSEndpoint
		} else {
			awsAfter := s.Account.Stats()
			res.Figures.AWSCalls, res.Figures.AWSThrottled = since(awsAfter.CallsBy, awsBefore.CallsBy), since(awsAfter.ThrottledBy, awsBefore.ThrottledBy)
		}
		res.Figures.PeakRSS, res.Figures.Process = peakRSS(), s.processName()
		res.Figures.CPUSeconds = s.cpuSeconds() - cpuBefore
		res.Figures.ControlPlaneCPUSeconds = map[string]float64{}
		for name, spent := range s.Plane.CPUSeconds() {
			res.Figures.ControlPlaneCPUSeconds[name] = spent - planeBefore[name]
		}
		if len(s.replicas) > 0 {
			res.Figures.PeakRSS = s.controllerRSS()
		}
		if len(snap.Disruptions) > seen {
			res.Disruptions = snap.Disruptions[seen:]
			seen = len(snap.Disruptions)
		}
		out = append(out, res)
		if !snap.Done() {
			return out, &NotConvergedError{Step: st.Name, Snapshot: snap}
		}
	}
	return out, nil
}

// since is the values of now that grew after before.
func since[N int | float64](now, before map[string]N) map[string]N {
	out := map[string]N{}
	for k, n := range now {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// requestCounts are nodewright's requests to the API server so far, and
// the seconds it waited for their answers, by "verb resource" (nil when
// they cannot be read).
func (s *Sim) requestCounts(ctx context.Context) (counts, seconds map[string]float64) {
	if len(s.replicas) > 0 {
		counts, seconds, err := s.processRequests(ctx)
		if err != nil {
			return nil, nil
		}
		return counts, seconds
	}
	return s.requests.Counts(), s.requests.Seconds()
}

// peakRSS is this process's peak resident memory (VmHWM), in bytes.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return PeakRSSFromStatus(string(data))
}

// PeakRSSFromStatus reads VmHWM from a /proc/PID/status, in bytes.
func PeakRSSFromStatus(status string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// DRADelay is how long a simulated DRA driver's kubelet plugin runs on a
// node before the node's devices are published.
const DRADelay = 3 * time.Second
