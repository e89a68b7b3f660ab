// Command benche2e measures nodewright end to end at each size against the
// same control plane with the nodes already there, and prints per size:
// the time until every pod is Running with nodewright launching the nodes,
// the baseline's time with the nodes present (a static NodePool made
// before the pods), their ratio, the first node Ready, NodeClaims, $/h,
// the controller's peak RSS and CPU seconds, nodewright's API writes per
// pod and per NodeClaim, and the AWS calls.
//
//	go run ./hack/benche2e -pods 1000,10000 -nodewright bin/nodewright [-busy] [-no-aws-limits]
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
)

// baselineType is the instance type of the baseline's nodes, and
// baselineFill how much of their CPU the pods may take: the baseline
// holds every pod with room to spare, as a cluster sized by hand does.
const (
	baselineType = "m5.2xlarge"
	baselineFill = 0.85
)

type config struct {
	sizes        []int
	nodewright   string
	busy         bool
	noAWSLimits  bool
	skipBaseline bool
	onlyBaseline bool
	noNomination bool
	nominateMax  int
	profile      bool
	// profileAPIServer, profileScheduler: a CPU profile of kube-apiserver,
	// of kube-scheduler, during each run's pods from profileAt, into its
	// work directory.
	profileAPIServer bool
	profileScheduler bool
	profileAt        time.Duration
	reference        string
	logDir           string
	// memLimit is GOMEMLIMIT for nodewright's process alone.
	memLimit string
	// timeout, when set, is how long each run waits for its pods instead
	// of the default by size.
	timeout time.Duration
}

func main() {
	var cfg config
	pods := flag.String("pods", "1000,10000,50000", "sizes to measure, in pods, comma-separated")
	flag.StringVar(&cfg.nodewright, "nodewright", "bin/nodewright", "the nodewright binary the controllers run from (in their own process)")
	flag.BoolVar(&cfg.busy, "busy", false, "keep one core busy (a shell spinning) during every run, as another tenant of a shared machine would")
	flag.BoolVar(&cfg.noAWSLimits, "no-aws-limits", false, "run the simulated account without EC2's request limits and with instances booting at once (0 s instead of 2 s)")
	flag.BoolVar(&cfg.skipBaseline, "no-baseline", false, "measure nodewright only")
	flag.BoolVar(&cfg.onlyBaseline, "only-baseline", false, "measure the baseline only (at 50,000 pods each run takes the better part of an hour)")
	flag.StringVar(&cfg.reference, "reference", "", "also run the reference autoscaler's KWOK provider with KWOK, from this directory (hack/reference/build.sh makes bin/reference), on the same control plane and workload")
	flag.BoolVar(&cfg.noNomination, "no-nomination", false, "nodewright does not tell kube-scheduler where the plan put each pod (no nominatedNodeName, no NominatedNodeNameForExpectation gate)")
	flag.IntVar(&cfg.nominateMax, "nominate-pods-max", -1, "nodewright's --nominate-pods-max (0: nominate every decision's pods; default: nodewright's default)")
	flag.BoolVar(&cfg.profile, "profile", false, "serve nodewright's Go profiles (/debug/pprof/ on its metrics address, named in its log)")
	flag.StringVar(&cfg.logDir, "work-dir", "", "keep each run's kubeconfig and component logs under this directory")
	flag.BoolVar(&cfg.profileAPIServer, "profile-apiserver", false, "with -work-dir: write a CPU profile of kube-apiserver over "+
		controlPlaneProfile.String()+" from -profile-at into each run's pods, to kube-apiserver.cpu.pprof in the run's directory")
	flag.BoolVar(&cfg.profileScheduler, "profile-scheduler", false, "with -work-dir: the same of kube-scheduler, to kube-scheduler.cpu.pprof")
	flag.DurationVar(&cfg.profileAt, "profile-at", 15*time.Second, "when into each run's pods the profiles of -profile-apiserver and -profile-scheduler start")
	flag.StringVar(&cfg.memLimit, "controller-gomemlimit", "", "GOMEMLIMIT for nodewright's process alone (400MiB, say), as a Deployment's env sets it; "+
		"the control plane and the simulated kubelets keep Go's default")
	flag.DurationVar(&cfg.timeout, "timeout", 0, "how long each run waits for every pod to run (default: 2 minutes plus a second per 50 pods; "+
		"the baseline gets a second more per 5 of its nodes)")
	flag.Parse()
	if limit, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		fail(fmt.Errorf("GOMEMLIMIT=%s is set: it would hold kube-apiserver, etcd, kube-scheduler and the simulated kubelets to it too, "+
			"and their garbage collection would then measure the limit instead of nodewright; unset it and give -controller-gomemlimit %s", limit, limit))
	}
	if cfg.memLimit != "" && !goMemLimit.MatchString(cfg.memLimit) {
		fail(fmt.Errorf("-controller-gomemlimit %q: give a size as GOMEMLIMIT takes it, bytes with an optional B, KiB, MiB, GiB or TiB (400MiB, say)", cfg.memLimit))
	}
	if cfg.timeout < 0 {
		fail(fmt.Errorf("-timeout %s: give a positive duration, or 0 for the default by size", cfg.timeout))
	}
	for _, s := range strings.Split(*pods, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-pods %q: use positive counts separated by commas", *pods))
		}
		cfg.sizes = append(cfg.sizes, n)
	}
	if (cfg.profileAPIServer || cfg.profileScheduler) && cfg.logDir == "" {
		fail(errors.New("-profile-apiserver and -profile-scheduler write into each run's directory: give -work-dir"))
	}
	if cfg.profileAt < 0 {
		fail(fmt.Errorf("-profile-at %s: give how long into the pods, 0 or more", cfg.profileAt))
	}
	if cfg.skipBaseline && cfg.onlyBaseline {
		fail(errors.New("-no-baseline and -only-baseline leave nothing to measure: use one"))
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fail(err)
	}
}

