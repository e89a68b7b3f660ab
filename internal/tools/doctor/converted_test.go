package doctor

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// A v0.3x manifest set from git, as a user migrating brings it: a
// v1beta1 NodePool with the kubelet settings it had then, beside a v1
// NodePool whose fault is its own, in one file.
const olderAPIs = `apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef:
        apiVersion: karpenter.k8s.aws/v1beta1
        kind: EC2NodeClass
        name: al2
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
      kubelet:
        maxPods: 110
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: 168h
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata:
  name: al2
spec:
  amiFamily: AL2
  role: KarpenterNodeRole-orders-eu
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: orders-eu}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: orders-eu}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: batch
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: al2-batch}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
`

func TestOlderAPIsAreReadAsTheirConversionAndChecked(t *testing.T) {
	objs := &whatif.Objects{}
	if err := objs.Load("karpenter/nodepools.yaml", strings.NewReader(olderAPIs)); err != nil {
		t.Fatal(err)
	}
	r := diagnose(t, Input{Objects: objs})
	pool := expectOn(t, r, CodeConverted, Warning, "NodePool/general", "karpenter.sh/v1beta1", "WhenEmptyOrUnderutilized", "spec.template.spec.expireAfter", "nodewright convert -f karpenter/nodepools.yaml")
	if pool.File != "karpenter/nodepools.yaml" || pool.Line != 1 {
		t.Errorf("the conversion is at %s:%d, want karpenter/nodepools.yaml:1", pool.File, pool.Line)
	}
	expectOn(t, r, CodeConverted, Warning, "EC2NodeClass/al2", "alias: al2@latest", `spec.kubelet is the kubelet configuration its NodePools had: {"maxPods":110}`)
	// The v1 NodePool beside them is checked too: its own fault is found.
	missing := expectOne(t, r, CodeNodeClassNotFound, Error, "NodePool/batch", "al2")
	if missing.Line != 34 {
		t.Errorf("NodePool/batch is at line %d, want 34", missing.Line)
	}
	if len(objs.EC2NodeClasses) != 1 || string(objs.EC2NodeClasses[0].Spec.Kubelet["maxPods"].Raw) != "110" {
		t.Errorf("the class does not carry the NodePool's kubelet configuration: %+v", objs.EC2NodeClasses)
	}
}

// A NodePool of a v1.0 cluster still carrying the kubelet configuration
// its conversion kept in an annotation, without its class: its nodes
// launch without it under v1.1 and later.
func TestKubeletLeftInTheConversionAnnotation(t *testing.T) {
	const dump = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
  annotations:
    compatibility.karpenter.sh/v1beta1-kubelet-conversion: '{"maxPods":58,"clusterDNS":["169.254.20.10"]}'
    compatibility.karpenter.sh/v1beta1-nodeclass-reference: '{"kind":"EC2NodeClass","name":"default","apiVersion":"karpenter.k8s.aws/v1beta1"}'
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`
	objs := &whatif.Objects{}
	if err := objs.Load("nodepool.yaml", strings.NewReader(dump)); err != nil {
		t.Fatal(err)
	}
	r := diagnose(t, Input{Objects: objs})
	expectOne(t, r, CodeKubeletAnnotation, Warning, "NodePool/default", "EC2NodeClass default",
		`add spec.kubelet: {"clusterDNS":["169.254.20.10"],"maxPods":58}`)
	// With its class, the configuration is the class's, and said so.
	const class = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-orders-eu
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]
`
	if err := objs.Load("class.yaml", strings.NewReader(class)); err != nil {
		t.Fatal(err)
	}
	r = diagnose(t, Input{Objects: objs})
	for _, f := range only(r, CodeKubeletAnnotation) {
		if f.Object == "NodePool/default" {
			t.Errorf("the NodePool's configuration moved to its class, yet: %+v", f)
		}
	}
	expectOne(t, r, CodeKubeletAnnotation, Warning, "EC2NodeClass/default", `{"clusterDNS":["169.254.20.10"],"maxPods":58}`)
}

// expectOn is the one finding of a code on an object, with the fragments.
func expectOn(t *testing.T, r *Report, code string, sev Severity, object string, fragments ...string) Finding {
	t.Helper()
	var on []Finding
	for _, f := range only(r, code) {
		if f.Object == object {
			on = append(on, f)
		}
	}
	if len(on) != 1 {
		t.Fatalf("want one %s on %s, got %d: %+v", code, object, len(on), r.Findings)
	}
	one := &Report{Findings: on}
	return expectOne(t, one, code, sev, object, fragments...)
}

// A refused input, for -o json: one finding at the file and line.
func TestRefusedInputIsAFinding(t *testing.T) {
	objs := &whatif.Objects{}
	err := objs.Load("nodepools.yaml", strings.NewReader("apiVersion: karpenter.sh/v1\nkind: NodePools\nmetadata: {name: default}\n"))
	if err == nil {
		t.Fatal("a misspelt kind was read")
	}
	r := Refused(err)
	seen = append(seen, r.Findings...)
	f := expectOne(t, r, CodeInputRefused, Error, "", "did you mean NodePool?")
	if f.File != "nodepools.yaml" || f.Line != 2 || !strings.Contains(f.Fix, "line 2 of nodepools.yaml") {
		t.Errorf("the refusal is at %s:%d, fix %q", f.File, f.Line, f.Fix)
	}
}

// karpenter.sh/unregistered among the startup taints does nothing; the
// NodePool's other startup taints are still checked.
func TestRegistrationTaintAsAStartupTaint(t *testing.T) {
	np := pool("general", "default")
	np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
	r := diagnose(t, Input{Objects: &whatif.Objects{NodePools: []*v1.NodePool{np}, EC2NodeClasses: []*awsv1.EC2NodeClass{class("default", "AL2023", "")}}})
	expectOne(t, r, CodeRegistrationStartupTaint, Warning, "NodePool/general", "does nothing", "remove karpenter.sh/unregistered")
	expectNone(t, r, CodeStartupTaintNeverRemoved)
	for _, f := range only(r, CodeNotChecked) {
		if strings.Contains(f.Message, "karpenter.sh/unregistered") {
			t.Errorf("the registration taint is said to need an agent: %s", f.Message)
		}
	}
}
