package whatif_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// gpuDump is a dump (kubectl get -o yaml, with status) of a g5.xlarge
// whose pod holds its GPU through a claim allocated there, with the
// driver's ResourceSlice and DeviceClass.
const gpuDump = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: ml-nodes
  subnetSelectorTerms: [{tags: {team: ml}}]
  securityGroupSelectorTerms: [{tags: {team: ml}}]
status:
  amis:
    - {id: ami-0gpu, name: al2023-nvidia, requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}
  subnets: [{id: subnet-a, zone: eu-west-1a}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g4dn]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
    budgets: [{nodes: "1"}]
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-1-2-3.eu-west-1.compute.internal
  creationTimestamp: "2026-11-23T10:00:00Z"
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: g5.xlarge
    karpenter.k8s.aws/instance-family: g5
    karpenter.k8s.aws/instance-category: g
    topology.kubernetes.io/zone: eu-west-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: ip-10-1-2-3.eu-west-1.compute.internal
spec: {providerID: "aws:///eu-west-1a/i-0a1"}
status:
  capacity: {cpu: "4", memory: 15Gi, pods: "58"}
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "58"}
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.nvidia.com'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: ip-10-1-2-3-gpu.nvidia.com-x7k2p}
spec:
  driver: gpu.nvidia.com
  nodeName: ip-10-1-2-3.eu-west-1.compute.internal
  pool: {name: ip-10-1-2-3.eu-west-1.compute.internal, generation: 1, resourceSliceCount: 1}
  devices:
    - name: gpu-0
      attributes:
        type: {string: gpu}
        productName: {string: NVIDIA A10G}
      capacity:
        memory: {value: 24Gi}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: infer-7d9f-abcde-gpu-q2w3e, namespace: ml}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com, allocationMode: ExactCount, count: 1}}]
status:
  allocation:
    devices:
      results: [{request: gpu, driver: gpu.nvidia.com, pool: ip-10-1-2-3.eu-west-1.compute.internal, device: gpu-0}]
    nodeSelector:
      nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [ip-10-1-2-3.eu-west-1.compute.internal]}]}]
  reservedFor: [{resource: pods, name: infer-7d9f-abcde, uid: u-infer}]
---
apiVersion: v1
kind: Pod
metadata:
  name: infer-7d9f-abcde
  namespace: ml
  uid: u-infer
  labels: {app: infer, pod-template-hash: 7d9f}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: infer-7d9f, uid: rs1, controller: true}]
spec:
  nodeName: ip-10-1-2-3.eu-west-1.compute.internal
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers: [{name: server, image: example.com/infer:1, resources: {requests: {cpu: "1", memory: 4Gi}, claims: [{name: gpu}]}}]
status:
  phase: Running
  resourceClaimStatuses: [{name: gpu, resourceClaimName: infer-7d9f-abcde-gpu-q2w3e}]
`

// Dropping g5 from the NodePool drifts the GPU node; the plan moves its
// pod's GPU to a g4dn replacement, and says so.
func TestPlanMovesDevices(t *testing.T) {
	objs := &whatif.Objects{Now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	if err := objs.Load("cluster.yaml", strings.NewReader(gpuDump)); err != nil {
		t.Fatal(err)
	}
	r, err := whatif.Plan(objs, change(t, `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g4dn]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
    budgets: [{nodes: "1"}]
`), nil, whatif.DefaultTimings())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rounds) != 1 || len(r.Rounds[0].Nodes) != 1 || len(r.Rounds[0].Replacements) != 1 {
		t.Fatalf("rounds %+v, want the GPU node replaced once", r.Rounds)
	}
	rd := r.Rounds[0]
	if rd.Nodes[0].Devices["gpu.nvidia.com"] != 1 {
		t.Errorf("the node's devices %v, want its pod's GPU", rd.Nodes[0].Devices)
	}
	if repl := rd.Replacements[0]; !strings.HasPrefix(repl.InstanceType, "g4dn.") || repl.Devices["gpu.nvidia.com"] != 1 {
		t.Errorf("replacement %+v, want a g4dn with the GPU", repl)
	}
	var out strings.Builder
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(1 pods, devices gpu.nvidia.com=1)") || !strings.Contains(out.String(), "/h, devices gpu.nvidia.com=1") {
		t.Errorf("the table does not show the GPU moving:\n%s", out.String())
	}
}
