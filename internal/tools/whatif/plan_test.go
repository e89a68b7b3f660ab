package whatif_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// cluster is a dump of NodePool default's nodes without their NodeClaims:
// node i (from 1) made i hours before 12:00, on-demand m5.large in
// us-east-1a, each with pods[i-1] pods of 1500m (one fills a node).
func cluster(t *testing.T, budgets string, pods ...int) *whatif.Objects {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{alias: al2023@latest}]
  role: node
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
status:
  amis:
    - {id: ami-old, name: old, requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}
  subnets: [{id: subnet-a, zone: us-east-1a}, {id: subnet-b, zone: us-east-1b}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
    budgets: %s
`, budgets)
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for i, n := range pods {
		name := fmt.Sprintf("node-%d", i+1)
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: Node
metadata:
  name: %s
  creationTimestamp: %q
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.large
    karpenter.k8s.aws/instance-category: m
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: %s
spec: {providerID: "aws:///us-east-1a/i-%d"}
status:
  capacity: {cpu: "2", memory: 7910Mi, pods: "29"}
  allocatable: {cpu: 1930m, memory: 7220Mi, pods: "29"}
  conditions: [{type: Ready, status: "True"}]
`, name, at.Add(-time.Duration(i+1)*time.Hour).Format(time.RFC3339), name, i+1)
		for j := range n {
			fmt.Fprintf(&b, `---
apiVersion: v1
kind: Pod
metadata:
  name: web-%d-%d
  namespace: default
  labels: {app: web, pod-template-hash: abc12}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-abc12, uid: u1, controller: true}]
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 60
  containers: [{name: web, image: nginx, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
status: {phase: Running}
`, i+1, j, name)
		}
	}
	objs := &whatif.Objects{Now: at}
	if err := objs.Load("cluster.yaml", strings.NewReader(b.String())); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return objs
}

func change(t *testing.T, manifest string) *whatif.Change {
	t.Helper()
	c := &whatif.Change{}
	if err := c.LoadChange("change.yaml", strings.NewReader(manifest)); err != nil {
		t.Fatal(err)
	}
	return c
}

const categoryC = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
    budgets: %s
