// Package userdatatest holds the shapes of user data users write, for
// tests that check the readers of user data agree with the node: the
// simulated kubelet, validation, doctor and the simulation at runtime.
package userdatatest

import (
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// MIMEHead starts a MIME user data whose boundary is ==B==.
const MIMEHead = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"==B==\"\n\n"

// NodeConfigPart is a MIME part of type application/node.eks.aws.
func NodeConfigPart(body string) string {
	return "--==B==\nContent-Type: application/node.eks.aws\n\n" + body
}

// NodeConfigHead starts a NodeConfig, up to spec.kubelet's fields.
const NodeConfigHead = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"

// CustomNodeConfigHead starts the NodeConfig of a Custom AMI's user data,
// which names its cluster itself (nodeadm requires it), up to
// spec.kubelet's fields.
const CustomNodeConfigHead = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: payments-prod\n" +
	"    apiServerEndpoint: https://F00D.yl4.eu-west-1.eks.amazonaws.com\n    certificateAuthority: LS0tLS1CRUdJTg==\n    cidr: 10.100.0.0/16\n  kubelet:\n"

// Shape is a user data as a user writes it for an AMI family, with what
// the node does with it.
type Shape struct {
	Name, Family, UserData string
	// Registers: the kubelet registers with karpenter.sh/unregistered
	// (nodewright's launch of this user data joins).
	Registers bool
	// Warning is a warning validation gives ("" for none).
	Warning string
}

// Shapes are the shapes where the node's own readers (nodeadm's part and
// document rules, bootstrap.sh's arguments, systemd's splitting of the
// kubelet's flags, Bottlerocket's accepted taint forms) decide whether the
// node registers with karpenter.sh/unregistered.
var Shapes = []Shape{
	{"AL2023 flag that keeps the unregistered taint", awsv1.AMIFamilyAL2023,
		NodeConfigHead + "    flags: [\"--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=ci:NoSchedule\"]\n", true, userdata.CodeConfigTaintsReplaced},
	{"AL2023 flag without it", awsv1.AMIFamilyAL2023,
		NodeConfigHead + "    flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n", false, ""},
	{"AL2023 flag in a second YAML document", awsv1.AMIFamilyAL2023,
		NodeConfigHead + "    flags: [\"--node-labels=team=ci\"]\n---\n" + NodeConfigHead + "    flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n", true, userdata.CodeFormatNotRead},
	{"AL2023 --max-pods flag", awsv1.AMIFamilyAL2023, NodeConfigHead + "    flags: [\"--max-pods=200\"]\n", true, userdata.CodeSettingOverridden},
	{"Custom flag value in double quotes", awsv1.AMIFamilyCustom,
		MIMEHead + NodeConfigPart(CustomNodeConfigHead+"    flags:\n      - --register-with-taints=\"karpenter.sh/unregistered:NoExecute\"\n") + "--==B==--\n", true, ""},
	{"Custom NodeConfig in a nested multipart", awsv1.AMIFamilyCustom,
		MIMEHead + "--==B==\nContent-Type: multipart/mixed; boundary=\"==I==\"\n\n--==I==\nContent-Type: application/node.eks.aws\n\n" + CustomNodeConfigHead +
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
	// Windows: EC2Launch runs the first <powershell> block, PowerShell
	// parses all of it before running any, and Start-EKSBootstrap.ps1
	// binds its parameters as PowerShell does.
	{"Windows PowerShell commands", awsv1.AMIFamilyWindows2022,
		"New-Item -Path 'C:\\temp\\' -ItemType Directory\nNew-Item -Path 'C:\\temp\\sample.txt' -ItemType File\n", true, ""},
	{"Windows user data with its own <powershell> tags", awsv1.AMIFamilyWindows2022,
		"<powershell>\nNew-Item -Path 'C:\\temp\\' -ItemType Directory\n</powershell>\n", false, ""},
	{"Windows user data with <persist>", awsv1.AMIFamilyWindows2022,
		"Set-TimeZone -Id 'UTC'\n<persist>true</persist>\n", false, ""},
	{"Windows user data that runs the bootstrap itself", awsv1.AMIFamilyWindows2022,
		"& \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\" -EKSClusterName 'prod-eu' -KubeletExtraArgs '--node-labels=team=ci'\n", false, ""},
	{"Windows user data with a string left open", awsv1.AMIFamilyWindows2022,
		"Write-Host \"starting\n", false, ""},
	{"Windows user data that is a shell script", awsv1.AMIFamilyWindows2022,
		"#!/bin/bash\necho hello\n", true, userdata.CodeFormatNotRead},
	{"Custom Windows, the bootstrap through a variable", awsv1.AMIFamilyCustom,
		"<powershell>\n[string]$EKSBootstrapScriptFile = \"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1\"\n& $EKSBootstrapScriptFile -EKSClusterName 'prod-eu' -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels=team=ci'\n</powershell>\n", true, ""},
	{"Custom Windows, a shortened parameter and inner double quotes", awsv1.AMIFamilyCustom,
		"<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -EKSCluster prod-eu `\n  -KubeletExtraArgs \"--register-with-taints=`\"karpenter.sh/unregistered:NoExecute`\"\"\n</powershell>\n", true, ""},
	{"Custom Windows, a parameter the script does not have", awsv1.AMIFamilyCustom,
		"<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -ClusterName prod-eu -KubeletExtraArgs '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n</powershell>\n", false, ""},
	{"Custom Windows without the unregistered taint", awsv1.AMIFamilyCustom,
		"<powershell>\n& 'C:\\Program Files\\Amazon\\EKS\\Start-EKSBootstrap.ps1' -EKSClusterName prod-eu -KubeletExtraArgs '--register-with-taints=os=windows:NoSchedule'\n</powershell>\n", false, ""},
}
