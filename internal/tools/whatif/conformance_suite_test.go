package whatif_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// suiteCases: suite_test.go of the reference's scheduling tests.
var suiteCases = []conformanceCase{
	// Custom Constraints > NodePool with Labels.
	{
		ref:     "suite: Custom Constraints > NodePool with Labels > should schedule unconstrained pods that don't have matching node selectors",
		objects: suitePool("default", "{test-key: test-value}", "") + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", []string{"test-value"}, "p")},
	},
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
      requirements: []
` + pod("p", "", "", "{nodeSelector: {team: b}}"),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > NodePool with Labels > should not schedule pods that have node selectors with undefined key",
		objects: pod("p", "", "", "{nodeSelector: {test-key: test-value}}"),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > NodePool with Labels > should schedule pods that have matching requirements",
		objects: suitePool("default", "{test-key: test-value}", "") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: In, values: [test-value, another-value]}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", []string{"test-value"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > NodePool with Labels > should not schedule pods that have conflicting requirements",
		objects: suitePool("default", "{test-key: test-value}", "") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: In, values: [another-value]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},

	// Custom Constraints > Well Known Labels. The fake provider's zones
	// test-zone-1/2/3 are us-east-1a/b/c; its "integer" label is the
	// instance type's vCPU count, in the m5 family (2, 4, 8, 16, ...).
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should use NodePool constraints",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}]") + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1b"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should use node selectors",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}]") + pod("p", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1b}}"),
		want:    []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1b"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should not schedule nodes with a hostname selector",
		objects: pod("p", "", "", "{nodeSelector: {kubernetes.io/hostname: red-node}}"),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should not schedule the pod if nodeselector unknown",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]") + pod("p", "", "", "{nodeSelector: {topology.kubernetes.io/zone: unknown}}"),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should not schedule if node selector outside of NodePool constraints",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]") + pod("p", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1b}}"),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should schedule compatible requirements with Operator=In",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1c"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should schedule compatible requirements with Operator=Gt",
		objects: suitePool("default", "", `[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}, {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["8"]}]`) + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("karpenter.k8s.aws/instance-cpu", []string{"16"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should schedule compatible requirements with Operator=Lt",
		objects: suitePool("default", "", `[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}, {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["8"]}]`) + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("karpenter.k8s.aws/instance-cpu", []string{"2"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should schedule compatible requirements with Operator=Gte",
		objects: suitePool("default", "", `[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}, {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["16"]}]`) + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("karpenter.k8s.aws/instance-cpu", []string{"16"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should schedule compatible requirements with Operator=Lte",
		objects: suitePool("default", "", `[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}, {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["2"]}]`) + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("karpenter.k8s.aws/instance-cpu", []string{"2"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should not schedule incompatible preferences and requirements with Operator=In",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [unknown]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should schedule compatible requirements with Operator=NotIn",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1a, us-east-1b, unknown]}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1c"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Well Known Labels > should not schedule incompatible preferences and requirements with Operator=NotIn",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1a, us-east-1b, us-east-1c, unknown]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "suite: Custom Constraints > Well Known Labels > should schedule compatible preferences and requirements with Operator=In",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c, unknown]}]",
			"[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b, unknown]}]")),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1b"}, "p")},
	},
	{
		ref: "suite: Custom Constraints > Well Known Labels > should schedule incompatible preferences and requirements with Operator=In",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c, unknown]}]",
			"[{key: topology.kubernetes.io/zone, operator: In, values: [unknown]}]")),
		want: []expectation{scheduled("p")},
	},
	{
		ref: "suite: Custom Constraints > Well Known Labels > should schedule compatible preferences and requirements with Operator=NotIn",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c, unknown]}]",
			"[{key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1a, us-east-1c]}]")),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1b"}, "p")},
	},
	{
		ref: "suite: Custom Constraints > Well Known Labels > should schedule incompatible preferences and requirements with Operator=NotIn",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c, unknown]}]",
			"[{key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1a, us-east-1b, us-east-1c]}]")),
		want: []expectation{scheduled("p")},
	},
	{
		ref: "suite: Custom Constraints > Well Known Labels > should schedule compatible node selectors, preferences and requirements",
		objects: pod("p", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1c}, "+suiteAffinityField("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c]}]",
			"[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c]}]")+"}"),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1c"}, "p")},
	},
	{
		// arm-instance-type and default-instance-type: m6g.xlarge and m5.xlarge.
		ref: "suite: Custom Constraints > Well Known Labels > should combine multidimensional node selectors, preferences and requirements",
		objects: pod("p", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1c, node.kubernetes.io/instance-type: m6g.xlarge}, "+
			suiteAffinityField("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1c]}, {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge, m6g.xlarge]}]",
				"[{key: topology.kubernetes.io/zone, operator: NotIn, values: [unknown]}, {key: node.kubernetes.io/instance-type, operator: NotIn, values: [unknown]}]")+"}"),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1c"}, "p"), instanceType([]string{"m6g.xlarge"}, "p")},
	},

	// Custom Constraints > Constraints Validation.
	{
		ref:     "suite: Custom Constraints > Constraints Validation > should not schedule pods that have node selectors with restricted labels",
		objects: pod("p", "", "", suiteAffinity("[{key: kubernetes.io/hostname, operator: In, values: [test]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Constraints Validation > should not schedule pods that have node selectors with restricted domains",
		objects: pod("p", "", "", suiteAffinity("[{key: karpenter.sh/test, operator: In, values: [test]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Constraints Validation > should schedule pods that have node selectors with label in the kubernetes domains",
		objects: suitePool("default", "", "[{key: kubernetes.io/test, operator: In, values: [test-value]}, {key: k8s.io/test, operator: In, values: [test-value]}]") + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("kubernetes.io/test", []string{"test-value"}, "p"), nodeLabel("k8s.io/test", []string{"test-value"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Constraints Validation > should schedule pods that have node selectors with label in subdomain from kubernetes domains",
		objects: suitePool("default", "", "[{key: subdomain.kubernetes.io/test, operator: In, values: [test-value]}, {key: subdomain.k8s.io/test, operator: In, values: [test-value]}]") + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("subdomain.kubernetes.io/test", []string{"test-value"}, "p"), nodeLabel("subdomain.k8s.io/test", []string{"test-value"}, "p")},
	},
	{
		ref: "suite: Custom Constraints > Constraints Validation > should schedule pods that have node selectors with label in wellknown label list",
		objects: pod("zone", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1a}}") +
			pod("type", "", "", "{nodeSelector: {node.kubernetes.io/instance-type: m5.xlarge}}") +
			pod("arch", "", "", "{nodeSelector: {kubernetes.io/arch: arm64}}") +
			pod("os", "", "", "{nodeSelector: {kubernetes.io/os: linux}}") +
			pod("spot", "", "", "{nodeSelector: {karpenter.sh/capacity-type: spot}}"),
		want: []expectation{scheduled("zone", "type", "arch", "os", "spot")},
	},

	// Custom Constraints > Scheduling Logic.
	{
		ref: "suite: Custom Constraints > Scheduling Logic > should not schedule pods with nodePool which is not ready",
		objects: suitePool("default", "", "") + `status:
  conditions: [{type: Ready, status: "False", reason: NodePoolNotReady, message: Node Pool Not Ready, lastTransitionTime: "2025-01-01T00:00:00Z"}]
