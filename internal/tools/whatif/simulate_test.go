package whatif_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

func run(t *testing.T, files ...string) *whatif.Report {
	t.Helper()
	objs := &whatif.Objects{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		err = objs.Load(name, f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	return whatif.NewReport(res)
}

// The healthy baseline places every pod; the armapp pods land on arm64
// t4g nodes of cicd-armapps.
func TestHealthyScenarioPlacesEveryPod(t *testing.T) {
	r := run(t, "../../../scenarios/healthy-mixed-arch.yaml")
	if len(r.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %+v", r.Unschedulable)
	}
	placed := 0
	for _, c := range r.NodeClaims {
		placed += len(c.Pods)
		for _, p := range c.Pods {
			if strings.HasPrefix(p, "default/armapp-") && (c.NodePool != "cicd-armapps" || !strings.HasPrefix(c.InstanceType, "t4g.")) {
				t.Errorf("%s planned on %s (%s), want a t4g node of cicd-armapps", p, c.Name, c.InstanceType)
			}
		}
		if c.PricePerHour <= 0 || c.Zone == "" || c.CapacityType == "" || len(c.InstanceTypes) == 0 || c.InstanceTypes[0] != c.InstanceType {
			t.Errorf("claim %s is incomplete: %+v", c.Name, c)
		}
	}
	if placed != 26 {
		t.Errorf("%d pods placed, want 26", placed)
	}
	if r.TotalPricePerHour <= 0 {
		t.Errorf("total price %v", r.TotalPricePerHour)
	}
}

// S5: the arm64 pool's EC2NodeClass pins an x86_64 AMI, and one pod has a
// typo in its selector. Both are explained; selector and affinity pods are
// treated alike.
func TestS5ExplainsAMIArchitectureAndTypo(t *testing.T) {
	r := run(t, "../../../scenarios/s5-arm64-pool.yaml")
	if len(r.NodeClaims) != 0 {
		t.Errorf("planned %d NodeClaims; no arm64 AMI exists", len(r.NodeClaims))
	}
	got := map[string]string{}
	for _, u := range r.Unschedulable {
		got[u.Pod] = u.Reason
	}
	ami := "NodePool cicd-armapps: no AMI for arm64 in EC2NodeClass arm"
	for _, pod := range []string{"armapp-selector-0", "armapp-selector-1", "armapp-affinity-0", "armapp-affinity-1"} {
		if got["default/"+pod] != ami {
			t.Errorf("%s: %q, want %q", pod, got["default/"+pod], ami)
		}
	}
	if want := "NodePool cicd-armapps: requires pod-type=armapp, pod selects pod-type=armapps"; got["default/armapp-typo-0"] != want {
		t.Errorf("typo pod: %q, want %q", got["default/armapp-typo-0"], want)
	}
}

func TestBadManifestNamesFileAndDocument(t *testing.T) {
	objs := &whatif.Objects{}
	err := objs.Load("bad.yaml", strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weight: 10, colour: blue}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "bad.yaml:8: decoding NodePool x:") || !strings.Contains(err.Error(), "colour") {
		t.Errorf("error %v should name the file, the unknown field's line, the object and the field", err)
	}
	// A syntax error: the line it is on.
	err = (&whatif.Objects{}).Load("syntax.yaml", strings.NewReader("# nodes\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: x\nspec:\n  template:\n    spec\n      requirements: []\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "syntax.yaml:10: ") || strings.Contains(err.Error(), "line ") {
		t.Errorf("error %v should name the file and line 10 (and no line relative to the document)", err)
	}
	err = (&whatif.Objects{}).Load("nokind.yaml", strings.NewReader("metadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "nokind.yaml:1: the document has no kind") {
		t.Errorf("a document without kind: %v", err)
	}
}

// Documents of kinds nodewright does not read are listed with where they
// are; a file with nothing it reads is an error that says what it holds.
func TestDocumentsNotReadAreNamed(t *testing.T) {
	objs := &whatif.Objects{}
	mixed := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\n" +
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: token}}\n- {apiVersion: v1, kind: Namespace, metadata: {name: other}}\n"
	if err := objs.Load("mixed.yaml", strings.NewReader(mixed)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range objs.Skipped {
		got = append(got, s.String())
	}
	want := []string{"mixed.yaml:1: Service web is not read", "mixed.yaml:5: ConfigMap settings is not read", "mixed.yaml:13: Secret token is not read"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(objs.Namespaces) != 2 {
		t.Errorf("namespaces %d, want 2", len(objs.Namespaces))
	}
	// A kind nodewright does not read is not judged: fields this version
	// does not know are no error.
	if err := (&whatif.Objects{}).Load("newer.yaml", strings.NewReader("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {futureField: 1}\n---\n"+
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")); err != nil {
		t.Errorf("a Service with a field of a newer version: %v", err)
	}
	err := (&whatif.Objects{}).Load("services.yaml", strings.NewReader("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n---\n# only a comment\n"))
	if err == nil || !strings.Contains(err.Error(), "services.yaml: nothing nodewright reads in it (Service web)") {
		t.Errorf("a file of Services: %v", err)
	}
	// An empty List (kubectl get of nothing) is read: it says there is none.
	if err := (&whatif.Objects{}).Load("none.yaml", strings.NewReader("apiVersion: v1\nkind: List\nitems: []\n")); err != nil {
		t.Errorf("an empty List: %v", err)
	}
	err = (&whatif.Objects{}).Load("empty.yaml", strings.NewReader("# nothing\n"))
	if err == nil || !strings.Contains(err.Error(), "empty.yaml: no documents") {
		t.Errorf("an empty file: %v", err)
	}
}

// Requirements the API server would refuse are refused in its words
// (the CRD's schema and rules), naming the object and the field, never
// read as matching nothing.
func TestBadRequirementsAreRefused(t *testing.T) {
	pool := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}, requirements: [%s]}}}\n"
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [%s]}]}}}}\n"
	for _, c := range []struct{ doc, want string }{
		{fmt.Sprintf(pool, "{key: a, operator: Equals, values: [x]}"), `NodePool.karpenter.sh "np" is invalid: [spec.template.spec.requirements[0].operator: Unsupported value: "Equals": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"`},
		{fmt.Sprintf(pool, "{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: [four]}"), `NodePool.karpenter.sh "np" is invalid: spec.template.spec.requirements: Invalid value: "array": type conversion error from 'string' to 'int' evaluating rule: operators Gt, Lt, Gte and Lte take exactly one whole number`},
		{fmt.Sprintf(pool, "{key: karpenter.k8s.aws/instance-cpu, operator: Lt}"), `NodePool.karpenter.sh "np" is invalid: spec.template.spec.requirements: Invalid value: "array": no such key: values evaluating rule: operators Gt, Lt, Gte and Lte take exactly one whole number`},
		{fmt.Sprintf(pod, "{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}"), "Pod p: spec.affinity.nodeAffinity (key karpenter.k8s.aws/instance-cpu): operator Gte is a NodePool's, not a pod's: use Gt or Lt"},
	} {
		err := (&whatif.Objects{}).Load("bad.yaml", strings.NewReader(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loading %s: %v, want %q", c.doc, err, c.want)
		}
	}
}

