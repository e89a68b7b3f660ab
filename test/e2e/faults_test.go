package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// faultSuite skips a fault suite outside make faults
// (NODEWRIGHT_E2E_FAULTS=1), which keeps make test within its time.
func faultSuite(t *testing.T) {
	t.Helper()
	if os.Getenv("NODEWRIGHT_E2E_FAULTS") == "" {
		t.Skip("a fault suite: make faults runs it (NODEWRIGHT_E2E_FAULTS=1)")
	}
}

// liveInstances are the account's pending or running instances by
// provider ID, with the NodeClaim their tag names.
func liveInstances(sim *runner.Sim) map[string]string {
	out := map[string]string{}
	for _, inst := range sim.Account.Instances() {
		if inst.State.Name == ec2types.InstanceStateNamePending || inst.State.Name == ec2types.InstanceStateNameRunning {
			out[providerIDOf(inst)] = tagOf(inst.Tags, provider.TagNodeClaim)
		}
	}
	return out
}

// claimsByInstance are the NodeClaims by the instance they record.
func claimsByInstance(t *testing.T, sim *runner.Sim) map[string]string {
	t.Helper()
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, nc := range claims.Items {
		if nc.Status.ProviderID != "" {
			out[nc.Status.ProviderID] = nc.Name
		}
	}
	return out
}

// checkOneToOne fails the test where an instance runs without a NodeClaim
// or a NodeClaim records an instance that does not run.
func checkOneToOne(t *testing.T, sim *runner.Sim) {
	t.Helper()
	live, claims := liveInstances(sim), claimsByInstance(t, sim)
	for id := range live {
		if claims[id] == "" {
			t.Errorf("instance %s runs without a NodeClaim", id)
		}
	}
	for id, name := range claims {
		if _, ok := live[id]; !ok {
			t.Errorf("NodeClaim %s records %s, which does not run", name, id)
		}
	}
}

// EC2's reads lag its writes, fleets answer in part and its clock runs
// behind: an instance is not described for 8 s after its launch, every
// fleet of more than one instance fails one with
// InsufficientInstanceCapacity, and launch times read ten minutes early. The healthy
// scenario still settles with one instance per NodeClaim: no launch
// repeated for an instance not described yet, no NodeClaim deleted for
// it, none left without one.
func TestEC2EventualConsistencyAndPartialFleets(t *testing.T) {
	faultSuite(t)
	sim, snap := harness.Run(t, "healthy", func(o *runner.Options) {
		o.Faults.DescribeLag, o.Faults.PartialFleet, o.Faults.ClockSkew = 8*time.Second, 1, -10*time.Minute
		o.Operator.LaunchBatching = true
		o.Operator.GCInterval, o.Operator.GCGrace = 2*time.Second, 5*time.Second
	})
	if !snap.Done() {
		t.Fatalf("the healthy scenario did not settle under EC2's lag and partial fleets: %v", snap.Problems)
	}
	// Collection has had its grace and passes since.
	time.Sleep(12 * time.Second)
	checkOneToOne(t, sim)
}

// A wrong region or credential makes EC2 answer "not found" for every
// instance: for three grace periods of garbage collection nothing is
// deleted or terminated, and every pod keeps running. Before, the first
// pass deleted every NodeClaim whose instance it did not find.
func TestEC2ThatFindsNothingDeletesNothing(t *testing.T) {
	faultSuite(t)
	sim, snap := harness.Run(t, "healthy", func(o *runner.Options) {
		o.Operator.GCInterval, o.Operator.GCGrace = time.Second, 3*time.Second
	})
	if !snap.Done() {
		t.Fatalf("the healthy scenario did not settle: %v", snap.Problems)
	}
	before, claimsBefore := liveInstances(sim), claimsByInstance(t, sim)
	sim.Account.SetFaults(simaws.Faults{HideInstances: true})
	time.Sleep(12 * time.Second)
	sim.Account.SetFaults(simaws.Faults{})
	after, claimsAfter := liveInstances(sim), claimsByInstance(t, sim)
	for id, name := range claimsBefore {
		if claimsAfter[id] != name {
			t.Errorf("NodeClaim %s (%s) was deleted while EC2 found nothing", name, id)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			t.Errorf("instance %s was terminated while EC2 found nothing", id)
		}
	}
	snap, err := sim.Watch(context.Background(), time.Minute, 30*time.Second, nil)
	if err != nil || !snap.Done() || snap.RunningPods == 0 {
		t.Errorf("after EC2 found its instances again: %v, %+v", err, snap.Problems)
	}
}

// The control plane fails under nodewright: kube-apiserver is killed
// while NodeClaims launch, stays down for 10 s and comes back; then etcd
// stalls 300 ms in every second for 20 s while the workload grows. The
// cluster settles with one instance per NodeClaim, none without one, and
// the PodDisruptionBudget's pods all running.
func TestControlPlaneRestartedAndSlowed(t *testing.T) {
	faultSuite(t)
	sim := harness.Start(t, func(o *runner.Options) {
		o.Operator.GCInterval, o.Operator.GCGrace = 2*time.Second, 5*time.Second
	})
	ctx := context.Background()
	if err := sim.Apply(ctx, "crash", []byte(crashScenario)); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "a NodeClaim launching", time.Minute, func() bool {
		claims := &v1.NodeClaimList{}
		return sim.Kube.List(ctx, claims) == nil && len(claims.Items) > 0
	})
	if err := sim.Plane.RestartAPIServer(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	slowed := make(chan error, 1)
	go func() { slowed <- sim.Plane.SlowEtcd(ctx, 300*time.Millisecond, time.Second, 20*time.Second) }()
	scale(t, sim, "filler", 75)
	if err := <-slowed; err != nil {
		t.Fatal(err)
	}
	snap, err := sim.Watch(ctx, 5*time.Minute, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Done() {
		t.Fatalf("after kube-apiserver's restart and a slow etcd the cluster did not settle: %v", snap.Problems)
	}
	time.Sleep(12 * time.Second) // collection's grace and passes
	checkOneToOne(t, sim)
	perClaim := map[string]int{}
	for _, name := range liveInstances(sim) {
		perClaim[name]++
	}
	for name, n := range perClaim {
		if n > 1 {
			t.Errorf("NodeClaim %s has %d instances", name, n)
		}
	}
}
