package crds_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

const validNodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: placeholder
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: nodewright-sim
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: nodewright-sim
`

const validNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: placeholder
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
`

const validNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: placeholder
spec:
  nodeClassRef:
    group: karpenter.k8s.aws
    kind: EC2NodeClass
    name: default
  requirements:
    - key: node.kubernetes.io/instance-type
      operator: In
      values: ["m5.large"]
`

const validNodeOverlay = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: placeholder
spec:
  requirements:
    - key: node.kubernetes.io/instance-type
      operator: In
      values: ["m5.large"]
  priceAdjustment: "-10%"
`

const validCapacityBuffer = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: placeholder
  namespace: default
spec:
  podTemplateRef: {name: web}
  replicas: 3
`

var invalidCapacityBuffers = []invalid{
	{"podTemplateRef without replicas or limits", validCapacityBuffer, `spec: {replicas: null}`,
		"spec", "If podTemplateRef is set, replicas or limits must also be set"},
	{"podTemplateRef and scalableRef", validCapacityBuffer, `spec: {scalableRef: {apiGroup: apps, kind: Deployment, name: web}}`,
		"spec", "You must define either PodTemplateRef or ScalableRef, but not both"},
	{"negative replicas", validCapacityBuffer, `spec: {replicas: -1}`,
		"spec.replicas", "should be greater than or equal to 0"},
	{"negative percentage", validCapacityBuffer, `spec: {podTemplateRef: null, scalableRef: {kind: Deployment, name: web}, percentage: -5}`,
		"spec.percentage", "should be greater than or equal to 0"},
}

// invalid is an object the API server must reject: a valid base object with
// a JSON merge patch (in YAML) applied, and where and why it is rejected.
type invalid struct {
	name    string
	base    string
	patch   string
	field   string // the field path the API server names
	message string // a fragment of the message a person reads
}

var invalidNodeClasses = []invalid{
	{"enclaveOptions without enabled", validNodeClass, `spec: {enclaveOptions: {}}`,
		"spec.enclaveOptions.enabled", "Required value"},
	{"role and instanceProfile", validNodeClass, `spec: {instanceProfile: KarpenterNodeInstanceProfile}`,
		"spec", "set exactly one of role"},
	{"neither role nor instanceProfile", validNodeClass, `spec: {role: null}`,
		"spec", "set exactly one of role"},
	{"empty role", validNodeClass, `spec: {role: ""}`,
		"spec.role", "role cannot be empty"},
	{"alias with another term", validNodeClass, `spec: {amiSelectorTerms: [{alias: al2023@latest}, {id: ami-0123}]}`,
		"spec.amiSelectorTerms", "alias term must be the only amiSelectorTerm"},
	{"alias without version", validNodeClass, `spec: {amiSelectorTerms: [{alias: al2023}]}`,
		"spec.amiSelectorTerms[0].alias", "alias must be family@version"},
	{"alias of unknown family", validNodeClass, `spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}`,
		"spec.amiSelectorTerms[0].alias", "unknown alias family"},
	{"windows alias pinned", validNodeClass, `spec: {amiSelectorTerms: [{alias: windows2022@v20240101}]}`,
		"spec.amiSelectorTerms[0].alias", "Windows aliases can only use the version latest"},
	{"no alias and no amiFamily", validNodeClass, `spec: {amiSelectorTerms: [{id: ami-0a1b2c3d4e5f60001}]}`,
		"spec", "amiFamily is required unless amiSelectorTerms uses an alias"},
	{"amiFamily contradicts alias", validNodeClass, `spec: {amiFamily: AL2}`,
		"spec", "Invalid value: \"object\": with an al2023@ alias, amiFamily must be AL20"},
	{"unknown amiFamily", validNodeClass, `spec: {amiFamily: Ubuntu, amiSelectorTerms: [{id: ami-0123}]}`,
		"spec.amiFamily", `Unsupported value: "Ubuntu"`},
	{"empty AMI term", validNodeClass, `spec: {amiSelectorTerms: [{}]}`,
		"spec", "Invalid value: \"object\": amiFamily is required unless amiSelectorTerms"},
	{"AMI id with tags", validNodeClass, `spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123, tags: {team: a}}]}`,
		"spec.amiSelectorTerms", "id selects one AMI and cannot be combined"},
	{"no AMI terms", validNodeClass, `spec: {amiSelectorTerms: []}`,
		"spec.amiSelectorTerms", "should have at least 1 items"},
	{"empty subnet term", validNodeClass, `spec: {subnetSelectorTerms: [{}]}`,
		"spec.subnetSelectorTerms", "each subnetSelectorTerm needs tags or id"},
	{"subnet id with tags", validNodeClass, `spec: {subnetSelectorTerms: [{id: subnet-0123, tags: {a: b}}]}`,
		"spec.subnetSelectorTerms", "id selects one subnet"},
	{"empty subnet tag value", validNodeClass, `spec: {subnetSelectorTerms: [{tags: {karpenter.sh/discovery: ""}}]}`,
		"spec.subnetSelectorTerms[0].tags", "tag keys and values cannot be empty"},
	{"31 subnet terms", validNodeClass, "spec: {subnetSelectorTerms: [" + strings.Repeat("{id: subnet-0123}, ", 30) + "{id: subnet-0123}]}",
		"spec.subnetSelectorTerms", "must have at most 30 items"},
	{"empty security group term", validNodeClass, `spec: {securityGroupSelectorTerms: [{}]}`,
		"spec.securityGroupSelectorTerms", "each securityGroupSelectorTerm needs tags, id or name"},
	{"security group id with name", validNodeClass, `spec: {securityGroupSelectorTerms: [{id: sg-0123, name: nodes}]}`,
		"spec.securityGroupSelectorTerms", "id selects one security group"},
	{"cluster tag", validNodeClass, `spec: {tags: {kubernetes.io/cluster/nodewright-sim: owned}}`,
		"spec.tags", "are set by nodewright to find its own instances"},
	{"nodepool tag", validNodeClass, `spec: {tags: {karpenter.sh/nodepool: default}}`,
		"spec.tags", "Invalid value: \"object\": the tag karpenter.sh/nodepool is set by nodew"},
	{"two root volumes", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}]}`,
		"spec.blockDeviceMappings", "at most one block device mapping can be the rootVolume"},
	{"volume without size or snapshot", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]}`,
		"spec.blockDeviceMappings[0].ebs", "an EBS volume needs volumeSize or snapshotID"},
	{"volume size in MiB", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 512Mi}}]}`,
		"spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
	{"volume size above 64T", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100T}}]}`,
		"spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
	{"volume size above 59000Gi", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 59001Gi}}]}`,
		"spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
	{"volume size 59Ti", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 59Ti}}]}`,
		"spec.blockDeviceMappings[0].ebs.volumeSize", "should match"},
	{"security group name with tags", validNodeClass, `spec: {securityGroupSelectorTerms: [{name: my-security-group, tags: {test: testvalue}}]}`,
		"spec.securityGroupSelectorTerms", "name selects security groups by group name and cannot be combined with tags"},
	{"capacity reservation tag with an empty key", validNodeClass, `spec: {capacityReservationSelectorTerms: [{tags: {"": x}}]}`,
		"spec.capacityReservationSelectorTerms[0].tags", "tag keys and values cannot be empty"},
	{"capacity reservation tag with an empty value", validNodeClass, `spec: {capacityReservationSelectorTerms: [{tags: {test: ""}}]}`,
		"spec.capacityReservationSelectorTerms[0].tags", "tag keys and values cannot be empty"},
	{"volumeInitializationRate without a snapshot", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvdb, ebs: {volumeSize: 20Gi, volumeInitializationRate: 200}}]}`,
		"spec.blockDeviceMappings[0].ebs", "volumeInitializationRate needs snapshotID"},
	{"volumeInitializationRate below 100", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvdb, ebs: {snapshotID: snap-0123, volumeInitializationRate: 99}}]}`,
		"spec.blockDeviceMappings[0].ebs.volumeInitializationRate", "should be greater than or equal to 100"},
	{"volumeInitializationRate above 300", validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvdb, ebs: {snapshotID: snap-0123, volumeInitializationRate: 301}}]}`,
		"spec.blockDeviceMappings[0].ebs.volumeInitializationRate", "should be less than or equal to 300"},
	{"metadata hop limit zero", validNodeClass, `spec: {metadataOptions: {httpPutResponseHopLimit: 0}}`,
		"spec.metadataOptions.httpPutResponseHopLimit", "should be greater than or equal to 1"},
	{"network interfaces without the primary", validNodeClass, `spec: {networkInterfaces: [{networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]}`,
		"spec.networkInterfaces", "must include the primary interface"},
	{"network interfaces repeating a card and device", validNodeClass, `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}]}`,
		"spec.networkInterfaces", "cannot repeat a networkCardIndex and deviceIndex pair"},
	{"two efa-only interfaces on one card", validNodeClass, `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}]}`,
		"spec.networkInterfaces", "at most one efa-only interface per network card"},
	{"unknown interface type", validNodeClass, `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa}]}`,
		"spec.networkInterfaces[0].interfaceType", "Unsupported value"},
	{"negative device index", validNodeClass, `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: -1, interfaceType: interface}]}`,
		"spec.networkInterfaces[0].deviceIndex", "should be greater than or equal to 0"},
	{"connection tracking without a timeout", validNodeClass, `spec: {connectionTracking: {}}`,
		"spec.connectionTracking", "needs at least one of tcpEstablishedTimeout"},
	{"TCP established timeout too long", validNodeClass, `spec: {connectionTracking: {tcpEstablishedTimeout: 432001}}`,
		"spec.connectionTracking.tcpEstablishedTimeout", "should be less than or equal to 432000"},
	{"UDP timeout too short", validNodeClass, `spec: {connectionTracking: {udpTimeout: 29}}`,
		"spec.connectionTracking.udpTimeout", "should be greater than or equal to 30"},
	{"UDP stream timeout too long", validNodeClass, `spec: {connectionTracking: {udpStreamTimeout: 181}}`,
		"spec.connectionTracking.udpStreamTimeout", "should be less than or equal to 180"},
	{"placement group by name and id", validNodeClass, `spec: {placementGroupSelector: {name: my-pg, id: pg-0123}}`,
		"spec.placementGroupSelector", "takes name or id, not both"},
	{"empty placement group selector", validNodeClass, `spec: {placementGroupSelector: {}}`,
		"spec.placementGroupSelector", "needs name or id"},
	{"placement group id pattern", validNodeClass, `spec: {placementGroupSelector: {id: my-pg}}`,
		"spec.placementGroupSelector.id", "should match"},
	{"negative ipPrefixCount", validNodeClass, `spec: {ipPrefixCount: -1}`,
		"spec.ipPrefixCount", "should be greater than or equal to 0"},
	{"unknown nested virtualization", validNodeClass, `spec: {cpuOptions: {nestedVirtualization: on}}`,
		"spec.cpuOptions.nestedVirtualization", "Unsupported value"},
	{"reservation id with instanceMatchCriteria", validNodeClass, `spec: {capacityReservationSelectorTerms: [{id: cr-0123, instanceMatchCriteria: open}]}`,
		"spec.capacityReservationSelectorTerms", "id selects one capacity reservation"},
	{"unknown instanceMatchCriteria", validNodeClass, `spec: {capacityReservationSelectorTerms: [{instanceMatchCriteria: any}]}`,
		"spec.capacityReservationSelectorTerms[0].instanceMatchCriteria", "Unsupported value"},
}

