package main

import (
	"fmt"
	"strings"
)

// A workload is Deployments (and DaemonSets) applied to an empty cluster,
// then the same Deployments scaled down.
type workload struct {
	name string
	// what says what the workload checks.
	what string
	apps []app
	// daemons are DaemonSets on every node.
	daemons []app
}

// app is a Deployment (or a DaemonSet: replicas unused).
type app struct {
	name              string
	replicas, down    int
	cpu, memory, gpus string
	// arch, when set, is the pods' kubernetes.io/arch node selector.
	arch string
	// zoneSpread spreads the pods over zones (maxSkew 1, DoNotSchedule).
	zoneSpread bool
}

var workloads = []workload{
	{name: "four-sizes", what: "Deployments of four pod sizes (100m to 1 CPU)", apps: []app{
		{name: "tiny", replicas: 60, down: 18, cpu: "100m", memory: "128Mi"},
		{name: "small", replicas: 60, down: 18, cpu: "250m", memory: "256Mi"},
		{name: "medium", replicas: 60, down: 18, cpu: "500m", memory: "512Mi"},
		{name: "large", replicas: 60, down: 18, cpu: "1", memory: "1Gi"},
	}},
	{name: "daemonsets", what: "the four sizes and three DaemonSets on every node (per-node overhead)", apps: []app{
		{name: "tiny", replicas: 40, down: 12, cpu: "100m", memory: "128Mi"},
		{name: "small", replicas: 40, down: 12, cpu: "250m", memory: "256Mi"},
		{name: "medium", replicas: 40, down: 12, cpu: "500m", memory: "512Mi"},
		{name: "large", replicas: 40, down: 12, cpu: "1", memory: "1Gi"},
	}, daemons: []app{
		{name: "log-agent", cpu: "200m", memory: "400Mi"},
		{name: "node-exporter", cpu: "100m", memory: "180Mi"},
		{name: "node-local-dns", cpu: "50m", memory: "64Mi"},
	}},
	{name: "zonal-spread", what: "Deployments spread evenly over the three zones", apps: []app{
		{name: "web", replicas: 45, down: 12, cpu: "500m", memory: "1Gi", zoneSpread: true},
		{name: "api", replicas: 45, down: 12, cpu: "1", memory: "2Gi", zoneSpread: true},
		{name: "worker", replicas: 45, down: 12, cpu: "250m", memory: "512Mi", zoneSpread: true},
	}},
	{name: "arm64-amd64", what: "pods for arm64 only, amd64 only, and either", apps: []app{
		{name: "arm", replicas: 50, down: 15, cpu: "500m", memory: "1Gi", arch: "arm64"},
		{name: "amd", replicas: 50, down: 15, cpu: "1", memory: "2Gi", arch: "amd64"},
		{name: "either", replicas: 50, down: 15, cpu: "250m", memory: "256Mi"},
	}},
	{name: "gpu", what: "pods of one NVIDIA GPU each beside CPU pods", apps: []app{
		{name: "trainer", replicas: 6, down: 2, cpu: "4", memory: "16Gi", gpus: "1"},
		{name: "inference", replicas: 8, down: 3, cpu: "2", memory: "8Gi", gpus: "1"},
		{name: "cpu", replicas: 40, down: 12, cpu: "500m", memory: "1Gi"},
	}},
}

// pods is how many Deployment pods the workload runs, scaled down or not.
func (w workload) pods(down bool) int {
	n := 0
	for _, a := range w.apps {
		n += a.count(down)
	}
	return n
}

func (a app) count(down bool) int {
	if down {
		return a.down
	}
	return a.replicas
}

// manifest is the workload's Deployments, scaled down or not.
func (w workload) manifest(down bool) []byte {
	var b strings.Builder
	for _, a := range w.apps {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
%s`, a.name, a.count(down), a.name, a.name, a.podSpec())
	}
	return []byte(b.String())
}

// daemonSets are the workload's DaemonSets: applied with the NodePool,
// before the Deployments, as a cluster has them before its workloads, and
// of priority system-node-critical, as node agents are: kube-scheduler
// binds pods to a new node in its own order, and a DaemonSet's pod that
// finds its node full takes its room back by preemption.
func (w workload) daemonSets() []byte {
	var b strings.Builder
	for _, d := range w.daemons {
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: %s, namespace: default}
spec:
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      priorityClassName: system-node-critical
%s`, d.name, d.name, d.name, d.podSpec())
	}
	return []byte(b.String())
}

// podSpec is the pod template's spec, indented for the template.
func (a app) podSpec() string {
	var b strings.Builder
	if a.arch != "" {
		fmt.Fprintf(&b, "      nodeSelector: {kubernetes.io/arch: %s}\n", a.arch)
	}
	if a.zoneSpread {
		fmt.Fprintf(&b, "      topologySpreadConstraints:\n        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: %s}}}\n", a.name)
	}
	requests := fmt.Sprintf("cpu: %q, memory: %q", a.cpu, a.memory)
	if a.gpus != "" {
		requests += fmt.Sprintf(", nvidia.com/gpu: %q", a.gpus)
	}
	limits := ""
	if a.gpus != "" {
		limits = fmt.Sprintf(", limits: {nvidia.com/gpu: %q}", a.gpus)
	}
	fmt.Fprintf(&b, "      terminationGracePeriodSeconds: 0\n      containers:\n        - {name: app, image: public.ecr.aws/docker/library/busybox:latest, resources: {requests: {%s}%s}}\n", requests, limits)
	return b.String()
}

// The NodePools of both: any architecture, on-demand, Linux, consolidating
// what is empty or underutilized at once with every node allowed at a time.
const poolSpec = `  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]
  template:
    spec:
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`

// referencePool is the reference's NodePool and KWOK node class.
const referencePool = `apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
` + poolSpec + `      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
`

// nodewrightPool is nodewright's NodePool, its EC2NodeClass in the
// simulated account, and the node role's aws-auth entry.
const nodewrightPool = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
` + poolSpec + `      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: aws-auth, namespace: kube-system}
data:
  mapRoles: |
    - rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim
      username: system:node:{{EC2PrivateDNSName}}
      groups: [system:bootstrappers, system:nodes]
`