` + pod("p", "", "", ""),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should not schedule pods that have node selectors with In operator and undefined key",
		objects: pod("p", "", "", suiteAffinity("[{key: test-key, operator: In, values: [test-value]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should schedule pods that have node selectors with NotIn operator and undefined key",
		objects: pod("p", "", "", suiteAffinity("[{key: test-key, operator: NotIn, values: [test-value]}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", nil, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should not schedule pods that have node selectors with Exists operator and undefined key",
		objects: pod("p", "", "", suiteAffinity("[{key: test-key, operator: Exists}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should schedule pods that with DoesNotExists operator and undefined key",
		objects: pod("p", "", "", suiteAffinity("[{key: test-key, operator: DoesNotExist}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", nil, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should schedule unconstrained pods that don't have matching node selectors",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", ""),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", []string{"test-value"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should schedule pods that have node selectors with matching value and In operator",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: In, values: [test-value]}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", []string{"test-value"}, "p")},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should not schedule pods that have node selectors with matching value and NotIn operator",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: NotIn, values: [test-value]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should schedule the pod with Exists operator and defined key",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: Exists}]", "")),
		want:    []expectation{scheduled("p")},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should not schedule the pod with DoesNotExists operator and defined key",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: DoesNotExist}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should not schedule pods that have node selectors with different value and In operator",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: In, values: [another-value]}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > should schedule pods that have node selectors with different value and NotIn operator",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value]}]") + pod("p", "", "", suiteAffinity("[{key: test-key, operator: NotIn, values: [another-value]}]", "")),
		want:    []expectation{scheduled("p"), nodeLabel("test-key", []string{"test-value"}, "p")},
	},
	{
		ref: "suite: Custom Constraints > Scheduling Logic > should schedule compatible pods to the same node",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value, another-value]}]") +
			pod("p1", "", "", suiteAffinity("[{key: test-key, operator: In, values: [test-value]}]", "")) +
			pod("p2", "", "", suiteAffinity("[{key: test-key, operator: NotIn, values: [another-value]}]", "")),
		want: []expectation{sameNode("p1", "p2"), nodeLabel("test-key", []string{"test-value"}, "p1", "p2")},
	},
	{
		ref: "suite: Custom Constraints > Scheduling Logic > should schedule incompatible pods to the different node",
		objects: suitePool("default", "", "[{key: test-key, operator: In, values: [test-value, another-value]}]") +
			pod("p1", "", "", suiteAffinity("[{key: test-key, operator: In, values: [test-value]}]", "")) +
			pod("p2", "", "", suiteAffinity("[{key: test-key, operator: In, values: [another-value]}]", "")),
		want: []expectation{apart("p1", "p2"), nodeLabel("test-key", []string{"test-value"}, "p1"), nodeLabel("test-key", []string{"another-value"}, "p2")},
	},
	{
		ref:     "suite: Custom Constraints > Scheduling Logic > Exists operator should not overwrite the existing value",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [non-existent-zone]}, {key: topology.kubernetes.io/zone, operator: Exists}]", "")),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},

	// Preferential Fallback.
	{
		ref: "suite: Preferential Fallback > Required > should not relax the final term",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}, {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]") +
			pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}]", "")),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "suite: Preferential Fallback > Required > should relax multiple terms",
		objects: pod("p", "", "", `{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
  {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}]},
  {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}]},
  {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]},
  {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}]}]}}}}`),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1a"}, "p")},
	},
	{
		ref: "suite: Preferential Fallback > Preferred > should relax all terms",
		objects: pod("p", "", "", `{affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [
  {weight: 1, preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}]}},
  {weight: 1, preference: {matchExpressions: [{key: node.kubernetes.io/instance-type, operator: In, values: [invalid]}]}}]}}}`),
		want: []expectation{scheduled("p")},
	},
	{
		ref: "suite: Preferential Fallback > Preferred > should relax to use lighter weights",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}]") +
			pod("p", "", "", `{affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [
  {weight: 100, preference: {matchExpressions: [{key: node.kubernetes.io/instance-type, operator: In, values: [us-east-1c]}]}},
  {weight: 50, preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}]}},
  {weight: 1, preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}}]}}}`),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1b"}, "p")},
	},
	{
		ref: "suite: Preferential Fallback > Preferred > should schedule even if preference is conflicting with requirement",
		objects: pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}]",
			"[{key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1c]}]")),
		want: []expectation{scheduled("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1c"}, "p")},
	},
	{
		ref:     "suite: Preferential Fallback > Preferred > should schedule even if preference requirements are conflicting",
		objects: pod("p", "", "", suiteAffinity("", "[{key: topology.kubernetes.io/zone, operator: In, values: [invalid]}, {key: topology.kubernetes.io/zone, operator: NotIn, values: [invalid]}]")),
		want:    []expectation{scheduled("p")},
	},

	// Instance Type Compatibility. The largest type of the catalog has 896
	// vCPUs; the fake arm-instance-type is m6g.xlarge (or, as the only type
	// big enough, a large Graviton), its small-instance-type m5.large and
	// default-instance-type m5.xlarge; its two made-up GPU resources are
	// NVIDIA's (g4dn, ...) and AMD's (g4ad).
	{
		ref:     "suite: Instance Type Compatibility > should not schedule if requesting more resources than any instance type has",
		objects: pod("p", "", `{cpu: "1024"}`, ""),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "suite: Instance Type Compatibility > should launch pods with different archs on different instances",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [arm64, amd64]}]") +
			pod("amd", "", "", "{nodeSelector: {kubernetes.io/arch: amd64}}") + pod("arm", "", "", "{nodeSelector: {kubernetes.io/arch: arm64}}"),
		want: []expectation{apart("amd", "arm"), nodeLabel("kubernetes.io/arch", []string{"amd64"}, "amd"), nodeLabel("kubernetes.io/arch", []string{"arm64"}, "arm")},
	},
	{
		ref: "suite: Instance Type Compatibility > should exclude instance types that are not supported by the pod constraints (node affinity/instance type)",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [amd64]}]") +
			pod("p", "", "", suiteAffinity("[{key: node.kubernetes.io/instance-type, operator: In, values: [m6g.xlarge]}]", "")),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "suite: Instance Type Compatibility > should exclude instance types that are not supported by the pod constraints (node affinity/operating system)",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [amd64]}]") +
			pod("p", "", "", suiteAffinity("[{key: kubernetes.io/os, operator: In, values: [ios]}]", "")),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		// Of m5 and m8g, only m8g.48xlarge (192 vCPUs, arm64) has 120 CPUs.
		// Requests default to limits, as the API server stores the pod.
		ref:     "suite: Instance Type Compatibility > should exclude instance types that are not supported by the provider constraints (arch)",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [amd64]}, {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, m8g]}]") + suitePodSpec("p", "", `{containers: [{name: c, image: busybox, resources: {requests: {cpu: "120"}, limits: {cpu: "120"}}}]}`),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "suite: Instance Type Compatibility > should launch pods with different instance type node selectors on different instances",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [arm64, amd64]}]") +
			pod("small", "", "", "{nodeSelector: {beta.kubernetes.io/instance-type: m5.large}}") + pod("default", "", "", "{nodeSelector: {node.kubernetes.io/instance-type: m5.xlarge}}"),
		want: []expectation{apart("small", "default"), instanceType([]string{"m5.large"}, "small"), instanceType([]string{"m5.xlarge"}, "default")},
	},
	{
		ref: "suite: Instance Type Compatibility > should launch pods with different zone selectors on different instances",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [arm64, amd64]}]") +
			pod("a", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1a}}") + pod("b", "", "", "{nodeSelector: {topology.kubernetes.io/zone: us-east-1b}}"),
		want: []expectation{apart("a", "b")},
	},
	{
		ref: "suite: Instance Type Compatibility > should launch pods with resources that aren't on any single instance type on different instances",
		objects: suitePodSpec("nvidia", "", `{containers: [{name: c, image: busybox, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]}`) +
			suitePodSpec("amd", "", `{containers: [{name: c, image: busybox, resources: {requests: {amd.com/gpu: "1"}, limits: {amd.com/gpu: "1"}}}]}`),
		want: []expectation{apart("nvidia", "amd")},
	},
	{
		ref:     "suite: Instance Type Compatibility > should fail to schedule a pod with resources requests that aren't on a single instance type",
		objects: suitePodSpec("p", "", `{containers: [{name: c, image: busybox, resources: {requests: {nvidia.com/gpu: "1", amd.com/gpu: "1"}, limits: {nvidia.com/gpu: "1", amd.com/gpu: "1"}}}]}`),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	// Provider Specific Labels: the fake "size" label is
	// karpenter.k8s.aws/instance-size, in the m5 family.
	{
		ref: "suite: Instance Type Compatibility > Provider Specific Labels > should filter instance types that match labels",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") +
			pod("large", "", "", "{nodeSelector: {karpenter.k8s.aws/instance-size: 4xlarge}}") + pod("small", "", "", "{nodeSelector: {karpenter.k8s.aws/instance-size: large}}"),
		want: []expectation{instanceType([]string{"m5.4xlarge"}, "large"), instanceType([]string{"m5.large"}, "small")},
	},
	{
		ref: "suite: Instance Type Compatibility > Provider Specific Labels > should not schedule with incompatible labels",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") +
			pod("large", "", "", "{nodeSelector: {karpenter.k8s.aws/instance-size: 4xlarge, node.kubernetes.io/instance-type: m5.large}}") +
			pod("small", "", "", "{nodeSelector: {karpenter.k8s.aws/instance-size: large, node.kubernetes.io/instance-type: m5.4xlarge}}"),
		want: []expectation{notScheduled("large", "small"), newNodes(0)},
	},

	// Binpacking: the fake small-instance-type is m5.large, its
	// default-instance-type m5.xlarge, in a NodePool of the m5 family.
	{
		ref:     "suite: Binpacking > should schedule a small pod on the smallest instance",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") + pod("p", "", "{memory: 100M}", ""),
		want:    []expectation{instanceType([]string{"m5.large"}, "p")},
	},
	{
		ref:     "suite: Binpacking > should schedule a small pod on the smallest possible instance type",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") + pod("p", "", "{memory: 2000M}", ""),
		want:    []expectation{instanceType([]string{"m5.large"}, "p")},
	},
	{
		// The RuntimeClass's pod overhead, as admission sets it on the pod.
		ref:     "suite: Binpacking > should take pod runtime class into consideration",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") + pod("p", "", `{cpu: "1"}`, `{runtimeClassName: my-runtime-class, overhead: {cpu: "2"}}`),
		want:    []expectation{instanceType([]string{"m5.xlarge"}, "p")},
	},
	{
		ref:     "suite: Binpacking > should schedule multiple small pods on the smallest possible instance type",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") + pods(5, "p", "", "{memory: 10M}", ""),
		want:    []expectation{sameNode("p-*"), newNodes(1), instanceType([]string{"m5.large"}, "p-*")},
	},
	// Binpacking.
	{
		ref:     "suite: Binpacking > should create new nodes when a node is at capacity",
		objects: pods(40, "p", "", "{cpu: 1800m}", "{nodeSelector: {node.kubernetes.io/instance-type: m5.large}}"),
		want:    []expectation{scheduled("p-*"), newNodes(40), instanceType([]string{"m5.large"}, "p-*")},
	},
	{
		// m5.large has 6903Mi: two 3000Mi pods and one 800Mi pod.
		ref: "suite: Binpacking > should pack small and large pods together",
		objects: suitePool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]") +
			pods(40, "large", "", "{memory: 3000Mi}", "") + pods(20, "small", "", "{memory: 800Mi}", ""),
		want: []expectation{scheduled("large-*", "small-*"), newNodes(20), instanceType([]string{"m5.large"}, "large-*", "small-*")},
	},
	{
		ref: "suite: Binpacking > should pack nodes tightly",
		objects: suitePool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}]") +
			pod("big", "", "{cpu: 3500m}", "") + pod("little", "", `{cpu: "1"}`, ""),
		want: []expectation{apart("big", "little"), instanceType([]string{"m5.xlarge"}, "big"), instanceType([]string{"m5.large"}, "little")},
	},
	{
		ref:     "suite: Binpacking > should handle zero-quantity resource requests",
		objects: suitePodSpec("p", "", `{containers: [{name: c, image: busybox, resources: {requests: {foo.com/weird-resources: "0"}, limits: {foo.com/weird-resources: "0"}}}]}`),
		want:    []expectation{scheduled("p")},
	},
	{
		ref:     "suite: Binpacking > should not schedule pods that exceed every instance type's capacity",
		objects: pod("p", "", "{memory: 64Ti}", ""),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		// t3.nano takes 4 pods.
		ref:     "suite: Binpacking > should create new nodes when a node is at capacity due to pod limits per node",
		objects: suitePool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [t3.nano, t3.micro]}]") + pods(25, "p", "", "{cpu: 1m, memory: 1Mi}", ""),
		want:    []expectation{scheduled("p-*"), newNodes(7), instanceType([]string{"t3.nano"}, "p-*")},
	},
	{
		ref: "suite: Binpacking > should take into account initContainer resource requests when binpacking",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") +
			pod("p", "", `{cpu: "1", memory: 1Gi}`, `{initContainers: [{name: i, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]}`),
		want: []expectation{instanceType([]string{"m5.xlarge"}, "p")},
	},
	{
		ref: "suite: Binpacking > should not schedule pods when initContainer resource requests are greater than available instance types",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") +
			pod("p", "", `{cpu: "1", memory: 1Gi}`, `{initContainers: [{name: i, image: busybox, resources: {requests: {cpu: "2", memory: 1Ti}}}]}`),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		// Overlays price the larger types below the smaller: the cheapest,
		// m5.2xlarge, is chosen, and every type is an option.
		ref: "suite: Binpacking > should select for valid instance types, regardless of price",
		objects: suitePool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge, m5.2xlarge]}]") + `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: large}
spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}], price: "3.00"}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: xlarge}
spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}], price: "2.00"}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: 2xlarge}
spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}], price: "1.00"}
` + suitePodSpec("p", "", `{containers: [{name: c, image: busybox, resources: {requests: {cpu: 1m, memory: 1Mi}, limits: {cpu: 1m, memory: 1Mi}}}]}`),
		want: []expectation{instanceType([]string{"m5.2xlarge"}, "p"), suiteOptions("p", "m5.large", "m5.xlarge", "m5.2xlarge")},
	},

	// In-Flight Nodes: the reference provisions a first round, then
	// schedules again; each case here is the cluster after the first round
	// (NodeClaims launched, nodes not initialized unless said, the first
	// pods bound) with the second round's pods pending.
	{
		ref: "suite: In-Flight Nodes > should not launch a second node if there is an in-flight node that can support the pod",
		objects: suiteNode{name: "n1", pool: "default"}.yaml() + pod("p1", "", "{cpu: 10m}", "{nodeName: n1}") +
			pod("p2", "", "{cpu: 10m}", ""),
		want: []expectation{suiteOn("n1", "p2"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > should not launch a second node if there is an in-flight node that can support the pod (node selectors)",
		objects: suiteNode{name: "n1", pool: "default", zone: "us-east-1b"}.yaml() + pod("p1", "", "{cpu: 10m}", "{nodeName: n1}") +
			pod("p2", "", "{cpu: 10m}", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b]}]", "")) +
			pod("p3", "", "{cpu: 10m}", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1c]}]", "")),
		want: []expectation{suiteOn("n1", "p2"), suiteOnNew("p3"), newNodes(1)},
	},
	{
		// m5.large offers 1930m: 1001m and 1 CPU do not fit together.
		ref: "suite: In-Flight Nodes > should launch a second node if a pod won't fit on the existingNodes node",
		objects: suiteNode{name: "n1", pool: "default"}.yaml() + pod("p1", "", "{cpu: 1001m}", "{nodeName: n1}") +
			pod("p2", "", `{cpu: "1"}`, ""),
		want: []expectation{suiteOnNew("p2"), newNodes(1)},
	},
	{
		ref: "suite: In-Flight Nodes > should launch a second node if a pod isn't compatible with the existingNodes node (node selector)",
		objects: suiteNode{name: "n1", pool: "default"}.yaml() + pod("p1", "", "{cpu: 10m}", "{nodeName: n1}") +
			pod("p2", "", "", "{nodeSelector: {kubernetes.io/arch: arm64}}"),
		want: []expectation{suiteOnNew("p2"), newNodes(1), nodeLabel("kubernetes.io/arch", []string{"arm64"}, "p2")},
	},
	{
		ref: "suite: In-Flight Nodes > should launch a second node if an in-flight node is terminating",
		objects: suiteNode{name: "n1", pool: "default", deleting: true}.yaml() +
			pod("p2", "", "{cpu: 10m}", ""),
		want: []expectation{suiteOnNew("p2"), newNodes(1)},
	},
	{
		ref: "suite: In-Flight Nodes > Topology > should balance pods across zones with in-flight nodes",
		objects: suiteNode{name: "n1", pool: "default", zone: "us-east-1a"}.yaml() + suiteNode{name: "n2", pool: "default", zone: "us-east-1b"}.yaml() +
			suiteNode{name: "n3", pool: "default", zone: "us-east-1c"}.yaml() +
			pod("a1", "{foo: bar}", "", "{nodeName: n1, "+suiteZoneSpread+"}") + pod("a2", "{foo: bar}", "", "{nodeName: n1, "+suiteZoneSpread+"}") +
			pod("b1", "{foo: bar}", "", "{nodeName: n2, "+suiteZoneSpread+"}") + pod("c1", "{foo: bar}", "", "{nodeName: n3, "+suiteZoneSpread+"}") +
			pods(5, "p", "{foo: bar}", "", "{"+suiteZoneSpread+"}"),
		want: []expectation{scheduled("p-*"), skew("topology.kubernetes.io/zone", "foo=bar", 3, 3, 3), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > Topology > should balance pods across hostnames with in-flight nodes",
		objects: suiteNode{name: "n1", pool: "default"}.yaml() + suiteNode{name: "n2", pool: "default"}.yaml() +
			suiteNode{name: "n3", pool: "default"}.yaml() + suiteNode{name: "n4", pool: "default"}.yaml() +
			pod("a1", "{foo: bar}", "", "{nodeName: n1, "+suiteHostSpread+"}") + pod("a2", "{foo: bar}", "", "{nodeName: n2, "+suiteHostSpread+"}") +
			pod("a3", "{foo: bar}", "", "{nodeName: n3, "+suiteHostSpread+"}") + pod("a4", "{foo: bar}", "", "{nodeName: n4, "+suiteHostSpread+"}") +
			pods(5, "p", "{foo: bar}", "", "{"+suiteHostSpread+"}"),
		want: []expectation{scheduled("p-*"), skew("kubernetes.io/hostname", "foo=bar", 1, 1, 1, 1, 1, 1, 1, 1, 1), newNodes(5)},
	},
	{
		ref:     "suite: In-Flight Nodes > Taints > should assume pod will schedule to a tainted node with no taints",
		objects: suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() + pod("p2", "", "", ""),
		want:    []expectation{suiteOn("n1", "p2"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > Taints > should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized",
		objects: suiteNode{name: "n1", pool: "default", taints: "[{key: node.kubernetes.io/not-ready, effect: NoExecute}]"}.yaml() +
			pod("p2", "", "", ""),
		want: []expectation{suiteOn("n1", "p2"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > Taints > should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized [then initialized]",
		objects: suiteNode{name: "n1", pool: "default", initialized: true, taints: "[{key: node.kubernetes.io/not-ready, effect: NoExecute}]"}.yaml() +
			pod("p3", "", "", ""),
		want: []expectation{suiteOnNew("p3"), newNodes(1)},
	},
	{
		ref: "suite: In-Flight Nodes > Taints > should not assume pod will schedule to a tainted node",
		objects: suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge", initialized: true, taints: "[{key: foo.com/taint, value: tainted, effect: NoSchedule}]"}.yaml() +
			pod("p2", "", "", ""),
		want: []expectation{suiteOnNew("p2"), newNodes(1)},
	},
	{
		ref: "suite: In-Flight Nodes > Taints > should assume pod will schedule to a tainted node with a custom startup taint",
		objects: `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      startupTaints: [{key: foo.com/taint, value: tainted, effect: NoSchedule}]
` + suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge", startupTaints: "[{key: foo.com/taint, value: tainted, effect: NoSchedule}]",
			taints: "[{key: foo.com/taint, value: tainted, effect: NoSchedule}, {key: node.kubernetes.io/not-ready, effect: NoSchedule}]"}.yaml() +
			pod("p2", "", "", ""),
		want: []expectation{suiteOn("n1", "p2"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > Taints > should not assume pod will schedule to a node with startup taints after initialization",
		objects: `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      startupTaints: [{key: ignore-me, value: nothing-to-see-here, effect: NoSchedule}]
` + suiteNode{name: "n1", pool: "default", initialized: true, startupTaints: "[{key: ignore-me, value: nothing-to-see-here, effect: NoSchedule}]",
			taints: "[{key: ignore-me, value: nothing-to-see-here, effect: NoSchedule}]"}.yaml() +
			pod("p2", "", "", ""),
		want: []expectation{suiteOnNew("p2"), newNodes(1)},
	},
	{
		ref: "suite: In-Flight Nodes > Taints > should consider a tainted NotReady node as in-flight even if initialized",
		objects: suiteNode{name: "n1", pool: "default", initialized: true, taints: `[{key: node.kubernetes.io/not-ready, effect: NoSchedule},
  {key: node.kubernetes.io/unreachable, effect: NoSchedule}, {key: node.cloudprovider.kubernetes.io/uninitialized, value: "true", effect: NoSchedule}]`}.yaml() +
			pod("p1", "", "{cpu: 10m}", "{nodeName: n1}") + pod("p2", "", "{cpu: 10m}", ""),
		want: []expectation{suiteOn("n1", "p2"), newNodes(0)},
	},
	// In-Flight Nodes > Daemonsets: m5.4xlarge offers 15890m CPU.
	{
		ref: "suite: In-Flight Nodes > Daemonsets > should track daemonset usage separately so we know how many DS resources are remaining to be scheduled",
		objects: suiteDaemonSet("ds", `{cpu: "1", memory: 1Gi}`, "") + suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() +
			suiteDaemonPod("ds-n1", "ds", "n1", `{cpu: "1", memory: 2Gi}`) + pod("p2", "", "{cpu: 14890m}", ""),
		want: []expectation{suiteOn("n1", "p2"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > Daemonsets > should handle unexpected daemonset pods binding to the node",
		objects: suiteDaemonSet("ds1", `{cpu: "1", memory: 1Gi}`, "nodeSelector: {my-node-label: value}") + suiteDaemonSet("ds2", "{cpu: 1m}", "") +
			suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge", labels: "my-node-label: value"}.yaml() +
			suiteDaemonPod("ds1-n1", "ds1", "n1", `{cpu: "1", memory: 2Gi}`) + pod("p2", "", "{cpu: 15500m}", ""),
		want: []expectation{suiteOnNew("p2"), newNodes(1)},
	},
	{
		// Both DaemonSets' pods run on the node: 2 + 1 + 1 CPUs is more
		// than m5.xlarge offers.
		ref: "suite: In-Flight Nodes > Daemonsets > Should properly handle DaemonSet resources with Node Affinity for `karpenter.sh/initialized` and `karpenter.sh/registered`",
		objects: suitePool("default", "", "[{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]") +
			suiteDaemonSet("ds1", `{cpu: "1"}`, suiteAffinityField(`[{key: karpenter.sh/initialized, operator: In, values: ["true"]}]`, "")) +
			suiteDaemonSet("ds2", `{cpu: "1"}`, suiteAffinityField(`[{key: karpenter.sh/registered, operator: In, values: ["true"]}]`, "")) +
			suitePodSpec("p", "", `{containers: [{name: c, image: busybox, resources: {requests: {cpu: "2"}, limits: {cpu: "2"}}}]}`),
		want: []expectation{instanceType([]string{"m5.2xlarge"}, "p"), suiteNoRequirement("p", "karpenter.sh/initialized", "karpenter.sh/registered")},
	},
	{
		// m5.xlarge nodes take three 1-CPU pods: n1 has room for two, n2
		// for one, n3 for none; of five pods, two need a new node.
		ref: "suite: In-Flight Nodes > should pack in-flight nodes before launching new nodes",
		objects: suitePool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]") +
			suiteNode{name: "n1", pool: "default", itype: "m5.xlarge"}.yaml() + suiteNode{name: "n2", pool: "default", itype: "m5.xlarge"}.yaml() +
			suiteNode{name: "n3", pool: "default", itype: "m5.xlarge"}.yaml() +
			pod("a1", "", `{cpu: "1"}`, "{nodeName: n1}") + pods(2, "b", "", `{cpu: "1"}`, "{nodeName: n2}") + pods(3, "c", "", `{cpu: "1"}`, "{nodeName: n3}") +
			pods(5, "p", "", `{cpu: "1"}`, ""),
		want: []expectation{scheduled("p-*"), suiteFilled("n1", 2), suiteFilled("n2", 1), suiteFilled("n3", 0), newNodes(1)},
	},
	{
		ref: "suite: In-Flight Nodes > should not launch a second node if there is an in-flight node that can support the pod (#2011)",
		objects: suiteNode{name: "n1", pool: "default"}.yaml() + `---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 10m}, limits: {cpu: 10m}}}]}
