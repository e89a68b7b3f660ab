package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/aws/userdata/userdatatest"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// shapeManifest is one EC2NodeClass, NodePool and Deployment per shape of
// user data, each pool's pod selecting its own nodes and tolerating
// whatever taint the user data gives them, in the sim's
// account; the Custom classes use its own AL2 AMI, its AL2023 one
// (arm64) for a NodeConfig, or the Windows one for PowerShell.
func shapeManifest(t *testing.T, shapes []userdatatest.Shape) []byte {
	t.Helper()
	var b strings.Builder
	b.WriteString(harness.AWSAuth)
	for i, s := range shapes {
		term := map[string]string{awsv1.AMIFamilyAL2023: "alias: al2023@latest", awsv1.AMIFamilyBottlerocket: "alias: bottlerocket@latest",
			awsv1.AMIFamilyAL2: "alias: al2@latest", awsv1.AMIFamilyCustom: "id: ami-0a1b2c3d4e5f60001", awsv1.AMIFamilyWindows2022: "alias: windows2022@latest"}[s.Family]
		arch := "amd64"
		if s.Family == awsv1.AMIFamilyCustom && strings.Contains(s.UserData, "NodeConfig") {
			// nodeadm's user data on the account's own AL2023 AMI.
			term, arch = "id: ami-0a1b2c3d4e5f60002", "arm64"
		}
		if s.Family == awsv1.AMIFamilyCustom && strings.HasPrefix(s.UserData, "<powershell>") {
			term = "id: ami-windows2022x8664" // the account's Windows AMI, its user data written whole
		}
		ud, err := yaml.Marshal(map[string]string{"userData": s.UserData})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, `---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: shape-%[1]d}
spec:
  amiFamily: %[2]s
  amiSelectorTerms: [{%[3]s}]
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  %[4]s
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: shape-%[1]d}
spec:
  template:
    metadata: {labels: {shape: "%[1]d"}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: shape-%[1]d}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [%[5]s]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shape-%[1]d, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: shape-%[1]d}}
  template:
    metadata: {labels: {app: shape-%[1]d}}
    spec:
      nodeSelector: {shape: "%[1]d"}
      tolerations: [{operator: Exists}]
      containers: [{name: app, image: app, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
`, i, s.Family, term, strings.TrimSpace(strings.ReplaceAll(string(ud), "\n", "\n  ")), arch)
	}
	return []byte(b.String())
}

// TestUserDataShapesAtRuntime: every shape of user data launched at once
// in the simulation, its validation switched off so that each node shows
// what it does with its user data. The node joins and its pod runs
// exactly for the shapes the node's readers register with
// karpenter.sh/unregistered, and doctor, run on the cluster, reports an
// error on exactly the other EC2NodeClasses: doctor, the simulated node
// and the controller's validation agree at runtime.
func TestUserDataShapesAtRuntime(t *testing.T) {
	sim, _ := harness.RunManifest(t, "shapes.yaml", shapeManifest(t, userdatatest.Shapes), func(o *runner.Options) { o.Operator.SkipUserDataValidation = true })
	// The node of a shape registers as nodewright needs when its NodeClaim
	// is Registered, not for want of karpenter.sh/unregistered.
	joins, launched, refused := atRuntime(t, sim)
	agreed := 0
	for i, s := range userdatatest.Shapes {
		name := fmt.Sprintf("shape-%d", i)
		if launched[name] > 1 {
			t.Errorf("%s (%s): %d NodeClaims for one pod", name, s.Name, launched[name])
		}
		if joins[name] != s.Registers {
			t.Errorf("%s (%s): its node registers with karpenter.sh/unregistered: %v, want %v", name, s.Name, joins[name], s.Registers)
		}
		if refused[name] == joins[name] {
			t.Errorf("%s (%s): doctor reports an error: %v, the node registers: %v", name, s.Name, refused[name], joins[name])
		} else {
			agreed++
		}
	}
	t.Logf("NodeClaims per shape: %v", launched)
	t.Logf("%d shapes of user data at runtime: doctor and the running simulation agree on %d", len(userdatatest.Shapes), agreed)
}

