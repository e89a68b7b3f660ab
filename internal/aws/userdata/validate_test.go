package userdata

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// userDataOf reads the EC2NodeClass of a scenario file.
func userDataOf(t *testing.T, file string) (family, userData string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Split(string(data), "\n---\n")[0]
	var nc awsv1.EC2NodeClass
	if err := yaml.Unmarshal([]byte(doc), &nc); err != nil {
		t.Fatal(err)
	}
	family = awsv1.AMIFamilyAL2023
	if nc.Spec.AMIFamily != nil {
		family = *nc.Spec.AMIFamily
	}
	return family, *nc.Spec.UserData
}

func codes(fs []Finding) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range fs {
		if _, seen := out[f.Code]; !seen {
			out[f.Code] = f
		}
	}
	return out
}

// S1: AL2023 user data whose kubelet flags set --register-with-taints.
func TestS1FlagsOverrideRegistrationTaints(t *testing.T) {
	family, ud := userDataOf(t, "../../../scenarios/s1-userdata-register-taints.yaml")
	got := codes(Validate(family, ud))
	f, ok := got[CodeFlagsOverrideTaints]
	if !ok || f.Severity != Error {
		t.Fatalf("want an error %s, got %v", CodeFlagsOverrideTaints, Validate(family, ud))
	}
	for _, want := range []string{"--register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute", "karpenter.sh/unregistered:NoExecute", "startupTaints"} {
		if !strings.Contains(f.Explain(), want) {
			t.Errorf("explanation lacks %q: %s", want, f.Explain())
		}
	}
}

// S3: Custom AMI, bootstrap.sh called with --kubelet-extra-args='...' and
// nested double quotes, naming the old taint.
func TestS3BootstrapArgumentsAndMissingTaint(t *testing.T) {
	family, ud := userDataOf(t, "../../../scenarios/s3-al2-bootstrap-quoting.yaml")
	findings := Validate(family, ud)
	got := codes(findings)
	malformed, ok := got[CodeBootstrapArgsMalformed]
	if !ok {
		t.Fatalf("want %s, got %v", CodeBootstrapArgsMalformed, findings)
	}
	for _, want := range []string{`'--kubelet-extra-args=--register-with-taints="karpenter.sh/uninitialized:NoExecute"'`, "two words", "--kubelet-extra-args VALUE"} {
		if !strings.Contains(malformed.Explain(), want) {
			t.Errorf("explanation lacks %q: %s", want, malformed.Explain())
		}
	}
	// The fix is an argument bootstrap.sh understands that registers the
	// required taint: validating user data written that way finds nothing.
	wantFix := "write --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'"
	if malformed.Fix != wantFix {
		t.Errorf("fix %q, want %q", malformed.Fix, wantFix)
	}
	fixed := "#!/bin/bash\n/etc/eks/bootstrap.sh nodewright-sim " + strings.TrimPrefix(wantFix, "write ") + "\n"
	if fs := Validate(family, fixed); len(fs) != 0 {
		t.Errorf("the fixed user data still has findings: %v", fs)
	}
	missing, ok := got[CodeCustomMissingUnregistered]
	if !ok || missing.Severity != Error || !strings.Contains(missing.Message, UnregisteredTaint) ||
		!strings.Contains(missing.Message, "karpenter.sh/uninitialized is the old name") {
		t.Errorf("want %s naming %s, got %v", CodeCustomMissingUnregistered, UnregisteredTaint, findings)
	}
}