status: {phase: Pending, conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]}
`,
		want: []expectation{suiteOn("n1", "p"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > should order initialized nodes for scheduling uninitialized nodes when all other nodes are inflight",
		objects: suiteNode{name: "n1", pool: "default", noNode: true}.yaml() + suiteNode{name: "n2", pool: "default", noNode: true}.yaml() +
			suiteNode{name: "n3", pool: "default", initialized: true}.yaml() + suiteNode{name: "n4", pool: "default", noNode: true}.yaml() +
			suiteNode{name: "n5", pool: "default", noNode: true}.yaml() + pod("p", "", "", ""),
		want: []expectation{suiteOn("n3", "p"), newNodes(0)},
	},
	{
		ref: "suite: In-Flight Nodes > should schedule pods with the same host port to different nodes",
		objects: suitePodSpec("p1", "", "{containers: [{name: c, image: busybox, ports: [{containerPort: 8080, hostPort: 8080}]}]}") +
			suitePodSpec("p2", "", "{containers: [{name: c, image: busybox, ports: [{containerPort: 8080, hostPort: 8080}]}]}"),
		want: []expectation{apart("p1", "p2")},
	},

	// Existing Nodes.
	{
		ref:     "suite: Existing Nodes > should schedule a pod to an existing node unowned by Karpenter",
		objects: suiteNode{name: "n1", alloc: `{cpu: "10", memory: 10Gi, pods: "110"}`}.yaml() + pod("p", "", "{cpu: 10m}", ""),
		want:    []expectation{suiteOn("n1", "p"), newNodes(0)},
	},
	{
		ref:     "suite: Existing Nodes > should schedule multiple pods to an existing node unowned by Karpenter",
		objects: suiteNode{name: "n1", alloc: `{cpu: "10", memory: 100Gi, pods: "110"}`}.yaml() + pods(100, "p", "", "{cpu: 10m}", ""),
		want:    []expectation{suiteOn("n1", "p-*"), newNodes(0)},
	},
	{
		ref: "suite: Existing Nodes > should order initialized nodes for scheduling uninitialized nodes",
		objects: suiteNode{name: "n1", pool: "default"}.yaml() + suiteNode{name: "n2", pool: "default"}.yaml() +
			suiteNode{name: "n3", pool: "default"}.yaml() + suiteNode{name: "n4", pool: "default", initialized: true}.yaml() +
			suiteNode{name: "n5", pool: "default"}.yaml() + pod("p", "", "", ""),
		want: []expectation{suiteOn("n4", "p"), newNodes(0)},
	},
	{
		// The reference first has no NodePool (the pod waits), then adds
		// one; this is the second step.
		ref: "suite: Existing Nodes > should consider a pod incompatible with an existing node but compatible with NodePool",
		objects: suiteNode{name: "n1", pool: "default", zone: "us-east-1b", initialized: true, alloc: `{cpu: "10", memory: 10Gi, pods: "110"}`}.yaml() +
			pod("p", "", "", suiteAffinity("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]", "")),
		want: []expectation{suiteOnNew("p"), nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1a"}, "p")},
	},
	{
		// The DaemonSet wants more CPU than any instance type has, and
		// only zone us-east-1a: the node in us-east-1b takes one pod; the
		// other does not schedule, as every new node would be a NodePool
		// node the DaemonSet's overhead fills.
		ref: "suite: Existing Nodes > Daemonsets > should not subtract daemonset overhead that is not strictly compatible with an existing node",
		objects: suiteDaemonSet("ds", `{cpu: "1024", memory: 100Gi}`, suiteAffinityField("[{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]", "")) +
			suiteNode{name: "n1", pool: "default", zone: "us-east-1b", initialized: true, alloc: `{cpu: "1", memory: 1Gi, pods: "110"}`}.yaml() +
			pods(2, "p", "", `{cpu: "1", memory: 1Gi}`, ""),
		want: []expectation{suiteFilled("n1", 1), suiteUnplaced(1), newNodes(0)},
	},

	// VolumeUsage: the fake CSI driver is the EBS CSI driver; nodes are
	// m5.4xlarge.
	{
		// The in-flight node takes 10 volumes: five pods of two claims.
		ref: "suite: VolumeUsage > should launch multiple nodes if required due to volume limits",
		objects: suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() + pod("first", "", "", "{nodeName: n1}") +
			suiteCSINode("n1", "ebs.csi.aws.com", 10) + suiteStorageClass("my-storage-class", "ebs.csi.aws.com", "WaitForFirstConsumer", "us-east-1a", false) +
			suiteClaims("my-claim-a", 6, "my-storage-class") + suiteClaims("my-claim-b", 6, "my-storage-class") + suiteVolumePods(6, "p", "my-claim-a-*", "my-claim-b-*"),
		want: []expectation{scheduled("p-*"), suiteFilled("n1", 5), newNodes(1)},
	},
	{
		ref: "suite: VolumeUsage > should launch a single node if all pods use the same PVC",
		objects: suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() + pod("first", "", "", "{nodeName: n1}") +
			suiteCSINode("n1", "ebs.csi.aws.com", 10) + suiteStorageClass("my-storage-class", "ebs.csi.aws.com", "", "us-east-1a", false) + `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: my-volume}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: my-storage-class
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}]}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: my-claim, namespace: default}
spec: {storageClassName: my-storage-class, volumeName: my-volume, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
status: {phase: Bound}
` + suiteSharedVolumePods(100, "p", "my-claim"),
		want: []expectation{suiteOn("n1", "p-*"), newNodes(0)},
	},
	{
		ref: "suite: VolumeUsage > should not fail for NFS volumes",
		objects: suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() + pod("first", "", "", "{nodeName: n1}") + `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: my-volume}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteMany]
  storageClassName: nfs
  nfs: {server: fake.server, path: /some/path}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}]}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: my-claim, namespace: default}