// TestGeneratedUserDataAtRuntime: a sample of generated user data (AL2
// scripts, AL2023 NodeConfigs and cloud-config, Bottlerocket settings,
// each for its family) launched in the simulation with validation
// switched off: the node joins and its pod runs exactly where the boot
// outcome says it registers with karpenter.sh/unregistered, and doctor
// reports an error on exactly the other EC2NodeClasses. Inputs whose boot
// is not modelled are left out (the simulation cannot boot them).
func TestGeneratedUserDataAtRuntime(t *testing.T) {
	var shapes []userdatatest.Shape
	per := map[string]int{}
	for seed := uint64(0); len(shapes) < 18 && seed < 400; seed++ {
		for _, in := range []boottest.Input{
			boottest.AL2Script(seed), al2023Input(seed), boottest.BottlerocketSettings(seed),
		} {
			family := map[string]string{"": awsv1.AMIFamilyAL2023, "AL2": awsv1.AMIFamilyAL2, "Bottlerocket": awsv1.AMIFamilyBottlerocket}[in.Family]
			o, ok := userdata.Outcome(family, in.UserData)
			kind := fmt.Sprintf("%s %s registered=%v", family, o.Verdict, o.Registered())
			// spec.userData is text: whole-data gzip cannot be written there.
			if !ok || o.Verdict == boot.NotModelled || per[kind] >= 3 || !utf8.ValidString(in.UserData) {
				continue
			}
			per[kind]++
			shapes = append(shapes, userdatatest.Shape{Name: fmt.Sprintf("%s seed %d (%s)", family, seed, strings.Join(in.Constructs, ", ")), Family: family, UserData: in.UserData, Registers: o.Registered()})
		}
	}
	sim, _ := harness.RunManifest(t, "generated.yaml", shapeManifest(t, shapes), func(o *runner.Options) { o.Operator.SkipUserDataValidation = true })
	joins, _, refused := atRuntime(t, sim)
	for i, s := range shapes {
		name := fmt.Sprintf("shape-%d", i)
		if joins[name] != s.Registers {
			t.Errorf("%s (%s): its node registers with karpenter.sh/unregistered: %v; the boot outcome says %v\n%s", name, s.Name, joins[name], s.Registers, s.UserData)
		}
		if refused[name] == s.Registers {
			t.Errorf("%s (%s): doctor reports an error: %v; the boot outcome registers: %v", name, s.Name, refused[name], s.Registers)
		}
	}
	t.Logf("%d generated user data at runtime (by family and outcome: %v)", len(shapes), per)
}

func al2023Input(seed uint64) boottest.Input {
	g := al2023.Generate(seed)
	return boottest.Input{Seed: g.Seed, UserData: g.UserData, Constructs: g.Constructs}
}

// atRuntime is, by NodePool, whether a node registered as nodewright needs
// (its NodeClaim Registered, not for want of karpenter.sh/unregistered)
// and how many NodeClaims were launched; and, by EC2NodeClass, whether
// doctor run on the cluster reports an error.
func atRuntime(t *testing.T, sim *runner.Sim) (joins map[string]bool, launched map[string]int, refused map[string]bool) {
	t.Helper()
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	joins, launched, refused = map[string]bool{}, map[string]int{}, map[string]bool{}
	for _, c := range claims.Items {
		launched[c.Labels[v1.LabelNodePool]]++
		if cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionRegistered); cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == v1.ReasonRegistered {
			joins[c.Labels[v1.LabelNodePool]] = true
		}
	}
	findings, _ := doctor(t, sim)
	for _, f := range findings {
		if f.Severity == "error" && strings.HasPrefix(f.Object, "EC2NodeClass/") {
			refused[strings.TrimPrefix(f.Object, "EC2NodeClass/")] = true
		}
	}
	return joins, launched, refused
}
