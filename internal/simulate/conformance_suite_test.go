package simulate_test

// suiteCases: suite_test.go of the reference's scheduling tests.
var suiteCases = []conformanceCase{
	{
		ref: "suite: Custom Constraints > NodePool with Labels > should not schedule pods that have conflicting node selectors",
		objects: `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    metadata: {labels: {team: a}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + pod("p", "", "", "{nodeSelector: {team: b}}"),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Binpacking > should create new nodes when a node is at capacity",
		objects: pods(40, "p", "", "{cpu: 1800m}", "{nodeSelector: {node.kubernetes.io/instance-type: m5.large}}"),
		want:    []expectation{scheduled("p-*"), newNodes(40), instanceType([]string{"m5.large"}, "p-*")},
	},
}