// goMemLimit is what the Go runtime accepts as GOMEMLIMIT; it stops a
// program started with anything else.
var goMemLimit = regexp.MustCompile(`^[0-9]+(B|KiB|MiB|GiB|TiB)?$`)

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benche2e:", err)
	os.Exit(1)
}

// row is one size's figures.
type row struct {
	pods     int
	nw, base runner.Figures
	price    float64
	baseline int // the baseline's nodes
	ref      referenceFigures
	// nwLine and baseLine are when each share of the pods was Running.
	nwLine, baseLine timeline
	err              error
}

// shares are the shares of the pods a timeline records.
var shares = []float64{0.25, 0.5, 0.75, 0.9}

// timeline is when each share of the pods first showed Running, when
// every NodeClaim first showed Ready, and how long pending pods waited
// for each thing (pod-seconds by runner.Snapshot.Waiting's keys).
type timeline struct {
	running    []time.Duration
	claimsDone time.Duration
	waited     map[string]float64
	last       time.Duration
	// existed is how many pods existed at each snapshot: the control
	// plane's ReplicaSet controller creates them as fast as it can.
	existed []podsAt
	// workload is how many pods the run's Deployments ask for.
	workload int
	// queued is how long pods sat in each of kube-scheduler's queues
	// (pod-seconds by its scheduler_pending_pods' queue label), and
	// attempts its scheduling attempts by result during the run.
	queued, attempts, attemptsBefore map[string]float64
}

// podsAt is how many pods existed at a moment of the run.
type podsAt struct {
	at   time.Duration
	pods int
}

// created is when each share of the workload's pods (and all of them)
// existed.
func (t timeline) created() string {
	parts := make([]string, 0, len(shares)+1)
	for _, share := range append(slices.Clone(shares), 1) {
		at := time.Duration(0)
		if i := slices.IndexFunc(t.existed, func(p podsAt) bool { return float64(p.pods) >= share*float64(t.workload) }); i >= 0 {
			at = t.existed[i].at
		}
		parts = append(parts, fmt.Sprintf("%.0f%% %s", share*100, seconds(at)))
	}
	return strings.Join(parts, ", ")
}

// schedulerView is what kube-scheduler's metrics say at one moment.
type schedulerView struct {
	pending, attempts map[string]float64
}

