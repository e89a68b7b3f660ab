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
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/prometheus/common/expfmt"

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
	return []string{
		"controller", "--cloud", "aws", "--cluster-name", cfg.ClusterName, "--cluster-endpoint", cfg.ClusterEndpoint, "--region", cfg.Region,
		"--kubernetes-version", cfg.KubernetesVersion, "--ami-alias-parameter-root", cmp.Or(cfg.AMIAliasParameterRoot, nodeclass.DefaultAliasParameterRoot), "--leader-elect=false",
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

// ControllerMetrics is the address of the controller process's /metrics
// (and /debug/pprof/ with Operator.Profiling); empty when the controllers
// run in this process.
func (s *Sim) ControllerMetrics() string { return s.controllerMetrics }

// StartController starts `nodewright controller --cloud aws` from the
// binary at path, in its own process, against the control plane and the
// account's endpoint; its logs go to controller.log beside the kubeconfig.
func (s *Sim) StartController(path string, cfg operator.Config) error {
	port, err := controlplane.FreePort(context.Background())
	if err != nil {
		return err
	}
	s.controllerMetrics = fmt.Sprintf("127.0.0.1:%d", port)
	logPath := filepath.Join(filepath.Dir(s.Plane.KubeconfigPath), "controller.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, controllerArgs(cfg, s.controllerMetrics)...) //nolint:gosec,noctx // nodewright's own binary; Stop ends it
	cmd.Env = slices.Concat(os.Environ(), []string{"KUBECONFIG=" + s.controllerKubeconfig}, s.AWSEnv(), s.controllerEnv)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.controllerPath, s.controllerConfig = path, cfg
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting the controller process: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	s.controller, s.controllerDone = cmd, done
	return nil
}

// StopController ends the controller process: SIGTERM, or SIGKILL when
// kill is set (as a crash would), and waits for it to exit.
func (s *Sim) StopController(kill bool) {
	if s.controller == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = s.controller.Process.Signal(sig)
	select {
	case <-s.controllerDone:
	case <-time.After(30 * time.Second):
		_ = s.controller.Process.Kill()
		<-s.controllerDone
	}
	s.controller = nil
}

// KillController kills the controller process with SIGKILL, as a crash
// or an OOM kill would, and starts a new one; it returns the peak RSS of
// the one killed.
func (s *Sim) KillController() (int64, error) {
	if s.controller == nil {
		return 0, errors.New("the controllers do not run in their own process")
	}
	rss := s.controllerRSS()
	s.StopController(true)
	return rss, s.StartController(s.controllerPath, s.controllerConfig)
}

// controllerRSS is the controller process's peak resident memory.
func (s *Sim) controllerRSS() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.controller.Process.Pid))
	if err != nil {
		return 0
	}
	return PeakRSSFromStatus(string(data))
}

// cpuSeconds is the CPU time the process that runs the controllers has
// spent so far (0 when it cannot be read).
func (s *Sim) cpuSeconds() float64 {
	pid := os.Getpid()
	if s.controller != nil {
		pid = s.controller.Process.Pid
	}
	return controlplane.ProcessCPUSeconds(pid)
}

// processRequests reads nodewright_kube_requests_total and the sums of
// nodewright_kube_request_duration_seconds from the controller process's
// /metrics, by "verb resource".
func (s *Sim) processRequests(ctx context.Context) (counts, seconds map[string]float64, _ error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.controllerMetrics+"/metrics", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	counts, seconds = map[string]float64{}, map[string]float64{}
	for _, m := range families["nodewright_kube_requests_total"].GetMetric() {
		counts[metrics.VerbAndResource(m.GetLabel())] += m.GetCounter().GetValue()
	}
	for _, m := range families["nodewright_kube_request_duration_seconds"].GetMetric() {
		seconds[metrics.VerbAndResource(m.GetLabel())] += m.GetHistogram().GetSampleSum()
	}
	return counts, seconds, nil
}

// processName says where the controllers ran, for the figures.
func (s *Sim) processName() string {
	if s.controller != nil {
		return "nodewright controller process " + strconv.Itoa(s.controller.Process.Pid)
	}
	return "nodewright sim (controllers, simulated AWS and kubelets)"
}
