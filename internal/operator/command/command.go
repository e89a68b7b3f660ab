// Package command is the controller's command line: its flags, its
// logger and the AWS clients it runs with. The nodewright CLI and the
// controller image's binary (cmd/nodewright-controller) both serve it; only
// the CLI adds a simulated account (--cloud sim).
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/logging"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Simulated runs the controllers on a simulated account until ctx ends
// (--cloud sim); nil where the binary has no simulator.
type Simulated func(ctx context.Context, rc *rest.Config, cfg operator.Config, log logr.Logger) error

// Controller is the controller command. simulated serves --cloud sim.
func Controller(simulated Simulated) *cobra.Command {
	cfg := operator.DefaultConfig()
	var cloud, logFormat, logLevel, schedulerConfig, gates, coreGates string
	var decisions Decisions
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run nodewright's controllers against the cluster of the current kubeconfig",
		Long: `controller runs the provisioner, the NodeClaim lifecycle, termination,
garbage collection and the NodePool and EC2NodeClass status controllers,
leader-elected, with health probes and Prometheus metrics.

--cloud aws (the default) uses the AWS account of the usual AWS SDK
configuration (environment, shared config, instance or pod role);
--cloud sim uses a simulated account with simulated kubelets, for a local
control plane.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFlags(cloud, simulated != nil, &cfg); err != nil {
				return err
			}
			if err := decisions.check(); err != nil {
				return err
			}
			decisions.apply(&cfg)
			if err := AWSFeatureGates(&cfg, gates); err != nil {
				return err
			}
			if err := FeatureGates(&cfg, coreGates); err != nil {
				return err
			}
			spread, err := ReadSchedulerConfig(schedulerConfig)
			if err != nil {
				return err
			}
			cfg.DefaultSpread = spread
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log, err := Logger(cmd.ErrOrStderr(), logFormat, logLevel)
			if err != nil {
				return err
			}
			InstallLogger(log)
			for _, w := range unreadKarpenterSettings(os.Environ()) {
				log.Info(w, "level", "warning")
			}
			rc, err := ctrlconfig.GetConfig()
			if err != nil {
				return fmt.Errorf("reading the kubeconfig: %w", err)
			}
			if cloud == "sim" {
				return simulated(ctx, rc, cfg, log)
			}
			clouds, err := awsClouds(ctx, &cfg, log.WithName("aws"))
			if err != nil {
				return err
			}
			mgr, err := operator.New(ctx, rc, cfg, clouds, clock.RealClock{}, log)
			if err != nil {
				return err
			}
			return mgr.Start(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cloud, "cloud", "aws", "aws, or sim for a simulated account with simulated kubelets")
	f.StringVar(&coreGates, "feature-gates", "", "feature gates, NAME=true|false,...: PodDeletionCostManagement (write controller.kubernetes.io/pod-deletion-cost on the ReplicaSet pods of nodewright's nodes, those disruption takes first lowest; default false), CapacityBuffer (CapacityBuffers keep room for pods to come; default false), SpotToSpotConsolidation (consolidation replaces spot nodes with cheaper spot nodes; default false)")
	f.StringVar(&gates, "aws-feature-gates", "", "AWS feature gates, NAME=true|false,...: NodeClassCEL (EC2NodeClass spec.kubelet may hold CEL expressions; default false), RebootForRepair (node repair reboots a node whose GPU fault a reboot clears, twice a day at most, before it replaces it; default false)")
	f.StringVar(&schedulerConfig, "scheduler-config", "", "kube-scheduler's configuration file (a KubeSchedulerConfiguration, or podTopologySpread.defaultConstraints): pods that set no topology spread constraints are planned spread by its default constraints")
	f.StringVar(&cfg.ClusterName, "cluster-name", "", "the EKS cluster's name (required)")
	f.StringVar(&cfg.ClusterEndpoint, "cluster-endpoint", "", "the API server endpoint nodes join, https://... (default: the one EKS reports)")
	f.StringVar(&cfg.Region, "region", "", "AWS region (default: from the AWS SDK configuration)")
	f.StringVar(&cfg.KubernetesVersion, "kubernetes-version", "", "Kubernetes minor version for EKS-optimized AMI aliases (default: the EKS cluster's)")
	f.StringVar(&cfg.AMIAliasParameterRoot, "ami-alias-parameter-root", nodeclass.DefaultAliasParameterRoot,
		"where the SSM parameters naming the EKS-optimized AMIs of amiSelectorTerms aliases are read (a copy of AWS's, where they are not published)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", cfg.MetricsAddr, "address of the Prometheus /metrics endpoint (0 disables it)")
	f.StringVar(&cfg.HealthAddr, "health-addr", cfg.HealthAddr, "address of /healthz and /readyz (0 disables them)")
	f.BoolVar(&cfg.Profiling, "enable-profiling", false, "serve Go's profiles (net/http/pprof) under /debug/pprof/ on --metrics-addr")
	f.BoolVar(&cfg.LeaderElection, "leader-elect", true, "elect a leader among replicas")
	f.StringVar(&cfg.LeaderElectionNamespace, "leader-election-namespace", cfg.LeaderElectionNamespace, "namespace of the leader lease")
	f.DurationVar(&cfg.LeaseDuration, "leader-election-lease-duration", cfg.LeaseDuration, "how long the other replicas wait after the leader last renewed the lease before one takes over")
	f.DurationVar(&cfg.RenewDeadline, "leader-election-renew-deadline", cfg.RenewDeadline, "how long the leader tries to renew the lease before it stops leading (less than the lease duration)")
	f.DurationVar(&cfg.RetryPeriod, "leader-election-retry-period", cfg.RetryPeriod, "how often the replicas try to take or renew the lease")
	f.DurationVar(&cfg.Lifecycle.LaunchTimeout, "launch-timeout", cfg.Lifecycle.LaunchTimeout, "delete NodeClaims not launched after this long")
	f.DurationVar(&cfg.Lifecycle.RegistrationTimeout, "registration-timeout", cfg.Lifecycle.RegistrationTimeout, "delete NodeClaims whose node has not registered after this long")
	f.DurationVar(&cfg.BatchIdle, "batch-idle", cfg.BatchIdle, "close a batch of pending pods after this long without new ones")
	f.StringVar(&logFormat, "log-format", "json", "log format: json (one object per line) or console")
	f.StringVar(&logLevel, "log-level", "info", "log level: info, or debug for more detail")
	completeFlagValues(cmd)
	f.DurationVar(&cfg.BatchMax, "batch-max", cfg.BatchMax, "close a batch of pending pods after this long at the latest")
	f.Float32Var(&cfg.KubeQPS, "kube-client-qps", cfg.KubeQPS, "requests per second to the Kubernetes API server, sustained")
	f.IntVar(&cfg.KubeBurst, "kube-client-burst", cfg.KubeBurst, "requests to the Kubernetes API server in a burst above --kube-client-qps")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "objects each controller reconciles at once (NodeClaims launched, registered and terminated in parallel)")
	f.DurationVar(&cfg.Lifecycle.Poll, "nodeclaim-poll", cfg.Lifecycle.Poll, "look at a NodeClaim that is not Ready again this often")
	f.BoolVar(&cfg.LaunchBatching, "launch-batching", cfg.LaunchBatching, "launch the NodeClaims of a decision that would launch identically in one EC2 fleet (at most 100), idempotent across restarts")
	decisions.addFlags(f, osEnv, false)
	f.BoolVar(&cfg.IsolatedVPC, "isolated-vpc", envBool(osEnv, "ISOLATED_VPC", false),
		"the cluster's VPC reaches only AWS services with a VPC endpoint: on-demand prices come from the built-in table, the Pricing API (which has none) is not called (environment ISOLATED_VPC)")
	f.BoolVar(&cfg.NominatePods, "nominate-pods", cfg.NominatePods, "set pending pods' status.nominatedNodeName to the node planned for them, so kube-scheduler follows the plan")
	f.IntVar(&cfg.NominatePodsMax, "nominate-pods-max", cfg.NominatePodsMax, "nominate pods only while at most this many wait for a node (0: no limit); nominated pods slow each of kube-scheduler's attempts down")
	f.BoolVar(&cfg.SkipUserDataValidation, "unsafe-skip-userdata-validation", false, "launch nodes even when their user data would keep them from registering")
	f.DurationVar(&cfg.Disruption.Poll, "disruption-poll", cfg.Disruption.Poll, "decide what to disrupt this often")
	f.DurationVar(&cfg.Disruption.ValidationDelay, "disruption-validation-delay", cfg.Disruption.ValidationDelay,
		"wait this long after a disruption decision, then check it again against the cluster before carrying it out")
	f.DurationVar(&cfg.Disruption.ReplacementTimeout, "replacement-timeout", cfg.Disruption.ReplacementTimeout,
		"roll a disruption back when its replacement nodes are not initialized after this long")
	f.IntVar(&cfg.Disruption.DriftFailureLimit, "drift-failure-limit", cfg.Disruption.DriftFailureLimit,
		"pause the replacement of a NodePool's drifted nodes after this many replacements in a row failed to launch, register or initialize")
	f.BoolVar(&cfg.NodeRepair, "node-repair", cfg.NodeRepair, "repair nodes unhealthy for longer than their toleration (below), unless more than 20% of their NodePool is unhealthy: first of the disruption methods, within the NodePools' budgets for Unhealthy")
	f.BoolVar(&cfg.LegacyNodeRepair, "legacy-node-repair", cfg.LegacyNodeRepair,
		"repair outside disruption, as before v1.15: delete an unhealthy node's NodeClaim at once, without budgets, replacements launched first or reboots")
	f.DurationVar(&cfg.Repair.Ready, "node-repair-ready-after", cfg.Repair.Ready, "replace a node whose Ready condition has been False or Unknown this long")
	f.DurationVar(&cfg.Repair.Accelerator, "node-repair-accelerator-after", cfg.Repair.Accelerator, "repair a node whose AcceleratedHardwareReady condition has been False this long for a GPU XID the node monitoring agent names (other reasons: --node-repair-agent-after)")
	f.DurationVar(&cfg.Repair.Agent, "node-repair-agent-after", cfg.Repair.Agent,
		"replace a node whose KernelReady, ContainerRuntimeReady, StorageReady or NetworkingReady condition (or AcceleratedHardwareReady for a reason no XID policy names) has been False this long")
	f.DurationVar(&cfg.Repair.Drain, "node-repair-drain", cfg.Repair.Drain,
		"how long the drain of a repaired node waits for pods whose eviction is refused (for a named GPU XID at most 5m); a NodeClaim's shorter terminationGracePeriod wins")
	f.DurationVar(&cfg.UnavailableOfferingTTL, "unavailable-offering-ttl", cfg.UnavailableOfferingTTL,
		"leave an offering (capacity type, instance type, zone) that ran out of capacity or was interrupted out of launches and plans this long")
	f.StringVar(&cfg.Interruption.Queue, "interruption-queue", "",
		"name (or URL) of the SQS queue EventBridge sends EC2 and AWS Health events to: spot interruptions, rebalance recommendations, scheduled changes and instances stopping are acted on before the instance goes (empty: off)")
	f.BoolVar(&cfg.Interruption.ActOnRebalance, "interruption-act-on-rebalance", false,
		"replace a spot node when EC2 recommends rebalancing it (default: record the recommendation as an event and a metric)")
	return cmd
}

// Logger is a structured logger: JSON lines (or console text)
// at info or debug level.
func Logger(w io.Writer, format, level string) (logr.Logger, error) {
	opts := zap.Options{DestWriter: zapcore.Lock(zapcore.AddSync(w))} // one line at a time, from any goroutine
	switch format {
	case "json":
	case "console":
		opts.Development = true
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: use json or console", format)
	}
	switch level {
	case "info":
		opts.Level = zapcore.InfoLevel
	case "debug":
		opts.Level = zapcore.DebugLevel
	default:
		return logr.Logger{}, fmt.Errorf("--log-level %q: use info or debug", level)
	}
	return zap.New(zap.UseFlagOptions(&opts)), nil
}

// InstallLogger makes log the one logger of the process: controller-runtime's
// (its manager, caches, leader election) and client-go's (klog: reflectors,
// event broadcasting, leader election) log through it as well, so every
// line is one JSON object and none is lost. controller-runtime takes the
// first logger it is given and keeps it: call this once, early.
func InstallLogger(log logr.Logger) {
	ctrllog.SetLogger(log)
	klog.SetLogger(log.WithName("client-go"))
}

// awsLogger hands the AWS SDK's own messages (retries, checksum warnings)
// to the controller's logger.
func awsLogger(log logr.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if c == logging.Warn {
			log.Info(fmt.Sprintf(format, v...), "sdkLevel", "warn")
			return
		}
		log.V(1).Info(fmt.Sprintf(format, v...))
	})
}

// awsClouds builds the SDK clients and fills the region and Kubernetes
// version from the AWS configuration and the EKS cluster.
func awsClouds(ctx context.Context, cfg *operator.Config, log logr.Logger) (operator.Clouds, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithLogger(awsLogger(log))}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return operator.Clouds{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	cfg.Region = awsCfg.Region
	eksClient := eks.NewFromConfig(awsCfg)
	if cfg.KubernetesVersion == "" {
		out, err := eksClient.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &cfg.ClusterName})
		if err != nil {
			return operator.Clouds{}, fmt.Errorf("describing EKS cluster %s: %w", cfg.ClusterName, err)
		}
		cfg.KubernetesVersion = *out.Cluster.Version
	}
	// The Pricing API is served from us-east-1 (and a few other regions).
	pricingCfg := awsCfg.Copy()
	pricingCfg.Region = "us-east-1"
	return operator.Clouds{
		EC2: ec2.NewFromConfig(awsCfg), SSM: ssm.NewFromConfig(awsCfg), IAM: iam.NewFromConfig(awsCfg),
		EKS: eksClient, Pricing: pricing.NewFromConfig(pricingCfg), SQS: sqs.NewFromConfig(awsCfg),
	}, nil
}

// ReadSchedulerConfig reads the default topology spread constraints of a
// scheduler configuration file; none without one.
func ReadSchedulerConfig(path string) (scheduling.SpreadDefaults, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config: %w", err)
	}
	return scheduling.ReadSpreadDefaults(path, data)
}

// AWSFeatureGates sets the AWS feature gates of --aws-feature-gates; a gate
// nodewright does not have is an error, not ignored.
func AWSFeatureGates(cfg *operator.Config, value string) error {
	return setGates("--aws-feature-gates", value, map[string]*bool{"NodeClassCEL": &cfg.NodeClassCEL, "RebootForRepair": &cfg.Repair.Reboot})
}

// FeatureGates sets the feature gates of --feature-gates.
func FeatureGates(cfg *operator.Config, value string) error {
	return setGates("--feature-gates", value, map[string]*bool{"PodDeletionCostManagement": &cfg.PodDeletionCostManagement, "CapacityBuffer": &cfg.CapacityBuffer, "SpotToSpotConsolidation": &cfg.SpotToSpotConsolidation})
}

// setGates reads NAME=true|false,... into the gates; a gate not among
// them is an error, not ignored.
func setGates(flag, value string, gates map[string]*bool) error {
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		name, v, _ := strings.Cut(item, "=")
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s %q: give NAME=true or NAME=false", flag, item)
		}
		gate, ok := gates[name]
		if !ok {
			return fmt.Errorf("%s: no gate %q; the gates are %s", flag, name, strings.Join(slices.Sorted(maps.Keys(gates)), ", "))
		}
		*gate = on
	}
	return nil
}

// completeFlagValues completes the values of the flags that take one of
// a few.
func completeFlagValues(cmd *cobra.Command) {
	for flag, values := range map[string][]string{"cloud": {"aws", "sim"}, "log-format": {"json", "console"}, "log-level": {"info", "debug"}} {
		_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
}

// karpenterSettings are the environment variables Karpenter reads that
// nodewright does not, with what to use instead ("" when nothing is
// needed); those it reads (IGNORE_DRA_REQUESTS, ISOLATED_VPC,
// VM_MEMORY_OVERHEAD_PERCENT, RESERVED_ENIS, MIN_VALUES_POLICY,
// PREFERENCE_POLICY) are not listed.
var karpenterSettings = map[string]string{
	"CLUSTER_NAME": "--cluster-name", "CLUSTER_ENDPOINT": "--cluster-endpoint", "CLUSTER_CA_BUNDLE": "",
	"INTERRUPTION_QUEUE": "--interruption-queue", "BATCH_IDLE_DURATION": "--batch-idle", "BATCH_MAX_DURATION": "--batch-max",
	"KUBE_CLIENT_QPS": "--kube-client-qps", "KUBE_CLIENT_BURST": "--kube-client-burst", "LOG_LEVEL": "--log-level",
	"FEATURE_GATES": "--feature-gates", "AWS_FEATURE_GATES": "--aws-feature-gates", "SCHEDULER_CONFIG": "--scheduler-config",
	"LEGACY_NODE_REPAIR": "--legacy-node-repair", "ENABLE_PROFILING": "--enable-profiling", "METRICS_PORT": "--metrics-addr",
	"HEALTH_PROBE_PORT": "--health-addr", "LEADER_ELECTION_NAMESPACE": "--leader-election-namespace", "DISABLE_LEADER_ELECTION": "--leader-elect=false",
	"EKS_CONTROL_PLANE": "nothing yet", "ENABLE_ZONAL_SHIFT": "nothing yet",
	"AMI_REFRESH_INTERVAL": "", "SUBNET_REFRESH_INTERVAL": "", "SECURITY_GROUP_REFRESH_INTERVAL": "", "DISABLE_DRY_RUN": "",
	"LEADER_ELECTION_NAME": "", "LOG_OUTPUT_PATHS": "", "LOG_ERROR_OUTPUT_PATHS": "", "MEMORY_LIMIT": "", "CPU_REQUESTS": "",
	"KARPENTER_SERVICE": "", "DISABLE_CONTROLLER_WARMUP": "", "DISABLE_CLUSTER_STATE_OBSERVABILITY": "",
}

// unreadKarpenterSettings say which of Karpenter's settings the
// environment sets that nodewright does not read, and what to use
// instead: a Karpenter Deployment's environment moved over as it is is
// named, not silently ignored.
func unreadKarpenterSettings(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		instead, known := karpenterSettings[name]
		if !known || value == "" {
			continue
		}
		msg := fmt.Sprintf("environment %s is one of Karpenter's settings, which nodewright does not read", name)
		switch {
		case strings.HasPrefix(instead, "--"):
			msg += "; use " + instead
		case instead != "":
			msg += "; its counterpart: " + instead
		default:
			msg += "; nodewright needs no counterpart"
		}
		out = append(out, msg+" (docs/compatibility.md, Settings)")
	}
	slices.Sort(out)
	return out
}

// checkFlags refuses flags that cannot work together, naming them.
func checkFlags(cloud string, canSimulate bool, cfg *operator.Config) error {
	switch {
	case cloud != "aws" && cloud != "sim":
		return fmt.Errorf("--cloud %q: use aws or sim", cloud)
	case cloud == "sim" && !canSimulate:
		return errors.New("--cloud sim: this binary runs on AWS only; the nodewright CLI runs the controllers on a simulated account")
	}
	if cfg.LeaderElection && (cfg.RetryPeriod <= 0 || cfg.RenewDeadline <= cfg.RetryPeriod || cfg.LeaseDuration <= cfg.RenewDeadline) {
		return fmt.Errorf("--leader-election-lease-duration %s, --leader-election-renew-deadline %s, --leader-election-retry-period %s: each must be longer than the next, the last above 0", cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	}
	if cfg.NominatePodsMax < 0 {
		return fmt.Errorf("--nominate-pods-max %d: use 0 (no limit) or more", cfg.NominatePodsMax)
	}
	if cfg.Concurrency < 1 || cfg.KubeQPS <= 0 || cfg.KubeBurst < 1 {
		return fmt.Errorf("--concurrency %d, --kube-client-qps %g, --kube-client-burst %d: each must be at least 1", cfg.Concurrency, cfg.KubeQPS, cfg.KubeBurst)
	}
	if cfg.ClusterEndpoint != "" && !strings.HasPrefix(cfg.ClusterEndpoint, "https://") {
		return fmt.Errorf("--cluster-endpoint %q: give the API server's URL, such as https://ABC.gr7.us-east-1.eks.amazonaws.com", cfg.ClusterEndpoint)
	}
	if cfg.ClusterName == "" {
		return errors.New("--cluster-name is required: the EKS cluster's name, which tags and finds nodewright's instances")
	}
	return nil
}