// Pods fill an in-flight NodeClaim before any new one is planned.
func TestInFlightNodeClaimIsUsedFirst(t *testing.T) {
	objs := &whatif.Objects{}
	manifest := defaultNodeClass + `---
` + amd64Pool + `---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: general-abcde, labels: {karpenter.sh/nodepool: general}}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge, m6i.xlarge]}
    - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`
	if err := objs.Load("inline", strings.NewReader(manifest)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	r := whatif.NewReport(res)
	if len(r.ExistingNodes) != 1 || r.ExistingNodes[0].Name != "general-abcde" || len(r.ExistingNodes[0].Pods) != 3 {
		t.Errorf("the in-flight m5.xlarge (3.92 CPU allocatable) should take three 1-CPU pods: %+v", r.ExistingNodes)
	}
	if len(r.NodeClaims) != 1 || len(r.NodeClaims[0].Pods) != 1 {
		t.Errorf("one new NodeClaim for the fourth pod: %+v", r.NodeClaims)
	}
}

// kubectl get -o yaml prints a List: its items load like documents, and
// kube-system/aws-auth is kept (other ConfigMaps are not).
func TestLoadsListsAndAWSAuth(t *testing.T) {
	objs := &whatif.Objects{}
	dump := `apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata: {name: ip-10-0-0-4}
    spec: {providerID: "aws:///us-east-1a/i-0001"}
  - apiVersion: karpenter.sh/v1
    kind: NodeClaim
    metadata: {name: general-abcde}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
    status: {nodeName: ip-10-0-0-4, providerID: "aws:///us-east-1a/i-0001"}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: coredns, namespace: kube-system}
    data: {Corefile: "."}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: aws-auth, namespace: kube-system}
    data: {mapRoles: "[]"}
`
	if err := objs.Load("dump.yaml", strings.NewReader(dump)); err != nil {
		t.Fatal(err)
	}
	if len(objs.Nodes) != 1 || len(objs.NodeClaims) != 1 || objs.AWSAuth == nil || objs.AWSAuth.Data["mapRoles"] != "[]" {
		t.Errorf("loaded %d nodes, %d NodeClaims, aws-auth %v", len(objs.Nodes), len(objs.NodeClaims), objs.AWSAuth)
	}
	bad := "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: Node, metadata: {name: node-1}, spec: {colour: blue}}\n"
	if err := (&whatif.Objects{}).Load("bad.yaml", strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "item 0") || !strings.Contains(err.Error(), "colour") {
		t.Errorf("a bad List item: %v", err)
	}
}

// Without an account, a cluster's EC2NodeClass status says which AMIs and
// zones exist; manifests without a status leave the AMIs unjudged.
func TestRunWithoutAnAccountReadsTheStatus(t *testing.T) {
	manifest := `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{id: ami-0123456789abcdef0}]
  role: r
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]
---
` + amd64Pool + `---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
`
	load := func() *whatif.Objects {
		objs := &whatif.Objects{}
		if err := objs.Load("m.yaml", strings.NewReader(manifest)); err != nil {
			t.Fatal(err)
		}
		return objs
	}
	objs := load()
	res, err := whatif.RunWith(objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Unschedulable) != 0 || len(res.Plan.NodeClaims) != 1 {
		t.Errorf("manifest without status: %d unschedulable, %d NodeClaims", len(res.Plan.Unschedulable), len(res.Plan.NodeClaims))
	}
	objs = load()
	objs.EC2NodeClasses[0].Status.AMIs = []awsv1.AMI{{ID: "ami-0123456789abcdef0", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}
	objs.EC2NodeClasses[0].Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: "us-east-1b"}}
	if res, err = whatif.RunWith(objs, nil); err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Unschedulable) != 1 || !strings.Contains(res.Plan.Unschedulable[0].Reason, "no AMI for amd64") {
		t.Errorf("status with arm64 AMIs only: %+v", res.Plan.Unschedulable)
	}
	objs.EC2NodeClasses[0].Status.AMIs[0].Requirements[0].Values = []string{"amd64"}
	if res, err = whatif.RunWith(objs, nil); err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.NodeClaims) != 1 {
		t.Fatalf("planned %d NodeClaims", len(res.Plan.NodeClaims))
	}
	if zone := res.Plan.NodeClaims[0].Offering.Zone; zone != "us-east-1b" {
		t.Errorf("zone %s, want the status subnet's us-east-1b", zone)
	}
}

