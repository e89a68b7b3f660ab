package runner

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
)

// This file is the one wiring of nodewright's operator to the simulated
// account, for nodewright sim, the controller tests (optest) and
// nodewright controller --cloud sim.

// Clouds are a simulated account's APIs, for the operator.
func Clouds(a *simaws.Account) operator.Clouds {
	return operator.Clouds{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), EKS: a.EKS(), Pricing: a.Pricing(), SQS: a.SQS()}
}

// Operator builds nodewright's operator on a simulated account: the
// account's clouds, and its Kubernetes version for the AMI aliases when
// cfg names none.
func Operator(ctx context.Context, rc *rest.Config, cfg operator.Config, a *simaws.Account, log logr.Logger) (manager.Manager, error) {
	if cfg.KubernetesVersion == "" {
		cfg.KubernetesVersion = simaws.KubernetesVersion
	}
	if cfg.Region == "" {
		cfg.Region = account.Region // the simulated account's
	}
	return operator.New(ctx, rc, cfg, Clouds(a), clock.RealClock{}, log)
}

// Nodes are the simulated nodes' side of a cluster: the kubelets of the
// account's instances and the cloud controller manager.
type Nodes struct {
	Kubelets *kubelet.Simulator
	CCM      *kubelet.CloudControllerManager
	// Every is how often both look again.
	Every time.Duration
	// Tick, when set, runs after each cloud controller manager pass.
	Tick func(context.Context)
	Log  logr.Logger
}

// Run runs the kubelets and the cloud controller manager until ctx ends,
// logging what fails on the way (each pass tries again); it returns the
// kubelets' error when they cannot run at all.
func (n *Nodes) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- n.Kubelets.Run(ctx, n.Every) }()
	ticker := time.NewTicker(n.Every)
	defer ticker.Stop()
	for {
		if err := n.CCM.Tick(ctx); err != nil && ctx.Err() == nil {
			n.Log.Error(err, "cloud controller manager")
		}
		if n.Tick != nil {
			n.Tick(ctx)
		}
		select {
		case err := <-done:
			if err != nil && ctx.Err() == nil {
				n.Log.Error(err, "kubelets")
			}
			return err
		case <-ctx.Done():
			return <-done
		case <-ticker.C:
		}
	}
}