var invalidNodePools = []invalid{
	{"weight zero", validNodePool, `spec: {weight: 0}`,
		"spec.weight", "should be greater than or equal to 1"},
	{"weight above 100", validNodePool, `spec: {weight: 101}`,
		"spec.weight", "should be less than or equal to 100"},
	{"unknown operator", validNodePool, `spec: {template: {spec: {requirements: [{key: kubernetes.io/arch, operator: Equals, values: [amd64]}]}}}`,
		"spec.template.spec.requirements[0].operator", `Unsupported value: "Equals"`},
	{"In without values", validNodePool, `spec: {template: {spec: {requirements: [{key: kubernetes.io/arch, operator: In}]}}}`,
		"spec.template.spec.requirements", "operator In needs at least one value"},
	{"Gt with two values", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4", "5"]}]}}}`,
		"spec.template.spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number"},
	{"Lt with a word", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: [many]}]}}}`,
		"spec.template.spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number"},
	{"minValues above the values", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 3}]}}}`,
		"spec.template.spec.requirements", "minValues cannot be larger than the number of values"},
	{"requirement on hostname", validNodePool, `spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [node-a]}]}}}`,
		"spec.template.spec.requirements[0].key", "Invalid value: \"string\": kubernetes.io/hostname is every node's own na"},
	{"requirement on nodepool", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [other]}]}}}`,
		"spec.template.spec.requirements[0].key", "karpenter.sh/nodepool is set to the NodePool's own name"},
	{"requirement on an unknown karpenter.k8s.aws label", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-colour, operator: In, values: [blue]}]}}}`,
		"spec.template.spec.requirements[0].key", "of the karpenter.k8s.aws labels only the well-known ones"},
	{"requirement key malformed", validNodePool, `spec: {template: {spec: {requirements: [{key: "pod type", operator: Exists}]}}}`,
		"spec.template.spec.requirements[0].key", "should match"},
	{"hostname label", validNodePool, `spec: {template: {metadata: {labels: {kubernetes.io/hostname: node-a}}}}`,
		"spec.template.metadata.labels", "Invalid value: \"object\": kubernetes.io/hostname is every node's own na"},
	{"nodepool label", validNodePool, `spec: {template: {metadata: {labels: {karpenter.sh/nodepool: other}}}}`,
		"spec.template.metadata.labels", "Invalid value: \"object\": karpenter.sh/nodepool is set to the NodePool'"},
	{"do-not-sync-taints label", validNodePool, `spec: {template: {metadata: {labels: {karpenter.sh/do-not-sync-taints: "true"}}}}`,
		"spec.template.metadata.labels", "Invalid value: \"object\": of the karpenter.sh labels only karpenter.sh/"},
	{"unknown karpenter.k8s.aws label", validNodePool, `spec: {template: {metadata: {labels: {karpenter.k8s.aws/instance-colour: blue}}}}`,
		"spec.template.metadata.labels", "of the karpenter.k8s.aws labels only the well-known ones"},
	{"label value with a space", validNodePool, `spec: {template: {metadata: {labels: {pod-type: arm app}}}}`,
		"spec.template.metadata.labels.pod-type", "should match"},
	{"label value too long", validNodePool, "spec: {template: {metadata: {labels: {pod-type: " + strings.Repeat("a", 64) + "}}}}",
		"spec.template.metadata.labels.pod-type", "may not be more than 63 bytes"},
	{"taint effect", validNodePool, `spec: {template: {spec: {taints: [{key: dedicated, value: gpu, effect: NoScheduleNow}]}}}`,
		"spec.template.spec.taints[0].effect", "Unsupported value"},
	{"startup taint effect", validNodePool, `spec: {template: {spec: {startupTaints: [{key: node.cilium.io/agent-not-ready, effect: Evict}]}}}`,
		"spec.template.spec.startupTaints[0].effect", "Unsupported value"},
	{"budget reasons repeated", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", reasons: [Empty, Empty]}]}}`,
		"spec.disruption.budgets[0].reasons[1]", "Duplicate value"},
	{"budget duration minutes before hours", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "@daily", duration: 1m1h}]}}`,
		"spec.disruption.budgets[0].duration", "should match"},
	{"budget duration hours twice", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", schedule: "@daily", duration: 1h1h}]}}`,
		"spec.disruption.budgets[0].duration", "should match"},
	{"budget nodes a word", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: ten}]}}`,
		"spec.disruption.budgets[0].nodes", "should match"},
	{"budget nodes above 100%", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: 150%}]}}`,
		"spec.disruption.budgets[0].nodes", "should match"},
	{"budget schedule without duration", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "0", schedule: "0 9 * * 1-5"}]}}`,
		"spec.disruption.budgets", "schedule and duration must be set together"},
	{"budget schedule malformed", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "0", schedule: "weekdays", duration: 8h}]}}`,
		"spec.disruption.budgets[0].schedule", "should match"},
	{"budget duration in seconds", validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "0", schedule: "@daily", duration: 30s}]}}`,
		"spec.disruption.budgets[0].duration", "should match"},
	{"consolidateAfter in words", validNodePool, `spec: {disruption: {consolidateAfter: 5 minutes}}`,
		"spec.disruption.consolidateAfter", "should match"},
	{"unknown consolidationPolicy", validNodePool, `spec: {disruption: {consolidateAfter: 0s, consolidationPolicy: WhenUnderutilized}}`,
		"spec.disruption.consolidationPolicy", `Unsupported value: "WhenUnderutilized"`},
	{"expireAfter forever", validNodePool, `spec: {template: {spec: {expireAfter: forever}}}`,
		"spec.template.spec.expireAfter", "should match"},
	{"terminationGracePeriod a number", validNodePool, `spec: {template: {spec: {terminationGracePeriod: "3600"}}}`,
		"spec.template.spec.terminationGracePeriod", "should match"},
	{"nodeClassRef without name", validNodePool, `spec: {template: {spec: {nodeClassRef: {name: null}}}}`,
		"spec.template.spec.nodeClassRef.name", "Required value"},
	{"nodeClassRef with empty kind", validNodePool, `spec: {template: {spec: {nodeClassRef: {kind: ""}}}}`,
		"spec.template.spec.nodeClassRef.kind", "kind must name the node class's kind"},
	{"Gt with a negative value", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["-1"]}]}}}`,
		"spec.template.spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more"},
	{"nodeClassRef group with a version", validNodePool, `spec: {template: {spec: {nodeClassRef: {group: karpenter.test.sh/v1}}}}`,
		"spec.template.spec.nodeClassRef.group", "should match"},
	{"taint with an empty key", validNodePool, `spec: {template: {spec: {taints: [{key: "", effect: NoSchedule}]}}}`,
		"spec.template.spec.taints[0].key", "Invalid value: \"\": spec.template.spec.taints[0].key in body should be "},
	{"taint key ???", validNodePool, `spec: {template: {spec: {taints: [{key: "???", effect: NoSchedule}]}}}`,
		"spec.template.spec.taints[0].key", "should match"},
	{"taint key with two slashes", validNodePool, `spec: {template: {spec: {taints: [{key: test/test/test, effect: NoSchedule}]}}}`,
		"spec.template.spec.taints[0].key", "should match"},
	{"taint key with a capital in its prefix", validNodePool, `spec: {template: {spec: {taints: [{key: Test.com/test, effect: NoSchedule}]}}}`,
		"spec.template.spec.taints[0].key", "should match"},
	{"startup taint key ending in /", validNodePool, `spec: {template: {spec: {startupTaints: [{key: "test/", effect: NoSchedule}]}}}`,
		"spec.template.spec.startupTaints[0].key", "should match"},
	{"taint value ???", validNodePool, `spec: {template: {spec: {taints: [{key: example.com/dedicated, value: "???", effect: NoSchedule}]}}}`,
		"spec.template.spec.taints[0].value", "should match"},
	{"no nodeClassRef", validNodePool, `spec: {template: {spec: {nodeClassRef: null}}}`,
		"spec.template.spec.nodeClassRef", "Required value"},
	{"Gte with a negative value", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["-1"]}]}}}`,
		"spec.template.spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more"},
	{"Lte with two values", validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["4", "8"]}]}}}`,
		"spec.template.spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number"},
	{"negative replicas", validNodePool, `spec: {replicas: -100}`,
		"spec.replicas", "should be greater than or equal to 0"},
	{"static pool with a cpu limit", validNodePool, `spec: {replicas: 3, limits: {cpu: "10", nodes: "5"}}`,
		"spec", "supports only limits.nodes"},
	{"static pool with a memory limit", validNodePool, `spec: {replicas: 3, limits: {memory: 10Gi}}`,
		"spec", "supports only limits.nodes"},
	{"static pool with weight", validNodePool, `spec: {replicas: 3, weight: 10}`,
		"spec", "a static NodePool (replicas set) has no weight"},
}