`

// A NodePool that no longer admits its nodes' instance category drifts
// them all, and the rollout takes them as the controller would: two at
// a time (the budget), the empty node first, then the oldest; each
// node with pods gets a c-category replacement; the estimate adds each
// round's validation, launch, drain (the pods' 60s grace) and
// termination, and the price is dearest while old and new run together.
// Replacements left empty are counted and gone from the price after.
func TestPlanRollsOutUnderTheBudget(t *testing.T) {
	objs := cluster(t, `[{nodes: "2"}]`, 1, 1, 0, 1, 1)
	r, err := whatif.Plan(objs, change(t, fmt.Sprintf(categoryC, `[{nodes: "2"}]`)), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Changes) != 1 || strings.Join(r.Changes[0].Fields, ",") != "spec.template.spec.requirements" {
		t.Errorf("changes: %+v", r.Changes)
	}
	for _, n := range r.Nodes {
		if !n.Drifted || n.Reason != "RequirementsDrifted" || !strings.Contains(n.Message, "instance-category=m") ||
			strings.Join(n.Fields, ",") != "spec.template.spec.requirements" || n.DriftedBefore {
			t.Errorf("node %+v; want drifted by the requirements, naming the field", n)
		}
	}
	var order [][]string
	for _, rd := range r.Rounds {
		var names []string
		for _, n := range rd.Nodes {
			names = append(names, n.Node)
		}
		order = append(order, names)
		for _, repl := range rd.Replacements {
			if !strings.HasPrefix(repl.InstanceType, "c") || repl.PricePerHour <= 0 {
				t.Errorf("round %d replacement %+v; want a priced c-category type", rd.Round, repl)
			}
		}
	}
	want := "[[node-3 node-5] [node-4 node-2] [node-1]]"
	if fmt.Sprint(order) != want {
		t.Errorf("rounds %v, want %s (empty first, then oldest, two at a time)", order, want)
	}
	if len(r.Rounds) == 3 {
		first, second := r.Rounds[0], r.Rounds[1]
		// The second of round 2's commands keeps the room the first
		// planned (its replacement, not initialized yet) for the first's
		// pod: one replacement a pod, none left empty.
		if len(first.Replacements) != 1 || first.PodsMoved != 1 || len(second.Replacements) != 2 || second.SurplusReplacements != 0 {
			t.Errorf("round 1 %+v, round 2 %+v", first, second)
		}
		// validation 15s, launch 90s, drain 60s, termination 45s, poll 10s
		if got := second.StartsAt.Sub(first.StartsAt); got != 220*time.Second {
			t.Errorf("round 2 starts %s after round 1, want 3m40s", got)
		}
	}
	if len(r.Blocked) != 0 || len(r.Unplaced) != 0 {
		t.Errorf("blocked %+v, unplaced %+v", r.Blocked, r.Unplaced)
	}
	if !(r.Price.WorstRound > r.Price.Before && r.Price.After > 0 && r.Price.After < r.Price.Before) {
		t.Errorf("price %+v; the dearest round runs old and new nodes together", r.Price)
	}
	if r.Duration.Seconds <= 0 || len(r.Duration.Assumptions) == 0 {
		t.Errorf("duration %+v", r.Duration)
	}
	// No replacement is left empty, so the last round's pod gets its
	// own, consolidation or not.
	if len(r.Rounds) == 3 && (len(r.Rounds[2].Replacements) != 1 || r.Rounds[2].SurplusReplacements != 0) {
		t.Errorf("round 3 %+v; want one replacement for node-1's pod", r.Rounds[2])
	}
	consolidating := cluster(t, `[{nodes: "2"}]`, 1, 1, 0, 1, 1)
	changed := strings.Replace(fmt.Sprintf(categoryC, `[{nodes: "2"}]`), "consolidateAfter: Never", "consolidateAfter: 30s", 1)
	r2, err := whatif.Plan(consolidating, change(t, changed), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Rounds) != 3 || r2.Rounds[1].SurplusReplacements != 0 || len(r2.Rounds[2].Replacements) != 1 || r2.Price.After != r.Price.After {
		t.Errorf("with consolidation: %+v, price after %v (without %v)", r2.Rounds, r2.Price.After, r.Price.After)
	}
}

// A budget window that allows no drift now holds the rollout until it
// closes, and the round says what it waited for.
func TestPlanWaitsForTheBudgetWindow(t *testing.T) {
	budgets := `[{nodes: "0", schedule: "0 9 * * *", duration: 8h}, {nodes: "1"}]`
	objs := cluster(t, budgets, 1, 1)
	r, err := whatif.Plan(objs, change(t, fmt.Sprintf(categoryC, budgets)), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rounds) != 2 {
		t.Fatalf("rounds %+v", r.Rounds)
	}
	if got := r.Rounds[0].StartsAt.UTC().Format(time.RFC3339); got != "2026-11-23T17:00:00Z" || !strings.Contains(r.Rounds[0].WaitsFor, "allows 0 of 0") {
		t.Errorf("round 1 starts %s waiting for %q; want 17:00, when the 0-node window closes", got, r.Rounds[0].WaitsFor)
	}
	if r.Duration.Seconds < 5*3600 {
		t.Errorf("estimate %vs does not count the wait for the window", r.Duration.Seconds)
	}
}

// A change that leaves pods without a place says which workload and why;
// a do-not-disrupt pod holds its node, and the plan says so.
func TestPlanFindsPodsWithoutAPlace(t *testing.T) {
	objs := cluster(t, `[{nodes: "100%"}]`, 1, 1)
	objs.Pods[0].Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
	small := strings.Replace(fmt.Sprintf(categoryC, `[{nodes: "100%"}]`), "values: [c]", "values: [t]}\n        - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.nano]", 1)
	r, err := whatif.Plan(objs, change(t, small), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Unplaced) != 1 || r.Unplaced[0].Workload != "Deployment default/web" || r.Unplaced[0].Pods != 2 || r.Unplaced[0].Reason == "" {
		t.Errorf("unplaced %+v; want Deployment default/web's 2 pods with the reason", r.Unplaced)
	}
	if len(r.Rounds) != 0 {
		t.Errorf("rounds %+v: nothing can be replaced", r.Rounds)
	}
	blocked := map[string]string{}
	for _, b := range r.Blocked {
		blocked[b.Node] = b.Reason
	}
	if !strings.Contains(blocked["node-1"], "do-not-disrupt") || !strings.Contains(blocked["node-2"], "would have no place") {
		t.Errorf("blocked %v", blocked)
	}
}

// An EC2NodeClass whose amiSelectorTerms change drifts nodes running
// another AMI: by ID, offline; by alias, assumed, with a warning.
func TestPlanAMIChange(t *testing.T) {
	for _, tc := range []struct{ terms, warning string }{
		{"[{id: ami-new}]", ""},
		{"[{alias: al2023@v20261120}]", "only the account resolves"},
	} {
		objs := cluster(t, `[{nodes: "1"}]`, 1)
		c := change(t, `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2023
  amiSelectorTerms: `+tc.terms+`
  role: node
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`)
		objs.NodeClaims = append(objs.NodeClaims, &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "nc-1", Labels: launchLabels(objs.Nodes[0])},
			Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
			Status: v1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-1", NodeName: "node-1", ImageID: "ami-old",
				Conditions: []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}},
		})
		r, err := whatif.Plan(objs, c, nil, whatif.DefaultTimings())
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Changes) != 1 || strings.Join(r.Changes[0].Fields, ",") != "spec.amiSelectorTerms" {
			t.Errorf("%s: changes %+v", tc.terms, r.Changes)
		}
		warned := strings.Contains(strings.Join(r.Warnings, "\n"), "only the account resolves")
		if warned != (tc.warning != "") {
			t.Errorf("%s: warnings %v", tc.terms, r.Warnings)
		}
		if len(r.Nodes) != 1 || !r.Nodes[0].Drifted || r.Nodes[0].Reason != "AMIDrift" || !strings.Contains(r.Nodes[0].Message, "ami-old") ||
			strings.Join(r.Nodes[0].Fields, ",") != "spec.amiSelectorTerms" || r.Nodes[0].NodeClaim != "nc-1" {
			t.Errorf("%s: nodes %+v; want node-1 drifted from ami-old by spec.amiSelectorTerms", tc.terms, r.Nodes)
		}
		if len(r.Rounds) != 1 || len(r.Rounds[0].Replacements) != 1 {
			t.Errorf("%s: rounds %+v; want node-1 replaced", tc.terms, r.Rounds)
		}
	}
}

// A change holds NodePools and EC2NodeClasses only.
func TestChangeRefusesOtherKinds(t *testing.T) {
	c := &whatif.Change{}
	err := c.LoadChange("change.yaml", strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: x}]}
`))
	if err == nil || !strings.Contains(err.Error(), "NodePools and EC2NodeClasses only") || !strings.Contains(err.Error(), "Pod") {
		t.Errorf("a Pod in a change: %v", err)
	}
}

