// Package harness is what the end-to-end test packages share: starting a
// simulation with their options, running a scenario or its steps to the
// end, and reading what happened.
package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/internal/tools/whatif"
	"github.com/nodewright/nodewright/scenarios"
)

// AWSAuth is the aws-auth ConfigMap that maps the simulated account's
// node role, as a manifest document.
const AWSAuth = `apiVersion: v1
kind: ConfigMap
metadata: {name: aws-auth, namespace: kube-system}
data:
  mapRoles: |
    - rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim
      username: system:node:{{EC2PrivateDNSName}}
      groups: [system:bootstrappers, system:nodes]
`

// Quiet keeps the operator's logs out of the tests' output; a package's
// TestMain calls it.
func Quiet() {
	logf.SetLogger(logr.Discard())
}

// Start starts a simulation with the end-to-end tests' options, edited,
// and stops it when the test ends.
func Start(t *testing.T, edit func(*runner.Options)) *runner.Sim {
	t.Helper()
	opts := runner.DefaultOptions()
	opts.BootDelay, opts.CCMDelay = time.Second, time.Second
	opts.Operator.SkipNameValidation = true // one simulation after another in this process
	// A disruption decided on a loaded machine shows later than on an
	// idle one: wait longer before calling the cluster settled.
	opts.Settle = 20 * time.Second
	// NODEWRIGHT_E2E_LOGS=DIR keeps each test's nodewright log (debug
	// level) as DIR/TEST.log (JSON lines), for a failure that only a
	// loaded machine shows.
	if dir := os.Getenv("NODEWRIGHT_E2E_LOGS"); dir != "" {
		f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		opts.Log = zap.New(zap.WriteTo(f), zap.JSONEncoder(), zap.Level(zapcore.DebugLevel))
	}
	if edit != nil {
		edit(&opts)
	}
	sim, err := runner.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sim.Stop(); err != nil {
			t.Errorf("stopping the simulation: %v\n%s", err, busyGoroutines())
		}
	})
	return sim
}

// BuildNodewright builds the nodewright binary, for a controller in its
// own process.
func BuildNodewright(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodewright")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/nodewright/nodewright/cmd/nodewright") //nolint:gosec // the project's own binary, into the test's directory
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	return bin
}

// Run starts a simulation, applies a scenario and watches it settle.
func Run(t *testing.T, scenario string, edit func(*runner.Options)) (*runner.Sim, *runner.Snapshot) {
	t.Helper()
	name, manifest, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	return RunManifest(t, name, manifest, edit)
}

// RunManifest starts a simulation, applies a manifest and watches it
// settle.
func RunManifest(t *testing.T, name string, manifest []byte, edit func(*runner.Options)) (*runner.Sim, *runner.Snapshot) {
	t.Helper()
	// A NodeClaim whose instance boots late is a change still to come:
	// the watch waits that long past 30 s without change before it calls
	// the cluster stalled.
	stall := 30 * time.Second
	sim := Start(t, func(o *runner.Options) {
		if edit != nil {
			edit(o)
		}
		stall += o.BootDelay + o.BootJitter
	})
	ctx := context.Background()
	if err := sim.Apply(ctx, name, manifest); err != nil {
		t.Fatal(err)
	}
	snap, err := sim.Watch(ctx, 2*time.Minute, stall, nil)
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	runner.WriteSummary(&summary, name, snap)
	t.Log(summary.String())
	return sim, snap
}

// RunSteps starts a simulation and runs a scenario with the steps that
// follow it, each until it settles.
func RunSteps(t *testing.T, scenario string, timeout time.Duration, edit func(*runner.Options)) (*runner.Sim, []runner.StepResult) {
	t.Helper()
	return RunStepsWith(t, scenario, timeout, nil, edit)
}

// RunStepsWith is RunSteps that hands the running simulation to running
// before the first step.
func RunStepsWith(t *testing.T, scenario string, timeout time.Duration, running func(*runner.Sim), edit func(*runner.Options)) (*runner.Sim, []runner.StepResult) {
	t.Helper()
	return RunStepsUntil(t, scenario, timeout, nil, running, edit)
}