var invalidNodeClaims = []invalid{
	{"no nodeClassRef", validNodeClaim, `spec: {nodeClassRef: null}`,
		"spec.nodeClassRef", "Required value"},
	{"taint effect", validNodeClaim, `spec: {taints: [{key: a, effect: Sometimes}]}`,
		"spec.taints[0].effect", "Unsupported value"},
	{"taint key ???", validNodeClaim, `spec: {taints: [{key: "???", effect: NoSchedule}]}`,
		"spec.taints[0].key", "should match"},
	{"startup taint with an empty key", validNodeClaim, `spec: {startupTaints: [{key: "", effect: NoSchedule}]}`,
		"spec.startupTaints[0].key", "Invalid value: \"\": spec.startupTaints[0].key in body should be at leas"},
	{"requirement on another karpenter.sh label", validNodeClaim, `spec: {requirements: [{key: karpenter.sh/unregistered, operator: Exists}]}`,
		"spec.requirements[0].key", "Invalid value: \"string\": of the karpenter.sh labels only karpenter.sh/"},
	{"requirement on an unknown karpenter.k8s.aws label", validNodeClaim, `spec: {requirements: [{key: karpenter.k8s.aws/instance-colour, operator: In, values: [blue]}]}`,
		"spec.requirements[0].key", "of the karpenter.k8s.aws labels only the well-known ones"},
	{"nodeClassRef group with a version", validNodeClaim, `spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}`,
		"spec.nodeClassRef.group", "should match"},
	{"Lt with a negative value", validNodeClaim, `spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["-4"]}]}`,
		"spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more"},
}