// A NodePool whose drift is paused (its status says so) keeps its
// drifted nodes through a change that leaves it and its class alone, and
// the plan says why; a change to it resumes drift.
func TestPlanKeepsPausedDrift(t *testing.T) {
	objs := cluster(t, `[{nodes: "1"}]`, 1)
	objs.NodeClaims = append(objs.NodeClaims, &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "nc-1", Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
		Status: v1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-1", NodeName: "node-1", Conditions: []metav1.Condition{
			{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"},
			{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: v1.ReasonNodePoolDrifted}}},
	})
	objs.NodePools[0].Status.Conditions = []metav1.Condition{{Type: v1.ConditionDriftAllowed, Status: metav1.ConditionFalse, Reason: v1.ReasonReplacementsFailing,
		Message: "3 replacements of drifted nodes failed in a row"}}
	other := strings.Replace(fmt.Sprintf(categoryC, `[{nodes: "1"}]`), "name: default}\nspec:", "name: other}\nspec:", 1)
	r, err := whatif.Plan(objs, change(t, other), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rounds) != 0 || len(r.Blocked) != 1 || !strings.Contains(r.Blocked[0].Reason, "drift of its NodePool is paused") {
		t.Errorf("rounds %+v, blocked %+v; want node-1 held by the paused drift", r.Rounds, r.Blocked)
	}
	r, err = whatif.Plan(objs, change(t, fmt.Sprintf(categoryC, `[{nodes: "1"}]`)), nil, whatif.DefaultTimings())
	if err != nil || len(r.Rounds) != 1 {
		t.Errorf("a change to the paused NodePool resumes its drift: %v, rounds %+v, blocked %+v", err, r.Rounds, r.Blocked)
	}
}