func TestHealthyUserDataHasNoFindings(t *testing.T) {
	for _, tc := range []struct{ family, userData string }{
		{awsv1.AMIFamilyAL2023, ""},
		{awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n    flags: [\"--node-labels=team=a\"]\n"},
		{awsv1.AMIFamilyAL2, "#!/bin/bash\necho hello > /etc/motd\n"},
		{awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels=a=b'\n"},
		{awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster --kubelet-extra-args '--node-labels=\"a=b\" --register-with-taints \"karpenter.sh/unregistered:NoExecute\"'\n"},
		{awsv1.AMIFamilyCustom, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: payments-prod\n    apiServerEndpoint: https://F00D.yl4.eu-west-1.eks.amazonaws.com\n    certificateAuthority: LS0tLS1CRUdJTg==\n    cidr: 10.100.0.0/16\n  kubelet:\n    config:\n      registerWithTaints:\n        - {key: karpenter.sh/unregistered, effect: NoExecute}\n"},
		{awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n"},
	} {
		if fs := Validate(tc.family, tc.userData); len(fs) != 0 {
			t.Errorf("%s %q: unexpected findings %v", tc.family, tc.userData, fs)
		}
	}
}

func TestOtherWaysToLoseTaints(t *testing.T) {
	mime := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: multipart/mixed; boundary=\"inner\"\n\n--inner\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n      - --register-with-taints\n      - dedicated=ci:NoSchedule\n--inner--\n--//--\n"
	for _, tc := range []struct {
		name, family, userData, code string
		severity                     Severity
	}{
		{"flag as two words inside nested MIME", awsv1.AMIFamilyAL2023, mime, CodeFlagsOverrideTaints, Error},
		{"registerWithTaints replaced", awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      registerWithTaints: [{key: dedicated, value: ci, effect: NoSchedule}]\n", CodeConfigTaintsReplaced, Warning},
		{"AL2 script calls bootstrap", awsv1.AMIFamilyAL2, "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster --kubelet-extra-args '--register-with-taints=dedicated=ci:NoSchedule'\n", CodeUserCallsBootstrap, Error},
		{"bottlerocket node-taints", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes.node-taints]\n\"dedicated\" = [\"ci:NoSchedule\"]\n", CodeBottlerocketTaints, Warning},
		{"single-quoted part with a space cuts the taint", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args \"--node-labels 'team=ci, tier=a' --register-with-taints=karpenter.sh/unregistered:NoExecute\"\n", CodeBootstrapArgsMalformed, Error},
		{"--kubelet-extra-args twice: the last wins", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' --kubelet-extra-args '--node-labels=team=ci'\n", CodeCustomMissingUnregistered, Error},
		{"bootstrap.sh --help", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' --help\n", CodeBootstrapArgsMalformed, Error},
		{"custom without registration", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh my-cluster\n", CodeCustomMissingUnregistered, Error},
		{"custom empty", awsv1.AMIFamilyCustom, "", CodeCustomMissingUnregistered, Error},
		{"bad MIME", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nbody", CodeUnreadable, Error},
		{"Custom Bottlerocket max-pods as a string", awsv1.AMIFamilyCustom, "[settings.kubernetes]\ncluster-name = \"c\"\napi-server = \"https://c.example.com\"\ncluster-certificate = \"\"\nmax-pods = \"110\"\n[settings.kubernetes.node-taints]\n\"karpenter.sh/unregistered\" = \":NoExecute\"\n", CodeUnreadable, Error},
		{"Bottlerocket max-pods as a string is overwritten", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nmax-pods = \"110\"\n", CodeUnreadable, Warning},
		{"Bottlerocket misspelt setting", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nmax-pod = 110\n", CodeUnreadable, Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Validate(tc.family, tc.userData)
			f, ok := codes(fs)[tc.code]
			if !ok || f.Severity != tc.severity {
				t.Errorf("want %s %s, got %v", tc.severity, tc.code, fs)
			}
		})
	}
}

func FuzzValidate(f *testing.F) {
	f.Add(awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [--register-with-taints=a=b:NoExecute]\n")
	f.Add(awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args='--register-with-taints=\"x:NoExecute\"'\n")
	f.Add(awsv1.AMIFamilyBottlerocket, "[settings.kubernetes.node-taints]\na = [\"b:NoSchedule\"]\n")
	f.Add(awsv1.AMIFamilyAL2, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript\n\n#!/bin/sh\n/etc/eks/bootstrap.sh x\n--//--\n")
	f.Fuzz(func(t *testing.T, family, userData string) {
		for _, finding := range Validate(family, userData) {
			if finding.Code == "" || finding.Message == "" || finding.Fix == "" || (finding.Severity != Error && finding.Severity != Warning) {
				t.Fatalf("incomplete finding %+v", finding)
			}
		}
	})
}

// The 16 KB limit is EC2's on what is launched, so it is checked on the
// user data as merged for the node: a 17 KB MIME document whose preamble
// is not launched merges well under it and is valid; user data under 16
// KB that the bootstrap takes over it is refused; Custom user data is
// launched as it is.
func TestSizeLimitOnWhatIsLaunched(t *testing.T) {
	script := "#!/bin/bash\necho hello\n"
	mime := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n" + strings.Repeat("This preamble is ignored by MIME readers.\n", 420) +
		"--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n" + script + "--BOUNDARY--\n"
	if len(mime) <= MaxSize {
		t.Fatalf("the test needs user data over %d bytes, has %d", MaxSize, len(mime))
	}
	merged, err := Generate(awsv1.AMIFamilyAL2023, TypicalCluster, Node{MaxPods: 110}, mime)
	if err != nil || len(merged) > 4096 {
		t.Fatalf("merged: %d bytes, %v; the preamble is not launched", len(merged), err)
	}
	if f := codes(Validate(awsv1.AMIFamilyAL2023, mime)); has(f, CodeTooLarge) {
		t.Errorf("%d bytes of user data launched as %d bytes: %v; want no size finding", len(mime), len(merged), f)
	}
	near := "#!/bin/bash\n" + strings.Repeat("# a comment line that is launched with the script\n", 300)
	if len(near) >= MaxSize {
		t.Fatalf("the test needs user data under %d bytes, has %d", MaxSize, len(near))
	}
	found := Validate(awsv1.AMIFamilyAL2023, near)
	if !has(codes(found), CodeTooLarge) {
		t.Errorf("%d bytes of user data that the bootstrap takes over the limit: %v; want %s", len(near), codes(found), CodeTooLarge)
	}
	if f := codes(Validate(awsv1.AMIFamilyCustom, near+"/usr/bin/nodeadm init # karpenter.sh/unregistered\n")); has(f, CodeTooLarge) {
		t.Errorf("Custom user data under the limit is launched as it is: %v", f)
	}
	if f := codes(Validate(awsv1.AMIFamilyCustom, near+near)); !has(f, CodeTooLarge) {
		t.Errorf("Custom user data over the limit: %v; want %s", f, CodeTooLarge)
	}
}

func has(found map[string]Finding, code string) bool { _, ok := found[code]; return ok }

// TestExtraTaints: the taints every node of a class registers with
// beside nodewright's own are those its boot model says.
func TestExtraTaints(t *testing.T) {
	for _, c := range []struct {
		name, family, userData, want string
	}{
		{"a nodeadm flag", awsv1.AMIFamilyAL2023, "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=ci:NoSchedule\"]\n", "[dedicated=ci:NoSchedule]"},
		{"a Custom AL2 script", awsv1.AMIFamilyCustom, "#!/bin/bash\nTAINTS=karpenter.sh/unregistered:NoExecute,nvidia.com/gpu=true:NoSchedule\n/etc/eks/bootstrap.sh shop --kubelet-extra-args \"--register-with-taints=$TAINTS\"\n", "[nvidia.com/gpu=true:NoSchedule]"},
		{"Bottlerocket's replaced", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes.node-taints]\ndedicated = \"ci:NoSchedule\"\n", "[]"},
		{"a Custom Bottlerocket node's", awsv1.AMIFamilyCustom, "[settings.kubernetes]\ncluster-name = \"c\"\napi-server = \"https://c.example.com\"\ncluster-certificate = \"\"\n[settings.kubernetes.node-taints]\n\"karpenter.sh/unregistered\" = \":NoExecute\"\ndedicated = \"ci:NoSchedule\"\n", "[dedicated=ci:NoSchedule]"},
		{"a node that does not register as nodewright needs", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh shop --kubelet-extra-args '--register-with-taints=dedicated=ci:NoSchedule'\n", "[]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, taint := range ExtraTaints(c.family, c.userData) {
				got = append(got, taint.ToString())
			}
			if s := "[" + strings.Join(got, " ") + "]"; s != c.want {
				t.Errorf("got %s, want %s", s, c.want)
			}
		})
	}
}

// TestCustomOnAnImageOfAFamily: a Custom AMI whose name says it is an
// EKS-optimized AL2 image reads a NodeConfig as AL2 does — cloud-init
// passes it over, nothing runs bootstrap.sh — and the node never joins.
func TestCustomOnAnImageOfAFamily(t *testing.T) {
	nodeConfig := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: shop-eu\n    apiServerEndpoint: https://A1B2.gr7.eu-central-1.eks.amazonaws.com\n    certificateAuthority: LS0tLS1CRUdJTg==\n    cidr: 10.100.0.0/16\n  kubelet:\n    config:\n      registerWithTaints: [{key: karpenter.sh/unregistered, effect: NoExecute}]\n"
	if fs := ValidateWith(awsv1.AMIFamilyCustom, nodeConfig, Known{}); slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Error }) {
		t.Fatalf("on an image of its own, the NodeConfig is nodeadm's: %v", fs)
	}
	fs := ValidateWith(awsv1.AMIFamilyCustom, nodeConfig, Known{ImageFamily: awsv1.AMIFamilyAL2})
	f, ok := codes(fs)[CodeNeverJoins]
	if !ok || f.Severity != Error || !strings.Contains(f.Message, "bootstrap.sh") {
		t.Errorf("on an AL2 image: %v; want %s naming bootstrap.sh", fs, CodeNeverJoins)
	}
}

// The findings are read by the family's boot model, so they see what the
// node runs and reads, not the text: a bootstrap.sh call in a branch that
// never runs is no call, a call built from variables is read as bash
// expands it, and a nodeadm flag in a drop-in a cloud-config writes is
// the kubelet's as much as one in the user data's NodeConfig.
func TestFindingsReadAsTheNodeReads(t *testing.T) {
	dropIn := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"==B==\"\n\n--==B==\nContent-Type: text/cloud-config\n\n#cloud-config\nwrite_files:\n- path: /etc/eks/nodeadm.d/90-taints.yaml\n  content: |\n    apiVersion: node.eks.aws/v1alpha1\n    kind: NodeConfig\n    spec:\n      kubelet:\n        flags: [\"--register-with-taints=gpu=true:NoSchedule\"]\n--==B==--\n"
	for _, tc := range []struct {
		name, family, userData string
		want                   map[string]Severity // "" severity: the code must be absent
	}{
		{"a call in a branch that never runs", awsv1.AMIFamilyAL2,
			"#!/bin/bash\nif false; then\n  /etc/eks/bootstrap.sh eu-prod --kubelet-extra-args '--node-labels=a=b'\nfi\necho ready\n",
			map[string]Severity{CodeUserCallsBootstrap: ""}},
		{"a call whose options come from a variable", awsv1.AMIFamilyCustom,
			"#!/bin/bash\nOPTS=\"--kubelet-extra-args=--register-with-taints=karpenter.sh/unregistered:NoExecute\"\n/etc/eks/bootstrap.sh eu-prod $OPTS\n",
			map[string]Severity{CodeBootstrapArgsMalformed: Error, CodeCustomMissingUnregistered: Error}},
		{"the same call with the option as two words", awsv1.AMIFamilyCustom,
			"#!/bin/bash\nOPTS=\"--register-with-taints=karpenter.sh/unregistered:NoExecute\"\n/etc/eks/bootstrap.sh eu-prod --kubelet-extra-args \"$OPTS\"\n",
			map[string]Severity{CodeBootstrapArgsMalformed: "", CodeCustomMissingUnregistered: ""}},
		{"a script without #! is never run on AL2023", awsv1.AMIFamilyAL2023,
			"/etc/eks/bootstrap.sh eu-prod\n", map[string]Severity{CodeFormatNotRead: ""}},
		{"a script that runs bootstrap.sh on AL2023", awsv1.AMIFamilyAL2023,
			"#!/bin/bash\n/etc/eks/bootstrap.sh eu-prod\n", map[string]Severity{CodeFormatNotRead: Warning}},
		{"a drop-in's taint flag on AL2023", awsv1.AMIFamilyAL2023, dropIn,
			map[string]Severity{CodeFlagsOverrideTaints: Error}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := Validate(tc.family, tc.userData)
			got := codes(fs)
			for code, severity := range tc.want {
				f, ok := got[code]
				switch {
				case severity == "" && ok:
					t.Errorf("%s found: %v", code, f)
				case severity != "" && (!ok || f.Severity != severity):
					t.Errorf("want %s %s, got %v", severity, code, fs)
				}
			}
		})
	}
}
