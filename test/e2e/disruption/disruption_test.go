package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// A workload scales down: emptied nodes are deleted, the rest
// consolidated, and the cluster ends cheaper with every pod Running.
func TestConsolidation(t *testing.T) {
	// The scale-down's pods terminate for up to their grace period; the
	// step is not settled while any does, nor before consolidateAfter
	// has passed after, so consolidation (which waits for them) is seen.
	// On a loaded machine the decision can come after the settle time:
	// the scale-down step waits (up to the timeout) for the 4 pods'
	// nodes to be all that is left.
	_, results := harness.RunStepsUntil(t, "consolidation", 4*time.Minute, []func(*runner.Snapshot) bool{nil, func(s *runner.Snapshot) bool { return s.Nodes <= 4 }}, nil, nil)
	before, after := results[0].Snapshot, results[1].Snapshot
	if !before.Done() || !after.Done() {
		t.Fatalf("not every pod ran: before %d/%d, after %d/%d", before.RunningPods, before.Pods, after.RunningPods, after.Pods)
	}
	if after.Nodes >= before.Nodes || after.PricePerHour >= before.PricePerHour {
		t.Errorf("scaling down left %d nodes at $%.4f/h (before: %d at $%.4f/h)", after.Nodes, after.PricePerHour, before.Nodes, before.PricePerHour)
	}
	if harness.Mention(results[1].Disruptions, "DisruptionTerminating: Empty") == 0 {
		t.Errorf("no node was deleted as Empty: %v", results[1].Disruptions)
	}
	// The 4 pods need no more than 4 nodes (one 1-CPU pod per 2-vCPU node
	// at worst).
	if after.Nodes > 4 {
		t.Errorf("%d nodes remain for 4 pods", after.Nodes)
	}
}

// A node whose kubelet reports Ready=False is replaced once it has failed
// for the repair toleration: its NodeClaim goes without waiting on its
// pod's PodDisruptionBudget (maxUnavailable 0), the pod runs again on a
// new node, and the NodePool has as many nodes as before.
func TestNodeRepair(t *testing.T) {
	sim, results := harness.RunSteps(t, "repair", 4*time.Minute, func(o *runner.Options) {
		o.Operator.Repair.Ready = 10 * time.Second
	})
	before, after := results[0].Snapshot, results[1].Snapshot
	if !before.Done() || !after.Done() {
		t.Fatalf("not every pod ran: before %d/%d, after %d/%d", before.RunningPods, before.Pods, after.RunningPods, after.Pods)
	}
	if n := harness.Mention(results[1].Disruptions, "NodeRepair: node "); n != 1 {
		t.Errorf("%d nodes repaired, want 1: %v", n, results[1].Disruptions)
	}
	kept, gone := 0, 0
	now := harness.ClaimNames(after)
	for name := range harness.ClaimNames(before) {
		if now[name] {
			kept++
		} else {
			gone++
		}
	}
	if gone != 1 || kept != len(before.NodeClaims)-1 || len(after.NodeClaims) != len(before.NodeClaims) {
		t.Errorf("%d NodeClaims replaced, %d kept, %d after (%d before); want the failing one replaced", gone, kept, len(after.NodeClaims), len(before.NodeClaims))
	}
	nodes := &corev1.NodeList{}
	if err := sim.Kube.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Annotations[kubelet.ConditionsAnnotation] != "" {
			t.Errorf("the failing node %s is still there", n.Name)
		}
	}
}