// readScheduler reads kube-scheduler's queues and attempts (empty when its
// metrics cannot be read).
func readScheduler(ctx context.Context, plane *controlplane.ControlPlane) schedulerView {
	v := schedulerView{pending: map[string]float64{}, attempts: map[string]float64{}}
	families, err := plane.Metrics(ctx, "kube-scheduler")
	if err != nil {
		return v
	}
	sum := func(family, label string, into map[string]float64) {
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					into[l.GetValue()] += m.GetGauge().GetValue() + m.GetCounter().GetValue()
				}
			}
		}
	}
	sum("scheduler_pending_pods", "queue", v.pending)
	sum("scheduler_schedule_attempts_total", "result", v.attempts)
	return v
}

// record reads a snapshot of the watch and kube-scheduler's view at that
// moment into the timeline.
func (t *timeline) record(s *runner.Snapshot, v schedulerView) {
	if t.running == nil {
		t.running, t.queued, t.attemptsBefore = make([]time.Duration, len(shares)), map[string]float64{}, v.attempts
	}
	for queue, n := range v.pending {
		t.queued[queue] += n * (s.Elapsed - t.last).Seconds()
	}
	t.attempts = v.attempts
	t.existed = append(t.existed, podsAt{at: s.Elapsed, pods: s.Pods})
	for i, share := range shares {
		if t.running[i] == 0 && s.Pods > 0 && float64(s.RunningPods) >= share*float64(s.Pods) {
			t.running[i] = s.Elapsed
		}
	}
	if t.waited == nil {
		t.waited = map[string]float64{}
	}
	for why, n := range s.Waiting {
		t.waited[why] += float64(n) * (s.Elapsed - t.last).Seconds()
	}
	t.last = s.Elapsed
	allReady := !slices.ContainsFunc(s.NodeClaims, func(c runner.NodeClaim) bool { return c.Phase != "Ready" })
	if t.claimsDone == 0 && len(s.NodeClaims) > 0 && allReady && s.PendingPods == 0 {
		t.claimsDone = s.Elapsed
	}
}

func (t timeline) String() string {
	parts := make([]string, 0, len(shares)+1)
	for i, share := range shares {
		at := time.Duration(0)
		if i < len(t.running) {
			at = t.running[i]
		}
		parts = append(parts, fmt.Sprintf("%.0f%% %s", share*100, seconds(at)))
	}
	waited := make([]string, 0, len(runner.WaitingFor))
	for _, why := range runner.WaitingFor {
		if t.waited[why] > 0 {
			waited = append(waited, fmt.Sprintf("%s %.0f", why, t.waited[why]))
		}
	}
	return strings.Join(parts, ", ") + "; every NodeClaim Ready and no pod pending " + seconds(t.claimsDone) +
		"; pod-seconds pending: " + strings.Join(waited, ", ") + "; pods created " + t.created() + "; kube-scheduler: " + t.scheduler()
}

