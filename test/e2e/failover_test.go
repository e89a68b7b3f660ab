package e2e

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// A leader stopped as a rolling update stops it (SIGTERM) gives the lease
// up on its way out: once it has exited, the lease no longer names it,
// so the other replica takes over at its next try instead of after the
// lease's 30 s; the other then leads and the workload settles.
func TestStoppedLeaderReleasesTheLease(t *testing.T) {
	bin := harness.BuildNodewright(t)
	sim := harness.Start(t, func(o *runner.Options) {
		o.ControllerProcess = bin
		o.Replicas, o.Operator.LeaderElection = 2, true
		o.Operator.LeaseDuration, o.Operator.RenewDeadline, o.Operator.RetryPeriod = 30*time.Second, 20*time.Second, time.Second
	})
	ctx := context.Background()
	lease := &coordinationv1.Lease{}
	holder := func() string {
		if err := sim.Kube.Get(ctx, client.ObjectKey{Namespace: charts.LocalNamespace, Name: "nodewright-leader"}, lease); err != nil {
			return ""
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	harness.WaitFor(t, "a replica to lead", 2*time.Minute, func() bool { return holder() != "" && sim.Leaders(ctx) == 1 })
	before := holder()
	if err := sim.StopLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if now := holder(); now == before {
		t.Fatalf("the stopped leader %s still holds the lease (renewed %v, for %ds): it did not release it", before, lease.Spec.RenewTime, ptr.Deref(lease.Spec.LeaseDurationSeconds, 0))
	}
	harness.WaitFor(t, "the other replica to lead", time.Minute, func() bool { return sim.Leaders(ctx) == 1 })
	if err := sim.Apply(ctx, "crash", []byte(crashScenario)); err != nil {
		t.Fatal(err)
	}
	snap, err := sim.Watch(ctx, 4*time.Minute, time.Minute, nil)
	if err != nil || !snap.Done() {
		t.Fatalf("the replica left does not run the cluster: %v %v", err, snap.Problems)
	}
}
