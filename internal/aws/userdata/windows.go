package userdata

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Windows user data is PowerShell between <powershell> and </powershell>
// tags: EC2Launch runs what is between the first opening tag and the
// first closing one. The EKS-optimized Windows AMIs join the cluster by
// running Start-EKSBootstrap.ps1, whose -KubeletExtraArgs string the
// kubelet service is started with.

// The bootstrap script's path as the generated user data names it.
const (
	windowsScriptPath = `$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1`
)

// windowsScript writes the user data of a Windows node: the user's
// PowerShell, then the bootstrap, in one <powershell> block.
func windowsScript(c Cluster, n Node, labels map[string]string, taints []corev1.Taint, userData string) string {
	extra := []string{}
	if len(labels) > 0 {
		extra = append(extra, "--node-labels="+sortedLabels(labels))
	}
	extra = append(extra, "--register-with-taints="+taintList(taints), fmt.Sprintf("--max-pods=%d", n.MaxPods))
	extra = append(extra, kubeletFlags(n.Kubelet)...)
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if strings.TrimSpace(userData) != "" {
		b.WriteString(strings.TrimRight(userData, "\n") + "\n")
	}
	fmt.Fprintf(&b, "[string]$EKSBootstrapScriptFile = \"%s\"\n", windowsScriptPath)
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName %s -APIServerEndpoint %s -Base64ClusterCA %s -KubeletExtraArgs %s -DNSClusterIP %s\n",
		psQuote(c.Name), psQuote(c.Endpoint), psQuote(c.CABundle), psQuote(strings.Join(extra, " ")), psQuote(clusterDNS(c, n)))
	b.WriteString("</powershell>\n")
	return b.String()
}

// psQuote writes a PowerShell single-quoted string: nothing in it is
// expanded; a quote is doubled.
func psQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
