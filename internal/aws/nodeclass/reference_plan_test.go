package nodeclass_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/referencetest"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// refDumpStatus is the EC2NodeClass status the reference's controller
// writes for driftClass in an account in ap-northeast-1: the AMIs the
// alias resolves to (release v20251110), three subnets, a security
// group, the instance profile, Ready.
const refDumpStatus = `
status:
  amis:
    - id: ami-07c1a9e2b3d4f5a61
      name: amazon-eks-node-al2023-x86_64-standard-1.34-v20251110
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.k8s.aws/instance-gpu-count, operator: DoesNotExist}
        - {key: karpenter.k8s.aws/instance-accelerator-count, operator: DoesNotExist}
    - id: ami-07c1a9e2b3d4f5a62
      name: amazon-eks-node-al2023-arm64-standard-1.34-v20251110
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [arm64]}
        - {key: karpenter.k8s.aws/instance-gpu-count, operator: DoesNotExist}
        - {key: karpenter.k8s.aws/instance-accelerator-count, operator: DoesNotExist}
  subnets:
    - {id: subnet-0e1a2b3c4d5e6f701, zone: ap-northeast-1a, zoneID: apne1-az4}
    - {id: subnet-0e1a2b3c4d5e6f702, zone: ap-northeast-1c, zoneID: apne1-az1}
    - {id: subnet-0e1a2b3c4d5e6f703, zone: ap-northeast-1d, zoneID: apne1-az2}
  securityGroups:
    - {id: sg-0a9b8c7d6e5f40312, name: analytics-prod-node}
  instanceProfile: analytics-prod_1234567890123456789
  conditions:
    - {type: AMIsReady, status: "True", reason: AMIsReady, lastTransitionTime: "2026-11-10T08:00:00Z"}
    - {type: SubnetsReady, status: "True", reason: SubnetsReady, lastTransitionTime: "2026-11-10T08:00:00Z"}
    - {type: SecurityGroupsReady, status: "True", reason: SecurityGroupsReady, lastTransitionTime: "2026-11-10T08:00:00Z"}
    - {type: InstanceProfileReady, status: "True", reason: InstanceProfileReady, lastTransitionTime: "2026-11-10T08:00:00Z"}
    - {type: ValidationSucceeded, status: "True", reason: ValidationSucceeded, lastTransitionTime: "2026-11-10T08:00:00Z"}
    - {type: Ready, status: "True", reason: Ready, lastTransitionTime: "2026-11-10T08:00:00Z"}
`

