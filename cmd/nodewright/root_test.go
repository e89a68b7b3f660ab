package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// runStdout runs the command and returns what it printed on stdout only.
func runStdout(args ...string) (string, error) {
	cmd := newRootCommand()
	var out, errs bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errs)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func run(args ...string) (string, error) {
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run("version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "nodewright ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version printed %q", out)
	}
	if _, err := run("version", "extra"); err == nil {
		t.Error("version accepted an argument")
	}
	for _, format := range []string{"json", "yaml"} {
		out, err := run("version", "-o", format)
		if err != nil {
			t.Fatal(err)
		}
		var info map[string]string
		if err := yaml.Unmarshal([]byte(out), &info); err != nil || info["version"] == "" || info["goVersion"] != runtime.Version() || info["platform"] == "" {
			t.Errorf("version -o %s: %q (%v)", format, out, err)
		}
	}
	if _, err := run("version", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "use text, json or yaml") {
		t.Errorf("version -o xml: %v", err)
	}
}

// Shell completion is there for bash, zsh, fish and PowerShell.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, err := run("completion", shell)
		if err != nil || !strings.Contains(out, "nodewright") || len(out) < 1000 {
			t.Errorf("completion %s: %v, %d bytes", shell, err, len(out))
		}
	}
}

// Every command with -o json has -o yaml with the same fields.
func TestYAMLWhereJSON(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "-f", "../../scenarios/healthy-mixed-arch.yaml"},
		{"simulate", "--disruption", "-f", "../../scenarios/consolidation.yaml"},
		{"doctor", "-f", "../../scenarios/s4-aws-auth-controller-role.yaml"}, // findings: exit status 2
	} {
		js, err := runStdout(append(args, "-o", "json")...)
		if err != nil && !errors.As(err, new(found)) {
			t.Fatalf("%v -o json: %v", args, err)
		}
		ym, err := runStdout(append(args, "-o", "yaml")...)
		if err != nil && !errors.As(err, new(found)) {
			t.Fatalf("%v -o yaml: %v", args, err)
		}
		var fromJSON, fromYAML any
		if err := json.Unmarshal([]byte(js), &fromJSON); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(ym), &fromYAML); err != nil {
			t.Fatalf("%v -o yaml is not YAML: %v", args, err)
		}
		if !reflect.DeepEqual(fromJSON, fromYAML) {
			t.Errorf("%v: -o yaml and -o json differ", args)
		}
	}
}

// Help lists every subcommand, and an unknown one is an error.
func TestHelpListsTheCommands(t *testing.T) {
	out, err := run("--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"version", "simulate", "userdata", "sim", "controller", "doctor"} {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("help does not list %q:\n%s", name, out)
		}
	}
	if _, err := run("repair"); err == nil || !strings.Contains(err.Error(), `unknown command "repair"`) {
		t.Errorf("running a missing subcommand: %v", err)
	}
}