// amd64Pool is a NodePool general of EC2NodeClass default for amd64.
// defaultNodeClass is the EC2NodeClass the simulated account resolves.
const defaultNodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
`

const amd64Pool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
`

// The reserved-capacity scenario's EC2NodeClass selects the simulated
// account's reservation of two m5.large: two NodeClaims use it, at next to
// no cost, and the other pods go to spot.
func TestReservedCapacityScenario(t *testing.T) {
	r := run(t, "../../../scenarios/reserved-capacity.yaml")
	if len(r.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %+v", r.Unschedulable)
	}
	byType := map[string]int{}
	for _, c := range r.NodeClaims {
		byType[c.CapacityType]++
		if c.CapacityType == "reserved" && (c.InstanceType != "m5.large" || c.Zone != "us-east-1a" || len(c.InstanceTypes) != 1 || c.PricePerHour > 0.001) {
			t.Errorf("reserved NodeClaim %+v", c)
		}
	}
	if byType["reserved"] != 2 || byType["spot"] == 0 {
		t.Errorf("NodeClaims by capacity type %v, want 2 reserved and spot for the rest", byType)
	}
}

// simulate shows what the controllers do with a static NodePool: its
// replicas launched whatever the pods need, the pods placed on them, and
// nothing launched for pods beyond them.
func TestStaticNodePoolIsPlannedAsTheControllerLaunchesIt(t *testing.T) {
	r := run(t, "../../../scenarios/static.yaml")
	if len(r.NodeClaims) != 3 || len(r.Unschedulable) != 0 {
		t.Fatalf("%d NodeClaims, unschedulable %+v; want the 3 replicas and every pod placed", len(r.NodeClaims), r.Unschedulable)
	}
	pods := 0
	for _, c := range r.NodeClaims {
		pods += len(c.Pods)
		if c.NodePool != "static" || c.InstanceType != "m5.large" || c.CapacityType != "on-demand" {
			t.Errorf("NodeClaim %s: %s %s of %s; want the cheapest on-demand type of the static pool", c.Name, c.InstanceType, c.CapacityType, c.NodePool)
		}
	}
	if pods != 3 || r.TotalPricePerHour < 0.28 {
		t.Errorf("%d pods placed at $%.4f/h; want the 3 pods on the 3 replicas", pods, r.TotalPricePerHour)
	}

	// Ten pods of 1.5 CPU fit one per m5.large: 3 run, and no NodeClaim is
	// launched for the rest, as no dynamic NodePool exists.
	data, err := os.ReadFile("../../../scenarios/static.yaml")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.NewReplacer("replicas: 3\n  selector", "replicas: 10\n  selector", "cpu: 500m", "cpu: 1500m").Replace(string(data))
	objs := &whatif.Objects{}
	if err := objs.Load("static-big.yaml", strings.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	r = whatif.NewReport(res)
	if len(r.NodeClaims) != 3 || len(r.Unschedulable) != 7 {
		t.Fatalf("%d NodeClaims and %d unschedulable pods; want the 3 replicas and 7 pods left pending", len(r.NodeClaims), len(r.Unschedulable))
	}
	if want := "NodePool static: a static NodePool (spec.replicas) keeps its replicas and launches no node for pods"; r.Unschedulable[0].Reason != want {
		t.Errorf("pending pod %s: %q, want %q", r.Unschedulable[0].Pod, r.Unschedulable[0].Reason, want)
	}
}

// NodeOverlays change what simulate plans: an overlaid price makes an
// instance type the cheapest, and overlaid hugepages make room for pods
// that request them.
func TestNodeOverlaysChangeThePlan(t *testing.T) {
	base := defaultNodeClass + `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers: [{name: db, resources: {requests: {cpu: 500m, memory: 1Gi, hugepages-2Mi: 64Mi}, limits: {hugepages-2Mi: 64Mi, memory: 1Gi}}}]
`
	plan := func(extra string) *whatif.Report {
		t.Helper()
		objs := &whatif.Objects{}
		if err := objs.Load("overlay.yaml", strings.NewReader(base+extra)); err != nil {
			t.Fatal(err)
		}
		res, err := whatif.RunWith(objs, simulated())
		if err != nil {
			t.Fatal(err)
		}
		return whatif.NewReport(res)
	}
	before := plan("")
	if len(before.Unschedulable) != 1 || before.Unschedulable[0].Pod != "default/db" {
		t.Fatalf("without overlays: unschedulable %+v, want only the hugepages pod", before.Unschedulable)
	}
	for _, c := range before.NodeClaims {
		if c.InstanceType == "r5.2xlarge" {
			t.Fatalf("r5.2xlarge is chosen without an overlay; pick another type for this test")
		}
	}
	after := plan(`---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: cheap-r5}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [r5.2xlarge]}]
  price: "0.001"
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: hugepages}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
  capacity: {hugepages-2Mi: 1Gi}
`)
	if len(after.Unschedulable) != 0 {
		t.Fatalf("with overlays: unschedulable %+v", after.Unschedulable)
	}
	found := map[string]bool{}
	for _, c := range after.NodeClaims {
		found[c.InstanceType] = true
		for _, p := range c.Pods {
			if p == "default/db" && !strings.HasPrefix(c.InstanceType, "m5.") {
				t.Errorf("the hugepages pod is planned on %s, which has no hugepages", c.InstanceType)
			}
		}
	}
	if !found["r5.2xlarge"] {
		t.Errorf("with r5.2xlarge at $0.001/h the plan uses %v", found)
	}
}

// Pods' volumes decide their zone: a claim bound to an EBS volume pins the
// volume's zone, a claim not bound yet the zones its StorageClass allows;
// a claim that does not exist is named.
func TestVolumeTopologyPinsZones(t *testing.T) {
	manifest := defaultNodeClass + `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3-b}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies: [{matchLabelExpressions: [{key: topology.ebs.csi.aws.com/zone, values: [us-east-1b]}]}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-a}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: topology.ebs.csi.aws.com/zone, operator: In, values: [us-east-1c]}]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-a}
spec: {volumeName: pv-a, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-b}
spec: {storageClassName: gp3-b, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
`
	pod := func(name, claim string) string {
		return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: %s}}]
