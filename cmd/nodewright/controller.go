package main

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/aws/interruption"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/operator/command"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// kubeClient is a client for nodewright's and Kubernetes' types.
func kubeClient(rc *rest.Config) (client.Client, error) {
	scheme, err := operator.Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(rc, client.Options{Scheme: scheme})
}

// runOnSimulatedAccount runs the operator on a simulated account, with
// its simulated kubelets and cloud controller manager, until ctx ends.
func runOnSimulatedAccount(ctx context.Context, rc *rest.Config, cfg operator.Config, log logr.Logger) error {
	kube, err := kubeClient(rc)
	if err != nil {
		return err
	}
	account := simaws.NewAccount()
	account.Seed()
	if cfg.Interruption.Queue != "" {
		account.SetEventQueue(cfg.Interruption.Queue, interruption.Notice)
	}
	mgr, err := runner.Operator(ctx, rc, cfg, account, log)
	if err != nil {
		return err
	}
	nodes := &runner.Nodes{Every: 500 * time.Millisecond, Log: log.WithName("nodes"),
		Kubelets: &kubelet.Simulator{Kube: kube, Account: account, Clock: clock.RealClock{}, BootDelay: 2 * time.Second, DRADelay: runner.DRADelay, Log: log.WithName("kubelets")},
		CCM:      &kubelet.CloudControllerManager{Kube: kube, Clock: clock.RealClock{}, Delay: 2 * time.Second, Enabled: true}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodesDone := make(chan error, 1)
	go func() { nodesDone <- nodes.Run(ctx) }()
	err = mgr.Start(ctx)
	cancel()
	return errors.Join(err, <-nodesDone)
}

// dryRunGates reads the controller's --feature-gates for a dry run: the
// same gates as the controller's (a gate it does not have is an error),
// of which those that change decisions are kept.
func dryRunGates(value string) (whatif.Gates, error) {
	var cfg operator.Config
	if err := command.FeatureGates(&cfg, value); err != nil {
		return whatif.Gates{}, err
	}
	return whatif.Gates{SpotToSpotConsolidation: cfg.SpotToSpotConsolidation}, nil
}