// scheduler says how long pods sat in kube-scheduler's queues and how
// often it tried to schedule them.
func (t timeline) scheduler() string {
	queued, attempts := make([]string, 0, len(t.queued)), make([]string, 0, len(t.attempts))
	for _, q := range slices.Sorted(maps.Keys(t.queued)) {
		queued = append(queued, fmt.Sprintf("%s %.0f", q, t.queued[q]))
	}
	for _, r := range slices.Sorted(maps.Keys(t.attempts)) {
		attempts = append(attempts, fmt.Sprintf("%s %.0f", r, t.attempts[r]-t.attemptsBefore[r]))
	}
	return "pod-seconds queued " + strings.Join(queued, ", ") + "; attempts " + strings.Join(attempts, ", ")
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	nodewright, assets, err := programs(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.busy {
		burner := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := burner.Start(); err != nil {
			return err
		}
		defer func() { _ = burner.Process.Kill(); _ = burner.Wait() }()
	}
	_, manifest, err := scenarios.Load("scale")
	if err != nil {
		return err
	}
	var rows []row
	for _, n := range cfg.sizes {
		r := measure(ctx, cfg, assets, nodewright, manifest, n)
		if r.err != nil {
			fmt.Fprintf(os.Stderr, "benche2e: %d pods: %v\n", n, r.err)
		}
		rows = append(rows, r)
		if ctx.Err() != nil {
			break
		}
	}
	write(out, cfg, rows)
	return nil
}

// programs are the nodewright binary and the control plane's directory
// (built when missing).
func programs(ctx context.Context, cfg config) (nodewright, assets string, err error) {
	if nodewright, err = filepath.Abs(cfg.nodewright); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(nodewright); err != nil {
		return "", "", fmt.Errorf("-nodewright: %w (make build makes it)", err)
	}
	if assets, err = controlplane.FindAssets(); err != nil {
		return "", "", err
	}
	return nodewright, assets, controlplane.Install(ctx, assets, os.Stderr)
}

// measure runs one size: nodewright launching the nodes, then the
// baseline.
func measure(ctx context.Context, cfg config, assets, nodewright string, manifest []byte, n int) row {
	r := row{pods: n, nwLine: timeline{workload: n}, baseLine: timeline{workload: n}}
	scaled, err := scenarios.WithPods(manifest, n)
	if err != nil {
		r.err = err
		return r
	}
	timeout := cmp.Or(cfg.timeout, 2*time.Minute+time.Duration(n/50)*time.Second)
	if !cfg.onlyBaseline {
		fmt.Fprintf(os.Stderr, "benche2e: %d pods, nodewright launching the nodes\n", n)
		results, err := simulate(ctx, cfg, assets, nodewright, fmt.Sprintf("nodewright-%d", n), []runner.Step{{Name: "scale", Manifest: scaled}}, timeout, r.nwLine.record)
		if len(results) > 0 {
			r.nw, r.price = results[0].Figures, results[0].Snapshot.PricePerHour
		}
		if err != nil {
			r.err = err
			return r
		}
	}
	nodes, workload, err := baseline(scaled)
	if err != nil {
		r.err = err
		return r
	}
	if cfg.reference != "" {
		fmt.Fprintf(os.Stderr, "benche2e: %d pods, the reference (its KWOK provider, KWOK)\n", n)
		if r.ref, err = runReference(ctx, cfg, assets, cfg.reference, workload, n, timeout); err != nil {
			r.err = err
		}
	}
	if cfg.skipBaseline {
		return r
	}
	r.baseline = nodes
	r.err = measureBaseline(ctx, cfg, assets, nodewright, &r, scaled, workload, timeout)
	return r
}

// measureBaseline runs the baseline of a size: its nodes, then its pods.
func measureBaseline(ctx context.Context, cfg config, assets, nodewright string, r *row, scaled, workload []byte, timeout time.Duration) error {
	fmt.Fprintf(os.Stderr, "benche2e: %d pods, baseline: %d %s nodes made first\n", r.pods, r.baseline, baselineType)
	steps := []runner.Step{{Name: "baseline-nodes", Manifest: baselineNodes(scaled, r.baseline)}, {Name: "baseline-pods", Manifest: workload}}
	step, last := 0, time.Duration(0)
	results, err := simulate(ctx, cfg, assets, nodewright, fmt.Sprintf("baseline-%d", r.pods), steps, timeout+time.Duration(r.baseline/5)*time.Second, func(s *runner.Snapshot, v schedulerView) {
		// The first step makes the nodes, the second the pods: each
		// step's watch counts its time from its start.
		if s.Elapsed < last {
			step++
		}
		last = s.Elapsed
		if step == 1 {
			r.baseLine.record(s, v)
		}
	})
	if len(results) > 1 {
		r.base = results[1].Figures
	}
	return err
}

// simulate runs the steps on a new simulation, the controllers in their
// own process.
func simulate(ctx context.Context, cfg config, assets, nodewright, name string, steps []runner.Step, timeout time.Duration, progress func(*runner.Snapshot, schedulerView)) ([]runner.StepResult, error) {
	opts := runner.DefaultOptions()
	opts.AssetsDir, opts.ControllerProcess = assets, nodewright
	if cfg.memLimit != "" {
		opts.ControllerEnv = append(opts.ControllerEnv, "GOMEMLIMIT="+cfg.memLimit)
	}
	if cfg.logDir != "" {
		opts.WorkDir = filepath.Join(cfg.logDir, name)
		if err := os.MkdirAll(opts.WorkDir, 0o750); err != nil {
			return nil, err
		}
	}
	if cfg.noAWSLimits {
		opts.Faults.RateLimits, opts.BootDelay = 0, 0
	}
	opts.NoNominationGate, opts.Operator.NominatePods = cfg.noNomination, !cfg.noNomination
	if cfg.nominateMax >= 0 {
		opts.Operator.NominatePodsMax = cfg.nominateMax
	}
	opts.Operator.Profiling = cfg.profile
	sim, err := runner.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	var profiled sync.WaitGroup
	profileErrs := make(chan error, len(cfg.profiled()))
	profiling := false // the profiles have started (once, in the pods' step)
	step, last := 0, time.Duration(0)
	results, err := sim.RunSteps(ctx, steps, timeout, 2*time.Minute, func(s *runner.Snapshot) {
		if s.Elapsed < last {
			step++ // each step's watch counts its time from its start
		}
		if !profiling && step == len(steps)-1 && s.Elapsed >= cfg.profileAt {
			profiling = true
			for _, name := range cfg.profiled() {
				profiled.Go(func() {
					if err := profile(ctx, sim.Plane, name, filepath.Join(opts.WorkDir, name+".cpu.pprof")); err != nil {
						profileErrs <- err
					}
				})
			}
		}
		last = s.Elapsed
		progress(s, readScheduler(ctx, sim.Plane))
	})
	profiled.Wait()
	if len(cfg.profiled()) > 0 && !profiling {
		err = errors.Join(err, fmt.Errorf("%s: no profile: the pods ran for less than -profile-at %s", name, cfg.profileAt))
	}
	close(profileErrs)
	for perr := range profileErrs {
		err = errors.Join(err, perr)
	}
	return results, errors.Join(err, sim.Stop())
}

// controlPlaneProfile is how long the profiles of -profile-apiserver and
// -profile-scheduler take.
const controlPlaneProfile = 90 * time.Second

// profiled are the programs of the control plane to profile.
func (c config) profiled() []string {
	var out []string
	if c.profileAPIServer {
		out = append(out, "kube-apiserver")
	}
	if c.profileScheduler {
		out = append(out, "kube-scheduler")
	}
	return out
}

// profile writes a CPU profile of a program of the control plane to path.
func profile(ctx context.Context, plane *controlplane.ControlPlane, name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := plane.Profile(ctx, name, controlPlaneProfile, f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// baseline sizes the baseline for a scaled manifest: enough nodes of
// baselineType for its pods' CPU at baselineFill, and the manifest's
// workloads alone.
func baseline(manifest []byte) (int, []byte, error) {
	types, err := instancetypes.Load(instancetypes.Options{Zones: account.Zones()})
	if err != nil {
		return 0, nil, err
	}
	var allocatable int64
	for _, it := range types {
		if it.Name == baselineType {
			allocatable = it.Allocatable.CPU()
		}
	}
	if allocatable == 0 {
		return 0, nil, fmt.Errorf("%s is not in the catalog", baselineType)
	}
	milli, workload, err := deployments(manifest)
	if err != nil {
		return 0, nil, err
	}
	nodes := int(math.Ceil(float64(milli) / (float64(allocatable) * baselineFill)))
	return max(nodes, 1), workload, nil
}

// deployments are a manifest's Deployments and the CPU (in millicores)
// their pods request.
func deployments(manifest []byte) (int64, []byte, error) {
	var milli int64
	var workload bytes.Buffer
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return milli, workload.Bytes(), nil
		}
		if err != nil {
			return 0, nil, err
		}
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		replicas := int64(ptr.Deref(d.Spec.Replicas, 1))
		for _, c := range d.Spec.Template.Spec.Containers {
			milli += replicas * c.Resources.Requests.Cpu().MilliValue()
		}
		workload.WriteString("---\n")
		workload.Write(doc)
	}
}

// baselineNodes is the scaled manifest's EC2NodeClass and aws-auth with a
// static NodePool of nodes baselineType on-demand nodes instead of its
// NodePool and workloads, and a Deployment of one pod (a step is done when
// its pods run on Ready nodes: it needs one). Not a bare pod: a pod bound
// the moment karpenter.sh/unregistered leaves a node can be deleted by
// kube-controller-manager's taint-eviction controller while its copy of
// the node still shows the taint (kubernetes/kubernetes#119862), and only
// a controller makes it again.
func baselineNodes(manifest []byte, nodes int) []byte {
	var out bytes.Buffer
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var meta struct{ Kind string }
		if yaml.Unmarshal(doc, &meta) == nil && (meta.Kind == "EC2NodeClass" || meta.Kind == "ConfigMap") {
			out.WriteString("---\n")
			out.Write(doc)
		}
	}
	fmt.Fprintf(&out, `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: baseline
spec:
  replicas: %d
  limits:
    nodes: "%d"
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [%q]}
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: nodes-ready, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: nodes-ready}}
  template:
    metadata: {labels: {app: nodes-ready}}
    spec:
      containers:
        - {name: app, image: public.ecr.aws/docker/library/busybox:latest, resources: {requests: {cpu: 100m, memory: 128Mi}}}
`, nodes, nodes, baselineType)
	return out.Bytes()
}