var invalidNodeOverlays = []invalid{
	{"price and priceAdjustment", validNodeOverlay, `spec: {price: "0.10"}`,
		"spec", "set price or priceAdjustment, not both"},
	{"price negative", validNodeOverlay, `spec: {priceAdjustment: null, price: "-1"}`,
		"spec.price", "should match"},
	{"priceAdjustment without a sign", validNodeOverlay, `spec: {priceAdjustment: "10"}`,
		"spec.priceAdjustment", "should match"},
	{"priceAdjustment below -100%", validNodeOverlay, `spec: {priceAdjustment: "-150%"}`,
		"spec.priceAdjustment", "should match"},
	{"capacity of cpu", validNodeOverlay, `spec: {capacity: {cpu: "2"}}`,
		"spec.capacity", "capacity adds extended resources"},
	{"weight zero", validNodeOverlay, `spec: {weight: 0}`,
		"spec.weight", "should be greater than or equal to 1"},
	{"weight above 10000", validNodeOverlay, `spec: {weight: 10001}`,
		"spec.weight", "should be less than or equal to 10000"},
	{"no requirements", validNodeOverlay, `spec: {requirements: null}`,
		"spec.requirements", "Required value"},
	{"In without values", validNodeOverlay, `spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: In}]}`,
		"spec.requirements", "no such key"},
	{"NotIn without values", validNodeOverlay, `spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: NotIn}]}`,
		"spec.requirements", "no such key"},
	{"Gte with a negative value", validNodeOverlay, `spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["-1"]}]}`,
		"spec.requirements", "operators Gt, Lt, Gte and Lte take exactly one whole number"},
	{"requirement on hostname", validNodeOverlay, `spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}`,
		"spec.requirements[0].key", "Invalid value: \"string\": kubernetes.io/hostname is every node's own na"},
	{"requirement on a karpenter.sh label", validNodeOverlay, `spec: {requirements: [{key: karpenter.sh/unknown, operator: Exists}]}`,
		"spec.requirements[0].key", "of the karpenter.sh labels only"},
	{"requirement on a capacity reservation", validNodeOverlay, `spec: {requirements: [{key: karpenter.k8s.aws/capacity-reservation-id, operator: In, values: [cr-1]}]}`,
		"spec.requirements[0].key", "Invalid value: \"string\": of the karpenter.k8s.aws labels only the well"},
}

