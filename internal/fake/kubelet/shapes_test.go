package kubelet_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/fake/kubelet"
)

const mimeHead = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"==B==\"\n\n"

func nodeConfigPart(body string) string {
	return "--==B==\nContent-Type: application/node.eks.aws\n\n" + body
}

const ncHead = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"

// The shapes of user data where the node's own readers (nodeadm's part
// and document rules, systemd's splitting of the kubelet's flags,
// Bottlerocket's accepted taint forms) decide whether the node registers
// with karpenter.sh/unregistered: validation (what doctor and the
// controller report) and the simulated kubelet read each through the
// same reader, and agree — validation refuses a launch exactly when the
// node would not register as nodewright needs.
func TestValidationAndTheKubeletAgreeOnShapes(t *testing.T) {
	for _, tc := range []struct {
		name, family, userData string
		// registers: the kubelet registers with the unregistered taint;
		// warning: validation warns with this code.
		registers bool
		warning   string
	}{
		{"AL2023 flag that keeps the unregistered taint", awsv1.AMIFamilyAL2023,
			ncHead + "    flags: [\"--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=ci:NoSchedule\"]\n", true, userdata.CodeConfigTaintsReplaced},
		{"AL2023 flag without it", awsv1.AMIFamilyAL2023,
			ncHead + "    flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n", false, ""},
		{"AL2023 flag in a second YAML document", awsv1.AMIFamilyAL2023,
			ncHead + "    flags: [\"--node-labels=team=ci\"]\n---\n" + ncHead + "    flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n", true, userdata.CodeFormatNotRead},
		{"AL2023 --max-pods flag", awsv1.AMIFamilyAL2023, ncHead + "    flags: [\"--max-pods=200\"]\n", true, userdata.CodeSettingOverridden},
		{"Custom flag value in double quotes", awsv1.AMIFamilyCustom,
			mimeHead + nodeConfigPart(ncHead+"    flags:\n      - --register-with-taints=\"karpenter.sh/unregistered:NoExecute\"\n") + "--==B==--\n", true, ""},
		{"Custom NodeConfig in a nested multipart", awsv1.AMIFamilyCustom,
			mimeHead + "--==B==\nContent-Type: multipart/mixed; boundary=\"==I==\"\n\n--==I==\nContent-Type: application/node.eks.aws\n\n" + ncHead +
				"    flags: [\"--register-with-taints=karpenter.sh/unregistered:NoExecute\"]\n--==I==--\n--==B==--\n", false, ""},
		{"Bottlerocket single-string taint", awsv1.AMIFamilyBottlerocket,
			"[settings.kubernetes.node-taints]\n\"dedicated\" = \"ci:NoSchedule\"\n", true, userdata.CodeBottlerocketTaints},
		// AL2 bootstrap.sh, as the script reads its arguments and systemd
		// the drop-in it writes.
		{"Custom bootstrap.sh, the taint in single quotes inside", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args \"--register-with-taints='karpenter.sh/unregistered:NoExecute'\"\n", true, ""},
		{"Custom bootstrap.sh, double quotes inside", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints \"karpenter.sh/unregistered:NoExecute\" --node-labels \"team=ci\"'\n", true, ""},
		{"Custom bootstrap.sh, a single-quoted part with a space", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args \"--node-labels 'team=ci, tier=a' --register-with-taints=karpenter.sh/unregistered:NoExecute\"\n", false, ""},
		{"Custom bootstrap.sh, --kubelet-extra-args twice", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' \\\n  --kubelet-extra-args '--node-labels=team=ci'\n", false, ""},
		{"Custom bootstrap.sh, the taint flag twice", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints=dedicated=ci:NoSchedule --register-with-taints=karpenter.sh/unregistered:NoExecute'\n", true, ""},
		{"Custom bootstrap.sh --kubelet-extra-args=VALUE", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args='--register-with-taints=karpenter.sh/unregistered:NoExecute'\n", false, ""},
		{"Custom bootstrap.sh called twice", awsv1.AMIFamilyCustom,
			"#!/bin/bash\nB=/etc/eks/bootstrap.sh\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n/etc/eks/bootstrap.sh prod-eu\n", true, ""},
		{"Custom bootstrap.sh with a trailing option", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' --b64-cluster-ca\n", false, ""},
		{"Custom bootstrap.sh with a cut that keeps the taint", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh prod-eu --kubelet-extra-args \"--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels 'team=ci, tier=a'\"\n", true, userdata.CodeBootstrapArgsMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			findings := userdata.Validate(tc.family, tc.userData)
			refused := slices.ContainsFunc(findings, func(f userdata.Finding) bool { return f.Severity == userdata.Error })
			warned := slices.ContainsFunc(findings, func(f userdata.Finding) bool { return f.Code == tc.warning && f.Severity == userdata.Warning })
			reg, err := kubelet.Read(tc.family, launched(t, tc.family, tc.userData))
			var none *kubelet.NoKubeletError
			registers := err == nil && slices.Contains(reg.Taints, unregistered)
			if err != nil && !errors.As(err, &none) {
				t.Fatal(err)
			}
			if registers != tc.registers {
				t.Errorf("the kubelet registers with %s: %v, want %v (%+v, %v)", unregistered.ToString(), registers, tc.registers, reg, err)
			}
			if refused == registers {
				t.Errorf("validation refuses: %v, the node registers: %v; they disagree: %+v", refused, registers, findings)
			}
			if tc.warning != "" && !warned {
				t.Errorf("no %s warning: %+v", tc.warning, findings)
			}
			if tc.name == "AL2023 --max-pods flag" && reg.MaxPods != 200 {
				t.Errorf("max pods %d: the flag beats the configuration", reg.MaxPods)
			}
			if tc.name == "Custom flag value in double quotes" && strings.Contains(reg.Taints[0].Key, `"`) {
				t.Errorf("quotes kept: %+v", reg.Taints)
			}
		})
	}
}