// With RebootForRepair, a node whose node monitoring agent reports a GPU
// fault a reboot clears (XID 63) past its toleration is rebooted, not
// replaced: its pod's PodDisruptionBudget (maxUnavailable 0) holds the
// drain until the repair drain's bound, the pod rides the reboot out, the
// node comes back with a new boot ID and without the failure, the fence
// comes off, and the NodeClaim says the reboot succeeded. No NodeClaim is
// replaced.
func TestNodeRepairReboots(t *testing.T) {
	name, manifest, err := scenarios.Load("repair")
	if err != nil {
		t.Fatal(err)
	}
	sim := harness.Start(t, func(o *runner.Options) {
		o.Operator.Repair.Accelerator, o.Operator.Repair.Reboot = 10*time.Second, true
	})
	kernel := runner.Step{Name: "GPU fails", Manifest: []byte("apiVersion: sim.nodewright.dev/v1\nkind: KubeletFailure\nmetadata: {name: gpu}\n" +
		"spec: {nodePool: default, nodes: 1, conditions: {AcceleratedHardwareReady: \"False/NvidiaXID63Error\"}}\n")}
	ctx := context.Background()
	results, err := sim.RunSteps(ctx, []runner.Step{{Name: name, Manifest: manifest}, kernel}, 4*time.Minute, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, after := results[0].Snapshot, results[1].Snapshot
	if !before.Done() || !after.Done() {
		t.Fatalf("not every pod ran: before %d/%d, after %d/%d", before.RunningPods, before.Pods, after.RunningPods, after.Pods)
	}
	for _, want := range []string{"NodeRepair: node ", "NodeRebooting: ", "NodeRebooted: "} {
		if n := harness.Mention(results[1].Disruptions, want); n != 1 {
			t.Errorf("%d events %q, want 1: %v", n, want, results[1].Disruptions)
		}
	}
	if harness.Mention(results[1].Disruptions, "rebooting it") != 1 || harness.Mention(results[1].Disruptions, "DisruptionTerminating") != 0 {
		t.Errorf("want a reboot, no termination: %v", results[1].Disruptions)
	}
	now := harness.ClaimNames(after)
	for name := range harness.ClaimNames(before) {
		if !now[name] {
			t.Errorf("NodeClaim %s was replaced", name)
		}
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	rebooted := 0
	for _, nc := range claims.Items {
		c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
		if c == nil {
			continue
		}
		rebooted++
		if c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonRebootSucceeded || nc.Annotations[v1.AnnotationRebootPreBootID] != "" {
			t.Errorf("NodeClaim %s: Rebooting %s/%s %q, annotations %v", nc.Name, c.Status, c.Reason, c.Message, nc.Annotations)
		}
	}
	if rebooted != 1 {
		t.Errorf("%d NodeClaims were rebooted, want 1", rebooted)
	}
	nodes := &corev1.NodeList{}
	if err := sim.Kube.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Annotations[kubelet.ConditionsAnnotation] != "" || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyRebooting }) {
			t.Errorf("node %s still fails or is fenced: %v %v", n.Name, n.Annotations, n.Spec.Taints)
		}
	}
	reboots := 0
	for _, inst := range sim.Account.Instances() {
		reboots += inst.Reboots
	}
	if reboots != 1 {
		t.Errorf("%d instance reboots, want 1", reboots)
	}
}

// Changing the EC2NodeClass drifts every node; they are replaced one at a
// time (the budget) without ever breaking the PodDisruptionBudget.
func TestDrift(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu         sync.Mutex
		violations []string
		most       int
		rollout    = map[string]bool{} // RolloutInProgress messages seen
		started    = make(chan *runner.Sim, 1)
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sim := <-started
		healthy := false // the workload has run in full once
		for ctx.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			pdb := &policyv1.PodDisruptionBudget{}
			if err := sim.Kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, pdb); err != nil {
				continue
			}
			nodes := &corev1.NodeList{}
			if err := sim.Kube.List(ctx, nodes); err != nil {
				continue
			}
			disrupting := 0
			for _, n := range nodes.Items {
				for _, taint := range n.Spec.Taints {
					if taint.Key == v1.TaintKeyDisrupted || !n.DeletionTimestamp.IsZero() {
						disrupting++
						break
					}
				}
			}
			np := &v1.NodePool{}
			if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
				continue
			}
			mu.Lock()
			if c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionRolloutInProgress); c != nil {
				rollout[c.Message] = true
			}
			most = max(most, disrupting)
			healthy = healthy || (pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 4)
			if healthy && pdb.Status.CurrentHealthy < pdb.Status.DesiredHealthy {
				violations = append(violations, time.Now().Format(time.TimeOnly)+": "+pdb.Status.String())
			}
			mu.Unlock()
		}
	}()
	sim, results := harness.RunStepsWith(t, "drift", 4*time.Minute, func(s *runner.Sim) { started <- s }, nil)
	cancel()
	<-done
	// The NodePool showed the rollout while it went on, and clears it
	// once every drifted node is replaced.
	replacing := false
	for msg := range rollout {
		replacing = replacing || (strings.Contains(msg, "1 being replaced") && strings.HasSuffix(msg, "budget 1 allows 1 at once"))
	}
	if !replacing {
		t.Errorf("the NodePool never said a drifted node was being replaced within its budget: %v", rollout)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		np := &v1.NodePool{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
			return false, err
		}
		return meta.FindStatusCondition(np.Status.Conditions, v1.ConditionRolloutInProgress) == nil, nil
	})
	if err != nil {
		t.Errorf("RolloutInProgress stays on the NodePool after the rollout: %v", err)
	}
	first, last := results[0].Snapshot, results[1].Snapshot
	if !last.Done() {
		t.Fatalf("not every pod runs after the drift: %d/%d", last.RunningPods, last.Pods)
	}
	old := harness.ClaimNames(first)
	for name := range harness.ClaimNames(last) {
		if old[name] {
			t.Errorf("NodeClaim %s was not replaced after its EC2NodeClass changed", name)
		}
	}
	if n := harness.Mention(results[1].Disruptions, "DisruptionTerminating: Drifted"); n != len(old) {
		t.Errorf("%d drifted NodeClaims terminated, want %d: %v", n, len(old), results[1].Disruptions)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 1 {
		t.Errorf("%d nodes were disrupted at once; the budget allows 1", most)
	}
	if len(violations) > 0 {
		t.Errorf("the PodDisruptionBudget was broken: %v", violations)
	}
}

