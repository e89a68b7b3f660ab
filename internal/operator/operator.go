// Package operator assembles nodewright's controllers into one
// controller-runtime manager, for AWS or the simulated account alike.
package operator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/interruption"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/disruption"
	"github.com/nodewright/nodewright/internal/lifecycle"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/nodeoverlay"
	"github.com/nodewright/nodewright/internal/nodepool"
	"github.com/nodewright/nodewright/internal/operator/rbac"
	"github.com/nodewright/nodewright/internal/provisioning"
	"github.com/nodewright/nodewright/internal/repair"
	"github.com/nodewright/nodewright/internal/state/listing"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
	"github.com/nodewright/nodewright/internal/static"
	"github.com/nodewright/nodewright/internal/termination"
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
	// Interruption consumes an SQS queue of EC2 and AWS Health events
	// (no queue: off).
	Interruption interruption.Options
	// NominatePods sets pending pods' status.nominatedNodeName to the node
	// planned for them once it exists, so kube-scheduler follows the plan.
	NominatePods bool
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
		Disruption: disruption.DefaultConfig(), NominatePods: true,
		NodeRepair: true, RepairInterval: 10 * time.Second, Repair: nodepoolhealth.DefaultTolerations(), Interruption: interruption.DefaultOptions(""),
		KubeQPS: 200, KubeBurst: 300, Concurrency: 50,
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

