package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof" //nolint:gosec // served only with --pprof-addr
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/operator/command"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
)

// simFlags are nodewright sim's flags.
type simFlags struct {
	// decisions are the controllers' settings that change their decisions.
	decisions                    *command.Decisions
	scenario, output             string
	keep, noCCM, skipValidation  bool
	timeout, stall, bootDelay    time.Duration
	bootJitter, repairAfter      time.Duration
	noNomination                 bool
	pods                         int
	pprofAddr, logFile           string
	controllerProcess            bool
	registrationTimeout, workDir string
	faults                       simaws.Faults
	noCapacity, then, failures   []string
	spotInterruptions            string
	awsEndpoint, aliasRoot       string
	interruptionNotice           time.Duration
	gates, awsGates              string
}

func newSimCommand() *cobra.Command {
	fl := &simFlags{}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the whole system on this machine: a real control plane, a simulated AWS account, nodewright's controllers",
		Long: `sim starts etcd, kube-apiserver, kube-scheduler and kube-controller-manager
(building them on first use), a simulated AWS account with simulated
kubelets and cloud controller manager, and nodewright's controllers; applies
a scenario; shows progress; and ends with a summary: whether every pod ran,
the nodes and their cost, and every condition, event or kubelet failure
that explains what did not work.

Scenarios: ` + fmt.Sprint(scenarios.Names()) + ` (a prefix such as s1
is enough), or a manifest file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return fl.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&fl.scenario, "scenario", "healthy", "scenario to apply: a name, a prefix (s1 ... s5, healthy, scale) or a manifest file")
	completeScenarios(cmd)
	f.StringVar(&fl.awsEndpoint, "aws-endpoint", "", "run against the AWS account at this endpoint (moto, LocalStack, ...) instead of the simulated one: the controllers in their own process with --cloud aws, the simulated kubelets joining its instances; the account must be set up for an EKS cluster named nodewright-sim (hack/moto.sh sets one up; docs/tools/sim.md)")
	f.StringVar(&fl.aliasRoot, "ami-alias-parameter-root", nodeclass.DefaultAliasParameterRoot, "where the controllers read the SSM parameters of AMI aliases (a copy of AWS's, for an --aws-endpoint that does not publish them)")
	f.BoolVar(&fl.controllerProcess, "controller-process", false, "run the controllers in their own process (nodewright controller --cloud aws) against the simulated account's HTTP endpoint, as in a cluster; its log is controller.log in --work-dir")
	f.StringVar(&fl.logFile, "log-file", "", "write nodewright's and the simulated kubelets' logs to this file (JSON lines)")
	f.StringVar(&fl.pprofAddr, "pprof-addr", "", "serve Go's profiles (net/http/pprof) on this address, such as 127.0.0.1:6060; with --controller-process that process serves its own on its metrics address, printed at the start")
	f.IntVar(&fl.pods, "pods", 0, "spread this many pods over the scenario's Deployments and StatefulSets (such as --scenario scale --pods 10000)")
	outputFlag(cmd, &fl.output, "table")
	f.BoolVar(&fl.keep, "keep", false, "leave the cluster running and print a kubeconfig")
	f.DurationVar(&fl.timeout, "timeout", 3*time.Minute, "stop waiting after this long")
	f.DurationVar(&fl.stall, "stall", 30*time.Second, "stop when nothing has changed for this long")
	f.DurationVar(&fl.bootDelay, "boot-delay", 2*time.Second, "how long a simulated instance takes to start its kubelet")
	f.DurationVar(&fl.bootJitter, "boot-jitter", 0, "add up to this much to each instance's boot delay, so nodes become Ready at different times")
	f.StringVar(&fl.gates, "feature-gates", "", "the controllers' feature gates, as nodewright controller --feature-gates (such as CapacityBuffer=true)")
	f.StringVar(&fl.awsGates, "aws-feature-gates", "", "the controllers' AWS feature gates, as nodewright controller --aws-feature-gates (such as RebootForRepair=true)")
	f.DurationVar(&fl.repairAfter, "node-repair-after", runner.SimRepairAfter, "replace a node whose kubelet or node monitoring agent has reported it failing this long (nodewright controller's default: 30m, 10m for accelerators)")
	f.BoolVar(&fl.noNomination, "no-nomination", false, "do not tell kube-scheduler where the plan put each pod (no nominatedNodeName, no NominatedNodeNameForExpectation gate)")
	f.BoolVar(&fl.noCCM, "no-cloud-controller-manager", false, "do not run the simulated cloud controller manager (S2)")
	f.BoolVar(&fl.skipValidation, "unsafe-skip-userdata-validation", false, "launch nodes even when their user data would keep them from registering (reproduces S1 and S3 at runtime)")
	f.StringVar(&fl.registrationTimeout, "registration-timeout", "", "delete NodeClaims whose node has not registered after this long (default 15m)")
	f.StringVar(&fl.workDir, "work-dir", "", "directory for the kubeconfig and component logs (default: a temporary one)")
	f.BoolVar(&fl.faults.PricingDenied, "pricing-denied", false, "the simulated Pricing API refuses every call (AccessDeniedException, as for a role without pricing:GetProducts): nodes are priced by the built-in table")
	f.IntVar(&fl.faults.ThrottleEvery, "throttle-every", 0, "the simulated AWS APIs refuse one call in this many with RequestLimitExceeded (retried with the SDK's backoff)")
	f.DurationVar(&fl.faults.Latency, "api-latency", 0, "delay every simulated AWS API call by this long")
	f.Float64Var(&fl.faults.RateLimits, "ec2-rate-limits", runner.DefaultOptions().Faults.RateLimits, "throttle each simulated EC2 API with the token buckets AWS documents for an account, scaled by this factor (0.1: a tenth of each bucket and refill rate; 0: no limit)")
	f.StringArrayVar(&fl.failures, "kubelet-failure", nil, "after the scenario (and --then steps), make the kubelets of nodes of a NodePool report failing: NODEPOOL[:NODES]:CONDITION=STATUS[/REASON], such as default:1:Ready=False or gpu:AcceleratedHardwareReady=False/NvidiaXID63Error; repeatable")
	f.StringArrayVar(&fl.then, "then", nil, "after the scenario settles (every pod Running, no disruption in flight), apply this manifest and watch again; repeatable")
	f.StringVar(&fl.spotInterruptions, "spot-interruptions", "", "reclaim running spot instances at this rate, N/DURATION such as 1/2m: EC2 sends a rebalance recommendation and an interruption warning to the interruption queue, and the instance terminates after --interruption-notice (keeps going with --keep)")
	f.DurationVar(&fl.interruptionNotice, "interruption-notice", runner.DefaultOptions().InterruptionNotice, "how long an interrupted instance runs after its warning (EC2: two minutes)")
	f.StringArrayVar(&fl.noCapacity, "insufficient-capacity", nil, "an offering CAPACITY-TYPE:INSTANCE-TYPE:ZONE (such as spot:m5.large:us-east-1a; * for any type or zone, spot:*:* for no spot at all) that has no capacity; repeatable")
	fl.decisions = command.AddDecisionFlags(f)
	return cmd
}

// run runs the simulation the flags ask for.
func (fl *simFlags) run(cmd *cobra.Command) error {
	if err := checkOutput(fl.output, "table"); err != nil {
		return err
	}
	if err := fl.check(cmd); err != nil {
		return err
	}
	steps, err := fl.steps(cmd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if fl.pprofAddr != "" {
		go func() { _ = http.ListenAndServe(fl.pprofAddr, nil) }() //nolint:gosec // a local debugging endpoint
	}
	progress := cmd.ErrOrStderr()
	assets, err := ensureControlPlane(ctx, progress)
	if err != nil {
		return err
	}
	opts, closeLog, err := fl.options(assets)
	if err != nil {
		return err
	}
	defer closeLog()
	// The summary says what matters; --log-file keeps the rest.
	command.InstallLogger(opts.Log)
	if fl.awsEndpoint != "" {
		fmt.Fprintln(progress, "starting the control plane and nodewright against "+fl.awsEndpoint+"...")
	} else {
		fmt.Fprintln(progress, "starting the control plane, the simulated AWS account and nodewright...")
	}
	sim, err := runner.Start(ctx, opts)
	if err != nil {
		return err
	}
	fl.sayStarted(progress, sim)
	defer func() {
		if !fl.keep {
			_ = sim.Stop()
		}
	}()
	results, err := sim.RunSteps(ctx, steps, fl.timeout, fl.stall, runner.Progress(progress))
	var notConverged *runner.NotConvergedError
	if err != nil && !errors.As(err, &notConverged) {
		return err
	}
	if werr := fl.write(cmd.OutOrStdout(), results); werr != nil {
		return werr
	}
	if err != nil {
		err = found{err} // the run went to its end and not every pod ran
	}
	if fl.keep {
		fmt.Fprintf(progress, "\nthe cluster keeps running; in another shell:\n\n  export KUBECONFIG=%s\n  kubectl get nodepools,nodeclaims,nodes\n  nodewright doctor --cloud sim\n\nPress Ctrl-C to stop.\n", sim.Plane.KubeconfigPath)
		<-ctx.Done()
		return errors.Join(err, sim.Stop())
	}
	return err
}

// check refuses flags that do not go together or make no sense.
func (fl *simFlags) check(cmd *cobra.Command) error {
	if fl.faults.RateLimits < 0 {
		return fmt.Errorf("--ec2-rate-limits %g: use a factor of 0 (no limit) or more (1: AWS's default limits)", fl.faults.RateLimits)
	}
	if fl.repairAfter <= 0 {
		return fmt.Errorf("--node-repair-after must be a positive duration, got %s", fl.repairAfter)
	}
	if fl.interruptionNotice <= 0 {
		return fmt.Errorf("--interruption-notice must be a positive duration, got %s", fl.interruptionNotice)
	}
	if fl.awsEndpoint == "" {
		return nil
	}
	// The account there is not the simulated one: its faults do not apply.
	for _, name := range []string{"throttle-every", "api-latency", "ec2-rate-limits", "pricing-denied", "insufficient-capacity", "spot-interruptions", "interruption-notice"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s acts on the simulated AWS account; with --aws-endpoint the account is %s's", name, fl.awsEndpoint)
		}
	}
	return nil
}

// steps are the scenario, its own later steps, the --then manifests and
// the --kubelet-failure steps, in that order.
func (fl *simFlags) steps(cmd *cobra.Command) ([]runner.Step, error) {
	name, manifest, err := scenarios.Load(fl.scenario)
	if err != nil {
		return nil, err
	}
	if cmd.Flags().Changed("pods") {
		if manifest, err = scenarios.WithPods(manifest, fl.pods); err != nil {
			return nil, err
		}
	}
	steps := []runner.Step{{Name: name, Manifest: manifest}}
	thenNames, thenData := scenarios.Then(name)
	for i := range thenNames {
		steps = append(steps, runner.Step{Name: thenNames[i], Manifest: thenData[i]})
	}
	for _, file := range fl.then {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--then: %w", err)
		}
		steps = append(steps, runner.Step{Name: file, Manifest: data})
	}
	for _, f := range fl.failures {
		step, err := kubeletFailureStep(f)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step)
	}
	return steps, nil
}

// options are the simulation's options from the flags; the returned
// function closes the --log-file.
func (fl *simFlags) options(assets string) (runner.Options, func(), error) {
	opts := runner.DefaultOptions()
	closeLog := func() {}
	if fl.logFile != "" {
		f, err := os.Create(fl.logFile)
		if err != nil {
			return opts, closeLog, fmt.Errorf("--log-file: %w", err)
		}
		closeLog = func() { _ = f.Close() }
		if opts.Log, err = command.Logger(f, "json", "info"); err != nil {
			return opts, closeLog, err
		}
	}
	opts.AssetsDir, opts.WorkDir = assets, fl.workDir
	opts.BootDelay, opts.BootJitter, opts.CloudControllerManager = fl.bootDelay, fl.bootJitter, !fl.noCCM
	opts.Operator.Repair.Ready, opts.Operator.Repair.Agent, opts.Operator.Repair.Accelerator = fl.repairAfter, fl.repairAfter, fl.repairAfter
	opts.NoNominationGate, opts.Operator.NominatePods = fl.noNomination, !fl.noNomination
	opts.Operator.SkipUserDataValidation = fl.skipValidation
	opts.Operator.Profiling = fl.pprofAddr != ""
	opts.Faults, opts.NoCapacity = fl.faults, fl.noCapacity
	opts.InterruptionNotice = fl.interruptionNotice
	opts.Operator.AMIAliasParameterRoot = fl.aliasRoot
	if err := command.FeatureGates(&opts.Operator, fl.gates); err != nil {
		return opts, closeLog, err
	}
	if err := command.AWSFeatureGates(&opts.Operator, fl.awsGates); err != nil {
		return opts, closeLog, err
	}
	if err := fl.decisions.Apply(&opts.Operator); err != nil {
		return opts, closeLog, err
	}
	if err := fl.parsedOptions(&opts); err != nil {
		return opts, closeLog, err
	}
	return opts, closeLog, nil
}

// parsedOptions are the options given as text, and the controllers'
// process.
func (fl *simFlags) parsedOptions(opts *runner.Options) error {
	var err error
	if fl.registrationTimeout != "" {
		if opts.Operator.Lifecycle.RegistrationTimeout, err = time.ParseDuration(fl.registrationTimeout); err != nil {
			return fmt.Errorf("--registration-timeout: %w", err)
		}
	}
	if fl.spotInterruptions != "" {
		if opts.SpotInterruptions, err = runner.ParseSpotInterruptions(fl.spotInterruptions); err != nil {
			return err
		}
	}
	if fl.awsEndpoint != "" {
		opts.AWSEndpoint, fl.controllerProcess = fl.awsEndpoint, true
	}
	if fl.controllerProcess {
		if opts.ControllerProcess, err = os.Executable(); err != nil {
			return fmt.Errorf("--controller-process: finding this binary: %w", err)
		}
	}
	return nil
}

// sayStarted says where the AWS account and the controllers' profiles
// are.
func (fl *simFlags) sayStarted(progress io.Writer, sim *runner.Sim) {
	if fl.awsEndpoint != "" {
		fmt.Fprintf(progress, "AWS account: %s (the simulated kubelets join its instances)\n", sim.AWSEndpoint)
	} else {
		fmt.Fprintf(progress, "simulated AWS account: %s (any credentials; aws ec2 describe-instances --endpoint-url %s --region us-east-1)\n", sim.AWSEndpoint, sim.AWSEndpoint)
	}
	if addr := sim.ControllerMetrics(); addr != "" && fl.pprofAddr != "" {
		fmt.Fprintf(progress, "controller process profiles: http://%s/debug/pprof/\n", addr)
	}
}

// write writes the steps' results: the summary table, or the last
// step's snapshot (every step's, for several) as JSON or YAML.
func (fl *simFlags) write(w io.Writer, results []runner.StepResult) error {
	if fl.output == "table" {
		runner.WriteSteps(w, results)
		return nil
	}
	var out any = results[len(results)-1].Snapshot
	if len(results) > 1 {
		out = results
	}
	return writeStructured(w, fl.output, out)
}

// ensureControlPlane finds the control-plane binaries, and when they are
// missing builds them (progress on w) into the user's cache directory, or
// says what this machine lacks to do so.
func ensureControlPlane(ctx context.Context, w io.Writer) (string, error) {
	dir, err := controlplane.FindAssets()
	if err != nil {
		return "", err
	}
	if controlplane.HasAssets(dir) {
		return dir, nil
	}
	if os.Getenv(controlplane.AssetsEnv) != "" {
		return "", fmt.Errorf("%s=%s does not hold etcd, kube-apiserver, kube-scheduler and kube-controller-manager; unset it and nodewright sim builds them into its cache", controlplane.AssetsEnv, dir)
	}
	fmt.Fprintf(w, "installing the control plane into %s (first run only)\n", dir)
	if err := controlplane.Install(ctx, dir, w); err != nil {
		return "", fmt.Errorf("nodewright sim runs a real control plane, built once: %w", err)
	}
	return dir, nil
}

// kubeletFailureStep is the step a --kubelet-failure value asks for: a
// KubeletFailure document.
func kubeletFailureStep(value string) (runner.Step, error) {
	bad := fmt.Errorf("--kubelet-failure %q: use NODEPOOL[:NODES]:CONDITION=STATUS[/REASON], such as default:1:Ready=False or gpu:AcceleratedHardwareReady=False/NvidiaXID63Error", value)
	parts := strings.Split(value, ":")
	nodes := 1
	switch len(parts) {
	case 2:
	case 3:
		n, err := strconv.Atoi(parts[1])
		if err != nil || n < 1 {
			return runner.Step{}, bad
		}
		nodes = n
	default:
		return runner.Step{}, bad
	}
	cond, status, ok := strings.Cut(parts[len(parts)-1], "=")
	if parts[0] == "" || !ok || cond == "" || status == "" {
		return runner.Step{}, bad
	}
	doc := fmt.Sprintf("apiVersion: sim.nodewright.dev/v1\nkind: KubeletFailure\nspec: {nodePool: %q, nodes: %d, conditions: {%q: %q}}\n", parts[0], nodes, cond, status)
	return runner.Step{Name: "--kubelet-failure " + value, Manifest: []byte(doc)}, nil
}