`, name, claim)
	}
	objs := &whatif.Objects{}
	if err := objs.Load("volumes.yaml", strings.NewReader(manifest+pod("db-a", "data-a")+pod("db-b", "data-b")+pod("db-c", "data-c"))); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	r := whatif.NewReport(res)
	zones := map[string]string{}
	for _, c := range r.NodeClaims {
		for _, p := range c.Pods {
			zones[p] = c.Zone
		}
	}
	if zones["default/db-a"] != "us-east-1c" || zones["default/db-b"] != "us-east-1b" {
		t.Errorf("zones %v; want db-a with its volume in us-east-1c and db-b where its class allows, us-east-1b", zones)
	}
	if len(r.Unschedulable) != 1 || r.Unschedulable[0].Reason != "PersistentVolumeClaim default/data-c of volume data does not exist" {
		t.Errorf("unschedulable %+v; want db-c refused for its missing claim", r.Unschedulable)
	}
}

// simulate plans with the instance types the controller would launch: an
// EC2NodeClass with nested virtualization plans 8th generation Intel
// types, one with a cluster placement group no burstable types, and one
// whose placement group does not exist plans nothing and says why.
func TestNodeClassLaunchSettingsShapeThePlan(t *testing.T) {
	manifest := func(extra string) string {
		return defaultNodeClass + extra + `
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: v1
kind: Pod
metadata: {name: vm}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`
	}
	plan := func(extra string) *whatif.Report {
		t.Helper()
		objs := &whatif.Objects{}
		if err := objs.Load("class.yaml", strings.NewReader(manifest(extra))); err != nil {
			t.Fatal(err)
		}
		res, err := whatif.RunWith(objs, simulated())
		if err != nil {
			t.Fatal(err)
		}
		return whatif.NewReport(res)
	}
	r := plan("  cpuOptions: {nestedVirtualization: enabled}")
	if len(r.NodeClaims) != 1 || !strings.Contains(r.NodeClaims[0].InstanceType, "8i") {
		t.Errorf("nested virtualization: planned %+v; want one 8th generation Intel node", r.NodeClaims)
	}
	if r = plan(""); len(r.NodeClaims) != 1 || !strings.HasPrefix(r.NodeClaims[0].InstanceType, "t") {
		t.Fatalf("no launch settings: planned %+v; want the cheapest, a burstable type", r.NodeClaims)
	}
	r = plan("  placementGroupSelector: {name: nodewright-cluster}")
	if len(r.NodeClaims) != 1 || strings.HasPrefix(r.NodeClaims[0].InstanceType, "t") {
		t.Errorf("cluster placement group: planned %+v; want one node of a type cluster groups take (not burstable)", r.NodeClaims)
	}
	r = plan("  placementGroupSelector: {name: no-such-group}")
	if len(r.NodeClaims) != 0 || !strings.Contains(strings.Join(r.Warnings, "\n"), "placementGroup selects no available placement group") {
		t.Errorf("missing placement group: planned %+v, warnings %v; want nothing planned and the reason", r.NodeClaims, r.Warnings)
	}
}

// A node takes no more volumes of a CSI driver than its CSINode allows:
// with room for two EBS volumes and one attached, one more pod with its
// own volume goes there, the next to a new NodeClaim, though the node has
// CPU and memory for both; a pod sharing the attached volume still fits.
func TestVolumeAttachLimits(t *testing.T) {
	manifest := defaultNodeClass + `---