func TestInvalidObjectsAreRejected(t *testing.T) {
	total := len(invalidNodeClasses) + len(invalidNodePools) + len(invalidNodeClaims)
	if total < 30 {
		t.Fatalf("only %d invalid objects; the API promises at least 30 checks", total)
	}
	for kind, cases := range map[string][]invalid{
		"EC2NodeClass": invalidNodeClasses, "NodePool": invalidNodePools, "NodeClaim": invalidNodeClaims, "NodeOverlay": invalidNodeOverlays,
		"CapacityBuffer": invalidCapacityBuffers,
	} {
		for i, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				obj := patched(t, tc.base, tc.patch)
				obj.SetName(fmt.Sprintf("invalid-%d", i))
				err := kube.Create(context.Background(), obj)
				if err == nil {
					_ = kube.Delete(context.Background(), obj)
					t.Fatalf("the API server accepted the %s; want it rejected at %s with %q", kind, tc.field, tc.message)
				}
				assertRejection(t, err, tc.field, tc.message)
			})
		}
	}
}

// The base objects themselves are valid, so each rejection above is caused
// by its patch alone.
func TestValidBasesAreAccepted(t *testing.T) {
	for _, base := range []string{validNodeClass, validNodePool, validNodeClaim, validNodeOverlay, validCapacityBuffer} {
		obj := patched(t, base, "{}")
		obj.SetName("valid-base")
		if err := kube.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating the valid %s: %v", obj.GetKind(), err)
		}
		if err := kube.Delete(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNodeClaimSpecIsImmutable(t *testing.T) {
	ctx := context.Background()
	obj := patched(t, validNodeClaim, "{}")
	obj.SetName("immutable")
	if err := kube.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, obj) })

	changed := patched(t, validNodeClaim, `spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}]}`)
	changed.SetName("immutable")
	changed.SetResourceVersion(obj.GetResourceVersion())
	err := kube.Update(ctx, changed)
	if err == nil {
		t.Fatal("the API server accepted a change to a NodeClaim's spec")
	}
	assertRejection(t, err, "spec", "spec is immutable")

	// Labels and annotations stay mutable: the controller writes them.
	obj.SetLabels(map[string]string{"team": "a"})
	if err := kube.Update(ctx, obj); err != nil {
		t.Fatalf("updating a NodeClaim's labels: %v", err)
	}
}

