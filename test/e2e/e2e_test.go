// Package e2e runs the scenarios end to end with `nodewright sim`'s runner:
// a real control plane, the simulated AWS account and kubelets, and the
// operator. Disruption has its own package (test/e2e/disruption), which
// go test runs beside this one.
package e2e

import (
	"context"
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

func TestHealthy(t *testing.T) {
	sim, snap := harness.Run(t, "healthy", nil)
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
	if planned := harness.PlannedNodes(t, "healthy"); snap.Nodes > planned {
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

// Nodes that become Ready up to 40 s apart: the pods planned onto each
// are nominated to it before it takes pods, and nodewright launches a node
// beyond the plan only for pods kube-scheduler placed elsewhere than
// planned. kube-scheduler 1.34 clears a pod's nominatedNodeName whenever it
// fails to place the pod and preemption cannot help, so pods planned for
// one node can land on another: pods of the same shape swapping nodes cost
// nothing, and each pod whose planned room a pod of another shape took can
// cost one node more, never a pod planned twice.
func TestPlanSticksWhenNodesBootApart(t *testing.T) {
	sim, snap := harness.Run(t, "healthy", func(o *runner.Options) { o.BootJitter = 40 * time.Second })
	if !snap.Done() {
		t.Fatalf("not every pod runs: %d/%d", snap.RunningPods, snap.Pods)
	}
	planned := harness.PlannedNodes(t, "healthy")
	ctx := context.Background()
	// Each pod's first plan, from its Nominated events; the NodeClaims
	// nodewright created are those plans named and those that exist.
	events := &corev1.EventList{}
	if err := sim.Kube.List(ctx, events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	first, firstAt, created := map[string]string{}, map[string]time.Time{}, map[string]bool{}
	for _, ev := range events.Items {
		if ev.Reason != v1.ReasonNominated || !strings.HasPrefix(ev.Message, "pod should schedule on NodeClaim ") {
			continue
		}
		claim, _, _ := strings.Cut(strings.TrimPrefix(ev.Message, "pod should schedule on NodeClaim "), " ")
		created[claim] = true
		at := ev.FirstTimestamp.Time
		if prev, ok := firstAt[ev.InvolvedObject.Name]; !ok || at.Before(prev) {
			first[ev.InvolvedObject.Name], firstAt[ev.InvolvedObject.Name] = claim, at
		}
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	claimOfNode := map[string]string{}
	for _, nc := range claims.Items {
		created[nc.Name] = true
		claimOfNode[nc.Status.NodeName] = nc.Name
	}
	pods := &corev1.PodList{}
	if err := sim.Kube.List(ctx, pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	// Pods of one shape are interchangeable: what costs a node is planned
	// room taken by pods of another shape. For each NodeClaim of a first
	// plan, the planned pods whose shape it does not run.
	shape := func(p *corev1.Pod) string {
		r := p.Spec.Containers[0].Resources.Requests
		return r.Cpu().String() + "/" + r.Memory().String()
	}
	// Every pod first planned onto a NodeClaim counts, those deleted since
	// too (a consolidated node's pods are made again under new names): its
	// shape is its ReplicaSet's, read from a pod of the same ReplicaSet.
	shapeOf := map[string]string{} // generateName → shape
	runningShapes := map[string][]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		shapeOf[p.GenerateName] = shape(p)
		runningShapes[claimOfNode[p.Spec.NodeName]] = append(runningShapes[claimOfNode[p.Spec.NodeName]], shape(p))
	}
	plannedShapes := map[string][]string{}
	for name, claim := range first {
		sh, ok := shapeOf[name[:strings.LastIndex(name, "-")+1]]
		if !ok {
			t.Fatalf("pod %s was planned, and no pod of its ReplicaSet runs", name)
		}
		plannedShapes[claim] = append(plannedShapes[claim], sh)
	}
	var taken []string
	for claim, want := range plannedShapes {
		have := slices.Clone(runningShapes[claim])
		for _, sh := range want {
			if i := slices.Index(have, sh); i >= 0 {
				have = slices.Delete(have, i, i+1)
				continue
			}
			taken = append(taken, claim+": "+sh)
		}
	}
	sort.Strings(taken)
	t.Logf("%d NodeClaims for a plan of %d; planned room other pods took: %v", len(created), planned, taken)
	if extra := len(created) - planned; extra > len(taken) {
		t.Errorf("%d NodeClaims for a plan of %d, and only %d planned pods' room taken by pods of another shape: pods were planned twice", len(created), planned, len(taken))
	}
}

func TestS1CaughtBeforeLaunch(t *testing.T) {
	sim, snap := harness.Run(t, "s1", nil)
	cond := meta.FindStatusCondition(harness.NodeClass(t, sim, "cilium").Status.Conditions, awsv1.ConditionValidationSucceeded)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "UserDataInvalid" ||
		!strings.Contains(cond.Message, "--register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute") ||
		!strings.Contains(cond.Message, "karpenter.sh/unregistered") || !strings.Contains(cond.Message, "startupTaints") {
		t.Errorf("EC2NodeClass cilium ValidationSucceeded: %+v", cond)
	}
	if len(snap.NodeClaims) != 0 || len(sim.Account.Instances()) != 0 {
		t.Errorf("nothing may launch from the EC2NodeClass: %d NodeClaims, %d instances", len(snap.NodeClaims), len(sim.Account.Instances()))
	}
	if !harness.ProblemsMention(snap, "pods", "EC2NodeClass cilium is not ready", "UserDataInvalid") {
		t.Errorf("the pods' events do not name the EC2NodeClass: %v", snap.Problems)
	}
	findings, status := doctor(t, sim)
	if status != 2 {
		t.Errorf("doctor exited %d, want 2 (it found errors)", status)
	}
	expectFinding(t, findings, "userdata-overrides-registration-taints", "EC2NodeClass/cilium", "--register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute", "startupTaints")
}

func TestS1AtRuntimeIsNotSilent(t *testing.T) {
	sim, snap := harness.Run(t, "s1", func(o *runner.Options) { o.Operator.SkipUserDataValidation = true })
	if !harness.ProblemsMention(snap, "Registered=True UnregisteredTaintMissing", "registered with node.cilium.io/agent-not-ready=true:NoExecute") {
		t.Errorf("the NodeClaims do not say the node registered without karpenter.sh/unregistered: %v", snap.Problems)
	}
	findings, _ := doctor(t, sim)
	expectFinding(t, findings, "userdata-overrides-registration-taints", "NodeClaim/", "node.cilium.io/agent-not-ready=true:NoExecute")
	expectFinding(t, findings, "userdata-overrides-registration-taints", "EC2NodeClass/cilium")
}

func TestS2CloudProviderTaint(t *testing.T) {
	sim, snap := harness.Run(t, "s2", nil)
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
	sim, snap := harness.Run(t, "s2", func(o *runner.Options) { o.CloudControllerManager = false })
	if snap.RunningPods != 0 || !harness.ProblemsMention(snap, "Initialized=False KnownEphemeralTaintsExist", "node.cloudprovider.kubernetes.io/uninitialized", "cloud controller manager") {
		t.Errorf("the NodeClaims must wait and name the taint and its owner: %v", snap.Problems)
	}
	findings, status := doctor(t, sim, "--grace", "2s")
	if status != 2 {
		t.Errorf("doctor exited %d, want 2 (it found errors)", status)
	}
	expectFinding(t, findings, "cloud-provider-taint-not-removed", "NodeClaim/", "node.cloudprovider.kubernetes.io/uninitialized", "cloud controller manager", "KnownEphemeralTaintsExist")
}

func TestS3CaughtBeforeLaunch(t *testing.T) {
	sim, snap := harness.Run(t, "s3", nil)
	cond := meta.FindStatusCondition(harness.NodeClass(t, sim, "custom-al2").Status.Conditions, awsv1.ConditionValidationSucceeded)
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
	if said != 1 || !harness.ProblemsMention(snap, "pods of Deployment", "EC2NodeClass custom-al2 is not ready", "kubectl describe ec2nodeclass custom-al2") {
		t.Errorf("the summary should give the EC2NodeClass's message once and let the pods point at it:\n%s", strings.Join(snap.Problems, "\n"))
	}
	findings, _ := doctor(t, sim)
	expectFinding(t, findings, "al2-bootstrap-args-malformed", "EC2NodeClass/custom-al2", "--kubelet-extra-args VALUE", "write --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'")
	expectFinding(t, findings, "custom-userdata-missing-unregistered-taint", "EC2NodeClass/custom-al2", "karpenter.sh/unregistered:NoExecute")
	_, runtime := harness.Run(t, "s3", func(o *runner.Options) { o.Operator.SkipUserDataValidation = true })
	if !harness.ProblemsMention(runtime, "UnregisteredTaintMissing") {
		t.Errorf("at runtime the NodeClaims must say the node registered without karpenter.sh/unregistered: %v", runtime.Problems)
	}
}

func TestS4NodeRoleNotMapped(t *testing.T) {
	sim, snap := harness.Run(t, "s4", nil)
	if len(snap.NodeClaims) == 0 || snap.Nodes != 0 {
		t.Fatalf("instances must launch but no node register: %d NodeClaims, %d nodes", len(snap.NodeClaims), snap.Nodes)
	}
	if !harness.ProblemsMention(snap, "Unauthorized", "KarpenterNodeRole-nodewright-sim", "aws-auth") {
		t.Errorf("the summary must say the node role is not mapped: %v", snap.Problems)
	}
	for _, inst := range sim.Account.Instances() {
		if !strings.Contains(inst.ConsoleOutput, "Unauthorized") {
			t.Errorf("instance %s console shows %q", *inst.InstanceId, inst.ConsoleOutput)
		}
	}
	findings, status := doctor(t, sim)
	if status != 2 {
		t.Errorf("doctor exited %d, want 2 (it found errors)", status)
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
	sim, snap := harness.Run(t, "s4", func(o *runner.Options) { o.Operator.Lifecycle.RegistrationTimeout = 4 * time.Second })
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
	if !harness.ProblemsMention(snap, "launches back off until") {
		t.Errorf("the pending pods must say the NodePool backs off: %v", snap.Problems)
	}
	findings, _ := doctor(t, sim)
	expectFinding(t, findings, "registration-timeouts-repeating", "NodePool/default", "most likely cause: node-role-not-mapped", "RegistrationTimeout event")
}

func TestS5ArchitectureAndTypo(t *testing.T) {
	sim, snap := harness.Run(t, "s5", nil)
	if len(snap.NodeClaims) != 0 {
		t.Errorf("%d NodeClaims for arm64 pods without an arm64 AMI", len(snap.NodeClaims))
	}
	// One line per workload, with its pod count.
	for _, workload := range []string{"2 pods of Deployment default/armapp-selector", "2 pods of Deployment default/armapp-affinity"} {
		if !harness.ProblemsMention(snap, workload, "NodePool cicd-armapps: no AMI for arm64 in EC2NodeClass arm") {
			t.Errorf("the selector and affinity pods must get the same AMI reason, per workload: %v", snap.Problems)
		}
	}
	if !harness.ProblemsMention(snap, "armapp-typo", "NodePool cicd-armapps: requires pod-type=armapp, pod selects pod-type=armapps") {
		t.Errorf("the typo pod's reason: %v", snap.Problems)
	}
	// Live, the AMI architectures come from the EC2NodeClass status.
	findings, status := doctor(t, sim)
	if status != 2 {
		t.Errorf("doctor exited %d, want 2 (it found errors)", status)
	}
	expectFinding(t, findings, "ami-architecture-mismatch", "NodePool/cicd-armapps", "no AMI for arm64", "(status.amis)", "- alias: al2023@latest")
	expectFinding(t, findings, "pod-incompatible-with-nodepools", "Deployment/default/armapp-typo", "closest is NodePool cicd-armapps", "pod-type=armapp, pod selects pod-type=armapps",
		"set Deployment default/armapp-typo's pod template's pod-type selector", "to armapp")
	// The pods the AMI blocks, with the controller's own reason on their
	// events, as the sim's problems above; the fix names the AMI to add.
	for _, workload := range []string{"Deployment/default/armapp-selector", "Deployment/default/armapp-affinity"} {
		expectFinding(t, findings, "pod-incompatible-with-nodepools", workload, "no AMI for arm64 in EC2NodeClass arm", "add an AMI for arm64 to EC2NodeClass arm's spec.amiSelectorTerms")
	}
}

// spec.kubelet takes any field of the kubelet's configuration: on AL2023
// it reaches the node's nodeadm configuration and the node keeps what it
// reserves (its allocatable shows maxPods and kubeReserved), CEL
// expressions included (NodeClassCEL on), evaluated for the instance type
// launched; on AL2 a field its bootstrap cannot apply keeps the
// EC2NodeClass from Ready, naming the field, and nothing launches from it.
func TestOpenKubeletConfiguration(t *testing.T) {
	sim := harness.Start(t, func(o *runner.Options) { o.Operator.NodeClassCEL = true })
	ctx := context.Background()
	class := func(name, alias, kubelet string) string {
		return `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: ` + name + `}
spec:
  amiSelectorTerms: [{alias: "` + alias + `"}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  kubelet: ` + kubelet + `
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ` + name + `}
spec:
  template:
    metadata: {labels: {pool: ` + name + `}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: ` + name + `}
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      nodeSelector: {pool: ` + name + `}
      containers: [{name: app, image: busybox, resources: {requests: {cpu: 100m, memory: 64Mi}}}]
---
`
	}
	manifest := class("open", "al2023@latest", `{maxPods: 8, kubeReserved: {cpu: 500m, memory: 1Gi}, serializeImagePulls: false}`) +
		class("cel", "al2023@latest", `{maxPods: "vcpus * 5", kubeReserved: {cpu: "vcpus * 100", memory: "max_pods * 64"}}`) +
		class("legacy", "al2@latest", `{serializeImagePulls: false}`) + harness.AWSAuth
	if err := sim.Apply(ctx, "open kubelet", []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	// m5.large has 2 vCPUs: the cel pool's nodes take 10 pods and reserve
	// 200m of CPU and 10*64 = 640Mi of memory.
	for _, want := range []struct {
		pool, userData string
		pods           int64
		cpu, memory    string // reserved, the 100Mi eviction threshold included
	}{{"open", "serializeImagePulls: false", 8, "500m", "1124Mi"}, {"cel", "cpu: 200m", 10, "200m", "740Mi"}} {
		node := runningNode(t, sim, want.pool)
		allocatable, capacity := node.Status.Allocatable, node.Status.Capacity
		cpu, memory := capacity.Cpu().DeepCopy(), capacity.Memory().DeepCopy()
		cpu.Sub(resource.MustParse(want.cpu))
		memory.Sub(resource.MustParse(want.memory))
		if allocatable.Pods().Value() != want.pods || !allocatable.Cpu().Equal(cpu) || !allocatable.Memory().Equal(memory) {
			t.Errorf("pool %s: node %s allocatable pods=%s cpu=%s memory=%s, capacity cpu=%s memory=%s; want %d pods, cpu less %s, memory less %s",
				want.pool, node.Name, allocatable.Pods(), allocatable.Cpu(), allocatable.Memory(), capacity.Cpu(), capacity.Memory(), want.pods, want.cpu, want.memory)
		}
		for _, inst := range sim.Account.Instances() {
			if !strings.HasSuffix(node.Spec.ProviderID, "/"+aws.ToString(inst.InstanceId)) {
				continue
			}
			data, err := base64.StdEncoding.DecodeString(inst.UserData)
			if err != nil || !strings.Contains(string(data), want.userData) {
				t.Errorf("pool %s: instance %s user data lacks %q (%v):\n%s", want.pool, aws.ToString(inst.InstanceId), want.userData, err, data)
			}
		}
	}

	cond := meta.FindStatusCondition(harness.NodeClass(t, sim, "legacy").Status.Conditions, awsv1.ConditionValidationSucceeded)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != awsv1.ReasonUnsupportedKubeletConfiguration ||
		!strings.Contains(cond.Message, "not applied by the AL2 AMI family that would be silently dropped: serializeImagePulls") {
		t.Errorf("EC2NodeClass legacy ValidationSucceeded = %+v", cond)
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims, client.MatchingLabels{v1.LabelNodePool: "legacy"}); err != nil || len(claims.Items) != 0 {
		t.Errorf("%d NodeClaims of the legacy NodePool (%v); want none", len(claims.Items), err)
	}
}

// runningNode is the node of a NodePool once its pods run there.
func runningNode(t *testing.T, sim *runner.Sim, pool string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	var node *corev1.Node
	harness.WaitFor(t, "the "+pool+" pool's pods running on its node", 3*time.Minute, func() bool {
		nodes := &corev1.NodeList{}
		pods := &corev1.PodList{}
		if sim.Kube.List(ctx, nodes, client.MatchingLabels{"pool": pool}) != nil || len(nodes.Items) == 0 ||
			sim.Kube.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{"app": pool}) != nil || len(pods.Items) == 0 {
			return false
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		node = &nodes.Items[0]
		return true
	})
	return node
}
