package disruption

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// rolloutBudgets are the drift budgets of the rollout's three NodePools.
var rolloutBudgets = map[string]string{"one": "1", "six": "6", "all": "100%"}

// rolloutManifest is three NodePools of the m category, each with its
// drift budget and a Deployment of six pods (3 CPU, 10Gi each) of its
// own; category is the instance category the NodePools require.
func rolloutManifest(category string) []byte {
	var b strings.Builder
	b.WriteString(harness.AWSAuth)
	b.WriteString(`---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
`)
	for _, pool := range []string{"one", "six", "all"} {
		fmt.Fprintf(&b, `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]s}
spec:
  template:
    metadata: {labels: {rollout: %[1]s}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [%[2]s]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets: [{nodes: "%[3]s"}]
`, pool, category, rolloutBudgets[pool])
		if category != "m" {
			continue // the step changes the NodePools alone
		}
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: default}
spec:
  replicas: 6
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      nodeSelector: {rollout: %[1]s}
      terminationGracePeriodSeconds: 5
      containers: [{name: app, image: app, resources: {requests: {cpu: "3", memory: 10Gi}}}]
`, pool)
	}
	return []byte(b.String())
}

// TestRolloutLaunchesWhatPodsNeed: the NodePools' requirements move from
// the m category to c; each drifts its nodes under its budget (1, 6,
// 100%). Every command keeps the room the commands in flight planned, so
// the rollout launches only what the pods need: the NodeClaims created
// during it are the nodes at its end, none is deleted empty, and no pod
// is evicted twice (a pod created during the rollout is never deleted).
func TestRolloutLaunchesWhatPodsNeed(t *testing.T) {
	sim := harness.Start(t, nil)
	ctx := context.Background()
	first, err := sim.RunSteps(ctx, []runner.Step{{Name: "m", Manifest: rolloutManifest("m")}}, 4*time.Minute, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first[0].Snapshot.Done() {
		t.Fatalf("the workloads do not run: %+v", first[0].Snapshot)
	}
	before := claimsByPool(t, sim)
	changedAt := time.Now()
	var (
		mu      sync.Mutex
		created = map[types.UID]string{} // pods created during the rollout
		evicted []string
	)
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for watchCtx.Err() == nil {
			pods := &corev1.PodList{}
			if err := sim.Kube.List(watchCtx, pods, client.InNamespace("default")); err == nil {
				mu.Lock()
				live := map[types.UID]bool{}
				for _, p := range pods.Items {
					live[p.UID] = p.DeletionTimestamp == nil
					if p.CreationTimestamp.After(changedAt) {
						if _, seen := created[p.UID]; !seen {
							created[p.UID] = p.Name
						}
					}
				}
				for uid, name := range created {
					if !live[uid] && name != "" {
						evicted = append(evicted, name)
						created[uid] = ""
					}
				}
				mu.Unlock()
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	second, err := sim.RunSteps(ctx, []runner.Step{{Name: "c", Manifest: rolloutManifest("c")}}, 6*time.Minute, time.Minute, nil)
	stop()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	var summary strings.Builder
	runner.WriteSteps(&summary, append(first, second...))
	t.Log(summary.String())
	if !second[0].Snapshot.Done() {
		t.Fatalf("not every pod runs after the rollout: %+v", second[0].Snapshot)
	}
	after := claimsByPool(t, sim)
	for _, disruption := range second[0].Disruptions {
		if strings.Contains(disruption, "DisruptionTerminating: Empty") || strings.Contains(disruption, "DisruptionTerminating: Underutilized") {
			t.Errorf("a node was removed after the rollout left it surplus: %s", disruption)
		}
	}
	for pool := range rolloutBudgets {
		made := 0
		for name := range after[pool] {
			if before[pool][name] {
				t.Errorf("NodePool %s: NodeClaim %s of the m category is still there", pool, name)
			} else {
				made++
			}
		}
		t.Logf("NodePool %s (budget %s): %d nodes before, %d after", pool, rolloutBudgets[pool], len(before[pool]), len(after[pool]))
		if made != len(after[pool]) {
			t.Errorf("NodePool %s: %d NodeClaims made during the rollout, %d nodes at its end", pool, made, len(after[pool]))
		}
	}
	if created := second[0].Figures.NodeClaims - countAll(before); created != countAll(after) {
		t.Errorf("%d NodeClaims created during the rollout, %d nodes at its end", created, countAll(after))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evicted) > 0 {
		t.Errorf("pods evicted twice (created during the rollout, then deleted): %v", evicted)
	}
}

func claimsByPool(t *testing.T, sim *runner.Sim) map[string]map[string]bool {
	t.Helper()
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil {
			continue
		}
		pool := c.Labels[v1.LabelNodePool]
		if out[pool] == nil {
			out[pool] = map[string]bool{}
		}
		out[pool][c.Name] = true
	}
	return out
}

func countAll(m map[string]map[string]bool) int {
	n := 0
	for _, names := range m {
		n += len(names)
	}
	return n
}
