package whatif_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/instancetypes/instancetypestest"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// userPool is a NodePool as users write them, its EC2NodeClass's spec
// beyond the usual selectors, and the workload it serves.
type userPool struct {
	name      string
	family    string // the alias, such as al2023@latest
	class     string // more of the EC2NodeClass's spec, indented by four
	reqs      string // the NodePool's requirements, indented by eight
	container string // the container's resources, indented by twelve
	podSpec   string // more of the pod spec, indented by six
	replicas  int
}

func (u userPool) manifest() string {
	return fmt.Sprintf(`apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: %[1]s
spec:
  amiSelectorTerms:
    - alias: %[2]s
  role: KarpenterNodeRole-prod-eu
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: nodewright-sim
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: nodewright-sim
%[3]s
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: %[1]s
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: %[1]s
      requirements:
%[4]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s-app
spec:
  replicas: %[7]d
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
%[6]s
      containers:
        - name: app
          image: registry.example/app:1
          resources:
%[5]s
`, u.name, u.family, u.class, u.reqs, u.container, u.podSpec, u.replicas)
}

// usersPools are NodePools of the kinds users' GPU, storage, batch and
// Windows pools are, selecting on the AWS well-known labels, with the
// workloads they are for.
var usersPools = []userPool{
	{name: "t4-inference", family: "al2023@latest", reqs: `        - key: karpenter.k8s.aws/instance-gpu-name
          operator: In
          values: ["t4"]`, container: `            limits:
              nvidia.com/gpu: 1`, podSpec: `      tolerations:
        - key: nvidia.com/gpu
          operator: Exists`, replicas: 2},
	{name: "amd-batch", family: "al2023@latest", reqs: `        - key: karpenter.k8s.aws/instance-cpu-manufacturer
          operator: In
          values: ["amd"]
        - key: karpenter.k8s.aws/instance-generation
          operator: Gt
          values: ["5"]`, container: `            requests:
              cpu: "3"
              memory: 6Gi`, replicas: 4},
	{name: "nvme-scratch", family: "al2023@latest", class: `  instanceStorePolicy: RAID0`, reqs: `        - key: karpenter.k8s.aws/instance-local-nvme
          operator: Exists
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["c", "m", "r", "i"]`, container: `            requests:
              cpu: "1"
              memory: 2Gi
              ephemeral-storage: 200Gi`, replicas: 2},
	{name: "big-root", family: "al2023@latest", class: `  blockDeviceMappings:
    - deviceName: /dev/xvda
      rootVolume: true
      ebs:
        volumeSize: 200Gi
        volumeType: gp3`, reqs: `        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: ["m"]`, container: `            requests:
              cpu: "1"
              memory: 2Gi
              ephemeral-storage: 100Gi`, replicas: 2},
	{name: "limits-only", family: "al2023@latest", reqs: `        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]`, container: `            limits:
              cpu: "4"
              memory: 8Gi`, replicas: 3},
	{name: "no-gpus", family: "al2023@latest", reqs: `        - key: karpenter.k8s.aws/instance-gpu-count
          operator: DoesNotExist
        - key: karpenter.k8s.aws/instance-size
          operator: NotIn
          values: ["nano", "micro", "small", "medium"]`, container: `            requests:
              cpu: 500m
              memory: 1Gi`, replicas: 6},
	{name: "fast-network", family: "al2023@latest", reqs: `        - key: karpenter.k8s.aws/instance-network-bandwidth
          operator: Gt
          values: ["20000"]
        - key: karpenter.k8s.aws/instance-encryption-in-transit-supported
          operator: In
          values: ["true"]`, container: `            requests:
              cpu: "2"
              memory: 4Gi`, replicas: 3},
	{name: "graviton", family: "al2023@latest", reqs: `        - key: kubernetes.io/arch
          operator: In
          values: ["arm64"]
        - key: karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz
          operator: Gt
          values: ["2500"]
        - key: karpenter.k8s.aws/instance-memory
          operator: Lt
          values: ["65537"]`, container: `            requests:
              cpu: 250m
              memory: 256Mi`, replicas: 20},
	{name: "bottlerocket-dense", family: "bottlerocket@latest", class: `  kubelet:
    maxPods: 20`, reqs: `        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["m6i", "m7i", "c6i"]
        - key: karpenter.k8s.aws/instance-ebs-bandwidth
          operator: Exists`, container: `            requests:
              cpu: 100m
              memory: 128Mi`, replicas: 30},
	{name: "windows", family: "windows2022@latest", reqs: `        - key: kubernetes.io/os
          operator: In
          values: ["windows"]
        - key: karpenter.k8s.aws/instance-hypervisor
          operator: In
          values: ["nitro"]`, container: `            requests:
              cpu: "1"
              memory: 2Gi`, podSpec: `      nodeSelector:
        kubernetes.io/os: windows`, replicas: 3},
}

