package whatif_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// efaManifests: two EC2NodeClasses that lay out their network
// interfaces — one the primary alone, one with two EFA-only interfaces —
// each with a NodePool of p4d (four EFA interfaces a node when a launch
// asks for them all), and pods claiming N EFA interfaces through DRANET.
func efaManifests(claims int) string {
	class := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: %[1]s}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: hpc-nodes
  subnetSelectorTerms: [{tags: {team: hpc}}]
  securityGroupSelectorTerms: [{tags: {team: hpc}}]
  networkInterfaces:
    - {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}%[2]s
status:
  amis: [{id: ami-0hpc, name: al2023, requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}]
  subnets: [{id: subnet-a, zone: us-west-2a}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]s}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %[1]s}
      requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [p4d]}]
---
`, name, extra)
	}
	return class("primary-only", "") + class("two-efa", `
    - {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}
    - {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}`) + fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: dranet}
spec:
  selectors: [{cel: {expression: "device.driver == 'dra.net'"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: rdma, namespace: hpc}
spec:
  spec:
    devices:
      requests: [{name: nics, exactly: {deviceClassName: dranet, count: %d}}]
---
apiVersion: v1
kind: Pod
metadata: {name: mpi-0, namespace: hpc}
spec:
  resourceClaims: [{name: nics, resourceClaimTemplateName: rdma}]
  containers: [{name: rank, image: example.com/mpi:1, resources: {requests: {cpu: "8"}, claims: [{name: nics}]}}]
`, claims)
}

// An EC2NodeClass that lays out network interfaces launches with those
// (nodewright adds no EFA interface to them): its nodes have the EFA
// interfaces it lists, whatever the pods claim. A pod claiming EFA
// interfaces goes to the class listing enough of them, and one claiming
// more than any class lists stays pending, though p4d has four.
func TestEFAFromTheClassesInterfaces(t *testing.T) {
	simulate := func(claims int) *whatif.Report {
		objs := &whatif.Objects{}
		if err := objs.Load("hpc.yaml", strings.NewReader(efaManifests(claims))); err != nil {
			t.Fatal(err)
		}
		res, err := whatif.RunWith(objs, nil)
		if err != nil {
			t.Fatal(err)
		}
		return whatif.NewReport(res)
	}
	for _, claims := range []int{1, 2} {
		r := simulate(claims)
		if len(r.NodeClaims) != 1 || r.NodeClaims[0].NodePool != "two-efa" || r.NodeClaims[0].Devices["dra.net"] != int64(claims) {
			t.Errorf("%d EFA interfaces claimed: planned %+v (unschedulable %+v); want one p4d of NodePool two-efa with %d", claims, r.NodeClaims, r.Unschedulable, claims)
		}
	}
	r := simulate(3)
	if len(r.NodeClaims) != 0 || len(r.Unschedulable) != 1 {
		t.Fatalf("3 EFA interfaces claimed: planned %+v, unschedulable %+v; want the pod pending", r.NodeClaims, r.Unschedulable)
	}
	if why := r.Unschedulable[0].Reason; !strings.Contains(why, "3") || !slices.ContainsFunc([]string{"most", "match"}, func(s string) bool { return strings.Contains(why, s) }) {
		t.Errorf("the reason %q does not say that no node has 3 EFA interfaces", why)
	}
}