` + amd64Pool + `---
apiVersion: v1
kind: Node
metadata:
  name: big
  labels: {karpenter.sh/nodepool: general, kubernetes.io/arch: amd64, node.kubernetes.io/instance-type: m5.8xlarge, topology.kubernetes.io/zone: us-east-1a}
status:
  allocatable: {cpu: "31", memory: 120Gi, pods: "200"}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: big}
spec:
  drivers: [{name: ebs.csi.aws.com, nodeID: i-0123, allocatable: {count: 2}}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-old}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0old}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: old}
spec: {volumeName: pv-old, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
status: {phase: Bound}
`
	pod := func(name, claim, node string) string {
		return fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %q
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: %s}}]
status: {phase: %s}
`, name, node, claim, map[bool]string{true: "Running", false: "Pending"}[node != ""])
	}
	claim := func(name string) string {
		return fmt.Sprintf(`---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %s}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Gi}}}
`, name)
	}
	objs := &whatif.Objects{}
	input := manifest + pod("running", "old", "big") + claim("a") + claim("b") + pod("db-a", "a", "") + pod("db-b", "b", "") + pod("reader", "old", "")
	if err := objs.Load("attach.yaml", strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	r := whatif.NewReport(res)
	if len(r.ExistingNodes) != 1 || len(r.ExistingNodes[0].Pods) != 2 || !slices.Contains(r.ExistingNodes[0].Pods, "default/reader") {
		t.Fatalf("pods on node big: %+v (new %+v, unschedulable %+v); want the reader (its volume is attached already) and one of db-a, db-b", r.ExistingNodes, r.NodeClaims, r.Unschedulable)
	}
	if len(r.NodeClaims) != 1 || len(r.NodeClaims[0].Pods) != 1 {
		t.Errorf("new NodeClaims %+v; want one for the pod whose volume the node has no room for", r.NodeClaims)
	}
}

