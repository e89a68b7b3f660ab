package userdata

import (
	"fmt"
	"strings"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/windows"
)

// Finding codes of Windows user data.
const (
	CodeWindowsUnparsable          = "windows-userdata-does-not-parse"
	CodeWindowsUserCallsBootstrap  = "windows-user-calls-bootstrap"
	CodeWindowsBootstrapArgsFailed = "windows-bootstrap-call-fails"
)

// windowsCluster stands in for the cluster in the user data validation
// writes to read it back: its values never change how it reads.
var windowsCluster = Cluster{Name: "cluster", Endpoint: "https://cluster", CABundle: "Q0E=", DNS: "10.100.0.10"}

// windowsUserData reports whether user data of a family is read as
// Windows PowerShell: a Windows family's, or Custom user data that is a
// <powershell> block.
func windowsUserData(family, userData string) bool {
	return awsv1.IsWindows(family) || family == awsv1.AMIFamilyCustom && windows.IsPowerShell([]byte(userData))
}

// validateWindows reads Windows user data as the node does: for a
// Windows family, the document nodewright launches (spec.userData inside
// its <powershell> block, before the bootstrap call); for Custom, the
// user data as written, which must join the cluster itself.
func validateWindows(family, userData string) *validation {
	v := &validation{family: family}
	script := userData
	if !v.custom() {
		script = windowsScript(windowsCluster, Node{}, nil, nil, userData)
		v.windowsFormat(userData)
	}
	ps := windows.Read([]byte(script))
	if ps.Unparsable != "" {
		v.windowsUnparsable(userData, ps.Unparsable)
		return v
	}
	userCalls := ps.Calls
	if !v.custom() && len(userCalls) > 0 {
		userCalls = userCalls[:len(userCalls)-1] // the last is nodewright's
	}
	unsure := ""
	for _, call := range userCalls {
		switch {
		case call.Fails != "":
			// PowerShell stops that statement and runs the next.
			v.add(CodeWindowsBootstrapArgsFailed, Warning,
				fmt.Sprintf("PowerShell does not run the user data's call `%s`: %s", call.Text, call.Fails),
				"write the call as & \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\" -EKSClusterName 'NAME' -KubeletExtraArgs '...', each parameter followed by its value")
			continue
		case v.bootstrapped:
			continue // the kubelet runs already: taints apply when the node registers
		case call.Unsure != "":
			unsure = fmt.Sprintf("the user data calls Start-EKSBootstrap.ps1 (`%s`), but %s", call.Text, call.Unsure)
		case v.custom():
			v.registered = append(v.registered, lastTaints(call.KubeletArgs)...)
		default:
			v.windowsUserCallsBootstrap(call)
		}
		v.bootstrapped = true
	}
	if !v.custom() && unsure != "" {
		v.add(CodeWindowsBootstrapArgsFailed, Warning, unsure+"; it starts the kubelet before nodewright's call, with whatever taints it gives", "remove the Start-EKSBootstrap.ps1 call from spec.userData; put kubelet settings in the EC2NodeClass's spec.kubelet and taints in the NodePool")
	}
	if v.custom() {
		v.customWindowsTaints(ps, script, unsure)
	}
	return v
}

// customWindowsTaints judges the taints Custom Windows user data
// registers the node with: it must have karpenter.sh/unregistered.
func (v *validation) customWindowsTaints(ps *windows.PowerShell, script, unsure string) {
	switch {
	case unsure != "":
		v.add(CodeWindowsBootstrapArgsFailed, Warning, unsure+", so whether the node registers with "+UnregisteredTaint+" is not known",
			"pass the parameters by name (-EKSClusterName 'NAME' -KubeletExtraArgs '--register-with-taints="+UnregisteredTaint+"') so that the call can be checked")
	case !v.bootstrapped && len(ps.Calls) == 0 && strings.Contains(strings.ToLower(script), windows.ScriptName):
		v.add(CodeWindowsBootstrapArgsFailed, Warning,
			"the user data names Start-EKSBootstrap.ps1 but runs it in a way not read here (powershell -File, Join-Path, a script block), so whether the node joins with "+UnregisteredTaint+" is not known",
			"call it as & \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\" -EKSClusterName 'NAME' -KubeletExtraArgs '--register-with-taints="+UnregisteredTaint+"' so that the call can be checked")
	case !v.bootstrapped && len(ps.Calls) == 0:
		v.findings = append(v.findings, windowsMissingUnregistered(nil, "no line of the <powershell> block runs Start-EKSBootstrap.ps1, so the node never joins"))
	case !v.bootstrapped:
		v.findings = append(v.findings, windowsMissingUnregistered(nil, "no call of Start-EKSBootstrap.ps1 runs (PowerShell refuses each: see the warnings), so the node never joins"))
	case !v.registersUnregistered():
		v.findings = append(v.findings, windowsMissingUnregistered(v.registered, ""))
	default:
		for _, t := range v.registered {
			// karpenter.sh/unregistered, with or without a value, is
			// removed at registration: not a taint nodes keep.
			if taint, err := ParseTaint(t); err != nil || taint.Key != boot.UnregisteredTaint.Key {
				v.extra = append(v.extra, t)
			}
		}
	}
}