// NodeClaims older than expireAfter are replaced, their pods Running on
// the replacements.
func TestExpiration(t *testing.T) {
	_, results := harness.RunSteps(t, "expiration", 150*time.Second, nil)
	snap := results[0].Snapshot
	if !snap.Done() {
		t.Fatalf("not every pod runs: %d/%d", snap.RunningPods, snap.Pods)
	}
	launched, terminated := harness.Mention(snap.Disruptions, "DisruptionLaunching: Expired"), harness.Mention(snap.Disruptions, "DisruptionTerminating: Expired")
	if launched == 0 || terminated != launched {
		t.Errorf("expired NodeClaims: %d replacements launched, %d terminated: %v", launched, terminated, snap.Disruptions)
	}
}

// A static NodePool keeps its replicas: scaled up and down, the pods
// Running throughout, and its drifted nodes replaced one at a time by the
// pool itself, never launching more than it replaces.
func TestStaticNodePool(t *testing.T) {
	sim, results := harness.RunSteps(t, "static", 4*time.Minute, nil)
	if len(results) != 4 {
		t.Fatalf("%d steps ran, want 4", len(results))
	}
	for i, want := range []int{3, 5, 2, 2} {
		snap := results[i].Snapshot
		if !snap.Done() {
			t.Errorf("step %s: not every pod runs or NodeClaim is Ready: %d/%d pods", results[i].Name, snap.RunningPods, snap.Pods)
		}
		if len(snap.NodeClaims) != want {
			t.Errorf("step %s: %d NodeClaims, want the %d replicas", results[i].Name, len(snap.NodeClaims), want)
		}
	}
	if n := harness.Mention(results[2].Disruptions, "StaticScaledDown"); n != 3 {
		t.Errorf("scaling 5 → 2 deleted %d NodeClaims, want 3: %v", n, results[2].Disruptions)
	}
	for _, i := range []int{0, 1, 3} {
		if n := harness.Mention(results[i].Disruptions, "StaticScaledDown"); n != 0 {
			t.Errorf("step %s launched more than it needed and removed %d: %v", results[i].Name, n, results[i].Disruptions)
		}
	}
	old := harness.ClaimNames(results[2].Snapshot)
	for name := range harness.ClaimNames(results[3].Snapshot) {
		if old[name] {
			t.Errorf("NodeClaim %s was not replaced after the template changed", name)
		}
	}
	if n := harness.Mention(results[3].Disruptions, "DisruptionTerminating: Drifted"); n != 2 {
		t.Errorf("%d drifted NodeClaims terminated, want 2: %v", n, results[3].Disruptions)
	}
	// kubectl get nodepool shows the count.
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		np := &v1.NodePool{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "static"}, np); err != nil {
			t.Fatal(err)
		}
		if np.Status.Nodes == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("NodePool static status.nodes = %d, want 2", np.Status.Nodes)
			break
		}
		time.Sleep(time.Second)
	}
}

