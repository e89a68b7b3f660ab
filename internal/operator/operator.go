// Package operator assembles nodewright's controllers into one
// controller-runtime manager, for AWS or the simulated account alike.
package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/interruption"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/controllers/capacitybuffer"
	"github.com/nodewright/nodewright/internal/controllers/deletioncost"
	"github.com/nodewright/nodewright/internal/controllers/disruption"
	"github.com/nodewright/nodewright/internal/controllers/node/repair"
	"github.com/nodewright/nodewright/internal/controllers/node/termination"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/gc"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/lifecycle"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/podevents"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/reboot"
	"github.com/nodewright/nodewright/internal/controllers/nodeoverlay"
	"github.com/nodewright/nodewright/internal/controllers/nodepool"
	"github.com/nodewright/nodewright/internal/controllers/provisioning"
	"github.com/nodewright/nodewright/internal/controllers/static"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/operator/rbac"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state/bufferroom"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Config is everything the controllers are configured with.
type Config struct {
	ClusterName string
	// ClusterEndpoint is the API server endpoint nodes join; empty: the
	// one EKS reports.
	ClusterEndpoint   string
	Region            string
	KubernetesVersion string
	// AMIAliasParameterRoot is where aliases' SSM parameters are read
	// (empty: /aws/service, where AWS publishes them).
	AMIAliasParameterRoot string
	Lifecycle             lifecycle.Options
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints (--scheduler-config), for the provisioner and
	// disruption.
	DefaultSpread scheduling.SpreadDefaults
	// IgnoreDRARequests leaves pods with resource claims unplanned
	// (--ignore-dra-requests, Karpenter's default).
	IgnoreDRARequests bool
	// Policy is how NodePools' minValues and pods' preferences are read
	// (--min-values-policy, --preference-policy), in provisioning, static
	// NodePools and disruption alike.
	Policy scheduling.Policy
	// VMMemoryOverheadPercent is the share of an instance's memory the
	// VM keeps from the node (--vm-memory-overhead-percent); ReservedENIs
	// are the default network card's interfaces the VPC CNI does not give
	// pods (--reserved-enis, custom networking).
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	// IsolatedVPC: the cluster's VPC reaches only AWS services with a VPC
	// endpoint, so the Pricing API is not called (--isolated-vpc).
	IsolatedVPC bool
	// BatchIdle and BatchMax bound the provisioner's batching window.
	BatchIdle, BatchMax time.Duration
	// UnavailableOfferingTTL is how long an offering that ran out of
	// capacity (or was interrupted) is left out of launches and plans.
	UnavailableOfferingTTL time.Duration
	// NodeClassRefresh is how often EC2NodeClasses are resolved again;
	// InstanceTypeTTL how long instance types and prices are cached.
	NodeClassRefresh, InstanceTypeTTL time.Duration
	// MetricsAddr and HealthAddr serve /metrics and /healthz, /readyz
	// ("0" disables them).
	MetricsAddr, HealthAddr string
	// Profiling serves Go's profiles (net/http/pprof) under /debug/pprof/
	// on the metrics address.
	Profiling      bool
	LeaderElection bool
	// LeaderElectionNamespace holds the leader lease.
	LeaderElectionNamespace string
	// LeaseDuration is how long replicas wait after the leader last
	// renewed before one takes over; RenewDeadline how long the leader
	// tries to renew before it stops leading; RetryPeriod how often
	// replicas try. A leader that stops releases the lease, so the next
	// takes over within RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// SkipNameValidation lets several managers run in one process (tests).
	SkipNameValidation bool
	// SkipUserDataValidation launches nodes even when their user data
	// would keep them from registering (only to reproduce S1 and S3).
	SkipUserDataValidation bool
	// GCInterval is how often orphaned instances and NodeClaims are
	// collected; GCGrace how old an instance without a NodeClaim must be.
	GCInterval, GCGrace time.Duration
	// Disruption tunes how nodes are removed and replaced.
	Disruption disruption.Config
	// Repair replaces nodes unhealthy for longer than its tolerations,
	// looking every RepairInterval; NodeRepair false turns it off.
	NodeRepair     bool
	RepairInterval time.Duration
	Repair         nodepoolhealth.Tolerations
	// LegacyNodeRepair repairs outside disruption: the NodeClaim of a
	// node unhealthy past its toleration is deleted at once, without
	// budgets, replacements launched first or reboots.
	LegacyNodeRepair bool
	// Interruption consumes an SQS queue of EC2 and AWS Health events
	// (no queue: off).
	Interruption interruption.Options
	// LaunchBatching launches the NodeClaims of a decision that would
	// launch identically in one call (cloudprovider.AnnotationLaunchBatch).
	LaunchBatching bool
	// NominatePods sets pending pods' status.nominatedNodeName to the node
	// planned for them once it exists, so kube-scheduler follows the plan.
	NominatePods bool
	// NominatePodsMax is the most pods that may wait for a node for a
	// decision's pods to be nominated (0: no limit): past it the hint
	// costs kube-scheduler more than it saves (provisioning.Nominator).
	NominatePodsMax int
	// NodeClassCEL is the AWS feature gate of the same name: EC2NodeClass
	// spec.kubelet may hold CEL expressions.
	NodeClassCEL bool
	// PodDeletionCostManagement is the feature gate of the same name:
	// nodewright writes controller.kubernetes.io/pod-deletion-cost on the
	// ReplicaSet pods of its nodes.
	PodDeletionCostManagement bool
	// SpotToSpotConsolidation is the feature gate of the same name: spot
	// nodes may be replaced by cheaper spot nodes.
	SpotToSpotConsolidation bool
	// CapacityBuffer is the feature gate of the same name: CapacityBuffers
	// (autoscaling.x-k8s.io) keep room for pods to come.
	CapacityBuffer bool
	// KubeQPS and KubeBurst bound the requests per second to the API
	// server (client-go's token bucket).
	KubeQPS   float32
	KubeBurst int
	// Concurrency is how many objects each controller reconciles at once
	// (distinct NodeClaims launch, register and terminate in parallel).
	Concurrency int
}

