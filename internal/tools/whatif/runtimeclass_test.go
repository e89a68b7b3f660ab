package whatif_test

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

const runtimeClassPool = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  role: KarpenterNodeRole-prod-eu
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: prod-eu
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: prod-eu
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: sandboxed
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
          values: ["amd64", "arm64"]
      taints:
        - key: sandbox.gvisor.dev/runtime
          value: gvisor
          effect: NoSchedule
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: untrusted
spec:
  replicas: 2
  selector:
    matchLabels:
      app: untrusted
  template:
    metadata:
      labels:
        app: untrusted
    spec:
      runtimeClassName: gvisor
      containers:
        - name: app
          image: registry.example/app:1
          resources:
            requests:
              cpu: 500m
              memory: 512Mi
`

const gvisor = `---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
overhead:
  podFixed:
    cpu: 250m
    memory: 120Mi
scheduling:
  nodeSelector:
    kubernetes.io/arch: arm64
  tolerations:
    - key: sandbox.gvisor.dev/runtime
      operator: Equal
      value: gvisor
      effect: NoSchedule
`

// graviton matches the names of AWS's arm64 instance types.
var graviton = regexp.MustCompile(`^[a-z]+[0-9]+g[a-z-]*\.`)

// Pods naming a RuntimeClass are planned as RuntimeClass admission
// creates them: with its overhead in their requests and its node selector
// and tolerations; without the class among the inputs, the plan says what
// it leaves out.
func TestPodsArePlannedWithTheirRuntimeClass(t *testing.T) {
	load := func(text string) *whatif.Report {
		t.Helper()
		objs := &whatif.Objects{}
		if err := objs.Load("manifest.yaml", strings.NewReader(text)); err != nil {
			t.Fatal(err)
		}
		res, err := whatif.Run(objs)
		if err != nil {
			t.Fatal(err)
		}
		return whatif.NewReport(res)
	}
	with := load(runtimeClassPool + gvisor)
	if len(with.Unschedulable) != 0 || len(with.NodeClaims) == 0 {
		t.Fatalf("with the RuntimeClass: unschedulable %+v", with.Unschedulable)
	}
	cpu := resource.Quantity{}
	for _, c := range with.NodeClaims {
		if !graviton.MatchString(c.InstanceType) {
			t.Errorf("%s planned on %s; the RuntimeClass selects arm64", c.Name, c.InstanceType)
		}
		q := c.Requests[corev1.ResourceCPU]
		cpu.Add(q)
	}
	if want := resource.MustParse("1500m"); cpu.Cmp(want) != 0 {
		t.Errorf("the NodeClaims request %s CPU; want 1500m, two pods of 500m with 250m overhead each", cpu.String())
	}
	without := load(runtimeClassPool)
	if len(without.NodeClaims) != 0 || len(without.Unschedulable) != 2 {
		t.Errorf("without the RuntimeClass the pods do not tolerate the pool's taint: %+v", without.NodeClaims)
	}
	if !strings.Contains(strings.Join(without.Warnings, "\n"), "2 pods name RuntimeClass gvisor, which is not among the inputs") {
		t.Errorf("warnings %q do not name the missing RuntimeClass", without.Warnings)
	}
}

// A pod whose node selector contradicts its RuntimeClass's is one the API
// server refuses: the plan says so, naming the pod, the key and both
// values.
func TestRuntimeClassConflictsAreNamed(t *testing.T) {
	objs := &whatif.Objects{}
	conflicting := `---
apiVersion: v1
kind: Pod
metadata:
  name: pinned
  namespace: default
spec:
  runtimeClassName: gvisor
  nodeSelector:
    kubernetes.io/arch: amd64
  containers:
    - name: app
      image: registry.example/app:1
`
	if err := objs.Load("manifest.yaml", strings.NewReader(runtimeClassPool+gvisor+conflicting)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.Run(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := "pod default/pinned selects kubernetes.io/arch=amd64, and its RuntimeClass gvisor kubernetes.io/arch=arm64: the API server refuses it"
	if !strings.Contains(strings.Join(whatif.NewReport(res).Warnings, "\n"), want) {
		t.Errorf("warnings %q lack %q", whatif.NewReport(res).Warnings, want)
	}
}