// A drift whose replacements never register (the EC2NodeClass's new role
// is not mapped for nodes) pauses after --drift-failure-limit failed
// replacements (2 here, to keep the suite short: the NodePool's
// registration backoff spaces them a minute apart and more): no further
// one is launched, the old nodes keep Running their pods, and the
// NodePool says why (DriftAllowed=False naming the cause and the fix).
func TestDriftPausesWhenReplacementsNeverRegister(t *testing.T) {
	const limit = 2
	sim := harness.Start(t, func(o *runner.Options) {
		o.Operator.Lifecycle.RegistrationTimeout = 5 * time.Second
		o.Operator.Disruption.DriftFailureLimit = limit
		o.Operator.Disruption.Poll, o.Operator.Disruption.ValidationDelay = 2*time.Second, 2*time.Second
	})
	_, manifest, err := scenarios.Load("drift")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := sim.RunSteps(ctx, []runner.Step{{Name: "drift", Manifest: manifest}}, 2*time.Minute, time.Minute, nil)
	if err != nil || !first[0].Snapshot.Done() {
		t.Fatalf("the scenario does not run: %v", err)
	}
	old := harness.ClaimNames(first[0].Snapshot)
	unmapped := strings.Replace(string(manifest[:strings.Index(string(manifest), "---")]), "role: KarpenterNodeRole-nodewright-sim", "role: KarpenterControllerRole-nodewright-sim", 1)
	if err := sim.Apply(ctx, "unmapped-role", []byte(unmapped)); err != nil {
		t.Fatal(err)
	}
	launched := func() int { return len(sim.Account.Instances()) }
	var paused *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, time.Second, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		np := &v1.NodePool{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
			return false, err
		}
		paused = meta.FindStatusCondition(np.Status.Conditions, v1.ConditionDriftAllowed)
		return paused != nil && paused.Status == metav1.ConditionFalse, nil
	})
	if err != nil {
		t.Fatalf("drift never paused: %v; %d instances launched; DriftAllowed %+v", err, launched(), paused)
	}
	for _, want := range []string{fmt.Sprintf("%d replacements of drifted nodes failed in a row", limit), "failed to launch or register", "mapped in aws-auth", v1.AnnotationResumeDrift} {
		if !strings.Contains(paused.Message, want) {
			t.Errorf("DriftAllowed=False says %q; want it to say %q", paused.Message, want)
		}
	}
	if n := launched(); n > len(old)+limit {
		t.Errorf("%d instances launched: %d nodes and more than %d replacements", n, len(old), limit)
	}
	// Paused, disruption decides to hold the drifted nodes and says so,
	// and launches no more.
	before := launched()
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := sim.Kube.List(ctx, events); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == v1.ReasonDisruptionBlocked && strings.Contains(e.Message, "drift of its NodePool is paused")
		}), nil
	})
	if err != nil {
		t.Errorf("no drifted node says drift is paused: %v", err)
	}
	if n := launched(); n != before {
		t.Errorf("%d more instances launched after drift paused", n-before)
	}
	snap, err := sim.Snapshot(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := harness.ClaimNames(snap)
	for name := range old {
		if !now[name] {
			t.Errorf("old NodeClaim %s is gone; the old nodes must keep serving", name)
		}
	}
	if !snap.Done() {
		t.Errorf("pods Running %d/%d; the old nodes must keep them", snap.RunningPods, snap.Pods)
	}
	if n := launched(); n > len(old)+limit {
		t.Errorf("%d instances launched in all: %d nodes and more than %d replacements", n, len(old), limit)
	}
}

// Without the hint (no nominatedNodeName, no feature gate), kube-scheduler
// places pods as nodes come, and may spread them over more nodes than the
// plan. Consolidation then removes every node it can: the cluster comes
// back to no more nodes than the plan, or, where kube-scheduler's
// placement left no node whose pods fit elsewhere and no cheaper
// replacement (a spot node is replaced by a cheaper spot node only with
// the SpotToSpotConsolidation gate, and then needs enough cheaper spot
// types, which t4g lacks), each node says so on its NodeClaim.
func TestConsolidationRestoresThePlanWithoutTheHint(t *testing.T) {
	sim, snap := harness.Run(t, "healthy", func(o *runner.Options) {
		o.BootJitter, o.NoNominationGate, o.Operator.NominatePods = 40*time.Second, true, false
	})
	if !snap.Done() {
		t.Fatalf("not every pod runs: %d/%d", snap.RunningPods, snap.Pods)
	}
	planned := harness.PlannedNodes(t, "healthy")
	ctx := context.Background()
	// A loaded machine decides later: wait for consolidation to be done
	// rather than for a time.
	deadline := time.Now().Add(4 * time.Minute)
	var stays map[string]string
	calm := 0
	for {
		snap, err := sim.Snapshot(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if snap.Nodes <= planned && snap.Done() {
			return
		}
		stays = harness.WhyNodeClaimsStay(t, sim, snap)
		settled := snap.Done() && snap.Disrupting == 0 && len(stays) == len(snap.NodeClaims)
		for _, why := range stays {
			settled = settled && (strings.Contains(why, "would have no place") || strings.Contains(why, "no cheaper placement") ||
				strings.Contains(why, "keep it diverse") || strings.Contains(why, "needs the SpotToSpotConsolidation feature gate"))
		}
		calm++
		if !settled {
			calm = 0
		}
		// Fifteen calm snapshots in a row: no decision in between moved.
		if calm >= 15 {
			t.Logf("%d nodes for a plan of %d, none of which consolidation can remove: %v", snap.Nodes, planned, stays)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d nodes for a plan of %d, and consolidation has not said why each stays: %v", snap.Nodes, planned, stays)
		}
		time.Sleep(time.Second)
	}
}