// simulated resolves EC2NodeClasses in a freshly seeded simulated
// account: the one the scenarios and the reference's cases assume.
func simulated() *nodeclass.Resolver {
	a := simaws.NewAccount()
	a.Seed()
	return &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion}
}

// A taint the EC2NodeClass's user data registers every node with (a
// nodeadm flag that keeps karpenter.sh/unregistered and adds its own) is
// on every node of its NodePools: pods that do not tolerate it are not
// planned there — launched, their nodes would never take them, and
// another would be launched for them, and another — and pods that
// tolerate it are.
func TestUserDataTaintsArePlanned(t *testing.T) {
	class := strings.Replace(defaultNodeClass, "spec:\n", `spec:
  userData: |
    apiVersion: node.eks.aws/v1alpha1
    kind: NodeConfig
    spec:
      kubelet:
        flags: ["--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=ci:NoSchedule"]
`, 1)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default}\nspec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]%s}\n"
	objs := &whatif.Objects{}
	manifest := class + "---\n" + amd64Pool + "---\n" + fmt.Sprintf(pod, "plain", "") + "---\n" +
		fmt.Sprintf(pod, "tolerant", ", tolerations: [{key: dedicated, operator: Equal, value: ci, effect: NoSchedule}]")
	if err := objs.Load("taints.yaml", strings.NewReader(manifest)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	r := whatif.NewReport(res)
	if len(r.NodeClaims) != 1 || len(r.Unschedulable) != 1 || r.Unschedulable[0].Pod != "default/plain" ||
		!strings.Contains(r.Unschedulable[0].Reason, "taint dedicated=ci:NoSchedule not tolerated (EC2NodeClass default's user data registers every node with it)") {
		t.Errorf("want one NodeClaim for the tolerant pod and the plain one refused for the user data's taint: %+v, %+v", r.NodeClaims, r.Unschedulable)
	}
}