// writes are the API requests of f that change something.
func writes(f runner.Figures) float64 {
	total := 0.0
	for k, n := range f.Requests {
		switch strings.Fields(k)[0] {
		case "create", "update", "patch", "delete", "deletecollection":
			total += n
		}
	}
	return total
}

func write(out io.Writer, cfg config, rows []row) {
	fmt.Fprintf(out, "\nnodewright end to end (%s); baseline: the same pods on %s nodes made before them\n\n", conditions(cfg), baselineType)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "pods\tall Running\tbaseline\tratio\tfirst Ready\tNodeClaims\t$/h\tpeak RSS MiB\tCPU s\twrites/pod\twrites/NodeClaim\tAWS calls\tbaseline nodes\t")
	for _, r := range rows {
		writeRow(w, r)
	}
	_ = w.Flush()
	if cfg.reference != "" {
		writeReference(out, rows)
	}
	for _, r := range rows {
		fmt.Fprintf(out, "%d pods, Running: nodewright %s\n", r.pods, r.nwLine)
		fmt.Fprintf(out, "%d pods, Running: baseline   %s\n", r.pods, r.baseLine)
		fmt.Fprintf(out, "%d pods, control plane CPU s: nodewright %s; baseline %s", r.pods, planeCPU(r.nw.ControlPlaneCPUSeconds), planeCPU(r.base.ControlPlaneCPUSeconds))
		if cfg.reference != "" {
			fmt.Fprintf(out, "; reference %s", planeCPU(r.ref.plane))
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "%d pods, nodewright's writes: %s\n", r.pods, topWrites(r.nw.Requests, 8))
		if len(r.nw.APIServerRequests) > 0 {
			writes, events := topWrites(r.nw.APIServerRequests, 8), topWatchEvents(r.nw.APIServerWatchEvents, 5)
			if len(r.base.APIServerRequests) > 0 {
				writes += "; baseline " + topWrites(r.base.APIServerRequests, 8)
				events += "; baseline " + topWatchEvents(r.base.APIServerWatchEvents, 5)
			}
			fmt.Fprintf(out, "%d pods, kube-apiserver's writes from every client: nodewright %s\n", r.pods, writes)
			fmt.Fprintf(out, "%d pods, kube-apiserver's watch events: nodewright %s\n", r.pods, events)
		}
		if len(r.nw.RequestSeconds) > 0 {
			fmt.Fprintf(out, "%d pods, nodewright's waits on kube-apiserver (mean per request): %s\n", r.pods, topWaits(r.nw, 8))
		}
		if r.err != nil {
			fmt.Fprintf(out, "%d pods: %v\n", r.pods, r.err)
		}
	}
}

