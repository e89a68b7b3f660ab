// Package e2e runs the scenarios end to end with `nodewright sim`'s runner:
// a real control plane, the simulated AWS account and kubelets, and the
// operator.
package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	simaws "github.com/nodewright/nodewright/internal/fake/aws"
	"github.com/nodewright/nodewright/internal/fake/runner"
	"github.com/nodewright/nodewright/internal/whatif"
	"github.com/nodewright/nodewright/scenarios"
)

// start starts a simulation with the end-to-end tests' options, edited,
// and stops it when the test ends.
func start(t *testing.T, edit func(*runner.Options)) *runner.Sim {
	t.Helper()
	opts := runner.DefaultOptions()
	opts.BootDelay, opts.CCMDelay = time.Second, time.Second
	opts.Operator.SkipNameValidation = true // one simulation after another in this process
	// A disruption decided on a loaded machine shows later than on an
	// idle one: wait longer before calling the cluster settled.
	opts.Settle = 20 * time.Second
	// NODEWRIGHT_E2E_LOGS=DIR keeps each test's nodewright log as
	// DIR/TEST.log (JSON lines), for a failure that only a loaded
	// machine shows.
	if dir := os.Getenv("NODEWRIGHT_E2E_LOGS"); dir != "" {
		f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		opts.Log = zap.New(zap.WriteTo(f), zap.JSONEncoder())
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
			t.Errorf("stopping the simulation: %v", err)
		}
	})
	return sim
}

// buildNodewright builds the nodewright binary for the controller's own
// process.
func buildNodewright(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nodewright")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/nodewright").CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	return bin
}

