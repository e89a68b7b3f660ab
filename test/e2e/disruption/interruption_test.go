package disruption

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// webBudget keeps all but one web pod running.
const webBudget = `
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
`

// AWS reclaims a spot node of the healthy scenario: nodewright reads the
// warning from the interruption queue, its pods are Running on a
// replacement before the instance dies (two minutes after the warning),
// the web budget is never broken, and the interrupted offering is not
// launched again.
func TestSpotInterruption(t *testing.T) {
	name, manifest, err := scenarios.Load("healthy")
	if err != nil {
		t.Fatal(err)
	}
	steps := []runner.Step{
		{Name: name, Manifest: append(manifest, webBudget...)},
		{Name: "interrupt a spot node", Manifest: []byte("apiVersion: sim.nodewright.dev/v1\nkind: Interruption\nspec: {kind: spot-interruption}\n")},
	}
	sim := harness.Start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	w := &interruptionWatch{sim: sim}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx)
	}()
	results, err := sim.RunSteps(context.Background(), steps, 5*time.Minute, time.Minute, nil)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	runner.WriteSteps(&summary, results)
	t.Log(summary.String())

	after := results[1].Snapshot
	if !after.Done() {
		t.Fatalf("not every pod runs after the interruption: %d/%d", after.RunningPods, after.Pods)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.interrupted == nil {
		t.Fatal("no instance was interrupted")
	}
	id := aws.ToString(w.interrupted.InstanceId)
	reclaim := w.interrupted.ReclaimAt()
	if harness.Mention(results[1].Disruptions, "SpotInterrupted: EC2 reclaims spot instance "+id) == 0 {
		t.Errorf("no SpotInterrupted event for %s: %v", id, results[1].Disruptions)
	}
	if w.recovered.IsZero() || !w.recovered.Before(reclaim) {
		t.Errorf("every pod ran elsewhere at %s; the instance was reclaimed at %s", w.recovered.Format(time.TimeOnly), reclaim.Format(time.TimeOnly))
	}
	if len(w.violations) > 0 {
		t.Errorf("the PodDisruptionBudget was broken: %v", w.violations)
	}
	if harness.ClaimNames(after)[w.claim] {
		t.Errorf("the interrupted NodeClaim %s is still there", w.claim)
	}
	offering := func(labels map[string]string) string {
		return labels[v1.LabelCapacityType] + ":" + labels[corev1.LabelInstanceTypeStable] + ":" + labels[corev1.LabelTopologyZone]
	}
	avoided := offering(w.claimLabels)
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.CreationTimestamp.After(w.interruptedAt) && offering(c.Labels) == avoided {
			t.Errorf("NodeClaim %s launched the interrupted offering %s again", c.Name, avoided)
		}
	}
}

// interruptionWatch follows the simulation while the interruption plays
// out.
type interruptionWatch struct {
	sim *runner.Sim
	mu  sync.Mutex
	// interrupted is the instance the step interrupted, seen at
	// interruptedAt; claim and claimLabels its NodeClaim's.
	interrupted   *simaws.Instance
	interruptedAt time.Time
	claim         string
	claimLabels   map[string]string
	// recovered is when every pod first ran on another node afterwards.
	recovered  time.Time
	violations []string
}

func (w *interruptionWatch) run(ctx context.Context) {
	healthy := false
	for ctx.Err() == nil {
		time.Sleep(300 * time.Millisecond)
		w.mu.Lock()
		if w.interrupted == nil {
			w.findInterrupted(ctx)
		}
		w.mu.Unlock()
		pdb := &policyv1.PodDisruptionBudget{}
		pods := &corev1.PodList{}
		if w.sim.Kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web"}, pdb) != nil || w.sim.Kube.List(ctx, pods, client.InNamespace("default")) != nil {
			continue
		}
		w.mu.Lock()
		healthy = healthy || (pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 20)
		if healthy && pdb.Status.CurrentHealthy < pdb.Status.DesiredHealthy {
			w.violations = append(w.violations, time.Now().Format(time.TimeOnly)+": "+pdb.Status.String())
		}
		if w.interrupted != nil && w.recovered.IsZero() && allRunningElsewhere(pods.Items, w.claimNode(ctx)) {
			w.recovered = time.Now()
		}
		w.mu.Unlock()
	}
}