// refDumpNodes are the NodePool's three nodes and their NodeClaims as the
// reference's controllers write them (labels, its hash annotations,
// status), each with a pod of the batch team.
func refDumpNodes(poolHash, poolVersion, classHash, classVersion string) string {
	var b strings.Builder
	nodes := []struct{ name, claim, itype, category, zone, capacity, id string }{
		{"ip-10-20-31-7.ap-northeast-1.compute.internal", "batch-workers-7x2kq", "c6i.xlarge", "c", "ap-northeast-1a", "spot", "i-0f1e2d3c4b5a69781"},
		{"ip-10-20-64-12.ap-northeast-1.compute.internal", "batch-workers-9mvtr", "m6i.large", "m", "ap-northeast-1c", "on-demand", "i-0f1e2d3c4b5a69782"},
		{"ip-10-20-97-40.ap-northeast-1.compute.internal", "batch-workers-c4pnh", "r6i.large", "r", "ap-northeast-1d", "spot", "i-0f1e2d3c4b5a69783"},
	}
	for i, n := range nodes {
		labels := fmt.Sprintf(`    karpenter.sh/nodepool: batch-workers
    karpenter.sh/capacity-type: %s
    karpenter.k8s.aws/ec2nodeclass: batch
    karpenter.k8s.aws/instance-category: %s
    karpenter.k8s.aws/instance-family: %s
    karpenter.k8s.aws/instance-generation: "6"
    node.kubernetes.io/instance-type: %s
    topology.kubernetes.io/zone: %s
    topology.kubernetes.io/region: ap-northeast-1
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    team: analytics
    tier: batch
`, n.capacity, n.category, strings.SplitN(n.itype, ".", 2)[0], n.itype, n.zone)
		created := time.Date(2026, 11, 20, 3, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour).Format(time.RFC3339)
		fmt.Fprintf(&b, `---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: %s
  creationTimestamp: %q
  labels:
%s  annotations:
    karpenter.sh/nodepool-hash: %q
    karpenter.sh/nodepool-hash-version: %s
    karpenter.k8s.aws/ec2nodeclass-hash: %q
    karpenter.k8s.aws/ec2nodeclass-hash-version: %s
    cost-center: "4410"
  ownerReferences: [{apiVersion: karpenter.sh/v1, kind: NodePool, name: batch-workers, uid: 5b0c7e0e-2f0b-4f51-9d6e-7d1c2b9a4e11, blockOwnerDeletion: true}]
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: batch}
  expireAfter: 720h
  requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
    - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: [%s]}
  taints:
    - {key: dedicated, value: batch, effect: NoSchedule}
    - {key: gpu, effect: PreferNoSchedule}
  startupTaints:
    - {key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}
status:
  providerID: aws:///%s/%s
  nodeName: %s
  imageID: ami-07c1a9e2b3d4f5a61
  conditions:
    - {type: Launched, status: "True", reason: Launched, lastTransitionTime: %q}
    - {type: Registered, status: "True", reason: Registered, lastTransitionTime: %q}
    - {type: Initialized, status: "True", reason: Initialized, lastTransitionTime: %q}
    - {type: Ready, status: "True", reason: Ready, lastTransitionTime: %q}
---
apiVersion: v1
kind: Node
metadata:
  name: %s
  creationTimestamp: %q
  labels:
%s    karpenter.sh/registered: "true"
    karpenter.sh/initialized: "true"
    kubernetes.io/hostname: %s
spec:
  providerID: aws:///%s/%s
  taints:
    - {key: dedicated, value: batch, effect: NoSchedule}
    - {key: gpu, effect: PreferNoSchedule}
status:
  capacity: {cpu: "4", memory: 15896Mi, pods: "58", ephemeral-storage: 104845292Ki}
  allocatable: {cpu: 3920m, memory: 14963Mi, pods: "58", ephemeral-storage: 95551679124}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Pod
metadata:
  name: etl-%d
  namespace: analytics
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: etl, uid: 0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5, controller: true}]
spec:
  nodeName: %s
  tolerations: [{key: dedicated, operator: Equal, value: batch, effect: NoSchedule}]
  containers: [{name: etl, image: public.ecr.aws/docker/library/python:3.12, resources: {requests: {cpu: "1", memory: 2Gi}}}]
status: {phase: Running}
`, n.claim, created, labels, poolHash, poolVersion, classHash, classVersion, n.itype, n.zone, n.id, n.name, created, created, created, created,
			n.name, created, labels, n.name, n.zone, n.id, i, n.name)
	}
	return b.String()
}

// offlineOutcome is what plan can tell from the dump alone of a change
// the reference's hash does not drift on (unlisted: nothing changes for
// the nodes): "unknown" when only the account resolves it, or the reason
// the reference's AMI, subnet or security group drift gives.
var offlineOutcome = map[string]string{
	// The nodes run v20251110 (status.amis's names): the same AMIs.
	"alias pinned": "",
	// Whatever ami-0123456789abcdef0 is, it is not the image the nodes
	// run: AMI drift.
	"AMIs by id, family written": "AMIDrift",
	// subnet-0abc is not among the status's subnets: its zone is unknown.
	"subnet selector changed":         "unknown",
	"security group selector changed": "unknown",
	// The nodes run in no reservation: nothing to drift.
	"capacity reservation selector added": "",
}