// A field an earlier nodewright release named its own way is refused
// with the API's name for it and how to move its value.
func TestFormerFieldsSayWhatToWrite(t *testing.T) {
	for field, want := range map[string]string{
		"  placementGroup: {name: training, partition: 2}\n":               "spec.placementGroupSelector",
		"  securityGroupSelectorTerms: [{name: nodes, vpcID: vpc-0abc}]\n": "select the groups by id",
	} {
		doc := strings.Replace(defaultNodeClass, "  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]\n", "", 1) + field
		err := (&whatif.Objects{}).Load("class.yaml", strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", field, err, want)
		}
	}
}

// A NodePool whose label no node can carry launches nothing, in simulate
// as in the controller, and its pods say why.
func TestInvalidNodePoolLaunchesNothing(t *testing.T) {
	pool := strings.Replace(amd64Pool, "  template:\n", "  template:\n    metadata: {labels: {\"spaces are not allowed\": bar}}\n", 1)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}\n"
	objs := &whatif.Objects{}
	if err := objs.Load("pool.yaml", strings.NewReader(defaultNodeClass+"---\n"+pool+"---\n"+pod)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	r := whatif.NewReport(res)
	if len(r.NodeClaims) != 0 || len(r.Unschedulable) != 1 || !strings.Contains(r.Unschedulable[0].Reason, "NodePool general is invalid (ValidationSucceeded=False): spec.template.metadata.labels[spaces are not allowed]") {
		t.Errorf("want nothing launched and the pod told why: %+v, %+v", r.NodeClaims, r.Unschedulable)
	}
}

// A value the API's pattern refuses is refused with the API server's
// words, and what the pattern asks for said in words.
func TestPatternRefusalsSayWhatTheFieldTakes(t *testing.T) {
	for patch, want := range map[string]string{
		"  disruption: {consolidateAfter: 5 minutes}\n":    "spec.disruption.consolidateAfter takes a duration such as 30s, 15m or 720h, or Never",
		"  disruption: {budgets: [{nodes: ten}]}\n":        "spec.disruption.budgets[0].nodes takes a whole number of nodes such as 5",
		"  template:\n    spec:\n      expireAfter: 30d\n": "spec.template.spec.expireAfter takes a duration",
	} {
		doc := amd64Pool
		if strings.HasPrefix(patch, "  template:") {
			doc = strings.Replace(doc, "    spec:\n", "    spec:\n      expireAfter: 30d\n", 1)
		} else {
			doc += patch
		}
		err := (&whatif.Objects{}).Load("pool.yaml", strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), "should match") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want the API server's words and %q", patch, err, want)
		}
	}
}
