// Package optest runs nodewright's controllers for tests: a real control
// plane, the simulated AWS account and the operator, wired as in
// production.
package optest

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
)

// Options choose the extra control-plane components and adjust the
// operator's configuration.
type Options struct {
	Scheduler, ControllerManager bool
	Configure                    func(*operator.Config)
	// Log receives the operator's logs; discarded (or printed with -v)
	// when unset.
	Log logr.Logger
}

// Env is a running test environment.
type Env struct {
	Kube    client.Client
	Account *simaws.Account
	Plane   *controlplane.ControlPlane
}

// Config is the operator configuration tests use: the reference behaviour
// with fast polling and batching.
func Config() operator.Config {
	cfg := operator.DefaultConfig()
	cfg.ClusterName = account.ClusterName
	cfg.KubernetesVersion = simaws.KubernetesVersion
	cfg.Lifecycle.Poll = 200 * time.Millisecond
	cfg.Disruption.Poll, cfg.Disruption.ValidationDelay = 500*time.Millisecond, time.Second
	cfg.BatchIdle, cfg.BatchMax = 200*time.Millisecond, 2*time.Second
	cfg.MetricsAddr, cfg.HealthAddr = "0", "0"
	cfg.SkipNameValidation = true
	return cfg
}

// Start starts everything and stops it when the test ends.
func Start(t *testing.T, opts Options) *Env {
	t.Helper()
	logf.SetLogger(logr.Discard())
	if testing.Verbose() {
		logf.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	plane := controlplane.StartForTest(t, controlplane.Options{Scheduler: opts.Scheduler, ControllerManager: opts.ControllerManager})
	a := simaws.NewAccount()
	a.Seed()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config()
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	log := logf.Log
	if opts.Log.GetSink() != nil {
		log = opts.Log
	}
	k, _ := Direct(t, plane)
	// The controllers run as the chart's service account: a permission
	// the chart lacks fails the test.
	var gates []string
	if cfg.PodDeletionCostManagement {
		gates = append(gates, "podDeletionCostManagement")
	}
	asChart, err := charts.InstallRBAC(ctx, k, plane.Config, account.ClusterName, gates...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	mgr, err := runner.Operator(ctx, asChart, cfg, a, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	RunManager(t, ctx, cancel, mgr)
	return &Env{Kube: k, Account: a, Plane: plane}
}

// RunManager runs mgr until the test ends, then stops it with cancel and
// fails the test if it ended with an error.
func RunManager(t testing.TB, ctx context.Context, cancel context.CancelFunc, mgr manager.Manager) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// Direct is a client of the control plane that reads the API server (no
// cache), with nodewright's scheme.
func Direct(t testing.TB, plane *controlplane.ControlPlane) (client.Client, *runtime.Scheme) {
	t.Helper()
	scheme, err := operator.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	k, err := client.New(plane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return k, scheme
}

// Create creates an object or fails the test.
func (e *Env) Create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.Kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// WaitFor polls cond for up to a minute (a loaded machine can take tens
// of seconds for what takes one when idle).
func (e *Env) WaitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// DefaultNodeClass creates the scenarios' EC2NodeClass "default" and waits
// until it is Ready.
func (e *Env) DefaultNodeClass(t *testing.T) {
	t.Helper()
	e.Create(t, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: account.NodeRole,
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
	}})
	e.WaitFor(t, "EC2NodeClass default Ready", func(ctx context.Context) (bool, error) {
		nc := &awsv1.EC2NodeClass{}
		err := e.Kube.Get(ctx, client.ObjectKey{Name: "default"}, nc)
		return err == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionReady), err
	})
}
