package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

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

func TestSimulateJSON(t *testing.T) {
	out, err := run("simulate", "-f", "../../scenarios/s5-arm64-pool.yaml", "-o", "json")
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
	if _, err := run("simulate", "-f", "x.yaml", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Errorf("bad format: %v", err)
	}
	if _, err := run("simulate", "-f", "does-not-exist.yaml"); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestUserData(t *testing.T) {
	out, err := run("userdata", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--nodepool", "general", "--instance-type", "m5.large")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"application/node.eks.aws", "key: karpenter.sh/unregistered", "maxPods: 29", "karpenter.sh/nodepool=general"} {
		if !strings.Contains(out, want) {
			t.Errorf("user data lacks %q:\n%s", want, out)
		}
	}
	out, err = run("userdata", "-f", "../../scenarios/s1-userdata-register-taints.yaml", "--nodepool", "default")
	if err == nil || !strings.Contains(out, "userdata-overrides-registration-taints") || !strings.Contains(err.Error(), "nothing would be launched") {
		t.Errorf("S1 must fail with the finding: %v\n%s", err, out)
	}
	out, err = run("userdata", "-f", "../../scenarios/s3-al2-bootstrap-quoting.yaml", "--nodepool", "custom")
	if err == nil || !strings.Contains(out, "al2-bootstrap-args-malformed") || !strings.Contains(out, "custom-userdata-missing-unregistered-taint") ||
		!strings.HasPrefix(out, "#!/bin/bash\nset -e\n") {
		t.Errorf("S3 must print the Custom user data unchanged and fail with both findings: %v\n%s", err, out)
	}
	if _, err := run("userdata", "-f", "../../scenarios/s1-userdata-register-taints.yaml", "--nodepool", "nope"); err == nil || !strings.Contains(err.Error(), "found: default") {
		t.Errorf("an unknown NodePool must be named with the ones that exist: %v", err)
	}
}
