package userdata

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot/windows"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
)

// The generated Windows user data is one <powershell> block: the user's
// commands, then the bootstrap call with everything the node registers
// with, read back by the one reader of Windows user data.
func TestWindowsUserDataReadsBack(t *testing.T) {
	c := Cluster{Name: "o'brien-prod", Endpoint: "https://ABC.gr7.eu-west-1.eks.amazonaws.com", CABundle: "LS0tQ0E=", DNS: "172.20.0.10"}
	n := Node{
		Labels:  map[string]string{"karpenter.sh/nodepool": "win", "team": "ci", "kubernetes.io/os": "windows"},
		Taints:  []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}},
		MaxPods: 110, Kubelet: &kubeletconfig.Config{PodsPerCore: ptr.To[int32](10), SystemReserved: map[string]string{"cpu": "100m"}},
	}
	out, err := Generate(awsv1.AMIFamilyWindows2022, c, n, "Set-TimeZone -Id 'UTC'\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "<powershell>\nSet-TimeZone -Id 'UTC'\n[string]$EKSBootstrapScriptFile") || !strings.HasSuffix(out, "</powershell>\n") {
		t.Fatalf("user data:\n%s", out)
	}
	ps := windows.Read([]byte(out))
	if ps.Unparsable != "" || len(ps.Calls) != 1 || ps.Calls[0].Fails != "" {
		t.Fatalf("read back: %+v", ps)
	}
	call := ps.Calls[0]
	want := map[string]string{
		"EKSClusterName": c.Name, "APIServerEndpoint": c.Endpoint, "Base64ClusterCA": c.CABundle, "DNSClusterIP": c.DNS,
		"KubeletExtraArgs": "--node-labels=karpenter.sh/nodepool=win,team=ci --register-with-taints=os=windows:NoSchedule,karpenter.sh/unregistered:NoExecute --max-pods=110 --pods-per-core=10 --system-reserved=cpu=100m",
	}
	if diff := cmp.Diff(want, call.Params); diff != "" {
		t.Errorf("parameters (-want +got):\n%s", diff)
	}
	if !slices.Contains(call.KubeletArgs, "--max-pods=110") || len(call.KubeletArgs) != 5 {
		t.Errorf("kubelet words %q", call.KubeletArgs)
	}
	if f := Validate(awsv1.AMIFamilyWindows2022, "Set-TimeZone -Id 'UTC'\n"); len(f) != 0 {
		t.Errorf("findings on plain PowerShell: %+v", f)
	}
}

// PowerShell's reading of the shapes users write: quoting, escapes,
// variables, continuation lines, comments, parameter names.
func TestReadPowerShellShapes(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		params       map[string]string
		fails        string
		unparsable   string
	}{
		{"double quotes with a backtick quote", "<powershell>\n& \"C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1\" -EKSClusterName \"a`\"b\"\n</powershell>",
			map[string]string{"EKSClusterName": `a"b`}, "", ""},
		{"colon form and case", "<powershell>\n& $env:ProgramFiles\\Amazon\\EKS\\start-eksbootstrap.ps1 -eksclustername:prod\n</powershell>",
			map[string]string{"EKSClusterName": "prod"}, "", ""},
		{"a variable set from another", "<powershell>\n$root = \"$env:ProgramFiles\\Amazon\\EKS\"\n$script = \"$root\\Start-EKSBootstrap.ps1\"\n& $script -EKSClusterName prod # join\n</powershell>",
			map[string]string{"EKSClusterName": "prod"}, "", ""},
		{"positional cluster name", "<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' prod\n</powershell>",
			map[string]string{"EKSClusterName": "prod"}, "", ""},
		{"block comment", "<powershell>\n<# setup\n#>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -EKSClusterName prod; Write-Host done\n</powershell>",
			map[string]string{"EKSClusterName": "prod"}, "", ""},
		{"ambiguous prefix", "<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -EKSClusterName prod -Kube x\n</powershell>",
			nil, "ambiguous", ""},
		{"no cluster name", "<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -KubeletExtraArgs '--max-pods=20'\n</powershell>",
			nil, "EKSClusterName", ""},
		{"a tag inside", "<powershell>\n<persist>true</persist>\n</powershell>", nil, "", "reserves the '<' operator"},
		{"single quote left open", "<powershell>\nWrite-Host 'x\n</powershell>", nil, "", "never closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := windows.Read([]byte(tc.script))
			if tc.unparsable != "" {
				if !strings.Contains(ps.Unparsable, tc.unparsable) {
					t.Fatalf("unparsable %q, want %q", ps.Unparsable, tc.unparsable)
				}
				return
			}
			if ps.Unparsable != "" || len(ps.Calls) != 1 {
				t.Fatalf("%+v", ps)
			}
			if tc.fails != "" {
				if !strings.Contains(ps.Calls[0].Fails, tc.fails) {
					t.Fatalf("fails %q, want %q", ps.Calls[0].Fails, tc.fails)
				}
				return
			}
			if diff := cmp.Diff(tc.params, ps.Calls[0].Params); diff != "" || ps.Calls[0].Fails != "" {
				t.Errorf("parameters (-want +got):\n%s%s", diff, ps.Calls[0].Fails)
			}
		})
	}
}

