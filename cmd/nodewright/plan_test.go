package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// The drift scenario's change (its EC2NodeClass gains a tag), planned on
// a dump of the scenario's cluster before it (managed fields, Events and
// a ConfigMap in it): every node drifts for spec.tags, and the rollout
// replaces them one at a time, as the budget ("1") allows and as the
// simulated cluster did; Events and the ConfigMap are left out with a
// warning each.
func TestPlanOnTheDriftScenario(t *testing.T) {
	cmd := newRootCommand()
	var out, errs strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&errs)
	cmd.SetArgs([]string{"plan", "-f", "testdata/drift-dump.yaml", "--change", "../../scenarios/drift.then-1.yaml", "--now", "2026-11-25T18:30:00Z", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errs.String())
	}
	if strings.Count(errs.String(), "Event default-") != 3 || !strings.Contains(errs.String(), "ConfigMap kube-root-ca.crt is not read") {
		t.Errorf("warnings about what was left out:\n%s", errs.String())
	}
	var r whatif.PlanReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(r.Changes) != 1 || r.Changes[0].Kind != "EC2NodeClass" || strings.Join(r.Changes[0].Fields, ",") != "spec.tags" {
		t.Errorf("changes %+v; want EC2NodeClass default's spec.tags", r.Changes)
	}
	if len(r.Nodes) != 4 {
		t.Fatalf("nodes %+v; the dump has 4", r.Nodes)
	}
	for _, n := range r.Nodes {
		if !n.Drifted || n.Reason != "NodeClassDrift" || strings.Join(n.Fields, ",") != "spec.tags" || n.NodeClaim == "" {
			t.Errorf("node %+v; want drifted by the EC2NodeClass's spec.tags", n)
		}
	}
	if len(r.Rounds) != 4 {
		t.Fatalf("rounds %+v; the budget allows one node at a time", r.Rounds)
	}
	replaced := map[string]bool{}
	for _, rd := range r.Rounds {
		if len(rd.Nodes) != 1 || len(rd.Replacements) != 1 || rd.PodsMoved != 1 {
			t.Errorf("round %+v; want one node, one replacement, one pod", rd)
			continue
		}
		replaced[rd.Nodes[0].Node] = true
	}
	if len(replaced) != 4 || len(r.Unplaced) != 0 || len(r.Blocked) != 0 {
		t.Errorf("replaced %v, unplaced %+v, blocked %+v", replaced, r.Unplaced, r.Blocked)
	}
	if !(r.Price.WorstRound > r.Price.Before) || r.Price.After != r.Price.Before {
		t.Errorf("price %+v: a replacement runs beside each node, and the same types come back", r.Price)
	}

	// Resolved in the simulated account the dump came from, the plan is
	// the same: its AMIs are the ones the nodes run.
	out2, err := runStdout("plan", "-f", "testdata/drift-dump.yaml", "--change", "../../scenarios/drift.then-1.yaml", "--now", "2026-11-25T18:30:00Z", "-o", "json", "--cloud", "sim")
	var again whatif.PlanReport
	if err != nil || json.Unmarshal([]byte(out2), &again) != nil || len(again.Rounds) != 4 || again.Nodes[0].Reason != "NodeClassDrift" {
		t.Errorf("--cloud sim: %v; rounds %d, nodes %+v", err, len(again.Rounds), again.Nodes)
	}

	// The table says the same for people.
	table, err := run("plan", "-f", "testdata/drift-dump.yaml", "--change", "../../scenarios/drift.then-1.yaml", "--now", "2026-11-25T18:30:00Z")
	if err != nil || !strings.Contains(table, "Drift: 4 of 4 nodes") || !strings.Contains(table, "Rollout: 4 round(s)") || !strings.Contains(table, "(spec.tags)") {
		t.Errorf("table: %v\n%s", err, table)
	}
}