// A cluster the reference runs today: its NodeClaims carry its own drift
// hashes (other hash versions), or none. The controller restamps them
// when it takes the cluster over, so a change of spec.userData or
// spec.tags then drifts every node of the class; plan says the same.
func TestPlanOnAClusterTheReferenceRuns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
	}{
		// Its NodePool hash is nodewright's (the same value, the same
		// version); its EC2NodeClass hash another hashing's.
		{"the reference's hashes", map[string]string{"karpenter.sh/nodepool-hash": "", "karpenter.sh/nodepool-hash-version": "v3",
			"karpenter.k8s.aws/ec2nodeclass-hash": "15616957348189460630", "karpenter.k8s.aws/ec2nodeclass-hash-version": "v6"}},
		{"no hashes", nil},
	} {
		for _, edit := range []struct{ field, spec string }{
			{"spec.userData", "  userData: |\n    #!/bin/bash\n    echo tuned > /etc/motd\n"},
			{"spec.tags", "  tags: {team: payments}\n"},
		} {
			objs := cluster(t, `[{nodes: "100%"}]`, 1, 1)
			annotations := maps.Clone(tc.annotations)
			if _, ok := annotations["karpenter.sh/nodepool-hash"]; ok {
				annotations["karpenter.sh/nodepool-hash"] = state.NodePoolHash(objs.NodePools[0])
			}
			for i, node := range objs.Nodes {
				objs.NodeClaims = append(objs.NodeClaims, &v1.NodeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%d", i), Labels: launchLabels(node), Annotations: annotations},
					Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
					Status: v1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: node.Name, ImageID: "ami-old",
						Conditions: []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}},
				})
			}
			c := change(t, `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{alias: al2023@latest}]
  role: node
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`+edit.spec)
			r, err := whatif.Plan(objs, c, nil, whatif.DefaultTimings())
			if err != nil {
				t.Fatal(err)
			}
			drifted := 0
			for _, n := range r.Nodes {
				if n.Drifted && n.Reason == v1.ReasonNodeClassDrifted && slices.Contains(n.Fields, edit.field) {
					drifted++
				}
			}
			if drifted != 2 {
				t.Errorf("%s, %s changed: %d of 2 nodes drift; nodes %+v", tc.name, edit.field, drifted, r.Nodes)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), "2 NodeClaim(s) carry drift hashes of another hashing") {
				t.Errorf("%s: the restamp is not said: %v", tc.name, r.Warnings)
			}
		}
	}
}

// A rollout launches what the pods need at any budget: each command
// keeps the room the commands before it planned, so no replacement is
// left empty, and the nodes after are as many as the pods need.
func TestPlanRolloutLeavesNothingEmpty(t *testing.T) {
	// expiring: the nodes (one to six hours old) outlive a new
	// expireAfter of 30 minutes.
	expiring := strings.Replace(strings.Replace(categoryC, "        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c]}\n", "", 1),
		"      nodeClassRef:", "      expireAfter: 30m\n      nodeClassRef:", 1)
	for _, rollout := range []struct{ name, change string }{{"drift", categoryC}, {"expiry", expiring}} {
		for _, budgets := range []string{`[{nodes: "1"}]`, `[{nodes: "6"}]`, `[{nodes: "100%"}]`} {
			t.Run(rollout.name+" "+budgets, func(t *testing.T) {
				planRollout(t, budgets, rollout.change)
			})
		}
	}
}