// simulate plans from the input alone, saying what it cannot know there
// (an EC2NodeClass's AMIs without its status); with --cloud sim it
// resolves them in the simulated account, where S5's AMI is amd64 only.
func TestSimulateJSON(t *testing.T) {
	out, err := run("simulate", "-f", "../../scenarios/s5-arm64-pool.yaml")
	if err != nil || !strings.Contains(out, "1 pods cannot be scheduled") || !strings.Contains(out, "EC2NodeClass arm: the architecture of id ami-0a1b2c3d4e5f60001 is known only to the account") {
		t.Errorf("from the input alone: %v\n%s", err, out)
	}
	out, err = run("simulate", "--cloud", "sim", "-f", "../../scenarios/s5-arm64-pool.yaml", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		NodeClaims    []any `json:"nodeClaims"`
		Unschedulable []struct {
			Pod, Reason string
		} `json:"unschedulable"`
		TotalPricePerHour float64 `json:"totalPricePerHour"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(report.Unschedulable) != 5 || report.NodeClaims == nil {
		t.Errorf("want 5 unschedulable pods and an empty nodeClaims list:\n%s", out)
	}
}

func TestSimulateTableAndErrors(t *testing.T) {
	out, err := run("simulate", "-f", "../../scenarios/healthy-mixed-arch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "NODECLAIM") || !strings.Contains(out, "26 pods placed") {
		t.Errorf("table output:\n%s", out)
	}
	if _, err := run("simulate"); err == nil || !strings.Contains(err.Error(), "-f FILE") {
		t.Errorf("no input: %v", err)
	}
	if _, err := run("simulate", "-f", "x.yaml", "-o", "xml"); err == nil || !strings.Contains(err.Error(), "table, json or yaml") {
		t.Errorf("bad format: %v", err)
	}
	if _, err := run("simulate", "-f", "does-not-exist.yaml"); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestUserData(t *testing.T) {
	out, err := run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "--cluster-ca", "Q0E=", "--service-cidr", "172.20.0.0/16", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--nodepool", "general", "--instance-type", "m5.large")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"application/node.eks.aws", "key: karpenter.sh/unregistered", "maxPods: 29", "karpenter.sh/nodepool=general",
		"name: prod", "apiServerEndpoint: https://ABC.gr7.eu-west-1.eks.amazonaws.com", "certificateAuthority: Q0E=", "cidr: 172.20.0.0/16"} {
		if !strings.Contains(out, want) {
			t.Errorf("user data lacks %q:\n%s", want, out)
		}
	}
	// Only the labels the launch template carries: the NodePool's and its
	// template's, not its requirements' or the instance type's (the
	// kubelet and nodewright set those).
	for _, unwanted := range []string{"kubernetes.io/arch=amd64", "node.kubernetes.io/instance-type=m5.large"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("user data has %q, which the launch template does not:\n%s", unwanted, out)
		}
	}
	// Without --instance-type: the cheapest type the NodePool admits, named.
	out, err = run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "--cluster-ca", "Q0E=", "--service-cidr", "172.20.0.0/16", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--nodepool", "cicd-armapps")
	if err != nil || !strings.Contains(out, "rendered for t4g.") || !strings.Contains(out, "maxPods: ") {
		t.Errorf("without an instance type: %v\n%s", err, out)
	}
	out, err = run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "--cluster-ca", "Q0E=", "--service-cidr", "172.20.0.0/16", "-f", "../../scenarios/s1-userdata-register-taints.yaml", "--nodepool", "default")
	if err == nil || !strings.Contains(out, "userdata-overrides-registration-taints") || !strings.Contains(err.Error(), "nothing would be launched") {
		t.Errorf("S1 must fail with the finding: %v\n%s", err, out)
	}
	out, err = run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "--cluster-ca", "Q0E=", "--service-cidr", "172.20.0.0/16", "-f", "../../scenarios/s3-al2-bootstrap-quoting.yaml", "--nodepool", "custom")
	if err == nil || !strings.Contains(out, "al2-bootstrap-args-malformed") || !strings.Contains(out, "custom-userdata-missing-unregistered-taint") ||
		!strings.HasPrefix(out, "#!/bin/bash\nset -e\n") {
		t.Errorf("S3 must print the Custom user data unchanged and fail with both findings: %v\n%s", err, out)
	}
	if _, err := run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.gr7.eu-west-1.eks.amazonaws.com", "--cluster-ca", "Q0E=", "--service-cidr", "172.20.0.0/16", "-f", "../../scenarios/s1-userdata-register-taints.yaml", "--nodepool", "nope"); err == nil || !strings.Contains(err.Error(), "found: default") {
		t.Errorf("an unknown NodePool must be named with the ones that exist: %v", err)
	}
	// Without the cluster, nothing is rendered for a cluster that is not
	// the user's.
	if _, err := run("userdata", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--nodepool", "general"); err == nil || !strings.Contains(err.Error(), "--cluster-name NAME --cluster-endpoint") {
		t.Errorf("without the cluster: %v", err)
	}
	out, err = run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.example", "--service-cidr", "10.100.0.0/16", "-f", "../../scenarios/s1-userdata-register-taints.yaml", "--nodepool", "default")
	if !strings.Contains(out, "no --cluster-ca") || !strings.Contains(out, "10.100.0.10") || strings.Contains(out, "no --service-cidr") {
		t.Errorf("another Service CIDR and no CA: %v\n%s", err, out)
	}
	// Without --service-cidr, the one assumed is said.
	out, err = run("userdata", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.example", "--cluster-ca", "Q0E=", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--nodepool", "general")
	if err != nil || !strings.Contains(out, "no --service-cidr: rendered for 172.20.0.0/16 (kube-dns 172.20.0.10)") {
		t.Errorf("without a Service CIDR: %v\n%s", err, out)
	}
}

// simulate --disruption explains every node of a cluster's dump: what goes
// now and the one reason each other node stays; --now moves the clock.
func TestSimulateDisruption(t *testing.T) {
	out, err := run("simulate", "-f", "testdata/disruption.yaml", "--disruption", "--now", "2026-11-23T12:00:00Z", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var report struct {
		Disruptions []struct {
			Reason         string   `json:"reason"`
			Nodes          []string `json:"nodes"`
			Replacements   []any    `json:"replacements"`
			SavingsPerHour float64  `json:"savingsPerHour"`
		} `json:"disruptions"`
		Blocked []struct {
			Node, Reason string
		} `json:"blocked"`
		PricePerHour, PricePerHourAfter float64
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(report.Disruptions) != 1 || report.Disruptions[0].Reason != "Empty" || len(report.Disruptions[0].Nodes) != 1 ||
		report.Disruptions[0].Nodes[0] != "ip-10-0-0-1" || report.Disruptions[0].SavingsPerHour <= 0 {
		t.Errorf("disruptions: %+v", report.Disruptions)
	}
	want := map[string]string{
		"ip-10-0-0-2": "PodDisruptionBudget default/db allows 0 disruptions now",
		"ip-10-0-0-3": "pod default/batch-0 is annotated karpenter.sh/do-not-disrupt=true",
		"ip-10-0-0-4": "NodePool default allows 0 of 10% now",
	}
	for _, b := range report.Blocked {
		if !strings.Contains(b.Reason, want[b.Node]) || want[b.Node] == "" {
			t.Errorf("node %s kept because %q, want %q", b.Node, b.Reason, want[b.Node])
		}
		delete(want, b.Node)
	}
	if len(want) > 0 {
		t.Errorf("nodes without a reason: %v", want)
	}
	if report.PricePerHourAfter >= report.PricePerHour {
		t.Errorf("price %f after %f", report.PricePerHourAfter, report.PricePerHour)
	}
	// Two minutes after the nodes were made, consolidateAfter (5m) holds.
	out, err = run("simulate", "-f", "testdata/disruption.yaml", "--disruption", "--now", "2026-11-23T10:02:00Z")
	if err != nil || !strings.Contains(out, "Disruptions now: 0") || !strings.Contains(out, "until 2026-11-23T10:05:00Z") {
		t.Errorf("before consolidateAfter: %v\n%s", err, out)
	}
	if _, err := run("simulate", "-f", "testdata/disruption.yaml", "--now", "2026-11-23T10:02:00Z"); err == nil || !strings.Contains(err.Error(), "--disruption") {
		t.Errorf("--now without --disruption: %v", err)
	}
}

// simulate --disruption decides as the controller with the same feature
// gates: a spot node of a spot-only NodePool is replaced by a cheaper
// spot node only with SpotToSpotConsolidation, and says so without it.
func TestSimulateDisruptionFeatureGates(t *testing.T) {
	args := []string{"simulate", "-f", "testdata/spot-consolidation.yaml", "--disruption", "--now", "2026-11-23T12:00:00Z"}
	out, err := run(args...)
	if err != nil || !strings.Contains(out, "Disruptions now: 0") || !strings.Contains(out, "needs the SpotToSpotConsolidation feature gate") {
		t.Errorf("without the gate: %v\n%s", err, out)
	}
	out, err = run(append(args, "--feature-gates", "PodDeletionCostManagement=true,SpotToSpotConsolidation=true")...)
	if err != nil || !strings.Contains(out, "Disruptions now: 1") || !strings.Contains(out, "Underutilized  ip-10-1-0-9  replaced by ") || !strings.Contains(out, " spot ") {
		t.Errorf("with the gate: %v\n%s", err, out)
	}
	if _, err := run(append(args, "--feature-gates", "SpotToSpot=true")...); err == nil || !strings.Contains(err.Error(), `no gate "SpotToSpot"`) {
		t.Errorf("a gate the controller does not have: %v", err)
	}
	if _, err := run("simulate", "-f", "testdata/spot-consolidation.yaml", "--feature-gates", "SpotToSpotConsolidation=true"); err == nil || !strings.Contains(err.Error(), "--disruption only") {
		t.Errorf("--feature-gates without --disruption: %v", err)
	}
}

// A change to the NodePool shows offline what the controller would do
// with it: nodes its requirements no longer admit have drifted and are
// replaced (the empty one first, within the budget), and nodes older than its
// expireAfter expire — from a dump of Nodes alone, without NodeClaims.
func TestSimulateDisruptionOfAChange(t *testing.T) {
	dump, err := os.ReadFile("testdata/disruption.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := func(requirement, expireAfter string) string {
		s := strings.Replace(string(dump), `        - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}`,
			`        - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}`+"\n"+requirement, 1)
		s = strings.Replace(s, "      nodeClassRef:", "      expireAfter: "+expireAfter+"\n      nodeClassRef:", 1)
		path := filepath.Join(t.TempDir(), "changed.yaml")
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	category := changed(`        - {key: karpenter.k8s.aws/instance-category, operator: In, values: ["c"]}`, "720h")
	out, err := run("simulate", "-f", category, "--disruption", "--now", "2026-11-23T12:00:00Z")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "Drifted  ip-10-0-0-1") {
		t.Errorf("the node the NodePool no longer admits (instance category m, it requires c) is not replaced for drift:\n%s", out)
	}
	if !strings.Contains(out, "ip-10-0-0-4  NodePool default allows 0 of 10% now (1 of its 4 nodes are being disrupted)") {
		t.Errorf("the other drifted node does not wait for the NodePool's budget:\n%s", out)
	}
	unchanged := changed("", "720h")
	out, err = run("simulate", "-f", unchanged, "--disruption", "--now", "2026-11-23T12:00:00Z")
	if err != nil || strings.Contains(out, "Drifted") || strings.Contains(out, "Expired") {
		t.Errorf("an unchanged NodePool drifts or expires nodes: %v\n%s", err, out)
	}
	// 720h after the nodes were made, they expire.
	out, err = run("simulate", "-f", unchanged, "--disruption", "--now", "2026-12-23T10:00:01Z")
	if err != nil || !strings.Contains(out, "Expired  ip-10-0-0-") {
		t.Errorf("nodes past their NodePool's expireAfter do not expire: %v\n%s", err, out)
	}
}

// simulate reads CapacityBuffers as their controller resolves them: a
// buffer of a Deployment keeps room for its replicas of the Deployment's
// pod (counted apart from the pods placed); one whose PodTemplate is not
// among the manifests keeps none, and says so.
func TestSimulateCapacityBuffer(t *testing.T) {
	out, err := run("simulate", "-f", "../../scenarios/capacity-buffer.yaml", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var report struct {
		NodeClaims []struct {
			Pods       []string `json:"pods"`
			BufferPods int      `json:"bufferPods"`
		} `json:"nodeClaims"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pods, buffer := 0, 0
	for _, c := range report.NodeClaims {
		pods, buffer = pods+len(c.Pods), buffer+c.BufferPods
	}
	if pods != 2 || buffer != 4 {
		t.Errorf("%d pods and %d buffer pods planned, want 2 and 4:\n%s", pods, buffer, out)
	}
	dir := t.TempDir()
	manifest, err := os.ReadFile("../../scenarios/capacity-buffer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	missing := string(manifest) + "---\napiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: batch}\nspec: {podTemplateRef: {name: batch}, replicas: 2}\n"
	if err := os.WriteFile(filepath.Join(dir, "m.yaml"), []byte(missing), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run("simulate", "-f", filepath.Join(dir, "m.yaml"))
	if err != nil || !strings.Contains(out, "CapacityBuffer default/batch keeps no room: PodTemplate default/batch (spec.podTemplateRef) is not among the manifests") ||
		!strings.Contains(out, "room for 4 CapacityBuffer pods") {
		t.Errorf("a buffer without its PodTemplate: %v\n%s", err, out)
	}
}