// run starts a simulation, applies a scenario and watches it settle.
func run(t *testing.T, scenario string, edit func(*runner.Options)) (*runner.Sim, *runner.Snapshot) {
	t.Helper()
	name, manifest, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	sim := start(t, edit)
	ctx := context.Background()
	if err := sim.Apply(ctx, name, manifest); err != nil {
		t.Fatal(err)
	}
	snap, err := sim.Watch(ctx, 2*time.Minute, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	runner.WriteSummary(&summary, name, snap)
	t.Log(summary.String())
	return sim, snap
}

func problemsMention(snap *runner.Snapshot, fragments ...string) bool {
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

func nodeClass(t *testing.T, sim *runner.Sim, name string) *awsv1.EC2NodeClass {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := sim.Kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func TestHealthy(t *testing.T) {
	sim, snap := run(t, "healthy", nil)
	if !snap.Done() {
		t.Fatalf("not every pod runs on a Ready NodeClaim: %+v", snap)
	}
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := sim.Kube.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		node := &corev1.Node{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		if p.Labels["app"] == "armapp" && (node.Labels[corev1.LabelArchStable] != "arm64" || node.Labels["karpenter.k8s.aws/instance-family"] != "t4g") {
			t.Errorf("armapp pod %s runs on %s (%s)", p.Name, node.Name, node.Labels[corev1.LabelInstanceTypeStable])
		}
	}
	// The cluster settles at no more nodes than the plan for the same
	// manifests: pods are nominated to their planned nodes, and
	// consolidation removes any node the scheduler made surplus.
	if planned := plannedNodes(t, "healthy"); snap.Nodes > planned {
		t.Errorf("%d nodes for a plan of %d", snap.Nodes, planned)
	}
	findings, status := doctor(t, sim, "--grace", "2s")
	expectHealthy(t, findings, status)
	findings, status = doctor(t, sim, "--cloud", "sim", "--grace", "2s")
	expectHealthy(t, findings, status)

	// Scale down: the workloads go; the emptied nodes are removed on
	// their own and every instance is terminated.
	for _, d := range []string{"web", "armapp"} {
		dep := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: d, Namespace: "default"}}
		if err := sim.Kube.Delete(ctx, dep); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		running := 0
		for _, inst := range sim.Account.Instances() {
			if inst.State.Name != "terminated" {
				running++
			}
		}
		nodes := &corev1.NodeList{}
		if err := sim.Kube.List(ctx, nodes); err != nil {
			t.Fatal(err)
		}
		if running == 0 && len(nodes.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after scale down %d instances still run and %d nodes remain", running, len(nodes.Items))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// plannedNodes is how many nodes simulate plans for a scenario in the
// simulated account.
func plannedNodes(t *testing.T, scenario string) int {
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
	return len(res.Plan.NodeClaims)
}

// Nodes that become Ready up to 40 s apart: pods still land on the nodes
// planned for them (nominatedNodeName), so the cluster has exactly the
// plan's nodes and nothing needs consolidating.
func TestPlanSticksWhenNodesBootApart(t *testing.T) {
	_, snap := run(t, "healthy", func(o *runner.Options) { o.BootJitter = 40 * time.Second })
	if !snap.Done() {
		t.Fatalf("not every pod runs: %d/%d", snap.RunningPods, snap.Pods)
	}
	if planned := plannedNodes(t, "healthy"); snap.Nodes != planned {
		t.Errorf("%d nodes for a plan of %d", snap.Nodes, planned)
	}
	if n := mention(snap.Disruptions, "DisruptionTerminating"); n > 0 {
		t.Errorf("%d nodes had to be consolidated: %v", n, snap.Disruptions)
	}
}

// Without the hint (no nominatedNodeName, no feature gate), kube-scheduler
// places pods as nodes come, and may spread them over more nodes than the
// plan. Consolidation then removes every node it can: the cluster comes
// back to no more nodes than the plan, or, where kube-scheduler's
// placement left no node whose pods fit elsewhere and no cheaper
// replacement (a spot node needs enough cheaper spot types to replace it
// with, and t4g has too few), each node says so on its NodeClaim.
func TestConsolidationRestoresThePlanWithoutTheHint(t *testing.T) {
	sim, snap := run(t, "healthy", func(o *runner.Options) {
		o.BootJitter, o.NoNominationGate, o.Operator.NominatePods = 40*time.Second, true, false
	})
	if !snap.Done() {
		t.Fatalf("not every pod runs: %d/%d", snap.RunningPods, snap.Pods)
	}
	planned := plannedNodes(t, "healthy")
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
		stays = whyNodeClaimsStay(t, sim, snap)
		settled := snap.Done() && snap.Disrupting == 0 && len(stays) == len(snap.NodeClaims)
		for _, why := range stays {
			settled = settled && (strings.Contains(why, "would have no place") || strings.Contains(why, "no cheaper placement") ||
				strings.Contains(why, "keep it diverse"))
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

// whyNodeClaimsStay is, for each NodeClaim in the snapshot, the last
// reason nodewright gave for not disrupting it (its DisruptionBlocked
// event), as kubectl describe shows it.
func whyNodeClaimsStay(t *testing.T, sim *runner.Sim, snap *runner.Snapshot) map[string]string {
	t.Helper()
	events := &corev1.EventList{}
	if err := sim.Kube.List(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	claims := claimNames(snap)
	latest := map[string]corev1.Event{}
	for _, ev := range events.Items {
		name := ev.InvolvedObject.Name
		if ev.InvolvedObject.Kind != "NodeClaim" || ev.Reason != "DisruptionBlocked" || !claims[name] {
			continue
		}
		if cur, ok := latest[name]; !ok || cur.LastTimestamp.Before(&ev.LastTimestamp) {
			latest[name] = ev
		}
	}
	out := map[string]string{}
	for name, ev := range latest {
		out[name] = ev.Message
	}
	return out
}

func TestS1CaughtBeforeLaunch(t *testing.T) {
	sim, snap := run(t, "s1", nil)
	cond := meta.FindStatusCondition(nodeClass(t, sim, "cilium").Status.Conditions, awsv1.ConditionValidationSucceeded)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "UserDataInvalid" ||
		!strings.Contains(cond.Message, "--register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute") ||
		!strings.Contains(cond.Message, "karpenter.sh/unregistered") || !strings.Contains(cond.Message, "startupTaints") {
		t.Errorf("EC2NodeClass cilium ValidationSucceeded: %+v", cond)
	}
	if len(snap.NodeClaims) != 0 || len(sim.Account.Instances()) != 0 {
		t.Errorf("nothing may launch from the EC2NodeClass: %d NodeClaims, %d instances", len(snap.NodeClaims), len(sim.Account.Instances()))
	}
	if !problemsMention(snap, "pods", "EC2NodeClass cilium is not ready", "UserDataInvalid") {
		t.Errorf("the pods' events do not name the EC2NodeClass: %v", snap.Problems)
	}
	findings, status := doctor(t, sim)
	if status != 1 {
		t.Errorf("doctor exited %d", status)
	}
	expectFinding(t, findings, "userdata-overrides-registration-taints", "EC2NodeClass/cilium", "--register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute", "startupTaints")
}

func TestS1AtRuntimeIsNotSilent(t *testing.T) {
	sim, snap := run(t, "s1", func(o *runner.Options) { o.Operator.SkipUserDataValidation = true })
	if !problemsMention(snap, "Registered=True UnregisteredTaintMissing", "registered with node.cilium.io/agent-not-ready=true:NoExecute") {
		t.Errorf("the NodeClaims do not say the node registered without karpenter.sh/unregistered: %v", snap.Problems)
	}
	findings, _ := doctor(t, sim)
	expectFinding(t, findings, "userdata-overrides-registration-taints", "NodeClaim/", "node.cilium.io/agent-not-ready=true:NoExecute")
	expectFinding(t, findings, "userdata-overrides-registration-taints", "EC2NodeClass/cilium")
}

func TestS2CloudProviderTaint(t *testing.T) {
	sim, snap := run(t, "s2", nil)
	if !snap.Done() {
		t.Fatalf("with the cloud controller manager every pod must run: %v", snap.Problems)
	}
	nodes := &corev1.NodeList{}
	if err := sim.Kube.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		for _, taint := range n.Spec.Taints {
			if taint.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
				t.Errorf("node %s still (or again) carries %s", n.Name, taint.Key)
			}
		}
	}
	findings, status := doctor(t, sim, "--grace", "2s")
	expectHealthy(t, findings, status)
}

func TestS2WithoutCloudControllerManager(t *testing.T) {
	sim, snap := run(t, "s2", func(o *runner.Options) { o.CloudControllerManager = false })
	if snap.RunningPods != 0 || !problemsMention(snap, "Initialized=False KnownEphemeralTaintsExist", "node.cloudprovider.kubernetes.io/uninitialized", "cloud controller manager") {
		t.Errorf("the NodeClaims must wait and name the taint and its owner: %v", snap.Problems)
	}
	findings, status := doctor(t, sim, "--grace", "2s")
	if status != 1 {
		t.Errorf("doctor exited %d", status)
	}
	expectFinding(t, findings, "cloud-provider-taint-not-removed", "NodeClaim/", "node.cloudprovider.kubernetes.io/uninitialized", "cloud controller manager", "KnownEphemeralTaintsExist")
}

func TestS3CaughtBeforeLaunch(t *testing.T) {
	sim, snap := run(t, "s3", nil)
	cond := meta.FindStatusCondition(nodeClass(t, sim, "custom-al2").Status.Conditions, awsv1.ConditionValidationSucceeded)
	if cond == nil || cond.Status != metav1.ConditionFalse ||
		!strings.Contains(cond.Message, "al2-bootstrap-args-malformed") || !strings.Contains(cond.Message, "--kubelet-extra-args VALUE") ||
		!strings.Contains(cond.Message, "custom-userdata-missing-unregistered-taint") || !strings.Contains(cond.Message, "karpenter.sh/unregistered:NoExecute") {
		t.Errorf("EC2NodeClass custom-al2 ValidationSucceeded: %+v", cond)
	}
	if len(snap.NodeClaims) != 0 {
		t.Errorf("%d NodeClaims launched from an invalid EC2NodeClass", len(snap.NodeClaims))
	}
	// The summary says the EC2NodeClass's message once; the pods point at it.
	said := 0
	for _, p := range snap.Problems {
		said += strings.Count(p, "al2-bootstrap-args-malformed")
	}
	if said != 1 || !problemsMention(snap, "pods of Deployment", "EC2NodeClass custom-al2 is not ready", "kubectl describe ec2nodeclass custom-al2") {
		t.Errorf("the summary should give the EC2NodeClass's message once and let the pods point at it:\n%s", strings.Join(snap.Problems, "\n"))
	}
	findings, _ := doctor(t, sim)
	expectFinding(t, findings, "al2-bootstrap-args-malformed", "EC2NodeClass/custom-al2", "--kubelet-extra-args VALUE", "write --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'")
	expectFinding(t, findings, "custom-userdata-missing-unregistered-taint", "EC2NodeClass/custom-al2", "karpenter.sh/unregistered:NoExecute")
	_, runtime := run(t, "s3", func(o *runner.Options) { o.Operator.SkipUserDataValidation = true })
	if !problemsMention(runtime, "UnregisteredTaintMissing") {
		t.Errorf("at runtime the NodeClaims must say the node registered without karpenter.sh/unregistered: %v", runtime.Problems)
	}
}

func TestS4NodeRoleNotMapped(t *testing.T) {
	sim, snap := run(t, "s4", nil)
	if len(snap.NodeClaims) == 0 || snap.Nodes != 0 {
		t.Fatalf("instances must launch but no node register: %d NodeClaims, %d nodes", len(snap.NodeClaims), snap.Nodes)
	}
	if !problemsMention(snap, "Unauthorized", "KarpenterNodeRole-nodewright-sim", "aws-auth") {
		t.Errorf("the summary must say the node role is not mapped: %v", snap.Problems)
	}
	for _, inst := range sim.Account.Instances() {
		if !strings.Contains(inst.ConsoleOutput, "Unauthorized") {
			t.Errorf("instance %s console shows %q", *inst.InstanceId, inst.ConsoleOutput)
		}
	}
	findings, status := doctor(t, sim)
	if status != 1 {
		t.Errorf("doctor exited %d", status)
	}
	expectFinding(t, findings, "node-role-not-mapped", "EC2NodeClass/default", "KarpenterNodeRole-nodewright-sim", "KarpenterControllerRole-nodewright-sim is the controller's role",
		"- rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim")
	// With the simulated account (read from beside the kubeconfig), the
	// instances' console output is the evidence.
	findings, _ = doctor(t, sim, "--cloud", "sim")
	expectFinding(t, findings, "node-role-not-mapped", "EC2NodeClass/default", "no EKS access entry either", "kubelet: Unauthorized")
}

// S4 with a short registration timeout: the NodeClaims time out, the
// NodePool says why, and it does not relaunch in a loop.
func TestS4RegistrationTimeoutsBackOff(t *testing.T) {
	sim, snap := run(t, "s4", func(o *runner.Options) { o.Operator.Lifecycle.RegistrationTimeout = 4 * time.Second })
	np := &v1.NodePool{}
	if err := sim.Kube.Get(context.Background(), client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionNodeRegistrationHealthy)
	if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "aws-auth") {
		t.Errorf("NodePool default NodeRegistrationHealthy: %+v", cond)
	}
	launched := len(sim.Account.Instances())
	if launched == 0 || launched > 2 {
		t.Errorf("%d instances launched; the timed-out NodeClaims must not be relaunched while the NodePool backs off", launched)
	}
	if !problemsMention(snap, "launches back off until") {
		t.Errorf("the pending pods must say the NodePool backs off: %v", snap.Problems)
	}
	findings, _ := doctor(t, sim)
	expectFinding(t, findings, "registration-timeouts-repeating", "NodePool/default", "most likely cause: node-role-not-mapped", "RegistrationTimeout event")
}

func TestS5ArchitectureAndTypo(t *testing.T) {
	sim, snap := run(t, "s5", nil)
	if len(snap.NodeClaims) != 0 {
		t.Errorf("%d NodeClaims for arm64 pods without an arm64 AMI", len(snap.NodeClaims))
	}
	// One line per workload, with its pod count.
	for _, workload := range []string{"2 pods of Deployment default/armapp-selector", "2 pods of Deployment default/armapp-affinity"} {
		if !problemsMention(snap, workload, "NodePool cicd-armapps: no AMI for arm64 in EC2NodeClass arm") {
			t.Errorf("the selector and affinity pods must get the same AMI reason, per workload: %v", snap.Problems)
		}
	}
	if !problemsMention(snap, "armapp-typo", "NodePool cicd-armapps: requires pod-type=armapp, pod selects pod-type=armapps") {
		t.Errorf("the typo pod's reason: %v", snap.Problems)
	}
	// Live, the AMI architectures come from the EC2NodeClass status.
	findings, status := doctor(t, sim)
	if status != 1 {
		t.Errorf("doctor exited %d", status)
	}
	expectFinding(t, findings, "ami-architecture-mismatch", "NodePool/cicd-armapps", "no AMI for arm64", "from status.amis")
	expectFinding(t, findings, "pod-incompatible-with-nodepools", "Deployment/default/armapp-typo", "closest is NodePool cicd-armapps", "pod-type=armapp, pod selects pod-type=armapps",
		"set Deployment default/armapp-typo's pod template's pod-type selector", "to armapp")
	for _, f := range findings {
		if f.Code == "pod-incompatible-with-nodepools" && !strings.Contains(f.Object, "typo") {
			t.Errorf("a pod blocked only by the AMI is reported as incompatible: %+v", f)
		}
	}
}