// Scheme knows the Kubernetes types and nodewright's.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New builds the manager with every controller registered; Start runs it.
func New(ctx context.Context, rc *rest.Config, cfg Config, clouds Clouds, clk clock.WithTicker, log logr.Logger) (manager.Manager, error) {
	scheme, err := Scheme()
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
		// The cache keeps what the controllers read, without the managed
		// fields no controller looks at (a third of a pod's size).
		Cache:                   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: cfg.MetricsAddr, ExtraHandlers: profiling(cfg.Profiling)},
		HealthProbeBindAddress:  cfg.HealthAddr,
		LeaderElection:          cfg.LeaderElection,
		LeaderElectionID:        "nodewright-leader",
		LeaderElectionNamespace: cfg.LeaderElectionNamespace,
		Controller:              config.Controller{SkipNameValidation: &cfg.SkipNameValidation, MaxConcurrentReconciles: cfg.Concurrency},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}
	leaseNamespace := ""
	if cfg.LeaderElection {
		leaseNamespace = cfg.LeaderElectionNamespace
	}
	if err := rbac.Check(ctx, mgr.GetClient(), leaseNamespace); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	cluster, err := provider.ClusterFromEKS(ctx, clouds.EKS, cfg.ClusterName)
	if err != nil {
		return nil, err
	}
	if cfg.ClusterEndpoint != "" {
		cluster.Endpoint = cfg.ClusterEndpoint
	}
	resolver := &nodeclass.Resolver{EC2: clouds.EC2, SSM: clouds.SSM, IAM: clouds.IAM, ClusterName: cfg.ClusterName, KubernetesVersion: cfg.KubernetesVersion,
		AliasParameterRoot: cfg.AMIAliasParameterRoot}
	recorder := mgr.GetEventRecorderFor("nodewright")
	m, err := metrics.New(ctrlmetrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	launcher := provider.New(clouds.EC2, resolver, cluster, clk)
	if cfg.UnavailableOfferingTTL <= 0 {
		return nil, fmt.Errorf("--unavailable-offering-ttl must be a positive duration, got %s", cfg.UnavailableOfferingTTL)
	}
	launcher.SetUnavailableOfferingTTL(cfg.UnavailableOfferingTTL)
	cloud := &provider.CloudProvider{
		Kube:     mgr.GetClient(),
		Launcher: launcher,
		Types: &instancetypes.Cache{
			Provider: &instancetypes.Provider{EC2: clouds.EC2, Pricing: clouds.Pricing, Region: cfg.Region, Clock: clk},
			Clock:    clk, TTL: cfg.InstanceTypeTTL,
		},
	}
	status := &nodeclass.Controller{
		Client: mgr.GetClient(), Resolver: resolver, Recorder: recorder, Clock: clk, Refresh: cfg.NodeClassRefresh,
		SkipUserDataValidation: cfg.SkipUserDataValidation, LaunchTemplates: launcher, Prices: cloud.Types, Metrics: m,
	}
	if err := status.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := listing.Index(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	registrations := nodepoolhealth.NewRegistrations()
	life := &lifecycle.Controller{
		Client: mgr.GetClient(), Cloud: cloud, Recorder: recorder, Clock: clk, Options: cfg.Lifecycle, Metrics: m, Registrations: registrations,
	}
	if err := life.SetupWithManager(ctx, mgr); err != nil {
		return nil, err
	}
	if err := (&lifecycle.PodEvents{Client: mgr.GetClient(), Clock: clk, Dedupe: 5 * time.Second}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	terminator := &termination.Controller{
		Client: mgr.GetClient(), Cloud: cloud, Recorder: recorder, Clock: clk, Poll: cfg.Lifecycle.Poll,
		Drainer: &termination.Drainer{Client: mgr.GetClient(), Recorder: recorder, Clock: clk},
	}
	if err := terminator.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	var nominator *provisioning.Nominator
	if cfg.NominatePods {
		nominator = &provisioning.Nominator{Client: mgr.GetClient(), Clock: clk, TTL: cfg.Lifecycle.RegistrationTimeout + time.Minute}
		if err := nominator.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	cached := listing.Cached{Client: mgr.GetClient(), Cache: mgr.GetCache()}
	prov := &provisioning.Provisioner{
		Client: cached, NodeClasses: cloud, Recorder: recorder,
		Batcher: provisioning.NewBatcher(cfg.BatchIdle, cfg.BatchMax, clk), Retry: 2 * time.Second, Clock: clk, Metrics: m, Log: log.WithName("provisioner"),
		Registrations: registrations, Nominator: nominator,
	}
	if err := prov.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&nodepool.Controller{Client: mgr.GetClient(), NodeClasses: cloud, Clock: clk, Registrations: registrations}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&nodeoverlay.Controller{Client: cached, NodeClasses: cloud, Clock: clk, Log: log.WithName("nodeoverlay")}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	keeper := &static.Controller{
		Client: cached, NodeClasses: cloud, Registrations: registrations, Recorder: recorder, Clock: clk,
		Metrics: m, Log: log.WithName("static"), Retry: 30 * time.Second,
	}
	if err := keeper.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	disrupt := &disruption.Controller{
		Client: cached, NodeClasses: cloud, Registrations: registrations, Recorder: recorder, Clock: clk,
		Metrics: m, Log: log.WithName("disruption"), Config: cfg.Disruption,
	}
	if err := disrupt.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	gc := &lifecycle.GarbageCollector{
		Client: mgr.GetClient(), Cloud: cloud, Recorder: recorder, Clock: clk,
		Interval: cfg.GCInterval, Grace: cfg.GCGrace, Log: log.WithName("gc"),
	}
	if err := mgr.Add(gc); err != nil {
		return nil, err
	}
	if cfg.Interruption.Queue != "" {
		if clouds.SQS == nil {
			return nil, fmt.Errorf("--interruption-queue %s: no SQS client", cfg.Interruption.Queue)
		}
		consumer := &interruption.Controller{
			Client: mgr.GetClient(), SQS: clouds.SQS, Offerings: launcher, Recorder: recorder, Clock: clk, Metrics: m,
			Log: log.WithName("interruption"), Options: cfg.Interruption,
		}
		if err := consumer.SetupWithManager(ctx, mgr); err != nil {
			return nil, err
		}
	}
	if cfg.NodeRepair {
		if err := cfg.Repair.Validate(); err != nil {
			return nil, err
		}
		healer := &repair.Controller{
			Client: cached, Recorder: recorder, Clock: clk, Metrics: m, Log: log.WithName("repair"),
			Interval: cfg.RepairInterval, Tolerations: cfg.Repair,
		}
		if err := mgr.Add(healer); err != nil {
			return nil, err
		}
	}
	return mgr, nil
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