// conditions say how the runs were made.
func conditions(cfg config) string {
	out := "EC2's default request limits, 2 s boot"
	if cfg.noAWSLimits {
		out = "no EC2 request limits, 0 s boot"
	}
	if cfg.busy {
		out += ", one core kept busy"
	}
	if cfg.noNomination {
		out += ", no nominatedNodeName"
	}
	if cfg.nominateMax >= 0 {
		out += fmt.Sprintf(", --nominate-pods-max %d", cfg.nominateMax)
	}
	return out
}

// writeRow prints one size's figures.
func writeRow(w io.Writer, r row) {
	base := "-"
	if r.base.AllRunning > 0 {
		base = seconds(r.base.AllRunning)
	}
	calls := 0
	for _, c := range r.nw.AWSCalls {
		calls += c
	}
	wr := writes(r.nw)
	perClaim := 0.0
	if r.nw.NodeClaims > 0 {
		perClaim = wr / float64(r.nw.NodeClaims)
	}
	fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%.2f\t%d\t%.1f\t%.2f\t%.1f\t%d\t%d\t\n", r.pods, seconds(r.nw.AllRunning), base, ratio(r.nw.AllRunning, r.base.AllRunning),
		seconds(r.nw.FirstNodeReady), r.nw.NodeClaims, r.price, r.nw.PeakRSS>>20, r.nw.CPUSeconds, wr/float64(r.pods), perClaim, calls, r.baseline)
}