// TestUsersNodePoolsPlanTheReferencesTypes: each of the users' NodePools
// with its workload places every pod, on instance types the reference's
// own code admits for the NodePool's requirements and whose allocatable,
// as the reference computes it under the EC2NodeClass, holds what the
// planned node carries.
func TestUsersNodePoolsPlanTheReferencesTypes(t *testing.T) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	type planned struct {
		pool  string
		claim whatif.NodeClaimReport
	}
	var claims []planned
	var inputs []instancetypestest.Input
	offset := map[string]int{} // where each pool's inputs start
	index := map[string]int{}  // type name → its place among a pool's inputs
	for _, u := range usersPools {
		objs := &whatif.Objects{}
		if err := objs.Load(u.name+".yaml", strings.NewReader(u.manifest())); err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
		res, err := whatif.RunWith(objs, simulated())
		if err != nil {
			t.Fatalf("%s: %v", u.name, err)
		}
		r := whatif.NewReport(res)
		placed := 0
		for _, c := range r.NodeClaims {
			placed += len(c.Pods)
			claims = append(claims, planned{pool: u.name, claim: c})
		}
		if placed != u.replicas || len(r.Unschedulable) > 0 {
			t.Errorf("%s: %d of %d pods placed; unschedulable %+v", u.name, placed, u.replicas, r.Unschedulable)
		}
		class, np := objs.EC2NodeClasses[0], objs.NodePools[0]
		kc, err := kubeletconfig.Parse(class.Spec.Kubelet)
		if err != nil {
			t.Fatal(err)
		}
		if kc == nil {
			kc = &kubeletconfig.Config{}
		}
		var probe []corev1.NodeSelectorRequirement
		for _, req := range np.Spec.Template.Spec.Requirements {
			probe = append(probe, req.NodeSelectorRequirement())
		}
		offset[u.name] = len(inputs)
		for i, s := range specs {
			info, err := json.Marshal(s.Info)
			if err != nil {
				t.Fatal(err)
			}
			index[s.Name] = i
			inputs = append(inputs, instancetypestest.Input{Info: info, Region: account.Region, Zones: []string{account.Region + "a"},
				ZoneInfo: []map[string]string{{"zone": account.Region + "a"}}, AMIFamily: awsv1.FamilyOf(class),
				BlockDeviceMappings: class.Spec.BlockDeviceMappings, InstanceStorePolicy: class.Spec.InstanceStorePolicy,
				MaxPods: kc.MaxPods, PodsPerCore: kc.PodsPerCore, KubeReserved: kc.KubeReserved, SystemReserved: kc.SystemReserved, EvictionHard: kc.EvictionHard,
				VMMemoryOverheadPercent: 0.075, Probes: [][]corev1.NodeSelectorRequirement{probe}})
		}
	}
	ref := instancetypestest.Run(t, inputs)
	for _, p := range claims {
		for _, it := range append([]string{p.claim.InstanceType}, p.claim.InstanceTypes...) {
			i, ok := index[it]
			if !ok {
				t.Errorf("%s: %s is not in the catalog", p.pool, it)
				continue
			}
			o := ref[offset[p.pool]+i]
			if !o.Admitted[0] {
				t.Errorf("%s: NodePool planned %s, which the reference's requirements do not admit", p.pool, it)
				break
			}
			for name, q := range p.claim.Requests {
				if have, ok := o.Allocatable[name]; !ok || have.Cmp(q) < 0 {
					t.Errorf("%s: %s carries %s %s; the reference allocates %s of it", p.pool, it, q.String(), name, have.String())
				}
			}
		}
	}
}
