package doctor

import (
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// A boot that depends on what the model does not run gets no verdict:
// doctor names it, with how to check, and reports no error; a kubelet
// argument the kubelet exits on is an error naming it.
func TestBootOutcomesNamed(t *testing.T) {
	for _, tc := range []struct {
		name, family, userData, code string
		severity                     Severity
		says                         string
	}{
		{"depends on a command's status", awsv1.AMIFamilyCustom,
			"#!/bin/bash\nif curl -sf http://config.payments.internal/ready; then\n  /etc/eks/bootstrap.sh payments-prod --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'\nfi\n",
			CodeBootNotModelled, Warning, "curl"},
		{"a label the kubelet may not set", awsv1.AMIFamilyCustom,
			"#!/bin/bash\n/etc/eks/bootstrap.sh payments-prod --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels=node-role.kubernetes.io/worker=true'\n",
			CodeNodeNeverJoins, Error, "node-role.kubernetes.io/worker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{class("payments", tc.family, tc.userData)}}})
			var found *Finding
			for i, f := range r.Findings {
				if f.Code == tc.code {
					found = &r.Findings[i]
				}
				if tc.severity == Warning && f.Severity == Error && f.Object == "EC2NodeClass/payments" {
					t.Errorf("an error for a boot that is not modelled: %s", f.Message)
				}
			}
			if found == nil || found.Severity != tc.severity || !strings.Contains(found.Message, tc.says) {
				t.Fatalf("want %s %s naming %q, got %+v", tc.severity, tc.code, tc.says, r.Findings)
			}
		})
	}
}