// plan on a cluster the reference runs (its hash annotations, labels and
// status, in another account and region), for each change of
// driftChanges written as a user keeps the manifest in git: nodes drift
// exactly where the reference's own hash says they do, with the reason
// its Drifted condition gives; where the hash does not drift but the
// account decides, plan says so per node, never "not drifted".
func TestPlanOnAReferenceMadeDump(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reference's hashes")
	}
	bin := driftOracle(t)
	pairs, in := changePairs(t)
	lines := referencetest.RunLines(t, bin, in)
	if len(lines) != len(driftChanges) {
		t.Fatalf("the oracle answered %d of %d", len(lines), len(driftChanges))
	}
	type answer struct {
		Drifted       bool
		Hash, Version string
		Error         string
	}
	answers := make([]answer, len(lines))
	var poolHash, classHash answer
	for i, line := range lines {
		if err := json.Unmarshal(line, &answers[i]); err != nil || answers[i].Error != "" {
			t.Fatalf("%s: %v %s", driftChanges[i].name, err, answers[i].Error)
		}
		if driftChanges[i].kind == "NodePool" {
			poolHash = answers[i]
		} else {
			classHash = answers[i]
		}
	}
	pool := strings.Replace(driftPool, "metadata: {name: batch-workers}", fmt.Sprintf("metadata:\n  name: batch-workers\n  annotations: {karpenter.sh/nodepool-hash: %q, karpenter.sh/nodepool-hash-version: %s}",
		poolHash.Hash, poolHash.Version), 1)
	class := strings.Replace(driftClass, "metadata: {name: batch}", fmt.Sprintf("metadata:\n  name: batch\n  annotations: {karpenter.k8s.aws/ec2nodeclass-hash: %q, karpenter.k8s.aws/ec2nodeclass-hash-version: %s}",
		classHash.Hash, classHash.Version), 1) + refDumpStatus
	dump := pool + "---" + class + refDumpNodes(poolHash.Hash, poolHash.Version, classHash.Hash, classHash.Version)
	drifting := 0
	for i, c := range driftChanges {
		objs := &whatif.Objects{Now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
		if err := objs.Load("dump.yaml", strings.NewReader(dump)); err != nil {
			t.Fatal(err)
		}
		changed, err := yaml.JSONToYAML(pairs[i].after)
		if err != nil {
			t.Fatal(err)
		}
		ch := &whatif.Change{}
		if err := ch.LoadChange("change.yaml", bytes.NewReader(changed)); err != nil {
			// A manifest the CRD refuses is refused whole, naming the
			// field, as kube-apiserver would.
			if c.name != "volume size written otherwise" || !strings.Contains(err.Error(), "spec.blockDeviceMappings[0].ebs.volumeSize") {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		r, err := whatif.Plan(objs, ch, nil, whatif.DefaultTimings())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(r.Nodes) != 3 {
			t.Fatalf("%s: %d nodes planned, want 3: %+v", c.name, len(r.Nodes), r.Nodes)
		}
		want := answers[i].Drifted
		reason := map[string]string{"NodePool": v1.ReasonNodePoolDrifted, "EC2NodeClass": v1.ReasonNodeClassDrifted}[c.kind]
		offline := offlineOutcome[c.name]
		for _, n := range r.Nodes {
			switch {
			case n.DriftedBefore:
				t.Errorf("%s: %s had drifted before the change (%s: %s)", c.name, n.Node, n.Reason, n.Message)
			case want && (!n.Drifted || n.Reason != reason):
				t.Errorf("%s: %s drifted %v (%s: %s), the reference's hash drifts it (%s)", c.name, n.Node, n.Drifted, n.Reason, n.Message, reason)
			case want:
			case offline == "unknown" && (n.Drifted || n.Unknown == ""):
				t.Errorf("%s: %s drifted %v (%s), not said unknown; only the account resolves the change", c.name, n.Node, n.Drifted, n.Reason)
			case offline != "unknown" && n.Reason != offline:
				t.Errorf("%s: %s drifts %q (%s), want %q", c.name, n.Node, n.Reason, n.Message, offline)
			case offline != "unknown" && n.Unknown != "":
				t.Errorf("%s: %s said unknown (%s), though the dump resolves it", c.name, n.Node, n.Unknown)
			}
		}
		if want {
			drifting++
		}
	}
	t.Logf("%d changes on a reference-made dump, %d drift its nodes as its hash decides", len(driftChanges), drifting)
}