// The kubelet service's command line: double quotes group and go, single
// quotes stay.
func TestServiceWords(t *testing.T) {
	got := windows.ServiceWords(`--node-labels="team=ci,tier=a b" --register-with-taints='x:NoSchedule'  --max-pods=3`)
	want := []string{"--node-labels=team=ci,tier=a b", "--register-with-taints='x:NoSchedule'", "--max-pods=3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The shapes of Windows user data found in the field's templates: output
// redirections after the call, here-strings, $Env: in any case,
// -Name:'value', CRLF line continuations, no spaces around =, a call that
// fails before one that runs.
func TestReadPowerShellFieldShapes(t *testing.T) {
	const script = `'C:\Program Files\Amazon\EKS\Start-EKSBootstrap.ps1'`
	for _, tc := range []struct {
		name, userData string
		registers      bool
		warning        string
	}{
		{"redirections after the call", "<powershell>\n& " + script + " -EKSClusterName c -APIServerEndpoint e -Base64ClusterCA ca -DNSClusterIP 10.0.0.10 -ContainerRuntime containerd -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute' 3>&1 4>&1 5>&1 6>&1\n</powershell>", true, ""},
		{"a pipe after the call", "<powershell>\n& " + script + " -EKSClusterName c -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute' | Out-File C:\\boot.log\n</powershell>", true, ""},
		{"a here-string with a quote inside", "<powershell>\n$note = @'\ndon't \"panic\"\n'@\n& " + script + " -EKSClusterName c -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>", true, ""},
		{"$Env: and no spaces around =", "<powershell>\n$f=\"$Env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n&$f -EKSClusterName c -KubeletExtraArgs:'--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>", true, ""},
		{"CRLF continuation", "<powershell>\r\n& " + script + " `\r\n  -EKSClusterName c `\r\n  -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\r\n</powershell>", true, ""},
		{"a failing call, then one that runs", "<powershell>\n& " + script + " -Cluster c\n& " + script + " -EKSClusterName c -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>", true, CodeWindowsBootstrapArgsFailed},
		{"splatted parameters", "<powershell>\n$p = @{EKSClusterName = 'c'}\n& " + script + " @p\n</powershell>", false, CodeWindowsBootstrapArgsFailed},
		{"a comment before the block", "# bootstrap\n<powershell>\n& " + script + " -EKSClusterName c -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			findings := Validate(awsv1.AMIFamilyCustom, tc.userData)
			errs, warned := 0, false
			for _, f := range findings {
				if f.Severity == Error {
					errs++
				}
				warned = warned || f.Code == tc.warning && f.Severity == Warning
			}
			if tc.registers && errs > 0 || tc.warning != "" && !warned {
				t.Errorf("findings %+v", findings)
			}
			if !windows.IsPowerShell([]byte(tc.userData)) {
				t.Error("not read as PowerShell")
			}
		})
	}
}