spec: {storageClassName: "", volumeName: my-volume, accessModes: [ReadWriteMany], resources: {requests: {storage: 10Gi}}}
status: {phase: Bound}
` + suiteVolumePods(5, "p", "my-claim", "my-claim"),
		want: []expectation{suiteOn("n1", "p-*"), newNodes(0)},
	},
	{
		ref: "suite: VolumeUsage > should schedule pods using a PV with multiple zones",
		objects: suiteMultiZonePV("multi-zone-pv-0", "multi-zone-pvc-0") + suiteMultiZonePV("multi-zone-pv-1", "multi-zone-pvc-1") +
			suitePodSpec("pod-0", "{app: multi-zone-app}", "{containers: [{name: c, image: busybox}], volumes: [{name: v, persistentVolumeClaim: {claimName: multi-zone-pvc-0}}], "+suiteZoneAnti+"}") +
			suitePodSpec("pod-1", "{app: multi-zone-app}", "{containers: [{name: c, image: busybox}], volumes: [{name: v, persistentVolumeClaim: {claimName: multi-zone-pvc-1}}], "+suiteZoneAnti+"}"),
		want: []expectation{nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1a", "us-east-1b"}, "pod-0", "pod-1"), skew("topology.kubernetes.io/zone", "app=multi-zone-app", 1, 1)},
	},
	{
		ref:     "suite: VolumeUsage > should preserve unconstrained PV alternatives after ignoring hostname affinity [for local volumes]",
		objects: suiteHostOrZonePV("local: {path: /mnt/disk}"),
		want:    []expectation{scheduled("hostname-or-zone-pod")},
	},
	{
		ref:     "suite: VolumeUsage > should preserve unconstrained PV alternatives after ignoring hostname affinity [for hostpath volumes]",
		objects: suiteHostOrZonePV("hostPath: {path: /tmp/disk}"),
		want:    []expectation{scheduled("hostname-or-zone-pod")},
	},
	{
		ref: "suite: VolumeUsage > should schedule pods using a StorageClass with multiple zones in AllowedTopologies",
		objects: `---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: multi-zone-sc}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1a]}]
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1b]}]
` + suiteClaims("multi-zone-pvc", 2, "multi-zone-sc") +
			suitePodSpec("sc-pod-0", "{app: multi-zone-sc-app}", "{containers: [{name: c, image: busybox}], volumes: [{name: v, persistentVolumeClaim: {claimName: multi-zone-pvc-0}}], "+strings.ReplaceAll(suiteZoneAnti, "multi-zone-app", "multi-zone-sc-app")+"}") +
			suitePodSpec("sc-pod-1", "{app: multi-zone-sc-app}", "{containers: [{name: c, image: busybox}], volumes: [{name: v, persistentVolumeClaim: {claimName: multi-zone-pvc-1}}], "+strings.ReplaceAll(suiteZoneAnti, "multi-zone-app", "multi-zone-sc-app")+"}"),
		want: []expectation{nodeLabel("topology.kubernetes.io/zone", []string{"us-east-1a", "us-east-1b"}, "sc-pod-0", "sc-pod-1"), skew("topology.kubernetes.io/zone", "app=multi-zone-sc-app", 1, 1)},
	},
	{
		// The in-flight node has room for one EBS volume, which its pod's
		// ephemeral volume takes; other-provider has room but is not used.
		ref: "suite: VolumeUsage > should launch nodes for pods with ephemeral volume using the specified storage class name",
		objects: suiteStorageClass("my-storage-class", "ebs.csi.aws.com", "WaitForFirstConsumer", "us-east-1a", false) +
			suiteStorageClass("default-storage-class", "other-provider", "WaitForFirstConsumer", "us-east-1a", true) +
			suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() + suiteCSINode("n1", "ebs.csi.aws.com", 1) + suiteCSINode("", "other-provider", 10) +
			suiteEphemeralPod("first", "n1", "my-storage-class") + suiteClaims("first-tmp-ephemeral", 0, "my-storage-class") +
			suiteEphemeralPod("p", "", "my-storage-class") + suiteClaims("p-tmp-ephemeral", 0, "my-storage-class"),
		want: []expectation{suiteOnNew("p"), newNodes(1)},
	},
	{
		ref: "suite: VolumeUsage > should launch nodes for pods with ephemeral volume using a default storage class",
		objects: suiteStorageClass("default-storage-class", "ebs.csi.aws.com", "WaitForFirstConsumer", "us-east-1a", true) +
			suiteNode{name: "n1", pool: "default", itype: "m5.4xlarge"}.yaml() + suiteCSINode("n1", "ebs.csi.aws.com", 1) + suiteCSINode("", "other-provider", 10) +
			suiteEphemeralPod("first", "n1", "") + suiteClaims("first-tmp-ephemeral", 0, "") +
			suiteEphemeralPod("p", "", "") + suiteClaims("p-tmp-ephemeral", 0, ""),
		want: []expectation{suiteOnNew("p"), newNodes(1)},
	},
	{
		ref: "suite: VolumeUsage > should not launch nodes for pod with unbound volume for volumeBindingMode immediate",
		objects: suiteStorageClass("default-storage-class", "other-provider", "Immediate", "us-east-1a", false) +
			suiteClaims("tmp-ephemeral", 0, "default-storage-class") + suiteVolumePods(1, "p", "tmp-ephemeral"),
		want: []expectation{notScheduled("p-0"), newNodes(0)},
	},
	{
		ref: "suite: VolumeUsage > should not launch nodes for pod with deleting persistentVolumeClaim",
		objects: suiteStorageClass("default-storage-class", "other-provider", "WaitForFirstConsumer", "us-east-1a", false) + `---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: tmp-ephemeral, namespace: default, deletionTimestamp: "2025-01-01T00:00:00Z", finalizers: [kubernetes.io/pvc-protection]}