// A change that leaves pods without a place is an error (exit status 2)
// that names the workload, after the plan is printed; a change file with
// anything but NodePools and EC2NodeClasses is refused.
func TestPlanRefusesAChangeThatStrandsPods(t *testing.T) {
	change := filepath.Join(t.TempDir(), "nano.yaml")
	if err := os.WriteFile(change, []byte(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.nano]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 10s
    budgets: [{nodes: "1"}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run("plan", "-f", "testdata/drift-dump.yaml", "--change", change, "--now", "2026-11-25T18:30:00Z")
	if !errors.As(err, new(found)) || !strings.Contains(err.Error(), "without a place") {
		t.Fatalf("a change that strands pods: %v (want status 2, found)\n%s", err, out)
	}
	if !strings.Contains(out, "Pods without a place after the change:") || !strings.Contains(out, "Deployment default/web") {
		t.Errorf("the plan does not name the workload:\n%s", out)
	}
	if _, err := run("plan", "-f", "testdata/drift-dump.yaml", "--change", "testdata/drift-dump.yaml"); err == nil || !strings.Contains(err.Error(), "NodePools and EC2NodeClasses only") {
		t.Errorf("a dump as the change: %v", err)
	}
	if _, err := run("plan", "-f", "testdata/drift-dump.yaml"); err == nil || !strings.Contains(err.Error(), "--change") {
		t.Errorf("no change: %v", err)
	}
}

// Many documents of a kind left out are counted, not listed.
func TestManySkippedAreCounted(t *testing.T) {
	var skipped []whatif.Skipped
	for i := range 5 {
		skipped = append(skipped, whatif.Skipped{File: "dump.yaml", Line: 1, Kind: "Event", Name: fmt.Sprint("e", i)})
	}
	skipped = append(skipped, whatif.Skipped{File: "dump.yaml", Line: 1, Kind: "Service", Name: "web"})
	var b strings.Builder
	warnSkipped(&b, skipped)
	if b.String() != "warning: dump.yaml: 5 Event documents are not read\nwarning: dump.yaml:1: Service web is not read\n" {
		t.Errorf("warnings:\n%s", b.String())
	}
}

// A change that brings in a field report's failure is named before it is
// made, with doctor's finding, and plan fails: new user data that
// registers the node with a taint of its own (S1), a new AMI without the
// NodePool's architecture (S5).
func TestPlanNamesTheFailuresAChangeBringsIn(t *testing.T) {
	class := func(extra string) string {
		return `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: nodewright-sim}}]
` + extra
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, change, code string }{
		{"S1", class("  amiSelectorTerms: [{alias: al2023@latest}]\n  userData: |\n    apiVersion: node.eks.aws/v1alpha1\n    kind: NodeConfig\n    spec:\n      kubelet:\n        flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n"),
			"userdata-overrides-registration-taints"},
		{"S5", class("  amiFamily: AL2023\n  amiSelectorTerms: [{name: amazon-eks-node-al2023-arm64-standard-1.34-*}]\n"), "ami-architecture-mismatch"},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(path, []byte(tc.change), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := newRootCommand()
		var out, errs strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errs)
		cmd.SetArgs([]string{"plan", "-f", "testdata/drift-dump.yaml", "--change", path, "--now", "2026-11-25T18:30:00Z", "-o", "json"})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), "change nothing yet") {
			t.Errorf("%s: %v; want the plan refused", tc.name, err)
		}
		var r struct {
			Introduced []struct{ Code, Object, Fix string }
		}
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		found := false
		for _, f := range r.Introduced {
			found = found || f.Code == tc.code && f.Fix != ""
		}
		if !found {
			t.Errorf("%s: introduced %+v; want %s", tc.name, r.Introduced, tc.code)
		}
	}
	// The drift scenario's own change (a tag) brings in nothing.
	cmd := newRootCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&strings.Builder{})
	cmd.SetArgs([]string{"plan", "-f", "testdata/drift-dump.yaml", "--change", "../../scenarios/drift.then-1.yaml", "--now", "2026-11-25T18:30:00Z", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"introduced": []`) && !strings.Contains(out.String(), `"introduced":[]`) {
		t.Errorf("a tag brings in findings: %s", out.String())
	}
}

// plan --region on a dump whose EC2NodeClass has subnets in another
// region: the replacements stay in the class's own zones, and the plan
// says so and whose prices it uses; a name that is no region is refused.
func TestPlanInARegion(t *testing.T) {
	out, err := runStdout("plan", "-f", "testdata/drift-dump.yaml", "--change", "../../scenarios/drift.then-1.yaml", "--now", "2026-11-25T18:30:00Z", "--region", "eu-west-1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r whatif.PlanReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Rounds) != 4 {
		t.Fatalf("rounds %+v; want the four nodes replaced as without --region", r.Rounds)
	}
	for _, rd := range r.Rounds {
		for _, rep := range rd.Replacements {
			if !strings.HasPrefix(rep.Zone, "us-east-1") {
				t.Errorf("a replacement in %s; the EC2NodeClass's subnets are in us-east-1", rep.Zone)
			}
		}
	}
	warnings := strings.Join(r.Warnings, "\n")
	for _, want := range []string{"no prices for eu-west-1; these are us-east-1's", "EC2NodeClass default: its subnets are in us-east-1"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings %q; want %q", r.Warnings, want)
		}
	}
	if _, err := run("plan", "-f", "testdata/drift-dump.yaml", "--change", "../../scenarios/drift.then-1.yaml", "--region", "us-east"); err == nil || !strings.Contains(err.Error(), "us-east") {
		t.Errorf("plan --region us-east: %v, want an error naming it", err)
	}
}