// windowsFormat reports user data for a Windows family that is not
// PowerShell: Windows runs spec.userData as PowerShell commands.
func (v *validation) windowsFormat(userData string) {
	var kind string
	switch {
	case looksLikeMIME([]byte(userData)):
		kind = "a MIME multi-part document"
	default:
		switch sniff([]byte(userData)) {
		case ContentTypeShell:
			kind = "a shell script"
		case ContentTypeNodeadm:
			kind = "a nodeadm NodeConfig"
		case ContentTypeTOML:
			kind = "Bottlerocket TOML settings"
		case ContentTypeCloudCfg:
			kind = "cloud-init configuration"
		}
	}
	if kind == "" {
		return
	}
	v.add(CodeFormatNotRead, Warning,
		fmt.Sprintf("spec.userData is %s, but a Windows node runs spec.userData as PowerShell commands before the bootstrap: what it sets is never applied, and a line PowerShell cannot parse stops the whole script, the bootstrap included", kind),
		"write spec.userData as PowerShell commands (no <powershell> tags: nodewright adds them); put kubelet settings in the EC2NodeClass's spec.kubelet")
}

// windowsUnparsable reports a script PowerShell refuses to parse: none of
// it runs, the bootstrap included.
func (v *validation) windowsUnparsable(userData, why string) {
	fix := "correct the PowerShell so that it parses (check it with [System.Management.Automation.Language.Parser]::ParseInput)"
	msg := fmt.Sprintf("PowerShell cannot parse the user data (%s), and a script that does not parse does not run at all, so the bootstrap never starts the kubelet and the node never joins", why)
	if !v.custom() {
		msg = fmt.Sprintf("PowerShell cannot parse the user data nodewright launches (%s): spec.userData is written inside nodewright's <powershell> block, before the bootstrap call, and a script that does not parse does not run at all, so the node never joins", why)
		if strings.Contains(strings.ToLower(userData), "powershell>") || strings.Contains(strings.ToLower(userData), "<persist>") {
			fix = "remove the <powershell>, </powershell> and <persist> tags from spec.userData and keep only the PowerShell commands: nodewright wraps them in its own <powershell> block (EC2Launch runs what is between the first <powershell> and the first </powershell>)"
		}
	}
	v.add(CodeWindowsUnparsable, Error, msg, fix)
}

// windowsUserCallsBootstrap reports Windows user data that runs
// Start-EKSBootstrap.ps1 itself: the node joins before nodewright's call.
func (v *validation) windowsUserCallsBootstrap(call windows.Bootstrap) {
	registers := registersWith(lastTaints(call.KubeletArgs))
	v.add(CodeWindowsUserCallsBootstrap, Error,
		fmt.Sprintf("spec.userData runs Start-EKSBootstrap.ps1 itself (`%s`): it starts the kubelet before the call nodewright generates, and the node registers %s — not with %s or the NodePool's taints — so it would never be matched to its NodeClaim",
			call.Text, registers, UnregisteredTaint),
		"remove the Start-EKSBootstrap.ps1 call from spec.userData; put kubelet settings in the EC2NodeClass's spec.kubelet and taints in the NodePool's startupTaints (or taints)")
}

func windowsMissingUnregistered(registered []string, why string) Finding {
	f := missingUnregistered(registered, why)
	f.Fix = "add " + UnregisteredTaint + " to the kubelet's registration taints, next to any taint of your own: & \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\" -EKSClusterName 'NAME' -KubeletExtraArgs '--register-with-taints=" + UnregisteredTaint + "'"
	return f
}