spec: {storageClassName: default-storage-class, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
` + suiteVolumePods(1, "p", "tmp-ephemeral"),
		want: []expectation{notScheduled("p-0"), newNodes(0)},
	},
	{
		ref: "suite: VolumeUsage > should not launch nodes for pod with bound persistentVolume that is marked for deletion",
		objects: `---
apiVersion: v1
kind: PersistentVolume
metadata: {name: my-volume, deletionTimestamp: "2025-01-01T00:00:00Z", finalizers: [kubernetes.io/pv-protection]}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], csi: {driver: other-provider, volumeHandle: vol-1}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: p-tmp-ephemeral, namespace: default}
spec: {volumeName: my-volume, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Bound}
` + suiteEphemeralPod("p", "", ""),
		want: []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref: "suite: VolumeUsage > should not launch nodes for pod with Lost persistentVolumeClaim",
		objects: suiteStorageClass("default-storage-class", "other-provider", "WaitForFirstConsumer", "us-east-1a", false) + `---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: tmp-ephemeral, namespace: default}
spec: {storageClassName: default-storage-class, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Lost}
` + suiteVolumePods(1, "p", "tmp-ephemeral"),
		want: []expectation{notScheduled("p-0"), newNodes(0)},
	},
	{
		ref:     "suite: VolumeUsage > should handle pods with PVCs with defined volumeName [when pv.kubernetes.io/bind-completed is missing]",
		objects: suiteNamedVolume(false),
		want:    []expectation{notScheduled("p-0"), newNodes(0)},
	},
	{
		ref:     "suite: VolumeUsage > should handle pods with PVCs with defined volumeName [when pv.kubernetes.io/bind-completed is present]",
		objects: suiteNamedVolume(true),
		want:    []expectation{scheduled("p-0")},
	},
	{
		ref:     "suite: VolumeUsage > should launch nodes for pods with ephemeral volume without a storage class when the PVC is bound [non-existent storage class]",
		objects: suiteBoundEphemeral("non-existent"),
		want:    []expectation{scheduled("p"), newNodes(1)},
	},
	{
		ref:     "suite: VolumeUsage > should launch nodes for pods with ephemeral volume without a storage class when the PVC is bound [explicitly disabled storage class (empty string)]",
		objects: suiteBoundEphemeral(`""`),
		want:    []expectation{scheduled("p"), newNodes(1)},
	},
	{
		ref:     "suite: VolumeUsage > should not launch nodes for pods with ephemeral volume without a storage class when the PVC is unbound [non-existent storage class]",
		objects: suiteEphemeralPod("p", "", "non-existent"),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},
	{
		ref:     "suite: VolumeUsage > should not launch nodes for pods with ephemeral volume without a storage class when the PVC is unbound [explicitly disabled storage class (empty string)]",
		objects: suiteEphemeralPod("p", "", `""`),
		want:    []expectation{notScheduled("p"), newNodes(0)},
	},

	// Deleting Nodes: the node being deleted is an m5.large whose
	// NodeClaim and Node carry a deletion timestamp.
	{
		ref:     "suite: Deleting Nodes > should re-schedule pods from a deleting node when pods are active",
		objects: suiteNode{name: "n1", pool: "default", initialized: true, deleting: true}.yaml() + pod("p", "", "{memory: 100M}", "{nodeName: n1}"),
		want:    []expectation{newNodes(1)},
	},
	{
		ref:     "suite: Deleting Nodes > should not re-schedule pods from a deleting node when pods are not active",
		objects: suiteNode{name: "n1", pool: "default", initialized: true, deleting: true}.yaml() + suiteTerminatingPod("p", "n1", ""),
		want:    []expectation{newNodes(0)},
	},
	{
		ref:     "suite: Deleting Nodes > should not re-schedule pods from a deleting node when pods are owned by a DaemonSet",
		objects: suiteDaemonSet("ds", "{memory: 100M}", "") + suiteNode{name: "n1", pool: "default", initialized: true, deleting: true}.yaml() + suiteDaemonPod("p", "ds", "n1", "{memory: 100M}"),
		want:    []expectation{newNodes(0)},
	},
	{
		ref:     "suite: Deleting Nodes > should not reschedule pods from a deleting node when pods are not active and they are owned by a ReplicaSet",
		objects: suiteNode{name: "n1", pool: "default", initialized: true, deleting: true}.yaml() + suiteTerminatingPod("p", "n1", "ReplicaSet"),
		want:    []expectation{newNodes(0)},
	},
	{
		ref:     "suite: Deleting Nodes > should reschedule pods from a deleting node when pods are not active and they are owned by a StatefulSet",
		objects: suiteNode{name: "n1", pool: "default", initialized: true, deleting: true}.yaml() + suiteTerminatingPod("p", "n1", "StatefulSet"),
		want:    []expectation{newNodes(1)},
	},
	{
		ref:     "suite: Deleting Nodes > should not reschedule pods from a deleting node when pods are blocked due to fully blocking PDBs [0 max unavailable]",
		objects: suiteBlockedPod("{maxUnavailable: 0}"),
		want:    []expectation{newNodes(0)},
	},
	{
		ref:     "suite: Deleting Nodes > should not reschedule pods from a deleting node when pods are blocked due to fully blocking PDBs [0% max unavailable]",
		objects: suiteBlockedPod(`{maxUnavailable: "0%"}`),
		want:    []expectation{newNodes(0)},
	},
	{
		ref:     "suite: Deleting Nodes > should not reschedule pods from a deleting node when pods are blocked due to fully blocking PDBs [100% min available]",
		objects: suiteBlockedPod(`{minAvailable: "100%"}`),
		want:    []expectation{newNodes(0)},
	},
	{
		ref:     "suite: Deleting Nodes > should not reschedule pods from a deleting node when pods are blocked due to fully blocking PDBs [multiple PDBs on the same pod]",
		objects: suiteBlockedPod(`{minAvailable: "100%"}`, `{minAvailable: "100%"}`),
		want:    []expectation{newNodes(0)},
	},

	// Reserved Instance Types: the simulated account's reservation holds
	// two m5.large in us-east-1a (the reference's reserved small and
	// medium types, one instance each); the NodePools' EC2NodeClass
	// selects it.
	{
		// The reference's three provisioning rounds, as one plan: both
		// reserved instances, then one pod on spot or on-demand.
		ref: "suite: Reserved Instance Types > shouldn't fallback to on-demand or spot when compatible reserved offerings are available",
		objects: suiteReservedClass + suiteReservedPool("default", "[{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.2xlarge]}]") +
			pods(3, "p", "{app: r}", "{cpu: 1800m}", ""),
		want: []expectation{apart("p-*"), instanceType([]string{"m5.large"}, "p-*"), suiteCount("karpenter.sh/capacity-type", "reserved", 2)},
	},
	{
		ref: "suite: Reserved Instance Types > should handle multiple pods on reserved nodes",
		objects: suiteReservedClass + suiteReservedPool("np-1", "") +
			pods(2, "p", "{app: test}", "", `{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [
  {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}, {key: karpenter.sh/nodepool, operator: In, values: [np-1]},
  {key: karpenter.sh/capacity-type, operator: In, values: [reserved]}, {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}]}},
  podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: test}}, topologyKey: topology.kubernetes.io/zone}]}}}`),
		want: []expectation{sameNode("p-*"), newNodes(1), instanceType([]string{"m5.large"}, "p-*"), nodeLabel("karpenter.sh/capacity-type", []string{"reserved"}, "p-*")},
	},

	// NodePool requirements instance filtering.
	{
		ref: "suite: NodePool requirements instance filtering > should return appropriate pod error when no available instance types exist",
		objects: suitePool("default", "", "[{key: node.kubernetes.io/instance-type, operator: In, values: [non-existent-instance-type]}]") +
			suitePodSpec("test-pod-filtered", "", `{containers: [{name: c, image: busybox, resources: {requests: {cpu: "32", memory: 256Gi}, limits: {cpu: "32", memory: 256Gi}}}]}`),
		want: []expectation{notScheduled("test-pod-filtered"), newNodes(0)},
	},
	{
		ref: "suite: NodePool requirements instance filtering > should handle multiple pods when requirements filter out all instance types",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [non-existent-arch]}]") +
			pod("pod-1", "", "", "") + pod("pod-2", "", "", "") + pod("pod-3", "", "", ""),
		want: []expectation{notScheduled("pod-1", "pod-2", "pod-3"), newNodes(0)},
	},
	{
		ref:     "suite: NodePool requirements instance filtering > should handle conflicting requirements that eliminate all instance types",
		objects: suitePool("default", "", "[{key: kubernetes.io/arch, operator: In, values: [amd64]}, {key: kubernetes.io/arch, operator: In, values: [arm64]}]") + pod("conflicting-requirements-pod", "", "", ""),
		want:    []expectation{notScheduled("conflicting-requirements-pod"), newNodes(0)},
	},
	{
		ref:     "suite: NodePool requirements instance filtering > should handle zone requirements that filter out all instance types",
		objects: suitePool("default", "", "[{key: topology.kubernetes.io/zone, operator: In, values: [non-existent-zone-1, non-existent-zone-2]}]") + pod("zone-filtered-pod", "", "", ""),
		want:    []expectation{notScheduled("zone-filtered-pod"), newNodes(0)},
	},
}

// suitePool is a NodePool of the EC2NodeClass default with template labels
// (a flow map, or "") and requirements (a flow list, or "").
func suitePool(name, labels, reqs string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: %s}\nspec:\n  template:\n", name)
	if labels != "" {
		fmt.Fprintf(&b, "    metadata: {labels: %s}\n", labels)
	}
	b.WriteString("    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n")
	fmt.Fprintf(&b, "      requirements: %s\n", cmp.Or(reqs, "[]"))
	return b.String()
}

// suiteAffinity is a pod spec with node affinity: required is one term's
// match expressions (a flow list, or ""), preferred one weight-1 term's.
func suiteAffinity(required, preferred string) string {
	return "{" + suiteAffinityField(required, preferred) + "}"
}

// suiteAffinityField is suiteAffinity's field alone, to join with others.
func suiteAffinityField(required, preferred string) string {
	var parts []string
	if required != "" {
		parts = append(parts, "requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: "+required+"}]}")
	}
	if preferred != "" {
		parts = append(parts, "preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: "+preferred+"}}]")
	}
	return "affinity: {nodeAffinity: {" + strings.Join(parts, ", ") + "}}"
}

// suiteOptions: the named pod is on a new NodeClaim whose instance type
// options are exactly types.
func suiteOptions(name string, types ...string) expectation {
	return func(o *outcome) error {
		at := o.at[name]
		if at == nil || at.claim == nil {
			return fmt.Errorf("pod %s is not on a new NodeClaim", name)
		}
		var got []string
		for _, it := range at.claim.InstanceTypes {
			got = append(got, it.Name)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(types))
		if !slices.Equal(got, want) {
			return fmt.Errorf("pod %s: NodeClaim %s lists %v, want %v", name, at.name, got, want)
		}
		return nil
	}
}

// suitePodSpec writes one pending pod in the default namespace with
// metadata labels lbls (a flow map, or "") and the whole spec (flow
// style, containers included).
func suitePodSpec(name, lbls, spec string) string {
	if lbls == "" {
		lbls = "{}"
	}
	return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default, labels: %s}\nspec: %s\n", name, lbls, spec)
}

// suiteNode is a node of a case's cluster: a NodeClaim of NodePool pool
// with its Node (noNode: launched, not registered yet), or with pool ""
// a Node no NodePool owns. Its allocatable is its instance type's.
type suiteNode struct {
	name, pool, itype, zone string
	// initialized: the NodeClaim says Initialized and the node has the
	// karpenter.sh/initialized label.
	initialized bool
	noNode      bool
	deleting    bool
	// labels are more node labels ("k: v, k2: v2"); taints and
	// startupTaints flow lists for the Node and the NodeClaim.
	labels, taints, startupTaints string
	// alloc overrides the allocatable ("{cpu: ..., memory: ..., pods: ...}").
	alloc string
}

// suiteAllocatable is what the catalog's types used in cases offer pods.
var suiteAllocatable = map[string]string{
	"m5.large":   `{cpu: 1930m, memory: 6903Mi, pods: "29"}`,
	"m5.xlarge":  `{cpu: 3920m, memory: 14162Mi, pods: "58"}`,
	"m5.2xlarge": `{cpu: 7910m, memory: 29317Mi, pods: "58"}`,
	"m5.4xlarge": `{cpu: 15890m, memory: 57691Mi, pods: "234"}`,
}

func (n suiteNode) yaml() string {
	if n.itype == "" {
		n.itype = "m5.large"
	}
	if n.zone == "" {
		n.zone = "us-east-1a"
	}
	alloc := n.alloc
	if alloc == "" {
		alloc = suiteAllocatable[n.itype]
	}
	deleting := ""
	if n.deleting {
		deleting = `, deletionTimestamp: "2025-01-01T00:00:00Z", finalizers: [karpenter.sh/termination]`
	}
	labels := fmt.Sprintf("node.kubernetes.io/instance-type: %s, topology.kubernetes.io/zone: %s, kubernetes.io/arch: amd64, kubernetes.io/os: linux, kubernetes.io/hostname: %s",
		n.itype, n.zone, n.name)
	if n.labels != "" {
		labels += ", " + n.labels
	}
	providerID := fmt.Sprintf("aws:///%s/i-%s", n.zone, n.name)
	var b strings.Builder
	if n.pool != "" {
		labels += ", karpenter.sh/nodepool: " + n.pool + ", karpenter.sh/capacity-type: on-demand"
		conds := `{type: Launched, status: "True", reason: Launched, lastTransitionTime: "2025-01-01T00:00:00Z"}`
		nodeName := ""
		if !n.noNode {
			labels += `, karpenter.sh/registered: "true"`
			nodeName = ", nodeName: " + n.name
			conds += `, {type: Registered, status: "True", reason: Registered, lastTransitionTime: "2025-01-01T00:00:00Z"}`
		}
		if n.initialized {
			labels += `, karpenter.sh/initialized: "true"`
			conds += `, {type: Initialized, status: "True", reason: Initialized, lastTransitionTime: "2025-01-01T00:00:00Z"}`
		}
		fmt.Fprintf(&b, "---\napiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: %s, labels: {karpenter.sh/nodepool: %s}%s}\n", n.name, n.pool, deleting)
		fmt.Fprintf(&b, "spec:\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n")
		fmt.Fprintf(&b, "  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [%s]}, {key: topology.kubernetes.io/zone, operator: In, values: [%s]}]\n", n.itype, n.zone)
		if n.startupTaints != "" {
			fmt.Fprintf(&b, "  startupTaints: %s\n", n.startupTaints)
		}
		fmt.Fprintf(&b, "status: {providerID: %q%s, capacity: %s, allocatable: %s, conditions: [%s]}\n", providerID, nodeName, alloc, alloc, conds)
	}
	if n.noNode {
		return b.String()
	}
	fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {%s}%s}\n", n.name, labels, deleting)
	taints := ""
	if n.taints != "" {
		taints = ", taints: " + n.taints
	}
	fmt.Fprintf(&b, "spec: {providerID: %q%s}\n", providerID, taints)
	fmt.Fprintf(&b, "status: {capacity: %s, allocatable: %s, conditions: [{type: Ready, status: \"True\"}]}\n", alloc, alloc)
	return b.String()
}

// suiteDaemonPod is a running pod of DaemonSet ds on node, requesting
// requests (a flow map).
func suiteDaemonPod(name, ds, node, requests string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: %s, uid: %s-uid, controller: true}]}
spec: {nodeName: %s, containers: [{name: c, image: busybox, resources: {requests: %s}}]}
status: {phase: Running}
`, name, ds, ds, node, requests)
}