// findInterrupted finds the interrupted instance and its NodeClaim.
func (w *interruptionWatch) findInterrupted(ctx context.Context) {
	for _, inst := range w.sim.Account.Instances() {
		if inst.ReclaimAt().IsZero() {
			continue
		}
		claims := &v1.NodeClaimList{}
		if err := w.sim.Kube.List(ctx, claims); err != nil {
			return
		}
		for _, c := range claims.Items {
			if c.Status.ProviderID == "aws:///"+aws.ToString(inst.Placement.AvailabilityZone)+"/"+aws.ToString(inst.InstanceId) {
				w.interrupted, w.interruptedAt, w.claim, w.claimLabels = &inst, time.Now(), c.Name, c.Labels
				return
			}
		}
	}
}

// claimNode is the interrupted NodeClaim's node name, while it has one.
func (w *interruptionWatch) claimNode(ctx context.Context) string {
	nodes := &corev1.NodeList{}
	if err := w.sim.Kube.List(ctx, nodes); err != nil {
		return ""
	}
	for _, n := range nodes.Items {
		if n.Spec.ProviderID == "aws:///"+aws.ToString(w.interrupted.Placement.AvailabilityZone)+"/"+aws.ToString(w.interrupted.InstanceId) {
			return n.Name
		}
	}
	return ""
}

// allRunningElsewhere reports all 26 pods of the scenario Running, none
// on node.
func allRunningElsewhere(pods []corev1.Pod, node string) bool {
	running := 0
	for _, p := range pods {
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning && (node == "" || p.Spec.NodeName != node) {
			running++
		}
	}
	return running == 26
}

// With no spot capacity anywhere, the healthy scenario runs on on-demand
// nodes (each launch falls back at once); once spot capacity returns and
// the unavailable offerings are forgotten, consolidation moves the nodes
// back to spot, every pod Running throughout the end.
func TestSpotFallbackAndBack(t *testing.T) {
	name, manifest, err := scenarios.Load("healthy")
	if err != nil {
		t.Fatal(err)
	}
	sim := harness.Start(t, func(o *runner.Options) {
		o.NoCapacity = []string{"spot:*:*"}
		o.Operator.UnavailableOfferingTTL = 20 * time.Second
	})
	ctx := context.Background()
	results, err := sim.RunSteps(ctx, []runner.Step{{Name: name, Manifest: manifest}}, 3*time.Minute, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	byType := func() map[string]int {
		out := map[string]int{}
		claims := &v1.NodeClaimList{}
		if err := sim.Kube.List(ctx, claims); err != nil {
			t.Fatal(err)
		}
		for _, c := range claims.Items {
			if c.DeletionTimestamp.IsZero() {
				out[c.Labels[v1.LabelCapacityType]]++
			}
		}
		return out
	}
	if snap := results[0].Snapshot; !snap.Done() || byType()[v1.CapacityTypeSpot] != 0 || byType()[v1.CapacityTypeOnDemand] == 0 {
		t.Fatalf("without spot capacity: %d/%d pods Running on %v", snap.RunningPods, snap.Pods, byType())
	}
	lift := runner.Step{Name: "spot capacity returns", Manifest: []byte("apiVersion: sim.nodewright.dev/v1\nkind: InsufficientCapacity\nspec: {offerings: [\"spot:*:*\"], available: true}\n")}
	if err := sim.Apply(ctx, lift.Name, lift.Manifest); err != nil {
		t.Fatal(err)
	}
	// Consolidation replaces the on-demand nodes one at a time (the
	// default budget): wait for it to finish, not for a time.
	var last *runner.Snapshot
	deadline := time.Now().Add(8 * time.Minute)
	for time.Now().Before(deadline) {
		snap, err := sim.Watch(ctx, time.Minute, 30*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		last = snap
		if byType()[v1.CapacityTypeOnDemand] == 0 && snap != nil && snap.Done() {
			break
		}
	}
	if got := byType(); got[v1.CapacityTypeOnDemand] != 0 || got[v1.CapacityTypeSpot] == 0 {
		t.Errorf("after spot capacity returned, NodeClaims by capacity type: %v; want every one back on spot", got)
	}
	if last == nil || !last.Done() {
		t.Errorf("not every pod runs after moving back to spot: %+v", last)
	}
}
