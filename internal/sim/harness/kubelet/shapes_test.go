package kubelet_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/aws/userdata/userdatatest"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
)

// The shapes of user data where the node's own readers (nodeadm's part
// and document rules, systemd's splitting of the kubelet's flags,
// Bottlerocket's accepted taint forms) decide whether the node registers
// with karpenter.sh/unregistered: validation (what doctor and the
// controller report) and the simulated kubelet read each through the
// same reader, and agree — validation refuses a launch exactly when the
// node would not register as nodewright needs.
func TestValidationAndTheKubeletAgreeOnShapes(t *testing.T) {
	for _, tc := range userdatatest.Shapes {
		t.Run(tc.Name, func(t *testing.T) {
			findings := userdata.Validate(tc.Family, tc.UserData)
			refused := slices.ContainsFunc(findings, func(f userdata.Finding) bool { return f.Severity == userdata.Error })
			warned := slices.ContainsFunc(findings, func(f userdata.Finding) bool { return f.Code == tc.Warning && f.Severity == userdata.Warning })
			reg, err := kubelet.Read(tc.Family, launched(t, tc.Family, tc.UserData))
			var none *kubelet.NoKubeletError
			registers := err == nil && slices.Contains(reg.Taints, unregistered)
			if err != nil && !errors.As(err, &none) {
				t.Fatal(err)
			}
			if registers != tc.Registers {
				t.Errorf("the kubelet registers with %s: %v, want %v (%+v, %v)", unregistered.ToString(), registers, tc.Registers, reg, err)
			}
			if refused == registers {
				t.Errorf("validation refuses: %v, the node registers: %v; they disagree: %+v", refused, registers, findings)
			}
			if tc.Warning != "" && !warned {
				t.Errorf("no %s warning: %+v", tc.Warning, findings)
			}
			if tc.Name == "AL2023 --max-pods flag" && reg.MaxPods != 200 {
				t.Errorf("max pods %d: the flag beats the configuration", reg.MaxPods)
			}
			if tc.Name == "Custom flag value in double quotes" && strings.Contains(reg.Taints[0].Key, `"`) {
				t.Errorf("quotes kept: %+v", reg.Taints)
			}
		})
	}
}