// suiteDaemonSet is a DaemonSet whose pods request requests (a flow map)
// with more spec fields (flow style, without braces, or "").
func suiteDaemonSet(name, requests, spec string) string {
	if spec != "" {
		spec = ", " + spec
	}
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %s, namespace: default}
spec:
  selector: {matchLabels: {ds: %s}}
  template:
    metadata: {labels: {ds: %s}}
    spec: {containers: [{name: c, image: busybox, resources: {requests: %s}}]%s}
`, name, name, name, requests, spec)
}

// suiteOn: the named pods are placed on the existing node (or in-flight
// NodeClaim) node.
func suiteOn(node string, names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			if at.claim != nil || at.name != node {
				return fmt.Errorf("pod %s is on %s, want it on %s", n, at.name, node)
			}
		}
		return nil
	}
}

// suiteOnNew: the named pods are placed on NodeClaims the plan launches.
func suiteOnNew(names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			if at.claim == nil {
				return fmt.Errorf("pod %s is on existing %s, want it on a new NodeClaim", n, at.name)
			}
		}
		return nil
	}
}

// suiteFilled: the plan places exactly n pending pods on existing node.
func suiteFilled(node string, n int) expectation {
	return func(o *outcome) error {
		got := 0
		for _, e := range o.res.Plan.Existing {
			if e.Node == node {
				got = len(e.Pods)
			}
		}
		if got != n {
			return fmt.Errorf("%d pending pods planned onto %s, want %d", got, node, n)
		}
		return nil
	}
}

// suiteUnplaced: exactly n pods are unschedulable.
func suiteUnplaced(n int) expectation {
	return func(o *outcome) error {
		if got := len(o.res.Plan.Unschedulable); got != n {
			return fmt.Errorf("%d unschedulable pods, want %d", got, n)
		}
		return nil
	}
}

// suiteNoRequirement: the named pod's new NodeClaim has no requirement on
// any of keys.
func suiteNoRequirement(name string, keys ...string) expectation {
	return func(o *outcome) error {
		at := o.at[name]
		if at == nil || at.claim == nil {
			return fmt.Errorf("pod %s is not on a new NodeClaim", name)
		}
		for _, k := range keys {
			if _, ok := at.claim.Requirements[k]; ok {
				return fmt.Errorf("NodeClaim %s has a requirement on %s", at.name, k)
			}
		}
		return nil
	}
}

// suiteZoneSpread and suiteHostSpread spread pods labelled foo=bar by
// zone and by node (pod spec fields, flow style).
const (
	suiteZoneSpread = "topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {foo: bar}}}]"
	suiteHostSpread = "topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {foo: bar}}}]"
)

// suiteZoneAnti keeps pods labelled app=multi-zone-app in different zones
// (a pod spec field, flow style).
const suiteZoneAnti = "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: multi-zone-app}}, topologyKey: topology.kubernetes.io/zone}]}}"

// suiteCSINode gives node room for count volumes of driver, and for 10
// of other-provider; "" node writes nothing.
func suiteCSINode(node, driver string, count int) string {
	if node == "" {
		return ""
	}
	return fmt.Sprintf("---\napiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: %s}\nspec: {drivers: [{name: %s, nodeID: %s-id, allocatable: {count: %d}}, {name: other-provider, nodeID: %s-id, allocatable: {count: 10}}]}\n",
		node, driver, node, count, node)
}

// suiteStorageClass is a StorageClass of provisioner whose volumes are
// in zone; mode "" is the default (Immediate).
func suiteStorageClass(name, provisioner, mode, zone string, isDefault bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s", name)
	if isDefault {
		b.WriteString(`, annotations: {storageclass.kubernetes.io/is-default-class: "true"}`)
	}
	fmt.Fprintf(&b, "}\nprovisioner: %s\n", provisioner)
	if mode != "" {
		fmt.Fprintf(&b, "volumeBindingMode: %s\n", mode)
	}
	fmt.Fprintf(&b, "allowedTopologies: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [%s]}]}]\n", zone)
	return b.String()
}

// suiteClaims writes unbound claims name-0 … name-(n-1) of storage class
// sc ("" for none), or with n 0 the one claim name.
func suiteClaims(name string, n int, sc string) string {
	names := []string{name}
	if n > 0 {
		names = nil
		for i := range n {
			names = append(names, fmt.Sprintf("%s-%d", name, i))
		}
	}
	class := ""
	if sc != "" {
		class = "storageClassName: " + sc + ", "
	}
	var b strings.Builder
	for _, c := range names {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %s, namespace: default}\nspec: {%saccessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n", c, class)
	}
	return b.String()
}

// suiteVolumePods writes pods name-0 … name-(n-1), each mounting the
// claims: a claim ending in "-*" is that pod's own, <claim>-i.
func suiteVolumePods(n int, name string, claims ...string) string {
	var b strings.Builder
	for i := range n {
		var vols []string
		for j, c := range claims {
			if prefix, own := strings.CutSuffix(c, "*"); own {
				c = fmt.Sprintf("%s%d", prefix, i)
			}
			vols = append(vols, fmt.Sprintf("{name: v%d, persistentVolumeClaim: {claimName: %s}}", j, c))
		}
		b.WriteString(suitePodSpec(fmt.Sprintf("%s-%d", name, i), "", "{containers: [{name: c, image: busybox}], volumes: ["+strings.Join(vols, ", ")+"]}"))
	}
	return b.String()
}

// suiteSharedVolumePods writes n pods mounting the one claim.
func suiteSharedVolumePods(n int, name, claim string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(suitePodSpec(fmt.Sprintf("%s-%d", name, i), "", "{containers: [{name: c, image: busybox}], volumes: [{name: v, persistentVolumeClaim: {claimName: "+claim+"}}]}"))
	}
	return b.String()
}

// suiteEphemeralPod is a pod with the generic ephemeral volume
// tmp-ephemeral of storage class sc ("" for none), bound to node unless
// node is "".
func suiteEphemeralPod(name, node, sc string) string {
	class := ""
	if sc != "" {
		class = "storageClassName: " + sc + ", "
	}
	bound := ""
	if node != "" {
		bound = "nodeName: " + node + ", "
	}
	return suitePodSpec(name, "", "{"+bound+"containers: [{name: c, image: busybox}], volumes: [{name: tmp-ephemeral, ephemeral: {volumeClaimTemplate: {spec: {"+
		class+"accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}]}")
}

// suiteMultiZonePV is a PV in us-east-1a or us-east-1b (two terms) with
// its bound claim.
func suiteMultiZonePV(pv, claim string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: %s}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]},
    {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}]}]}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {volumeName: %s, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Bound}
`, pv, pv, claim, pv)
}