// DefaultConfig is the reference behaviour.
func DefaultConfig() Config {
	return Config{
		Region: "us-east-1", KubernetesVersion: "1.34", Lifecycle: lifecycle.DefaultOptions(),
		BatchIdle: time.Second, BatchMax: 10 * time.Second, NodeClassRefresh: 5 * time.Minute, InstanceTypeTTL: 5 * time.Minute,
		GCInterval: time.Minute, GCGrace: 30 * time.Second, UnavailableOfferingTTL: provider.UnavailableOfferingTTL,
		MetricsAddr: ":8080", HealthAddr: ":8081", LeaderElectionNamespace: "kube-system",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Disruption: disruption.DefaultConfig(), NominatePods: true, NominatePodsMax: 100, LaunchBatching: true,
		NodeRepair: true, RepairInterval: 10 * time.Second, Repair: nodepoolhealth.DefaultTolerations(), Interruption: interruption.DefaultOptions(""),
		KubeQPS: 200, KubeBurst: 300, Concurrency: 50, VMMemoryOverheadPercent: instancetypes.DefaultVMMemoryOverheadPercent,
	}
}

// Clouds are the AWS APIs: the SDK's clients, or the simulated account's.
type Clouds struct {
	EC2     sdk.EC2
	SSM     sdk.SSM
	IAM     sdk.IAM
	EKS     sdk.EKS
	Pricing sdk.Pricing
	// SQS reads the interruption queue (only with Config.Interruption).
	SQS sdk.SQS
}

// Scheme knows the Kubernetes types and nodewright's, CapacityBuffer
// included.
func Scheme() (*runtime.Scheme, error) { return scheme(true) }