// patched applies a YAML merge patch to a YAML object.
func patched(t *testing.T, base, patch string) *unstructured.Unstructured {
	t.Helper()
	baseJSON, err := yaml.YAMLToJSON([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	patchJSON, err := yaml.YAMLToJSON([]byte(patch))
	if err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	merged, err := jsonpatch.MergePatch(baseJSON, patchJSON)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(merged); err != nil {
		t.Fatal(err)
	}
	return obj
}

// assertRejection checks that err is the API server's Invalid error with a
// cause at field whose message contains fragment.
func assertRejection(t *testing.T, err error, field, fragment string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error from the API server, got %v", err)
	}
	details := status.Status().Details
	if details == nil {
		t.Fatalf("the rejection carries no details: %v", err)
	}
	for _, cause := range details.Causes {
		if cause.Field == field && strings.Contains(cause.Message, fragment) {
			return
		}
	}
	t.Errorf("no cause at %s mentioning %q; the API server said:\n%v", field, fragment, err)
}

// A NodePool's nodeClassRef may point at another EC2NodeClass, but not at
// another group or kind of node class.
func TestNodePoolNodeClassRefGroupAndKindAreImmutable(t *testing.T) {
	ctx := context.Background()
	obj := patched(t, validNodePool, "{}")
	obj.SetName("noderef")
	if err := kube.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
	for _, c := range []struct{ patch, field, message string }{
		{`spec: {template: {spec: {nodeClassRef: {group: other.example.com}}}}`, "spec.template.spec.nodeClassRef", "nodeClassRef.group cannot change"},
		{`spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}`, "spec.template.spec.nodeClassRef", "nodeClassRef.kind cannot change"},
	} {
		changed := patched(t, validNodePool, c.patch)
		changed.SetName("noderef")
		changed.SetResourceVersion(obj.GetResourceVersion())
		err := kube.Update(ctx, changed)
		if err == nil {
			t.Fatalf("the API server accepted %s", c.patch)
		}
		assertRejection(t, err, c.field, c.message)
	}
	renamed := patched(t, validNodePool, `spec: {template: {spec: {nodeClassRef: {name: other}, taints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}, {key: plain, effect: NoExecute}]}}}`)
	renamed.SetName("noderef")
	renamed.SetResourceVersion(obj.GetResourceVersion())
	if err := kube.Update(ctx, renamed); err != nil {
		t.Errorf("pointing the NodePool at another EC2NodeClass, with taints Kubernetes accepts: %v", err)
	}
}

// Values at the limits, and the forms the reference's own tests accept,
// are accepted.
func TestValuesAtTheLimitsAreAccepted(t *testing.T) {
	ctx := context.Background()
	for i, c := range []struct{ base, patch string }{
		{validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 64T}}]}`},
		{validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 58Ti}}]}`},
		{validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 64000G}}]}`},
		{validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 59000Gi}}]}`},
		{validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 500G}}]}`},
		{validNodeClass, `spec: {blockDeviceMappings: [{deviceName: /dev/xvdb, ebs: {snapshotID: snap-0123, volumeInitializationRate: 300}}]}`},
		{validNodeClass, `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}], ipPrefixCount: 0}`},
		{validNodeClass, `spec: {connectionTracking: {tcpEstablishedTimeout: 432000, udpStreamTimeout: 60, udpTimeout: 60}, cpuOptions: {nestedVirtualization: enabled}}`},
		{validNodeClass, `spec: {placementGroup: {id: pg-0123456789abcdef0}, capacityReservationSelectorTerms: [{instanceMatchCriteria: targeted, ownerID: "012345678901"}]}`},
		{validNodeClass, `spec: {securityGroupSelectorTerms: [{name: my-security-group}, {tags: {test: testvalue}}]}`},
		{validNodeClass, `spec: {kubelet: {evictionHard: {memory.available: 100%, nodefs.available: 0%, imagefs.available: 12.5%, pid.available: "1000", nodefs.inodesFree: 5k}, evictionSoft: {memory.available: 500Mi}, evictionSoftGracePeriod: {memory.available: 1m30s}, kubeReserved: {cpu: 100m, memory: 1Gi, ephemeral-storage: 1G, pid: "100"}, systemReserved: {memory: "0"}}}`},
		{validNodePool, `spec: {disruption: {consolidateAfter: 0s, budgets: [{nodes: "1", reasons: [Empty, Drifted], schedule: "@daily", duration: 1h30m}]}}`},
		{validNodePool, `spec: {disruption: {consolidateAfter: Never, budgets: [{nodes: "1", schedule: "0 9 * * 1-5", duration: 30m0s}]}}`},
		// Static NodePools: any number of replicas from 0, limits.nodes.
		{validNodePool, `spec: {replicas: 0}`},
		{validNodePool, `spec: {replicas: 1000, limits: {nodes: "1200"}}`},
		{validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["0"]}]}}}`},
		{validNodePool, `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}, {key: karpenter.k8s.aws/instance-memory, operator: Lte, values: ["65536"]}]}}}`},
		{validNodeClaim, `spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["0"]}]}`},
		{validNodeClaim, `spec: {taints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}], startupTaints: [{key: node.cilium.io/agent-not-ready, effect: NoExecute}]}`},
		// Label domains: Kubernetes' own (kOps's among them) and the AWS
		// well-known labels, as the reference accepts them.
		{validNodePool, `spec: {template: {metadata: {labels: {kops.k8s.io/instancegroup: nodes, kubernetes.io/key: a, k8s.io/key: b, subdomain.kubernetes.io/key: c, node-role.kubernetes.io/worker: "", karpenter.k8s.aws/instance-family: m5, topology.k8s.aws/zone-id: use1-az1}}}}`},
		{validNodePool, `spec: {template: {spec: {requirements: [{key: kubernetes.io/role, operator: In, values: [worker]}, {key: subdomain.k8s.io/test, operator: Exists}, {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["4"]}]}}}`},
		{validNodeOverlay, `spec: {priceAdjustment: "+0.05", capacity: {hugepages-2Mi: 100Mi, smarter-devices/fuse: "1"}, weight: 10000}`},
		{validNodeOverlay, `spec: {priceAdjustment: "-100%"}`},
		{validNodeOverlay, `spec: {priceAdjustment: null, price: "5.00", requirements: []}`},
		{validNodeOverlay, `spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [general]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}, {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}, {key: team, operator: Exists}]}`},
		{validNodeClaim, `spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [general]}, {key: karpenter.k8s.aws/capacity-reservation-id, operator: In, values: [cr-0123]}]}`},
	} {
		obj := patched(t, c.base, c.patch)
		obj.SetName(fmt.Sprintf("limit-%d", i))
		if err := kube.Create(ctx, obj); err != nil {
			t.Errorf("%s %s: %v", obj.GetKind(), c.patch, err)
			continue
		}
		_ = kube.Delete(ctx, obj)
	}
}