// suiteHostOrZonePV is a pod whose claim's PV (source src) is on host
// existing-host or in zone invalid-zone.
func suiteHostOrZonePV(src string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolume
metadata: {name: hostname-or-zone-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  %s
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [existing-host]}]},
    {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [invalid-zone]}]}]}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: hostname-or-zone-pvc, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {volumeName: hostname-or-zone-pv, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Bound}
`, src) + suitePodSpec("hostname-or-zone-pod", "", "{containers: [{name: c, image: busybox}], volumes: [{name: v, persistentVolumeClaim: {claimName: hostname-or-zone-pvc}}]}")
}

// suiteNamedVolume is a pod whose claim names its PV, with or without the
// annotation saying the binding is complete.
func suiteNamedVolume(bindCompleted bool) string {
	ann := ""
	if bindCompleted {
		ann = `, annotations: {pv.kubernetes.io/bind-completed: "yes"}`
	}
	return suiteStorageClass("default-storage-class", "other-provider", "WaitForFirstConsumer", "us-east-1a", false) + fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolume
metadata: {name: my-volume}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], csi: {driver: other-provider, volumeHandle: vol-1}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: tmp-ephemeral, namespace: default%s}
spec: {storageClassName: default-storage-class, volumeName: my-volume, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`, ann) + suiteVolumePods(1, "p", "tmp-ephemeral")
}

// suiteBoundEphemeral is a pod whose ephemeral volume of storage class sc
// has its claim bound to a PV.
func suiteBoundEphemeral(sc string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolume
metadata: {name: test-pv}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: p-tmp-ephemeral, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {storageClassName: %s, volumeName: test-pv, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Bound}
`, sc) + suiteEphemeralPod("p", "", sc)
}

// suiteTerminatingPod is a pod on node being evicted (a deletion
// timestamp), owned by a controller of kind owner ("" for none).
func suiteTerminatingPod(name, node, owner string) string {
	refs := ""
	if owner != "" {
		refs = fmt.Sprintf(", ownerReferences: [{apiVersion: apps/v1, kind: %s, name: owner, uid: owner-uid, controller: true}]", owner)
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, deletionTimestamp: "2025-01-01T00:00:00Z", finalizers: [test/keep]%s}
spec: {nodeName: %s, containers: [{name: c, image: busybox, resources: {requests: {memory: 100M}}}]}
status: {phase: Running}
`, name, refs, node)
}

// suiteBlockedPod is a running pod labelled pdb-test=value on a deleting
// node, with a PodDisruptionBudget of each spec (flow maps) selecting it.
func suiteBlockedPod(pdbs ...string) string {
	var b strings.Builder
	b.WriteString(suiteNode{name: "n1", pool: "default", initialized: true, deleting: true}.yaml())
	b.WriteString(pod("p", "{pdb-test: value}", "{memory: 100M}", "{nodeName: n1}"))
	for i, spec := range pdbs {
		spec = strings.TrimSuffix(strings.TrimPrefix(spec, "{"), "}")
		fmt.Fprintf(&b, "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb-%d, namespace: default}\nspec: {selector: {matchLabels: {pdb-test: value}}, %s}\n", i, spec)
	}
	return b.String()
}

// suiteReservedClass is an EC2NodeClass that selects the simulated
// account's capacity reservation.
const suiteReservedClass = `---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: reserved}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  capacityReservationSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
`

// suiteReservedPool is a NodePool of EC2NodeClass reserved with spot,
// on-demand and reserved capacity and requirements reqs (a flow list
// without brackets' content, or "").
func suiteReservedPool(name, reqs string) string {
	all := "[{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved]}"
	if reqs != "" {
		all += ", " + strings.TrimPrefix(reqs, "[")
	} else {
		all += "]"
	}
	return fmt.Sprintf("---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: %s}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: reserved}\n      requirements: %s\n", name, all)
}

// suiteCount: exactly n placed pods are on nodes whose key is value.
func suiteCount(key, value string, n int) expectation {
	return func(o *outcome) error {
		got := 0
		for _, at := range o.at {
			if v, ok := at.label(key); ok && v == value {
				got++
			}
		}
		if got != n {
			return fmt.Errorf("%d placed pods on nodes with %s=%s, want %d", got, key, value, n)
		}
		return nil
	}
}