// scheme knows the Kubernetes types and nodewright's; CapacityBuffer only
// with buffers: the controllers' cache lists what its scheme knows, so
// with the CapacityBuffer feature gate off no buffer is read.
func scheme(buffers bool) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	adds := []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme}
	if buffers {
		adds = append(adds, v1beta1.AddToScheme)
	}
	for _, add := range adds {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New builds the manager with every controller registered; Start runs it.
func New(ctx context.Context, rc *rest.Config, cfg Config, clouds Clouds, clk clock.WithTicker, log logr.Logger) (manager.Manager, error) {
	if cfg.UnavailableOfferingTTL <= 0 {
		return nil, fmt.Errorf("--unavailable-offering-ttl must be a positive duration, got %s", cfg.UnavailableOfferingTTL)
	}
	if cfg.NodeRepair {
		if err := cfg.Repair.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.Interruption.Queue != "" && clouds.SQS == nil {
		return nil, fmt.Errorf("--interruption-queue %s: no SQS client", cfg.Interruption.Queue)
	}
	series := &clusterSeries{}
	mgr, err := newManager(ctx, rc, cfg, series, log)
	if err != nil {
		return nil, err
	}
	w, err := newWiring(ctx, mgr, cfg, clouds, clk, series, log)
	if err != nil {
		return nil, err
	}
	for _, setup := range []func(context.Context) error{w.cloudControllers, w.nodeClaimControllers, w.deciders, w.nodeControllers} {
		if err := setup(ctx); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// newManager makes the controller manager, with its client's rate limits
// and request metrics, and checks the identity has the chart's RBAC.
func newManager(ctx context.Context, rc *rest.Config, cfg Config, series *clusterSeries, log logr.Logger) (manager.Manager, error) {
	scheme, err := scheme(cfg.CapacityBuffer)
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = cfg.KubeQPS, cfg.KubeBurst
	requests, err := metrics.NewKubeRequests(ctrlmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	requests.Wrap(rc)
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme: scheme,
		// The cache keeps what the controllers read (newTrim).
		Cache:                   cache.Options{DefaultTransform: newTrim()},
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr, ExtraHandlers: profiling(cfg.Profiling), FilterProvider: series.filter},
		HealthProbeBindAddress:  cfg.HealthAddr,
		LeaderElection:          cfg.LeaderElection,
		LeaderElectionID:        "nodewright-leader",
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		// The lease is released on the way out (the process exits once
		// the manager stops), so a rolling update hands over at once
		// instead of after LeaseDuration.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 durationOrNil(cfg.LeaseDuration),
		RenewDeadline:                 durationOrNil(cfg.RenewDeadline),
		RetryPeriod:                   durationOrNil(cfg.RetryPeriod),
		// A replica that is not the leader fills its controllers' caches
		// while it waits, so it acts as soon as it leads.
		Controller: config.Controller{SkipNameValidation: &cfg.SkipNameValidation, MaxConcurrentReconciles: cfg.Concurrency, EnableWarmup: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	leaseNamespace := ""
	if cfg.LeaderElection {
		leaseNamespace = cfg.LeaderElectionNamespace
	}
	var gated []rbacv1.PolicyRule
	if cfg.PodDeletionCostManagement {
		gated = append(gated, rbac.PodDeletionCost)
	}
	if cfg.CapacityBuffer {
		gated = append(gated, rbac.CapacityBuffer...)
	}
	if err := rbac.Check(ctx, mgr.GetClient(), leaseNamespace, gated...); err != nil {
		return nil, err
	}
	if err := checkCRDs(mgr.GetRESTMapper(), cfg.CapacityBuffer); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, listing.Index(ctx, mgr.GetFieldIndexer())
}

// wiring is what the controllers share: the manager, the AWS cloud
// provider, the recorder, the metrics and the registration record.
type wiring struct {
	mgr           manager.Manager
	cfg           Config
	clouds        Clouds
	clk           clock.WithTicker
	log           logr.Logger
	resolver      *nodeclass.Resolver
	launcher      *provider.Launcher
	cloud         *provider.CloudProvider
	recorder      record.EventRecorder
	metrics       *metrics.Metrics
	registrations *nodepoolhealth.Registrations
	drifts        *nodepoolhealth.DriftReplacements
	// rooms is what the provisioner found of the CapacityBuffers' pods;
	// nil with the gate off.
	rooms  *bufferroom.Rooms
	cached listing.Cached
	// nominator remembers the provisioner's plans and nominates their
	// pods; nil when pods are not nominated.
	nominator *provisioning.Nominator
}

func newWiring(ctx context.Context, mgr manager.Manager, cfg Config, clouds Clouds, clk clock.WithTicker, series *clusterSeries, log logr.Logger) (*wiring, error) {
	cluster, err := provider.ClusterFromEKS(ctx, clouds.EKS, cfg.ClusterName)
	if err != nil {
		return nil, err
	}
	if cfg.ClusterEndpoint != "" {
		cluster.Endpoint = cfg.ClusterEndpoint
	}
	m, err := metrics.New(ctrlmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	series.series.Store(clusterSeriesOf(mgr, clk, m))
	if err := observePods(ctx, mgr, m); err != nil {
		return nil, err
	}
	w := &wiring{mgr: mgr, cfg: cfg, clouds: clouds, clk: clk, log: log, recorder: mgr.GetEventRecorderFor("nodewright"), metrics: m,
		registrations: nodepoolhealth.NewRegistrations(), drifts: nodepoolhealth.NewDriftReplacements(), cached: listing.Cached{Client: mgr.GetClient(), Cache: mgr.GetCache()},
		resolver: &nodeclass.Resolver{EC2: clouds.EC2, SSM: clouds.SSM, IAM: clouds.IAM, ClusterName: cfg.ClusterName, Region: cfg.Region, KubernetesVersion: cfg.KubernetesVersion,
			AliasParameterRoot: cfg.AMIAliasParameterRoot}}
	if cfg.NominatePods {
		w.nominator = &provisioning.Nominator{Client: mgr.GetClient(), Clock: clk, TTL: cfg.Lifecycle.RegistrationTimeout + time.Minute, MaxPods: cfg.NominatePodsMax}
	}
	w.launcher = provider.New(clouds.EC2, w.resolver, cluster, clk)
	w.launcher.SetUnavailableOfferingTTL(cfg.UnavailableOfferingTTL)
	w.cloud = &provider.CloudProvider{
		Kube:                    mgr.GetClient(),
		Launcher:                w.launcher,
		Metrics:                 w.metrics,
		VMMemoryOverheadPercent: &cfg.VMMemoryOverheadPercent,
		ReservedENIs:            cfg.ReservedENIs,
		Types: &instancetypes.Cache{
			Provider: &instancetypes.Provider{EC2: clouds.EC2, Pricing: clouds.Pricing, Region: cfg.Region, Clock: clk, IsolatedVPC: cfg.IsolatedVPC},
			Clock:    clk, TTL: cfg.InstanceTypeTTL,
		},
	}
	w.launcher.Specs = w.cloud.Types.Specs
	w.launcher.Recorded = w.cloud.RecordedInBatch
	return w, nil
}

// cloudControllers are AWS's own: EC2NodeClass status, and the
// interruption queue when there is one.
func (w *wiring) cloudControllers(ctx context.Context) error {
	status := &nodeclass.Controller{
		Client: w.mgr.GetClient(), Resolver: w.resolver, Recorder: w.recorder, Clock: w.clk, Refresh: w.cfg.NodeClassRefresh,
		SkipUserDataValidation: w.cfg.SkipUserDataValidation, LaunchTemplates: w.launcher, Prices: w.cloud.Types, Metrics: w.metrics,
		KubeletExpressions: w.cfg.NodeClassCEL, Specs: w.cloud.Types.Specs,
	}
	if err := status.SetupWithManager(w.mgr); err != nil {
		return err
	}
	if w.cfg.Interruption.Queue == "" {
		return nil
	}
	consumer := &interruption.Controller{
		Client: w.mgr.GetClient(), SQS: w.clouds.SQS, Offerings: w.launcher, Recorder: w.recorder, Clock: w.clk, Metrics: w.metrics,
		Log: w.log.WithName("interruption"), Options: w.cfg.Interruption,
	}
	return consumer.SetupWithManager(ctx, w.mgr)
}

// nodeClaimControllers carry NodeClaims and nodes through their lives:
// the lifecycle, pod events, termination and garbage collection.
func (w *wiring) nodeClaimControllers(ctx context.Context) error {
	life := &lifecycle.Controller{
		Client: w.mgr.GetClient(), APIReader: w.mgr.GetAPIReader(), Cloud: w.cloud, Recorder: w.recorder, Clock: w.clk, Options: w.lifecycleOptions(), Metrics: w.metrics,
		Registrations: w.registrations,
	}
	if w.nominator != nil {
		life.Nominations = w.nominator
	}
	if err := life.SetupWithManager(ctx, w.mgr); err != nil {
		return err
	}
	if err := (&podevents.PodEvents{Client: w.mgr.GetClient(), Clock: w.clk, Dedupe: 5 * time.Second}).SetupWithManager(w.mgr); err != nil {
		return err
	}
	terminator := &termination.Controller{
		Client: w.mgr.GetClient(), APIReader: w.mgr.GetAPIReader(), Cloud: w.cloud, Recorder: w.recorder, Clock: w.clk, Poll: w.cfg.Lifecycle.Poll,
		Drainer: &drain.Drainer{Client: w.mgr.GetClient(), Recorder: w.recorder, Clock: w.clk, Metrics: w.metrics},
	}
	if err := terminator.SetupWithManager(w.mgr); err != nil {
		return err
	}
	return w.mgr.Add(&gc.GarbageCollector{
		Client: w.mgr.GetClient(), Cloud: w.cloud, Recorder: w.recorder, Clock: w.clk,
		Interval: w.cfg.GCInterval, Grace: w.cfg.GCGrace, Log: w.log.WithName("gc"),
	})
}

// deciders decide from the snapshot and write intent: the provisioner,
// static NodePools and disruption.
func (w *wiring) deciders(context.Context) error {
	if w.nominator != nil {
		if err := w.nominator.SetupWithManager(w.mgr); err != nil {
			return err
		}
	}
	if w.cfg.CapacityBuffer {
		w.rooms = bufferroom.New()
		buffers := &capacitybuffer.Controller{Client: w.mgr.GetClient(), Clock: w.clk, Rooms: w.rooms, Resync: 30 * time.Second}
		if err := buffers.SetupWithManager(w.mgr); err != nil {
			return err
		}
	}
	prov := &provisioning.Provisioner{
		Client: w.cached, NodeClasses: w.cloud, Recorder: w.recorder,
		Batcher: provisioning.NewBatcher(w.cfg.BatchIdle, w.cfg.BatchMax, w.clk), Retry: 2 * time.Second, Clock: w.clk, Metrics: w.metrics, Log: w.log.WithName("provisioner"),
		Registrations: w.registrations, Nominator: w.nominator, DefaultSpread: w.cfg.DefaultSpread, IgnoreDRARequests: w.cfg.IgnoreDRARequests, Policy: w.cfg.Policy, Rooms: w.rooms, LaunchBatching: w.cfg.LaunchBatching,
	}
	if err := prov.SetupWithManager(w.mgr); err != nil {
		return err
	}
	keeper := &static.Controller{
		Client: w.cached, NodeClasses: w.cloud, Registrations: w.registrations, Recorder: w.recorder, Clock: w.clk,
		Metrics: w.metrics, Log: w.log.WithName("static"), Retry: 30 * time.Second, LaunchBatching: w.cfg.LaunchBatching, Policy: w.cfg.Policy,
	}
	if err := keeper.SetupWithManager(w.mgr); err != nil {
		return err
	}
	dcfg := w.cfg.Disruption
	dcfg.DefaultSpread = w.cfg.DefaultSpread
	dcfg.IgnoreDRARequests = w.cfg.IgnoreDRARequests
	dcfg.Policy = w.cfg.Policy
	dcfg.PodDeletionCostManagement = w.cfg.PodDeletionCostManagement
	dcfg.SpotToSpot = w.cfg.SpotToSpotConsolidation
	if w.cfg.NodeRepair && !w.cfg.LegacyNodeRepair {
		dcfg.Repair = w.cfg.Repair.Policies()
	}
	if w.cfg.PodDeletionCostManagement {
		costs := &deletioncost.Controller{Client: w.cached, Clock: w.clk, Metrics: w.metrics, Log: w.log.WithName("deletioncost"), Interval: time.Minute, MaxNodes: 50}
		if err := costs.SetupWithManager(w.mgr); err != nil {
			return err
		}
	}
	disrupt := &disruption.Controller{
		Client: w.cached, NodeClasses: w.cloud, Registrations: w.registrations, Drifts: w.drifts, Recorder: w.recorder, Clock: w.clk,
		Metrics: w.metrics, Log: w.log.WithName("disruption"), Config: dcfg, LaunchBatching: w.cfg.LaunchBatching,
	}
	return disrupt.SetupWithManager(w.mgr)
}

// nodeControllers keep NodePool and NodeOverlay status, and repair
// unhealthy nodes.
func (w *wiring) nodeControllers(context.Context) error {
	if err := (&nodepool.Controller{Client: w.mgr.GetClient(), NodeClasses: w.cloud, Clock: w.clk, Registrations: w.registrations,
		Drifts: w.drifts, DriftFailureLimit: w.cfg.Disruption.DriftFailureLimit, Recorder: w.recorder, Metrics: w.metrics}).SetupWithManager(w.mgr); err != nil {
		return err
	}
	if err := (&nodeoverlay.Controller{Client: w.cached, NodeClasses: w.cloud, Clock: w.clk, Log: w.log.WithName("nodeoverlay")}).SetupWithManager(w.mgr); err != nil {
		return err
	}
	if !w.cfg.NodeRepair {
		return nil
	}
	if !w.cfg.LegacyNodeRepair {
		poll, issueWithin, timeout := reboot.Defaults()
		return (&reboot.Controller{
			Client: w.mgr.GetClient(), Cloud: w.cloud, Recorder: w.recorder, Clock: w.clk, Concurrency: w.cfg.Concurrency,
			Drainer: &drain.Drainer{Client: w.mgr.GetClient(), Recorder: w.recorder, Clock: w.clk, Metrics: w.metrics},
			Poll:    poll, IssueWithin: issueWithin, Timeout: timeout, Metrics: w.metrics,
		}).SetupWithManager(w.mgr)
	}
	return w.mgr.Add(&repair.Controller{
		Client: w.cached, Recorder: w.recorder, Clock: w.clk, Metrics: w.metrics, Log: w.log.WithName("repair"),
		Interval: w.cfg.RepairInterval, Tolerations: w.cfg.Repair,
	})
}

// clusterSeriesOf are the per-node and per-pod series of the manager's
// cache, read at each scrape.
func clusterSeriesOf(mgr manager.Manager, clk clock.PassiveClock, m *metrics.Metrics) *metrics.ClusterSeries {
	return metrics.NewClusterSeries(func() ([]*corev1.Node, []*corev1.Pod, func(*corev1.Node) bool, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		nodes, pods := &corev1.NodeList{}, &corev1.PodList{}
		if err := mgr.GetCache().List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, false
		}
		if err := mgr.GetCache().List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, false
		}
		managed := func(n *corev1.Node) bool { return n.Labels[v1.LabelNodePool] != "" }
		return listing.Pointers(nodes.Items), listing.Pointers(pods.Items), managed, true
	}, clk.Now, m.Planned).WithConditions(func() ([]metrics.Conditioned, bool) {
		return conditionsOf(mgr)
	})
}

// conditionsOf are the conditions of the cache's NodePools,
// EC2NodeClasses and NodeClaims.
func conditionsOf(mgr manager.Manager) ([]metrics.Conditioned, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pools, classes, claims := &v1.NodePoolList{}, &awsv1.EC2NodeClassList{}, &v1.NodeClaimList{}
	for _, list := range []client.ObjectList{pools, classes, claims} {
		if err := mgr.GetCache().List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, false
		}
	}
	out := make([]metrics.Conditioned, 0, len(pools.Items)+len(classes.Items)+len(claims.Items))
	for i := range pools.Items {
		p := &pools.Items[i]
		out = append(out, metrics.Conditioned{Group: v1.Group, Kind: "NodePool", Name: p.Name, Conditions: p.Status.Conditions})
	}
	for i := range classes.Items {
		c := &classes.Items[i]
		out = append(out, metrics.Conditioned{Group: awsv1.Group, Kind: "EC2NodeClass", Name: c.Name, Conditions: c.Status.Conditions})
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		out = append(out, metrics.Conditioned{Group: v1.Group, Kind: "NodeClaim", Name: c.Name, Conditions: c.Status.Conditions})
	}
	return out, true
}

// observePods times pods' binding and start from the cache's pod updates
// (karpenter_pods_bound_duration_seconds, _startup_duration_seconds).
func observePods(ctx context.Context, mgr manager.Manager, m *metrics.Metrics) error {
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("watching pods for their start times: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(before, after any) {
			b, okB := before.(*corev1.Pod)
			a, okA := after.(*corev1.Pod)
			if okB && okA {
				m.PodChanged(b, a)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				m.PodGone(p.UID)
			}
		},
	})
	return err
}

// profiling is the handlers of Go's profiles, when enabled.
func profiling(enabled bool) map[string]http.Handler {
	if !enabled {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// lifecycleOptions are the NodeClaim lifecycle's options, with
// --ignore-dra-requests.
func (w *wiring) lifecycleOptions() lifecycle.Options {
	opts := w.cfg.Lifecycle
	opts.IgnoreDRARequests = w.cfg.IgnoreDRARequests
	return opts
}

// durationOrNil is d, or nil (controller-runtime's default) when it is 0.
func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// checkCRDs says which of the kinds the controllers watch the API server
// does not serve, and how to install them: without its CRD a watch waits
// for a cache that never fills, and the controller would stop minutes
// later with a timeout that names neither. capacityBuffer: the
// CapacityBuffer gate is on, so its kind is watched too.
func checkCRDs(mapper meta.RESTMapper, capacityBuffer bool) error {
	kinds := []schema.GroupVersionKind{
		v1.SchemeGroupVersion.WithKind("NodePool"), v1.SchemeGroupVersion.WithKind("NodeClaim"),
		awsv1.SchemeGroupVersion.WithKind("EC2NodeClass"), v1alpha1.SchemeGroupVersion.WithKind("NodeOverlay"),
	}
	if capacityBuffer {
		kinds = append(kinds, v1beta1.SchemeGroupVersion.WithKind("CapacityBuffer"))
	}
	var missing []string
	for _, gvk := range kinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if !meta.IsNoMatchError(err) {
				return fmt.Errorf("asking the API server whether it serves %s: %w", gvk, err)
			}
			missing = append(missing, gvk.Kind+" ("+gvk.GroupVersion().String()+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the API server does not serve %s: install nodewright's CRDs (kubectl apply --server-side --force-conflicts -f charts/nodewright/crds/) and start again", strings.Join(missing, ", "))
	}
	return nil
}
