package windows

import (
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
)

const script = `& $env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1`

// TestBoot: what a Windows node makes of PowerShell users write.
func TestBoot(t *testing.T) {
	for _, c := range []struct {
		name, userData string
		want           boot.Verdict
		registered     bool
	}{
		{"the bootstrap with the registration taint", "<powershell>\n" + script + " -EKSClusterName 'retail-win' -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels=team=pos'\n</powershell>", boot.Joins, true},
		{"a taint the kubelet refuses", "<powershell>\n" + script + " -EKSClusterName 'retail-win' -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:Noexecute'\n</powershell>", boot.NeverJoins, false},
		{"a label the kubelet refuses", "<powershell>\n" + script + " -EKSClusterName 'retail-win' -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels=node-role.kubernetes.io/pos=true'\n</powershell>", boot.NeverJoins, false},
		{"no <powershell> block", script + " -EKSClusterName 'retail-win'\n", boot.NeverJoins, false},
		{"no bootstrap call", "<powershell>\nSet-TimeZone -Id 'UTC'\n</powershell>", boot.NeverJoins, false},
		{"a misspelt parameter, then a call that runs", "<powershell>\n" + script + " -ClusterName 'retail-win'\n" + script + " -EKSClusterName 'retail-win' -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>", boot.Joins, true},
		{"splatted parameters", "<powershell>\n$p = @{EKSClusterName = 'retail-win'}\n" + script + " @p\n</powershell>", boot.NotModelled, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Boot([]byte(c.userData), Machine{MaxPods: 110})
			if o.Verdict != c.want || o.Registered() != c.registered {
				t.Errorf("got %s (notes %q), want %s registered=%v", o.Summary(), o.Notes, c.want, c.registered)
			}
		})
	}
}