func planRollout(t *testing.T, budgets, changed string) {
	t.Helper()
	objs := cluster(t, budgets, 1, 1, 1, 1, 1, 1)
	r, err := whatif.Plan(objs, change(t, fmt.Sprintf(changed, budgets)), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	replacements, surplus, moved := 0, 0, 0
	for _, rd := range r.Rounds {
		replacements += len(rd.Replacements)
		surplus += rd.SurplusReplacements
		moved += rd.PodsMoved
	}
	if surplus != 0 || replacements != 6 || moved != 6 {
		t.Errorf("%d replacements (%d left empty) for 6 pods moved %d times: %+v", replacements, surplus, moved, r.Rounds)
	}
}

// launchLabels are the labels the reference's NodeClaim of a node
// carries: those its launch gave the node (instance type, zone, capacity
// type, NodePool), not the kubelet's own.
func launchLabels(node *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range node.Labels {
		if k != corev1.LabelHostname {
			out[k] = v
		}
	}
	return out
}

// withClaims gives each node of the cluster an initialized NodeClaim
// running ami-old, with the annotations.
func withClaims(objs *whatif.Objects, annotations map[string]string) {
	for i, node := range objs.Nodes {
		objs.NodeClaims = append(objs.NodeClaims, &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("default-%d", i), Labels: launchLabels(node), Annotations: annotations},
			Spec:       v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}},
			Status: v1.NodeClaimStatus{ProviderID: node.Spec.ProviderID, NodeName: node.Name, ImageID: "ami-old",
				Conditions: []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}},
		})
	}
}

// classChange is EC2NodeClass default changed to these spec lines (the
// family, if any, and its AMI, subnet and security group terms).
func classChange(t *testing.T, family, amis, subnets, groups string) *whatif.Change {
	t.Helper()
	return change(t, "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n"+family+
		"  amiSelectorTerms: "+amis+"\n  role: node\n  subnetSelectorTerms: "+subnets+"\n  securityGroupSelectorTerms: "+groups+"\n")
}

// Writing out the family an alias implies, or leaving it out, changes no
// node: the hash takes the family as resolved, as the reference's does,
// and the pods keep their place (the AMIs are those in the status).
func TestPlanFamilyAsTheAliasImpliesIt(t *testing.T) {
	for _, family := range []string{"", "  amiFamily: AL2023\n"} {
		objs := cluster(t, `[{nodes: "100%"}]`, 1, 1)
		withClaims(objs, state.NodeClaimFor(objs.NodePools[0], nodeclass.Rules(objs.EC2NodeClasses[0]), &scheduling.PlannedNodeClaim{}).Annotations)
		r, err := whatif.Plan(objs, classChange(t, family, "[{alias: al2023@latest}]", "[{tags: {a: b}}]", "[{tags: {a: b}}]"), nil, whatif.DefaultTimings())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range r.Nodes {
			if n.Drifted {
				t.Errorf("amiFamily %q: %s drifts (%s: %s)", family, n.Node, n.Reason, n.Message)
			}
		}
		if len(r.Rounds) != 0 || len(r.Unplaced) != 0 {
			t.Errorf("amiFamily %q: rounds %+v, unplaced %+v; want nothing replaced", family, r.Rounds, r.Unplaced)
		}
	}
}