// writeReference prints the reference's figures beside nodewright's.
func writeReference(out io.Writer, rows []row) {
	fmt.Fprintf(out, "\nthe reference (its KWOK provider and KWOK: no cloud API, no boot delay) on the same control plane and pods\n\n")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "pods\tnodewright\treference\tratio\treference nodes\treference peak RSS MiB\treference CPU s\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%d\t%.1f\t\n", r.pods, seconds(r.nw.AllRunning), seconds(r.ref.allRunning), ratio(r.nw.AllRunning, r.ref.allRunning),
			r.ref.nodes, r.ref.peakRSS>>20, r.ref.cpuSeconds)
	}
	_ = w.Flush()
}

// planeCPU prints the CPU seconds of the control plane's programs.
func planeCPU(spent map[string]float64) string {
	if len(spent) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(controlplane.Components))
	for _, name := range controlplane.Components {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, spent[name]))
	}
	return strings.Join(parts, ", ")
}

// ratio is a ÷ b, "-" when either is unknown.
func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.Seconds()/b.Seconds())
}

// topWrites are the n most frequent writes among requests (by "verb
// resource"), as "COUNT VERB RESOURCE", after the number of writes in all.
func topWrites(requests map[string]float64, n int) string {
	type write struct {
		what  string
		count float64
	}
	var all []write
	total := 0.0
	for k, c := range requests {
		switch strings.Fields(k)[0] {
		case "create", "update", "patch", "apply", "delete", "deletecollection":
			all = append(all, write{k, c})
			total += c
		}
	}
	slices.SortFunc(all, func(a, b write) int { return cmp.Or(cmp.Compare(b.count, a.count), strings.Compare(a.what, b.what)) })
	parts := make([]string, 0, 1+n)
	parts = append(parts, fmt.Sprintf("%.0f in all", total))
	for _, w := range all[:min(n, len(all))] {
		parts = append(parts, fmt.Sprintf("%.0f %s", w.count, w.what))
	}
	return strings.Join(parts, ", ")
}

// topWatchEvents are the n resources kube-apiserver sent the most watch
// events of, with their megabytes, after the events in all.
func topWatchEvents(events map[string]float64, n int) string {
	var kinds []string
	total, bytes := 0.0, 0.0
	for k, c := range events {
		if strings.HasSuffix(k, " bytes") {
			bytes += c
			continue
		}
		kinds = append(kinds, k)
		total += c
	}
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(events[b], events[a]), strings.Compare(a, b)) })
	top := kinds[:min(n, len(kinds))]
	parts := make([]string, 0, 1+len(top))
	parts = append(parts, fmt.Sprintf("%.0f in all (%.0f MB)", total, bytes/1e6))
	for _, k := range top {
		parts = append(parts, fmt.Sprintf("%.0f %s (%.0f MB)", events[k], k, events[k+" bytes"]/1e6))
	}
	return strings.Join(parts, ", ")
}

// topWaits are the n kinds of request nodewright waited longest for in
// all, each with its mean wait, after the total over every request.
func topWaits(f runner.Figures, n int) string {
	type wait struct {
		what    string
		seconds float64
	}
	all := make([]wait, 0, len(f.RequestSeconds))
	total := 0.0
	for k, s := range f.RequestSeconds {
		all = append(all, wait{k, s})
		total += s
	}
	slices.SortFunc(all, func(a, b wait) int { return cmp.Compare(b.seconds, a.seconds) })
	top := all[:min(n, len(all))]
	parts := make([]string, 0, 1+len(top))
	parts = append(parts, fmt.Sprintf("%.0f s in all", total))
	for _, w := range top {
		mean := 0.0
		if c := f.Requests[w.what]; c > 0 {
			mean = w.seconds / c
		}
		parts = append(parts, fmt.Sprintf("%s %.0f s (%.0f ms)", w.what, w.seconds, mean*1000))
	}
	return strings.Join(parts, ", ")
}

// seconds prints a duration in whole seconds, "never" for zero.
func seconds(d time.Duration) string {
	if d == 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}
