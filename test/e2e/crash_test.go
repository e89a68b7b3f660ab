package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// crashScenario: a general NodePool that consolidates at once, a web
// Deployment under a PodDisruptionBudget, and a filler Deployment the
// campaign scales up and down.
const crashScenario = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-size, operator: In, values: [large, xlarge, 2xlarge]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "30%"}]
---
` + harness.AWSAuth + `---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 90%
  selector: {matchLabels: {app: web}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 20
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: public.ecr.aws/nginx/nginx:latest
          resources: {requests: {cpu: 500m, memory: 512Mi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: filler, namespace: default}
spec:
  replicas: 60
  selector: {matchLabels: {app: filler}}
  template:
    metadata: {labels: {app: filler}}
    spec:
      containers:
        - name: filler
          image: public.ecr.aws/docker/library/busybox:latest
          resources: {requests: {cpu: 700m, memory: 768Mi}}
`

// crashKills is how many times the campaign kills the controller:
// NODEWRIGHT_CRASH_KILLS (make crash runs 200), a short run by default.
func crashKills(t *testing.T) int {
	if s := os.Getenv("NODEWRIGHT_CRASH_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("NODEWRIGHT_CRASH_KILLS=%q: want a count", s)
		}
		return n
	}
	return 6
}

// The controller process is killed with SIGKILL at random moments while
// the cluster scales up, launches, registers, drains and consolidates,
// under API throttling and with an offering out of capacity; a new one
// starts each time. Once it converges: every pod runs, no instance is
// left without a NodeClaim, no NodeClaim has two instances, the
// PodDisruptionBudget held throughout and no NodeClaim is stuck.
//
// The controllers run as the chart runs them: two replicas electing a
// leader (lease timings shortened so that many kills fit the campaign),
// and each kill is the leader's; the other replica takes over.
func TestCrashCampaign(t *testing.T) {
	crashCampaign(t, crashKills(t), nil)
}

// The leader of two replicas is killed mid-launch (a NodeClaim without
// its instance yet) and mid-drain (a NodeClaim being deleted), twice
// each: the other replica takes over and finishes what the leader began,
// with no instance launched twice, none left without a NodeClaim, the
// PodDisruptionBudget held and no NodeClaim stuck; one replica leads at a
// time.
func TestFailoverBetweenReplicas(t *testing.T) {
	faultSuite(t)
	crashCampaign(t, 4, []int{momentLaunching, momentDraining, momentLaunching, momentDraining})
}

func crashCampaign(t *testing.T, kills int, moments []int) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("NODEWRIGHT_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	rnd := rand.New(rand.NewPCG(seed, seed))
	t.Logf("%d kills, seed %d (NODEWRIGHT_CRASH_SEED replays it)", kills, seed)
	bin := harness.BuildNodewright(t)
	var gc runner.Options
	sim := harness.Start(t, func(o *runner.Options) {
		o.ControllerProcess = bin
		o.Replicas, o.Operator.LeaderElection = 2, true
		o.Operator.LeaseDuration, o.Operator.RenewDeadline, o.Operator.RetryPeriod = 8*time.Second, 6*time.Second, time.Second
		o.Operator.GCInterval, o.Operator.GCGrace = 5*time.Second, 15*time.Second
		o.Faults.ThrottleEvery = 7
		o.NoCapacity = []string{"spot:c5.large:us-east-1a", "spot:m5.large:us-east-1b"}
		gc = *o
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := sim.Apply(ctx, "crash", []byte(crashScenario)); err != nil {
		t.Fatal(err)
	}

	// The PodDisruptionBudget, sampled all along once web first ran in
	// full (web's replicas never change).
	var (
		mu         sync.Mutex
		violations []string
	)
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		healthy := false
		for sampling.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			pdb := &policyv1.PodDisruptionBudget{}
			if err := sim.Kube.Get(sampling, client.ObjectKey{Namespace: "default", Name: "web"}, pdb); err != nil {
				continue
			}
			healthy = healthy || (pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 20)
			if healthy && pdb.Status.CurrentHealthy < pdb.Status.DesiredHealthy {
				mu.Lock()
				violations = append(violations, fmt.Sprintf("%s: %d healthy, %d desired", time.Now().Format(time.TimeOnly), pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy))
				mu.Unlock()
			}
		}
	}()

	// Every instance a NodeClaim recorded (status.providerID), sampled
	// all along: a launch batch's instance is tagged with its NodeClaim
	// only after the record, and may be terminated before.
	records := newRecords()
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for sampling.Err() == nil {
			records.sample(sampling, sim)
			time.Sleep(100 * time.Millisecond)
		}
	}()

	// Kill the controller while the filler scales up (launches,
	// registration) and down (consolidation drains web's nodes), round
	// after round: at random moments, or aimed at a phase (a NodeClaim
	// launching, a node draining) once it shows, or after letting the
	// controller run long enough to decide and begin a disruption.
	sizes := []int32{0, 40, 10, 70, 20, 60}
	every := max(2, kills/20)
	peak := int64(0)
	aimed := map[string]int{}
	for k := range kills {
		if k > 0 && k%every == 0 {
			scale(t, sim, "filler", sizes[(k/every-1)%len(sizes)])
		}
		moment := -1
		if k < len(moments) {
			moment = moments[k]
		}
		aimed[killMoment(ctx, t, sim, rnd, moment)]++
		if n := sim.Leaders(ctx); n > 1 {
			t.Errorf("kill %d: %d replicas lead at once", k+1, n)
		}
		rss, err := sim.KillController()
		if err != nil {
			t.Fatalf("kill %d: %v", k+1, err)
		}
		peak = max(peak, rss)
	}
	t.Logf("kills by moment: %v", aimed)
	if moments != nil && (aimed["launching"] == 0 || aimed["draining"] == 0) {
		t.Errorf("kills by moment %v: want the leader killed mid-launch and mid-drain at least once each", aimed)
	}
	snap, err := sim.Watch(ctx, 5*time.Minute, 2*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Done() {
		t.Fatalf("after %d kills the cluster did not converge: %v", kills, (&runner.NotConvergedError{Step: "crash", Snapshot: snap}).Error())
	}
	// Garbage collection has had its grace and a pass since.
	time.Sleep(gc.Operator.GCGrace + 2*gc.Operator.GCInterval)
	stopSampling()
	<-sampled
	<-recorded

	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{} // the provider IDs NodeClaims record now
	for _, nc := range claims.Items {
		owned[nc.Status.ProviderID] = true
	}
	records.sample(ctx, sim)
	launched := map[string][]string{} // NodeClaim → its instances, ever
	orphans, batched, spare := 0, 0, 0
	perBatch, spareBy := map[string]int{}, map[string]int{}
	for _, inst := range sim.Account.Instances() {
		id, pid := aws.ToString(inst.InstanceId), providerIDOf(inst)
		claim, batch := tagOf(inst.Tags, provider.TagNodeClaim), tagOf(inst.Tags, provider.TagLaunchBatch)
		holders := records.byInstance[pid]
		if batch != "" && claim == provider.Untaken(batch) {
			claim = "" // not tagged (yet): its records say who held it
		}
		if claim != "" && !holders.Has(claim) {
			holders = holders.Clone().Insert(claim)
		}
		switch {
		case holders.Len() > 1:
			t.Errorf("instance %s was held by %d NodeClaims: %v", id, holders.Len(), sets.List(holders))
		case holders.Len() == 1:
			launched[sets.List(holders)[0]] = append(launched[sets.List(holders)[0]], id)
		case batch != "":
			spare++ // a batch's instance no NodeClaim took
			spareBy[batch]++
		}
		if batch != "" {
			batched++
			perBatch[batch]++
		}
		live := inst.State.Name == ec2types.InstanceStateNamePending || inst.State.Name == ec2types.InstanceStateNameRunning
		if live && !owned[pid] {
			orphans++
			t.Errorf("instance %s (%s) runs without a NodeClaim", id, inst.State.Name)
		}
	}
	duplicates := 0
	for claim, ids := range launched {
		if len(ids) > 1 || records.byClaim[claim].Len() > 1 {
			duplicates++
			t.Errorf("NodeClaim %s launched %d instances: %v (recorded %v)", claim, len(ids), ids, sets.List(records.byClaim[claim]))
		}
	}
	for batch, n := range perBatch {
		if size := records.batchSize[batch]; size > 0 && n > size {
			t.Errorf("launch batch %s of %d NodeClaims launched %d instances", batch, size, n)
		}
		if spareBy[batch] > 0 {
			t.Logf("launch batch %s of %d NodeClaims: %d instances, %d taken by no NodeClaim", batch, records.batchSize[batch], n, spareBy[batch])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Errorf("the PodDisruptionBudget was broken: %s", v)
	}
	t.Logf("%d kills (seed %d): %d pods Running on %d nodes, %d NodeClaims launched over the run (%d instances in launch batches, %d of them taken by no NodeClaim and collected), %d orphaned instances, %d NodeClaims with two instances, %d PDB violations, controller peak RSS %d MiB",
		kills, seed, snap.RunningPods, snap.Nodes, len(launched), batched, spare, orphans, duplicates, len(violations), peak>>20)
}

// records are the provider IDs NodeClaims recorded over a run, each way
// round, and the size of each launch batch seen.
type records struct {
	mu         sync.Mutex
	byInstance map[string]sets.Set[string] // provider ID → NodeClaims
	byClaim    map[string]sets.Set[string] // NodeClaim → provider IDs
	batchSize  map[string]int
}

func newRecords() *records {
	return &records{byInstance: map[string]sets.Set[string]{}, byClaim: map[string]sets.Set[string]{}, batchSize: map[string]int{}}
}

// sample adds what the NodeClaims record now.
func (r *records) sample(ctx context.Context, sim *runner.Sim) {
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, nc := range claims.Items {
		if b, ok, _ := cloudprovider.LaunchBatchOf(nc.Name, nc.Annotations); ok {
			r.batchSize[b.ID] = b.Size
		}
		if nc.Status.ProviderID == "" {
			continue
		}
		if r.byInstance[nc.Status.ProviderID] == nil {
			r.byInstance[nc.Status.ProviderID] = sets.New[string]()
		}
		if r.byClaim[nc.Name] == nil {
			r.byClaim[nc.Name] = sets.New[string]()
		}
		r.byInstance[nc.Status.ProviderID].Insert(nc.Name)
		r.byClaim[nc.Name].Insert(nc.Status.ProviderID)
	}
}

// killMoment brings about the moment of the next kill, waits for it and
// says which it was: half at random 0.5–4.5 s after the last start; the
// rest aimed: the filler grows and the kill comes just after a NodeClaim
// appears without an instance (mid-launch); the filler shrinks and the
// kill comes once a NodeClaim is being deleted (its node draining); or
// the controller runs 10–20 s first, so that disruptions are decided and
// carried out between kills. An aimed kill whose phase does not come in
// time falls back to a random moment.
func killMoment(ctx context.Context, t *testing.T, sim *runner.Sim, rnd *rand.Rand, moment int) string {
	t.Helper()
	random := func() { time.Sleep(time.Duration(500+rnd.IntN(4000)) * time.Millisecond) }
	until := func(within time.Duration, phase func(*v1.NodeClaim) bool) bool {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			claims := &v1.NodeClaimList{}
			if err := sim.Kube.List(ctx, claims); err == nil && slices.ContainsFunc(claims.Items, func(nc v1.NodeClaim) bool { return phase(&nc) }) {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	}
	filler := func() int32 {
		d := &appsv1.Deployment{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "filler"}, d); err != nil {
			t.Fatal(err)
		}
		return ptr.Deref(d.Spec.Replicas, 0)
	}
	n := rnd.IntN(8)
	if moment >= 0 {
		n = moment
	}
	switch {
	case n < 4:
		random()
		return "random"
	case n == momentLaunching:
		scale(t, sim, "filler", min(filler()+15, 80))
		if until(20*time.Second, func(nc *v1.NodeClaim) bool { return nc.Status.ProviderID == "" && nc.DeletionTimestamp.IsZero() }) {
			time.Sleep(time.Duration(rnd.IntN(200)) * time.Millisecond)
			return "launching"
		}
	case n == 5:
		// Between a launch batch's fleet and its NodeClaims recording
		// their instances: an instance of the batch no NodeClaim has
		// recorded yet.
		scale(t, sim, "filler", min(filler()+15, 80))
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if unrecordedBatchInstance(ctx, sim) {
				return "launching a batch"
			}
			time.Sleep(5 * time.Millisecond)
		}
	case n == momentDraining:
		scale(t, sim, "filler", max(filler()-25, 0))
		if until(time.Minute, func(nc *v1.NodeClaim) bool { return !nc.DeletionTimestamp.IsZero() }) {
			time.Sleep(time.Duration(rnd.IntN(2000)) * time.Millisecond)
			return "draining"
		}
	default:
		time.Sleep(time.Duration(10+rnd.IntN(10)) * time.Second)
		return "running 10–20 s"
	}
	random()
	return "random (phase did not come)"
}

// The kill moments a test can ask for.
const (
	momentLaunching = 4
	momentDraining  = 6
)

// unrecordedBatchInstance says a live instance of a launch batch is
// recorded by no NodeClaim yet.
func unrecordedBatchInstance(ctx context.Context, sim *runner.Sim) bool {
	var untaken []string
	for _, inst := range sim.Account.Instances() {
		batch := tagOf(inst.Tags, provider.TagLaunchBatch)
		if batch != "" && tagOf(inst.Tags, provider.TagNodeClaim) == provider.Untaken(batch) &&
			(inst.State.Name == ec2types.InstanceStateNamePending || inst.State.Name == ec2types.InstanceStateNameRunning) {
			untaken = append(untaken, providerIDOf(inst))
		}
	}
	if len(untaken) == 0 {
		return false
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		return false
	}
	recorded := map[string]bool{}
	for _, nc := range claims.Items {
		recorded[nc.Status.ProviderID] = true
	}
	return slices.ContainsFunc(untaken, func(id string) bool { return !recorded[id] })
}

// providerIDOf is an instance's provider ID.
func providerIDOf(inst simaws.Instance) string {
	return "aws:///" + aws.ToString(inst.Placement.AvailabilityZone) + "/" + aws.ToString(inst.InstanceId)
}

func tagOf(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

func scale(t *testing.T, sim *runner.Sim, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := sim.Kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, d); err != nil {
		t.Fatal(err)
	}
	before := d.DeepCopy()
	d.Spec.Replicas = ptr.To(replicas)
	if err := sim.Kube.Patch(context.Background(), d, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}