// An alias pinned to the version of the AMIs the class selects now
// selects the same AMIs: no node drifts, no warning; pinned to another
// version, the nodes drift as before.
func TestPlanAliasPinnedToTheRunningVersion(t *testing.T) {
	for _, tc := range []struct {
		alias   string
		drifted bool
	}{{"al2023@v20251110", false}, {"al2023@v20261120", true}} {
		objs := cluster(t, `[{nodes: "100%"}]`, 1)
		objs.EC2NodeClasses[0].Status.AMIs = []awsv1.AMI{{ID: "ami-old", Name: "amazon-eks-node-al2023-x86_64-standard-1.34-v20251110",
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
		withClaims(objs, nil)
		r, err := whatif.Plan(objs, classChange(t, "  amiFamily: AL2023\n", "[{alias: "+tc.alias+"}]", "[{tags: {a: b}}]", "[{tags: {a: b}}]"), nil, whatif.DefaultTimings())
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Nodes) != 1 || r.Nodes[0].Drifted != tc.drifted {
			t.Errorf("%s: nodes %+v; want drifted %t", tc.alias, r.Nodes, tc.drifted)
		}
		warned := strings.Contains(strings.Join(r.Warnings, "\n"), "only the account resolves")
		if warned == !tc.drifted || len(r.Unplaced) != 0 {
			t.Errorf("%s: warnings %v, unplaced %+v", tc.alias, r.Warnings, r.Unplaced)
		}
	}
}

// Subnet selector terms narrowed to subnets by ID (in the status) drift
// the nodes in a zone no selected subnet is in, and only those, with no
// warning that the network is unknown; the replacements go where the
// selected subnets are.
func TestPlanSubnetsNarrowedByID(t *testing.T) {
	for _, tc := range []struct {
		subnet  string
		drifted int
	}{{"subnet-b", 2}, {"subnet-a", 0}} {
		objs := cluster(t, `[{nodes: "100%"}]`, 1, 1)
		r, err := whatif.Plan(objs, classChange(t, "  amiFamily: AL2023\n", "[{alias: al2023@latest}]", "[{id: "+tc.subnet+"}]", "[{tags: {a: b}}]"), nil, whatif.DefaultTimings())
		if err != nil {
			t.Fatal(err)
		}
		drifted := 0
		for _, n := range r.Nodes {
			if n.Drifted {
				drifted++
				if n.Reason != "SubnetDrift" || !strings.Contains(n.Message, "selects no subnet in us-east-1a") || !slices.Contains(n.Fields, "spec.subnetSelectorTerms") {
					t.Errorf("%s: %+v", tc.subnet, n)
				}
			}
		}
		if drifted != tc.drifted || strings.Contains(strings.Join(r.Warnings, "\n"), "subnetSelectorTerms changed") {
			t.Errorf("%s: %d nodes drift, want %d; warnings %v", tc.subnet, drifted, tc.drifted, r.Warnings)
		}
		for _, round := range r.Rounds {
			for _, repl := range round.Replacements {
				if repl.Zone != "us-east-1b" {
					t.Errorf("%s: a replacement in %s, where no selected subnet is", tc.subnet, repl.Zone)
				}
			}
		}
	}
}

// A change whose effect only the account knows (security groups chosen
// by a new tag) leaves the nodes neither drifted nor "not drifted": the
// plan says they are unknown offline, in its JSON and its table.
func TestPlanSaysWhatItCannotKnowOffline(t *testing.T) {
	objs := cluster(t, `[{nodes: "100%"}]`, 1, 1)
	c := classChange(t, "  amiFamily: AL2023\n", "[{alias: al2023@latest}]", "[{tags: {a: b}}]", "[{tags: {team: payments}}]")
	// The NodePool of the same name changes too (its budgets only).
	budgetsOnly := strings.Replace(fmt.Sprintf(categoryC, `[{nodes: "50%"}]`), "        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c]}\n", "", 1)
	if err := c.LoadChange("pool.yaml", strings.NewReader(budgetsOnly)); err != nil {
		t.Fatal(err)
	}
	r, err := whatif.Plan(objs, c, nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range r.Nodes {
		if n.Drifted || !strings.Contains(n.Unknown, "spec.securityGroupSelectorTerms") {
			t.Errorf("%s: drifted %t, unknown %q", n.Node, n.Drifted, n.Unknown)
		}
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "Drift: 0 of 2 nodes, 2 unknown offline") || strings.Contains(table.String(), "not drifted") {
		t.Errorf("the table:\n%s", table.String())
	}
}
