package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type doctorJSON struct {
	Findings []struct {
		Code, Severity, Object, Message, Evidence, Fix string
	} `json:"findings"`
}

func doctorOn(t *testing.T, args ...string) (doctorJSON, error) {
	t.Helper()
	out, err := run(append([]string{"doctor", "-o", "json"}, args...)...)
	var report doctorJSON
	if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
		t.Fatalf("doctor %v printed no JSON (%v): %s", args, jerr, out)
	}
	return report, err
}

// doctor -f on each scenario reports the findings its header names, with
// exit status 2; on the healthy scenario nothing above info and status 0.
func TestDoctorOnScenarios(t *testing.T) {
	for _, tc := range []struct {
		file  string
		cloud string
		want  map[string][]string // code → fragments of message/evidence/fix
	}{
		{"s1-userdata-register-taints.yaml", "", map[string][]string{
			"userdata-overrides-registration-taints": {"--register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute", "karpenter.sh/unregistered:NoExecute", "startupTaints:"},
			// The pods the controller would leave pending, with its reason.
			"pod-incompatible-with-nodepools": {"EC2NodeClass cilium is not ready (ValidationSucceeded=False, UserDataInvalid"},
		}},
		{"s3-al2-bootstrap-quoting.yaml", "", map[string][]string{
			"al2-bootstrap-args-malformed":               {`--kubelet-extra-args='--register-with-taints="karpenter.sh/uninitialized:NoExecute"'`, "--kubelet-extra-args VALUE"},
			"custom-userdata-missing-unregistered-taint": {"karpenter.sh/unregistered:NoExecute", "old name"},
			"pod-incompatible-with-nodepools":            {"EC2NodeClass custom-al2 is not ready (ValidationSucceeded=False, UserDataInvalid"},
		}},
		{"s4-aws-auth-controller-role.yaml", "", map[string][]string{
			"node-role-not-mapped": {"KarpenterNodeRole-nodewright-sim", "KarpenterControllerRole-nodewright-sim is the controller's role",
				"- rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim\n  username: system:node:{{EC2PrivateDNSName}}\n  groups:\n    - system:bootstrappers\n    - system:nodes"},
		}},
		{"s5-arm64-pool.yaml", "sim", map[string][]string{
			"ami-architecture-mismatch":       {"NodePool cicd-armapps", "no AMI for arm64"},
			"pod-incompatible-with-nodepools": {"armapp-typo-0", "closest is NodePool cicd-armapps", "pod-type=armapp, pod selects pod-type=armapps"},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			args := []string{"-f", "../../scenarios/" + tc.file}
			if tc.cloud != "" {
				args = append(args, "--cloud", tc.cloud)
			}
			report, err := doctorOn(t, args...)
			if !errors.As(err, new(found)) {
				t.Errorf("exit: %v, want status 2 (found)", err)
			}
			seen := map[string]bool{}
			texts := map[string]string{}
			for _, f := range report.Findings {
				if _, wanted := tc.want[f.Code]; !wanted {
					if f.Severity == "error" {
						t.Errorf("unexpected error finding %+v", f)
					}
					continue
				}
				seen[f.Code] = true
				texts[f.Code] += f.Message + "\n" + f.Evidence + "\n" + f.Fix + "\n"
			}
			// Each fragment is in some finding of its code (a scenario's
			// workloads are a finding each).
			for code, frags := range tc.want {
				for _, frag := range frags {
					if seen[code] && !strings.Contains(texts[code], frag) {
						t.Errorf("%s lacks %q:\n%s", code, frag, texts[code])
					}
				}
			}
			for code := range tc.want {
				if !seen[code] {
					t.Errorf("no %s finding: %+v", code, report.Findings)
				}
			}
		})
	}
	// Without the account, S5's AMI (an id) cannot be checked: no guess.
	report, _ := doctorOn(t, "-f", "../../scenarios/s5-arm64-pool.yaml")
	for _, f := range report.Findings {
		if f.Code == "ami-architecture-mismatch" {
			t.Errorf("AMI architecture judged without the account: %+v", f)
		}
	}
	for _, file := range []string{"healthy-mixed-arch.yaml", "s2-cloud-provider-taint.yaml"} {
		report, err := doctorOn(t, "-f", "../../scenarios/"+file, "--cloud", "sim")
		if err != nil {
			t.Errorf("%s: exit %v", file, err)
		}
		for _, f := range report.Findings {
			if f.Severity != "info" {
				t.Errorf("%s: %+v", file, f)
			}
		}
	}
}

func TestDoctorTableAndFlags(t *testing.T) {
	out, err := run("doctor", "-f", "../../scenarios/s4-aws-auth-controller-role.yaml")
	if !errors.As(err, new(found)) {
		t.Errorf("exit %v", err)
	}
	for _, want := range []string{"ERROR  node-role-not-mapped  EC2NodeClass/default", "fix: add to data.mapRoles", "- system:nodes"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out, err = run("doctor", "-f", "../../scenarios/healthy-mixed-arch.yaml")
	if err != nil || !strings.Contains(out, "no findings") {
		t.Errorf("healthy: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"-o", "xml"}, {"--cloud", "gcp"}, {"--cloud", "aws"}, {"-f", "missing.yaml"}} {
		if _, err := run(append([]string{"doctor", "-f", "../../scenarios/healthy-mixed-arch.yaml"}, bad...)...); err == nil || errors.As(err, new(found)) {
			t.Errorf("doctor %v: %v, want a usage error", bad, err)
		}
	}
}

// doctor plans as the controller does with --ignore-dra-requests: the
// GPU pods it would leave pending are named, with the flag to change;
// without it, the same manifests have no such finding.
func TestDoctorIgnoreDRARequests(t *testing.T) {
	codes := func(args ...string) map[string]string {
		report, _ := doctorOn(t, append([]string{"-f", "../../scenarios/dra-gpu.yaml"}, args...)...)
		out := map[string]string{}
		for _, f := range report.Findings {
			out[f.Code] += f.Object + " " + f.Fix + "\n"
		}
		return out
	}
	if got := codes()["resource-claims-unsatisfiable"]; got != "" {
		t.Errorf("without the flag: resource-claims-unsatisfiable %q, want none", got)
	}
	got := codes("--ignore-dra-requests")["resource-claims-unsatisfiable"]
	for _, want := range []string{"Deployment/default/infer", "Deployment/default/train", "--ignore-dra-requests"} {
		if !strings.Contains(got, want) {
			t.Errorf("with the flag: resource-claims-unsatisfiable %q, want %q", got, want)
		}
	}
}
