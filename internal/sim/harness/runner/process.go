package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/sim/cloud/awsapi"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
)

// serveAWS serves the account on a local HTTP endpoint in the AWS
// protocols, for the controller's own process and for people with the
// AWS CLI.
func (s *Sim) serveAWS() error {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("serving the simulated AWS account: %w", err)
	}
	a := s.Account
	s.aws = &http.Server{Handler: &awsapi.Server{EC2: a.EC2(), IAM: a.IAM(), SSM: a.SSM(), EKS: a.EKS(), Pricing: a.Pricing(), SQS: a.SQS()}, ReadHeaderTimeout: 10 * time.Second}
	s.AWSEndpoint = "http://" + l.Addr().String()
	go func() { _ = s.aws.Serve(l) }()
	return nil
}

// externalMachines are the instances of the AWS endpoint the simulation
// runs against, for the simulated kubelets.
func (s *Sim) externalMachines(ctx context.Context, opts Options) (*kubelet.EC2Machines, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(cmp.Or(opts.Operator.Region, account.Region)), awsconfig.WithBaseEndpoint(opts.AWSEndpoint),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDNODEWRIGHTSIM", "simulated", "")))
	if err != nil {
		return nil, fmt.Errorf("the AWS configuration for %s: %w", opts.AWSEndpoint, err)
	}
	return &kubelet.EC2Machines{EC2: ec2.NewFromConfig(cfg), IAM: iam.NewFromConfig(cfg), EKS: eks.NewFromConfig(cfg), Kube: s.cache,
		ClusterName: opts.Operator.ClusterName, CompleteLaunches: true, Log: opts.Log.WithName("kubelets")}, nil
}

// AWSEnv is the environment that points the AWS SDK and CLI at the
// simulated account (or the external endpoint): its endpoint, region and
// any credentials.
func (s *Sim) AWSEnv() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.AWSEndpoint, "AWS_REGION=" + account.Region,
		"AWS_ACCESS_KEY_ID=AKIDNODEWRIGHTSIM", "AWS_SECRET_ACCESS_KEY=simulated",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}

// controllerArgs are the flags of `nodewright controller --cloud aws` that
// give it the configuration cfg.
func controllerArgs(cfg operator.Config, metricsAddr string) []string {
	minValues, preferences := cfg.Policy.Names()
	return []string{
		"controller", "--cloud", "aws", "--cluster-name", cfg.ClusterName, "--cluster-endpoint", cfg.ClusterEndpoint, "--region", cfg.Region,
		"--ignore-dra-requests=" + strconv.FormatBool(cfg.IgnoreDRARequests), "--min-values-policy", minValues, "--preference-policy", preferences,
		"--vm-memory-overhead-percent", strconv.FormatFloat(cfg.VMMemoryOverheadPercent, 'g', -1, 64), "--reserved-enis", strconv.Itoa(cfg.ReservedENIs),
		"--kubernetes-version", cfg.KubernetesVersion, "--ami-alias-parameter-root", cmp.Or(cfg.AMIAliasParameterRoot, nodeclass.DefaultAliasParameterRoot),
		"--leader-elect=" + strconv.FormatBool(cfg.LeaderElection), "--leader-election-namespace", charts.LocalNamespace, // the chart's Role is there
		"--leader-election-lease-duration", cfg.LeaseDuration.String(), "--leader-election-renew-deadline", cfg.RenewDeadline.String(), "--leader-election-retry-period", cfg.RetryPeriod.String(),
		"--metrics-addr", metricsAddr, "--health-addr", "0",
		"--batch-idle", cfg.BatchIdle.String(), "--batch-max", cfg.BatchMax.String(),
		"--nodeclaim-poll", cfg.Lifecycle.Poll.String(),
		"--launch-timeout", cfg.Lifecycle.LaunchTimeout.String(), "--registration-timeout", cfg.Lifecycle.RegistrationTimeout.String(),
		"--disruption-poll", cfg.Disruption.Poll.String(), "--disruption-validation-delay", cfg.Disruption.ValidationDelay.String(),
		"--replacement-timeout", cfg.Disruption.ReplacementTimeout.String(), "--drift-failure-limit", strconv.Itoa(cfg.Disruption.DriftFailureLimit),
		"--kube-client-qps", strconv.FormatFloat(float64(cfg.KubeQPS), 'f', -1, 32), "--kube-client-burst", strconv.Itoa(cfg.KubeBurst),
		"--concurrency", strconv.Itoa(cfg.Concurrency),
		"--nominate-pods=" + strconv.FormatBool(cfg.NominatePods), "--nominate-pods-max", strconv.Itoa(cfg.NominatePodsMax),
		"--launch-batching=" + strconv.FormatBool(cfg.LaunchBatching),
		"--unsafe-skip-userdata-validation=" + strconv.FormatBool(cfg.SkipUserDataValidation),
		"--enable-profiling=" + strconv.FormatBool(cfg.Profiling),
		"--node-repair=" + strconv.FormatBool(cfg.NodeRepair), "--node-repair-ready-after", cfg.Repair.Ready.String(),
		"--node-repair-accelerator-after", cfg.Repair.Accelerator.String(), "--node-repair-agent-after", cfg.Repair.Agent.String(),
		"--node-repair-drain", cfg.Repair.Drain.String(), "--legacy-node-repair=" + strconv.FormatBool(cfg.LegacyNodeRepair),
		"--unavailable-offering-ttl", cfg.UnavailableOfferingTTL.String(),
		"--interruption-queue", cfg.Interruption.Queue, "--interruption-act-on-rebalance=" + strconv.FormatBool(cfg.Interruption.ActOnRebalance),
		"--aws-feature-gates", "NodeClassCEL=" + strconv.FormatBool(cfg.NodeClassCEL) + ",RebootForRepair=" + strconv.FormatBool(cfg.Repair.Reboot),
		"--feature-gates", "PodDeletionCostManagement=" + strconv.FormatBool(cfg.PodDeletionCostManagement) + ",CapacityBuffer=" + strconv.FormatBool(cfg.CapacityBuffer) +
			",SpotToSpotConsolidation=" + strconv.FormatBool(cfg.SpotToSpotConsolidation),
	}
}