// RunStepsUntil is RunStepsWith whose steps also wait, each up to the
// timeout, for what until (by step) says they bring.
func RunStepsUntil(t *testing.T, scenario string, timeout time.Duration, until []func(*runner.Snapshot) bool, running func(*runner.Sim), edit func(*runner.Options)) (*runner.Sim, []runner.StepResult) {
	t.Helper()
	name, manifest, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	names, data := scenarios.Then(name)
	steps := make([]runner.Step, 0, 1+len(names))
	steps = append(steps, runner.Step{Name: name, Manifest: manifest})
	for i := range names {
		steps = append(steps, runner.Step{Name: names[i], Manifest: data[i]})
	}
	sim := Start(t, edit)
	if running != nil {
		running(sim)
	}
	for i := range steps {
		if i < len(until) {
			steps[i].Until = until[i]
		}
	}
	results, err := sim.RunSteps(context.Background(), steps, timeout, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	runner.WriteSteps(&summary, results)
	t.Log(summary.String())
	return sim, results
}

// ClaimNames are the NodeClaims of a snapshot.
func ClaimNames(snap *runner.Snapshot) map[string]bool {
	out := map[string]bool{}
	for _, c := range snap.NodeClaims {
		out[c.Name] = true
	}
	return out
}

// Mention counts the lines that contain fragment.
func Mention(lines []string, fragment string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, fragment) {
			n++
		}
	}
	return n
}

// ProblemsMention reports whether one of the snapshot's problems contains
// every fragment.
func ProblemsMention(snap *runner.Snapshot, fragments ...string) bool {
	for _, p := range snap.Problems {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(p, f)
		}
		if all {
			return true
		}
	}
	return false
}

// NodeClass reads an EC2NodeClass from the simulation's cluster.
func NodeClass(t *testing.T, sim *runner.Sim, name string) *awsv1.EC2NodeClass {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := sim.Kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

// PlannedNodes is how many nodes simulate plans for a scenario in the
// simulated account.
func PlannedNodes(t *testing.T, scenario string) int {
	t.Helper()
	return len(Plan(t, scenario).NodeClaims)
}

// Plan is what simulate plans for a scenario, in the simulated account.
func Plan(t *testing.T, scenario string) *whatif.Report {
	t.Helper()
	_, manifest, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	objs := &whatif.Objects{}
	if err := objs.Load(scenario, bytes.NewReader(manifest)); err != nil {
		t.Fatal(err)
	}
	a := simaws.NewAccount()
	a.Seed()
	res, err := whatif.RunWith(objs, &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion})
	if err != nil {
		t.Fatal(err)
	}
	return whatif.NewReport(res)
}

// WhyNodeClaimsStay is, for each NodeClaim in the snapshot, the last
// reason nodewright gave for not disrupting it (its DisruptionBlocked
// event), as kubectl describe shows it.
func WhyNodeClaimsStay(t *testing.T, sim *runner.Sim, snap *runner.Snapshot) map[string]string {
	t.Helper()
	events := &corev1.EventList{}
	if err := sim.Kube.List(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	claims := ClaimNames(snap)
	latest := map[string]corev1.Event{}
	for _, ev := range events.Items {
		name := ev.InvolvedObject.Name
		if ev.InvolvedObject.Kind != "NodeClaim" || ev.Reason != "DisruptionBlocked" || !claims[name] {
			continue
		}
		if cur, ok := latest[name]; !ok || runner.Newer(ev, cur) {
			latest[name] = ev
		}
	}
	out := map[string]string{}
	for name, ev := range latest {
		out[name] = ev.Message
	}
	return out
}

// WaitFor polls cond every second until it holds, failing the test after
// timeout.
func WaitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// busyGoroutines are the stacks of the goroutines still in nodewright's
// own code: when the simulation does not stop in time, they say which
// work outlived it.
func busyGoroutines() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "nodewright/nodewright/internal/") && !strings.Contains(g, "harness.busyGoroutines") {
			out = append(out, g)
		}
	}
	return "goroutines in nodewright's code:\n" + strings.Join(out, "\n\n")
}
