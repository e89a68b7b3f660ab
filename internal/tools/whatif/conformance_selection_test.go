package whatif_test

import (
	"fmt"
	"strings"
)

// selectionPool is NodePool default with the given requirements, each a
// flow-style NodeSelectorRequirement ("{key: ..., operator: In, values:
// [...]}", with minValues when the case needs it).
func selectionPool(reqs ...string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
`)
	for _, r := range reqs {
		fmt.Fprintf(&b, "        - %s\n", r)
	}
	return b.String()
}

// windowsPool is selectionPool on the EC2NodeClass windows, which runs
// the Windows Server 2022 AMIs.
func windowsPool(reqs ...string) string {
	return `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: windows}
spec:
  amiSelectorTerms: [{alias: windows2022@latest}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
---
` + strings.Replace(selectionPool(reqs...), "EC2NodeClass, name: default", "EC2NodeClass, name: windows", 1)
}

// The reference's instance selection NodePool: spot and on-demand, arm64
// and amd64.
var (
	selAnyCT   = "{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}"
	selAnyArch = "{key: kubernetes.io/arch, operator: In, values: [arm64, amd64]}"
)

// selIn is a requirement key In values.
func selIn(key string, values ...string) string {
	return fmt.Sprintf("{key: %s, operator: In, values: [%s]}", key, strings.Join(values, ", "))
}

// selNeeds is a pod spec whose required node affinity is one term of
// the given requirements.
func selNeeds(reqs ...string) string {
	return "{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [" +
		strings.Join(reqs, ", ") + "]}]}}}}"
}

const (
	selArch = "kubernetes.io/arch"
	selOS   = "kubernetes.io/os"
	selZone = "topology.kubernetes.io/zone"
	selCT   = "karpenter.sh/capacity-type"
)

// selectionCases: instance_selection_test.go. The reference's assorted
// fake types price by size alone, so its "cheapest" is the smallest type
// of any architecture, zone and capacity type; here it is the cheapest
// catalog offering the constraints allow (simulated spot prices differ by
// type and zone): t4g.nano spot in us-east-1b overall, t3a.nano spot in
// us-east-1a among amd64 types.
var selectionCases = append([]conformanceCase{
	// Instance Type Selection: the cheapest type, and every listed type
	// meets the constraints.
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", ""),
		want: []expectation{scheduled("p"), instanceType([]string{"t4g.nano"}, "p"),
			nodeLabel(selZone, []string{"us-east-1b"}, "p"), nodeLabel(selCT, []string{"spot"}, "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod arch = amd64)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selArch, "amd64"))),
		want: []expectation{instanceType([]string{"t3a.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1a"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selArch, "amd64", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod arch = arm64)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selArch, "arm64"))),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selArch, "arm64", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov arch = amd64)",
		objects: selectionPool(selIn(selArch, "amd64")) + pod("p", "", "", ""),
		want: []expectation{instanceType([]string{"t3a.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1a"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selArch, "amd64", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov arch = arm64)",
		objects: selectionPool(selIn(selArch, "arm64")) + pod("p", "", "", ""),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selArch, "arm64", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod os = linux)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selOS, "linux"))),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selOS, "linux", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov zone = test-zone-2)",
		objects: selectionPool(selIn(selZone, "us-east-1b")) + pod("p", "", "", ""),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("", "us-east-1b", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod zone = test-zone-2)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selZone, "us-east-1b"))),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("", "us-east-1b", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov ct = spot)",
		objects: selectionPool(selIn(selCT, "spot")) + pod("p", "", "", ""),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("spot", "", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod ct = spot)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selCT, "spot"))),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("spot", "", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov ct = ondemand, prov zone = test-zone-1)",
		objects: selectionPool(selIn(selCT, "on-demand"), selIn(selZone, "us-east-1a")) + pod("p", "", "", ""),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1a"}, "p"),
			nodeLabel(selCT, []string{"on-demand"}, "p"), listedOffering("on-demand", "us-east-1a", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod ct = spot, pod zone = test-zone-1)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selCT, "spot"), selIn(selZone, "us-east-1a"))),
		want: []expectation{instanceType([]string{"t3a.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1a"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("spot", "us-east-1a", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov ct = spot, pod zone = test-zone-2)",
		objects: selectionPool(selIn(selCT, "spot")) + pod("p", "", "", selNeeds(selIn(selZone, "us-east-1b"))),
		want: []expectation{instanceType([]string{"t4g.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("spot", "us-east-1b", "p")},
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov = spot/test-zone-2, pod = amd64/linux)",
		objects: selectionPool(selIn(selArch, "amd64"), selIn(selOS, "linux")) + pod("p", "", "", selNeeds(selIn(selCT, "spot"), selIn(selZone, "us-east-1b"))),
		want: []expectation{instanceType([]string{"t3.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("spot", "us-east-1b", "p"),
			listedLabel(selOS, "linux", "p"), listedLabel(selArch, "amd64", "p")},
	},
	{
		ref: "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod ct = spot/test-zone-2/amd64/linux)",
		objects: selectionPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selArch, "amd64"), selIn(selOS, "linux"),
			selIn(selCT, "spot"), selIn(selZone, "us-east-1b"))),
		want: []expectation{instanceType([]string{"t3.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1b"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedOffering("spot", "us-east-1b", "p"),
			listedLabel(selOS, "linux", "p"), listedLabel(selArch, "amd64", "p")},
	},
	// Windows: the reference's fake types come in Windows variants; on AWS
	// a Windows node needs a Windows AMI family, and EKS Windows AMIs are
	// amd64 only, so the cheapest Windows node is the cheapest amd64 type.
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (prov os = windows)",
		objects: windowsPool(selIn(selOS, "windows")) + pod("p", "", "", ""),
		want: []expectation{instanceType([]string{"t3a.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1a"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selOS, "windows", "p")},
		gap: "no Windows: the reference launches a Windows node; nodewright cannot resolve Windows AMI families (simulate fails: resolving the windows2022 family is not supported) and labels every instance type kubernetes.io/os=linux",
	},
	{
		ref:     "selection: Instance Type Selection > should schedule on one of the cheapest instances (pod os = windows)",
		objects: windowsPool(selAnyCT, selAnyArch) + pod("p", "", "", selNeeds(selIn(selOS, "windows"))),
		want: []expectation{instanceType([]string{"t3a.nano"}, "p"), nodeLabel(selZone, []string{"us-east-1a"}, "p"),
			nodeLabel(selCT, []string{"spot"}, "p"), listedLabel(selOS, "windows", "p")},
		gap: "no Windows: the reference launches a Windows node; nodewright cannot resolve Windows AMI families (simulate fails: resolving the windows2022 family is not supported) and labels every instance type kubernetes.io/os=linux",
	},
	// No instance type matches: the reference removes the fake provider's
	// arm64 types; here the NodePool admits amd64-only families.
	{
		ref:     "selection: Instance Type Selection > should not schedule if no instance type matches selector (pod arch = arm)",
		objects: selectionPool(selAnyCT, selAnyArch, selAMD64Only) + pod("p", "", "", selNeeds(selIn(selArch, "arm64"))),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "selection: Instance Type Selection > should not schedule if no instance type matches selector (pod arch = arm zone=test-zone-2)",
		objects: selectionPool(selAnyCT, selAnyArch, selAMD64Only) + pod("p", "", "", selNeeds(selIn(selArch, "arm64"), selIn(selZone, "us-east-1b"))),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "selection: Instance Type Selection > should not schedule if no instance type matches selector (prov arch = arm / pod zone=test-zone-2)",
		objects: selectionPool(selIn(selArch, "arm64"), selAMD64Only) + pod("p", "", "", selNeeds(selIn(selZone, "us-east-1b"))),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	// The reference's two types: the cheaper on-demand one has the dearer
	// spot price. m6a.xlarge is cheaper on demand than m6i.xlarge, whose
	// simulated spot price is lower in every zone.
	{
		ref:     "selection: Instance Type Selection > should schedule on cheaper on-demand instance even when spot price ordering would place other instance types first",
		objects: selectionPool(selIn(selCT, "on-demand"), selIn("node.kubernetes.io/instance-type", "m6a.xlarge", "m6i.xlarge")) + pod("p", "", "", ""),
		want:    []expectation{instanceType([]string{"m6a.xlarge"}, "p"), nodeLabel(selCT, []string{"on-demand"}, "p")},
	},
	// MinValues: the reference's fake types become catalog types (an
	// instance-type In requirement stands for its list of types), its
	// numeric label karpenter/numerical-value the instance generation.
	// Its pods (0.9 CPU on 1-CPU types) become 1.5 CPU pods: one fits a
	// 2-vCPU type, both only a 4-vCPU type. As in the reference, the big
	// type is cheaper than two small ones (spot: m6g.xlarge $0.0512/h,
	// c6a.xlarge $0.0548; m6g.large $0.0396, m7i.large $0.0313, m5a.large
	// $0.0372), so without minValues both pods would share it.
	{
		ref: "selection: Instance Type Selection > MinValues > should schedule respecting the minValues from instance-type requirements",
		objects: selectionPool(selMin(selIn(selType, "m6g.large", "m6g.xlarge"), 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > should schedule respecting the minValues in Gt operator",
		objects: selectionPool(selIn(selType, "m4.large", "m7i.large", "m6g.xlarge"),
			selMin("{key: "+selGen+", operator: Gt, values: ['5']}", 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > scheduler should fail if the minValues in Gt operator is not satisfied",
		objects: selectionPool(selIn(selType, "m4.large", "m6g.xlarge"), selMin("{key: "+selGen+", operator: Exists}", 2)) +
			pods(2, "p", "", selMinPod, selNeeds("{key: "+selGen+", operator: Gt, values: ['4']}")),
		want: []expectation{notScheduled("p-*"), newNodes(0), because("p-0", "minValues", selGen), because("p-1", "minValues", selGen)},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > should schedule respecting the minValues in Lt operator",
		objects: selectionPool(selIn(selType, "m5a.large", "m6g.xlarge", "m7g.2xlarge"),
			selMin("{key: "+selGen+", operator: Lt, values: ['7']}", 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > scheduler should fail if the minValues in Lt operator is not satisfied",
		objects: selectionPool(selIn(selType, "m5a.large", "m7g.xlarge"), selMin("{key: "+selGen+", operator: Lt, values: ['7']}", 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{notScheduled("p-*"), newNodes(0)},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > should schedule considering the max of the minValues of In and NotIn operators in the instance-type requirements",
		objects: selectionPool(selMin(selIn(selType, "m6g.large", "m6g.xlarge", "m6g.2xlarge"), 1),
			selMin("{key: "+selType+", operator: NotIn, values: [m6g.2xlarge]}", 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > should schedule considering the max of the minValues of Gt and Lt operators.",
		objects: selectionPool(selIn(selType, "m4.large", "m5a.large", "m6g.xlarge", "m7g.xlarge"),
			selMin("{key: "+selGen+", operator: Gt, values: ['4']}", 1), selMin("{key: "+selGen+", operator: Lt, values: ['7']}", 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
	{
		// The reference keeps 10 of its types and asks for 11; the m5
		// family has 9.
		ref: "selection: Instance Type Selection > MinValues > schedule should fail if minimum number of InstanceTypes is not met as per the minValues in the requirement",
		objects: selectionPool(selIn("karpenter.k8s.aws/instance-family", "m5"), selMin("{key: "+selType+", operator: Exists}", 10)) +
			pod("p", "", "", ""),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "selection: Instance Type Selection > MinValues > should schedule and pick the max of minValues of InstanceTypes if multiple operators are used for the same requirement.",
		objects: selectionPool(selMin("{key: "+selType+", operator: Exists}", 1), selMin(selIn(selType, "m6g.large", "m6g.xlarge"), 2)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
	{
		// An arm64 type that holds one pod, an amd64 type that holds both.
		ref: "selection: Instance Type Selection > MinValues > should schedule and respect multiple requirement keys with minValues",
		objects: selectionPool(selMin("{key: "+selArch+", operator: Exists}", 2), selMin(selIn(selType, "m6g.large", "c6a.xlarge"), 1)) +
			pods(2, "p", "", selMinPod, ""),
		want: []expectation{scheduled("p-*"), apart("p-*"), listedAtLeast(2, "p-*")},
	},
}, enoughResourcesCases()...)

// selMin adds minValues to a flow-style requirement.
func selMin(req string, n int) string {
	return strings.TrimSuffix(req, "}") + fmt.Sprintf(", minValues: %d}", n)
}

const (
	selType = "node.kubernetes.io/instance-type"
	selGen  = "karpenter.k8s.aws/instance-generation"
	// selMinPod are the MinValues cases' pod requests.
	selMinPod = "{cpu: 1500m, memory: 1Gi}"
)

// selAMD64Only stands for a provider without arm64 types: amd64 families.
const selAMD64Only = "{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5, r5]}"

// enoughResourcesBetter are the sizes nodewright deliberately packs
// otherwise: the reference puts the three pods on one node whatever the
// price; nodewright launches the cheapest set of nodes, here one small
// node per pod, for less than the cheapest type that holds all three.
var enoughResourcesBetter = map[[2]float64]bool{{1.0, 0.1}: true, {1.0, 1.0}: true}

// enoughResourcesCases: "should schedule on an instance with enough
// resources" runs three identical pods for each CPU and memory size; each
// time all three share one node, and every type it lists holds them.
func enoughResourcesCases() []conformanceCase {
	var out []conformanceCase
	for _, cpu := range []float64{0.1, 1.0, 2, 2.5, 4, 8, 16} {
		for _, mem := range []float64{0.1, 1.0, 2, 4, 8, 16, 32} {
			c := conformanceCase{
				ref: fmt.Sprintf("selection: Instance Type Selection > should schedule on an instance with enough resources (cpu %0.1f, memory %0.1fGi)", cpu, mem),
				objects: selectionPool(selAnyCT, selAnyArch) +
					pods(3, "p", "", fmt.Sprintf("{cpu: %q, memory: %0.1fGi}", fmt.Sprintf("%0.1f", cpu), mem), ""),
				want: []expectation{scheduled("p-*"), newNodes(1), sameNode("p-*"), listedHolds("p-*")},
			}
			if enoughResourcesBetter[[2]float64{cpu, mem}] {
				c.better = "three small nodes cost less than the cheapest type that holds the three pods"
				c.want = []expectation{scheduled("p-*"), newNodes(3), apart("p-*"), listedHolds("p-*"), cheaperThanOneNode("p-*")}
			}
			out = append(out, c)
		}
	}
	return out
}