// ControllerMetrics is the address of the first controller process's
// /metrics (and /debug/pprof/ with Operator.Profiling); empty when the
// controllers run in this process.
func (s *Sim) ControllerMetrics() string {
	if len(s.replicas) == 0 {
		return ""
	}
	return s.replicas[0].metrics
}

// replica is one controller process.
type replica struct {
	cmd     *exec.Cmd
	done    chan struct{}
	metrics string
}

// StartController starts one more `nodewright controller --cloud aws`
// from the binary at path, in its own process, against the control plane
// and the account's endpoint; its logs go to controller.log beside the
// kubeconfig (all replicas' to the one file). Several replicas elect a
// leader (cfg.LeaderElection).
func (s *Sim) StartController(path string, cfg operator.Config) error {
	r, err := s.startReplica(path, cfg)
	if err != nil {
		return err
	}
	s.replicas = append(s.replicas, r)
	return nil
}

func (s *Sim) startReplica(path string, cfg operator.Config) (*replica, error) {
	port, err := controlplane.FreePort(context.Background())
	if err != nil {
		return nil, err
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	logPath := filepath.Join(filepath.Dir(s.Plane.KubeconfigPath), "controller.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, controllerArgs(cfg, metricsAddr)...) //nolint:gosec,noctx // nodewright's own binary; Stop ends it
	cmd.Env = slices.Concat(os.Environ(), []string{"KUBECONFIG=" + s.controllerKubeconfig}, s.AWSEnv(), s.controllerEnv)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.controllerPath, s.controllerConfig = path, cfg
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting the controller process: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	return &replica{cmd: cmd, done: done, metrics: metricsAddr}, nil
}

// stop ends a controller process: SIGTERM, or SIGKILL when kill is set
// (as a crash would), and waits for it to exit.
func (r *replica) stop(kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = r.cmd.Process.Signal(sig)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// StopController ends every controller process: SIGTERM, or SIGKILL when
// kill is set (as a crash would), and waits for them to exit.
func (s *Sim) StopController(kill bool) {
	for _, r := range s.replicas {
		r.stop(kill)
	}
	s.replicas = nil
}

// KillController kills the leading controller process (the only one,
// without replicas) with SIGKILL, as a crash or an OOM kill would, and
// starts a new one in its place; it returns the peak RSS of the one
// killed.
func (s *Sim) KillController() (int64, error) {
	if len(s.replicas) == 0 {
		return 0, errors.New("the controllers do not run in their own process")
	}
	// A replica that exited on its own (it lost the lease under load) is
	// started again, as its Deployment would.
	for j, r := range s.replicas {
		select {
		case <-r.done:
			if again, err := s.startReplica(s.controllerPath, s.controllerConfig); err == nil {
				s.replicas[j] = again
			}
		default:
		}
	}
	i := s.leader(context.Background())
	rss := s.replicas[i].peakRSS()
	s.replicas[i].stop(true)
	r, err := s.startReplica(s.controllerPath, s.controllerConfig)
	if err != nil {
		s.replicas = slices.Delete(s.replicas, i, i+1)
		return rss, err
	}
	s.replicas[i] = r
	return rss, nil
}

// StopLeader stops the leading controller process with SIGTERM, as a
// rolling update or a drain of its node does, and waits for it to exit;
// it is not started again.
func (s *Sim) StopLeader(ctx context.Context) error {
	if len(s.replicas) == 0 {
		return errors.New("the controllers do not run in their own process")
	}
	i := s.leader(ctx)
	s.replicas[i].stop(false)
	s.replicas = slices.Delete(s.replicas, i, i+1)
	return nil
}

// leader is the index of the replica that leads (its
// leader_election_master_status is 1), looking for up to ten seconds
// while the lease changes hands; the first replica when none says so.
func (s *Sim) leader(ctx context.Context) int {
	if len(s.replicas) == 1 {
		return 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, r := range s.replicas {
			if r.leads(ctx) {
				return i
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0
}

// leads reads the replica's leader_election_master_status from /metrics.
func (r *replica) leads(ctx context.Context) bool {
	families, err := r.metricFamilies(ctx)
	if err != nil {
		return false
	}
	for _, m := range families["leader_election_master_status"].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			return true
		}
	}
	return false
}

// Leaders is how many controller processes say they lead now.
func (s *Sim) Leaders(ctx context.Context) int {
	n := 0
	for _, r := range s.replicas {
		if r.leads(ctx) {
			n++
		}
	}
	return n
}

// peakRSS is the controller process's peak resident memory.
func (r *replica) peakRSS() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	return PeakRSSFromStatus(string(data))
}

// controllerRSS is the largest peak resident memory of the controller
// processes.
func (s *Sim) controllerRSS() int64 {
	var most int64
	for _, r := range s.replicas {
		most = max(most, r.peakRSS())
	}
	return most
}

// cpuSeconds is the CPU time the processes that run the controllers have
// spent so far (0 when it cannot be read).
func (s *Sim) cpuSeconds() float64 {
	if len(s.replicas) == 0 {
		return controlplane.ProcessCPUSeconds(os.Getpid())
	}
	spent := 0.0
	for _, r := range s.replicas {
		spent += controlplane.ProcessCPUSeconds(r.cmd.Process.Pid)
	}
	return spent
}

// processRequests reads nodewright_kube_requests_total and the sums of
// nodewright_kube_request_duration_seconds from the controller
// processes' /metrics, by "verb resource".
func (s *Sim) processRequests(ctx context.Context) (counts, seconds map[string]float64, _ error) {
	counts, seconds = map[string]float64{}, map[string]float64{}
	for _, r := range s.replicas {
		families, err := r.metricFamilies(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range families["nodewright_kube_requests_total"].GetMetric() {
			counts[metrics.VerbAndResource(m.GetLabel())] += m.GetCounter().GetValue()
		}
		for _, m := range families["nodewright_kube_request_duration_seconds"].GetMetric() {
			seconds[metrics.VerbAndResource(m.GetLabel())] += m.GetHistogram().GetSampleSum()
		}
	}
	return counts, seconds, nil
}

// metricFamilies reads the replica's /metrics.
func (r *replica) metricFamilies(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var parser expfmt.TextParser
	return parser.TextToMetricFamilies(resp.Body)
}

// processName says where the controllers ran, for the figures.
func (s *Sim) processName() string {
	if len(s.replicas) == 0 {
		return "nodewright sim (controllers, simulated AWS and kubelets)"
	}
	pids := make([]string, len(s.replicas))
	for i, r := range s.replicas {
		pids[i] = strconv.Itoa(r.cmd.Process.Pid)
	}
	return "nodewright controller process " + strings.Join(pids, ", ")
}
