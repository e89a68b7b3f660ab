package userdata

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
)

// userShape is user data a user ran (from an issue thread; the cluster,
// endpoints and names are other ones), and what happened on the node as
// the thread tells it.
type userShape struct {
	thread, family, image, userData string
	// want is the node's outcome; registered whether it joined with
	// karpenter.sh/unregistered; blocked whether validation refuses it.
	want       boot.Verdict
	registered bool
	blocked    bool
	// says is what the outcome or a finding must name.
	says string
}

const ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM="

var userShapes = []userShape{
	{
		// A managed node group's AL2 user data, "a working node": the
		// shell part's #! right under its header, no empty line.
		thread: "terraform-aws-modules/terraform-aws-eks#2955", family: awsv1.AMIFamilyCustom, image: awsv1.AMIFamilyAL2,
		userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n#!/bin/bash\nset -ex\nB64_CLUSTER_CA=" + ca + "\nAPI_SERVER_URL=https://9F8E7D6C5B4A.yl4.ap-southeast-2.eks.amazonaws.com\nK8S_CLUSTER_DNS_IP=172.17.0.10\n/etc/eks/bootstrap.sh orders-blue --kubelet-extra-args '--node-labels=eks.amazonaws.com/nodegroup-image=ami-0134cdd1bd3d81c83,eks.amazonaws.com/capacityType=ON_DEMAND,role=worker --register-with-taints=CriticalAddonsOnly=true:NoSchedule --max-pods=110' --b64-cluster-ca $B64_CLUSTER_CA --apiserver-endpoint $API_SERVER_URL --dns-cluster-ip $K8S_CLUSTER_DNS_IP --use-max-pods false\n\n--//--\n",
		want:     boot.Joins, blocked: true, says: "CriticalAddonsOnly=true:NoSchedule",
	},
	{
		// The same shape for AL2023 (managed node group, 1.33): nodeadm's
		// MIME reader takes "#!/bin/bash" for a header, and the node group
		// fails with NodesFailedToJoinCluster.
		thread: "awslabs/amazon-eks-ami#2318", family: awsv1.AMIFamilyCustom, image: awsv1.AMIFamilyAL2023,
		userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n#!/bin/bash\nset -ex\n\n\n--//\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: ledger-prod\n    apiServerEndpoint: https://0A1B2C3D4E5F.gr7.us-west-2.eks.amazonaws.com\n    certificateAuthority: " + ca + "\n    cidr: 10.100.0.0/16\n  kubelet:\n    config:\n      registerWithTaints: [{key: karpenter.sh/unregistered, effect: NoExecute}]\n--//--\n",
		want:     boot.NeverJoins, blocked: true, says: "nodeadm",
	},
	{
		// One user data for AL2 and AL2023: a bootstrap.sh part (no empty
		// line under its header) and a NodeConfig; nodeadm init fails
		// ("yaml: line 4: could not find expected ':'").
		thread: "awslabs/amazon-eks-ami#1701", family: awsv1.AMIFamilyCustom, image: awsv1.AMIFamilyAL2023,
		userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"==MYBOUNDARY==\"\n--==MYBOUNDARY==\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n#!/bin/bash\nset -ex\n/etc/eks/bootstrap.sh ipv4-pd \\\n    --b64-cluster-ca " + ca + " \\\n    --apiserver-endpoint https://D247F0A1.gr7.eu-north-1.eks.amazonaws.com \\\n    --dns-cluster-ip 172.20.0.10 \\\n    --container-runtime containerd\n\n--==MYBOUNDARY==\nContent-Type: application/node.eks.aws\n\n---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: ipv4-pd\n    apiServerEndpoint: https://D247F0A1.gr7.eu-north-1.eks.amazonaws.com\n    certificateAuthority: " + ca + "\n    cidr: 172.20.0.0/16\n\n--==MYBOUNDARY==--\n",
		want:     boot.NeverJoins, blocked: true, says: "nodeadm",
	},
	{
		// A Cilium taint as a nodeadm flag beside Karpenter's NodeConfig:
		// the flag replaces registerWithTaints, the node registers without
		// karpenter.sh/unregistered and its NodeClaim is never
		// initialized ("UnregisteredTaintNotFound").
		thread: "aws/karpenter-provider-aws#7486", family: awsv1.AMIFamilyAL2023,
		userData: "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    cidr: 172.20.0.0/16\n    name: mesh-staging\n  kubelet:\n    config:\n      clusterDNS:\n      - 172.20.0.10\n    flags:\n    - --register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute\n",
		want:     boot.Joins, blocked: true, says: "node.cilium.io/agent-not-ready",
	},
	{
		// An AL2-style edit of kubelet-config.json on AL2023 (jq: Could not
		// open file): the script fails, the node joins as nodeadm
		// configures it.
		thread: "aws/karpenter-provider-aws#6251", family: awsv1.AMIFamilyAL2023,
		userData: "#!/bin/bash\nfind / -name kubelet-config.json\necho \"$(jq '.kubeAPIQPS=50' /etc/kubernetes/kubelet/kubelet-config.json)\" > /etc/kubernetes/kubelet/kubelet-config.json\n",
		want:     boot.Joins, registered: true,
	},
	{
		// bootstrap.sh's --kubelet-extra-args=VALUE on a Custom AL2 AMI:
		// bootstrap.sh does not read that form; the NodeClaim stays
		// Registered=False ("missing required startup taint") until the
		// 15-minute timeout.
		thread: "kubernetes-sigs/karpenter#1635", family: awsv1.AMIFamilyCustom, image: awsv1.AMIFamilyAL2,
		userData: "#!/bin/bash\nset -e\nB64_CLUSTER_CA=" + ca + "\nAPI_SERVER_URL=https://77AA88BB99CC.sk1.eu-west-2.eks.amazonaws.com\n/etc/eks/bootstrap.sh analytics-euw2 --b64-cluster-ca $B64_CLUSTER_CA --apiserver-endpoint $API_SERVER_URL \\\n  --kubelet-extra-args='--register-with-taints=\"karpenter.sh/unregistered:NoExecute\"'\n",
		want:     boot.Joins, blocked: true, says: "--kubelet-extra-args",
	},
	{
		// A node-taints key with a slash, unquoted: not TOML; "nodes
		// failing to join the cluster".
		thread: "aws/karpenter-provider-aws#1404", family: awsv1.AMIFamilyCustom, image: awsv1.AMIFamilyBottlerocket,
		userData: "[settings.kubernetes]\ncluster-name = \"render-farm\"\napi-server = \"https://5E6F7A8B.gr7.ca-central-1.eks.amazonaws.com\"\ncluster-certificate = \"" + ca + "\"\n[settings.kubernetes.node-taints]\nexample.com/requires-x86=:NoSchedule\n",
		want:     boot.NeverJoins, blocked: true, says: "not TOML",
	},
	{
		// settings.network for a proxy: Bottlerocket applies it (the
		// reference's merge once dropped it); the node joins.
		thread: "aws/karpenter-provider-aws#2059", family: awsv1.AMIFamilyBottlerocket,
		userData: "[settings.network]\nhttps-proxy = \"http://proxy.corp.example:3128\"\nno-proxy = [\"localhost\", \"127.0.0.1\"]\n",
		want:     boot.Joins, registered: true,
	},
	{
		// A sysctl's value as an integer: "Json deserialize error: invalid
		// type: integer `1048576`, expected a string"; early-boot-config
		// fails and the node stays NotReady.
		thread: "aws/karpenter-provider-aws#2423", family: awsv1.AMIFamilyBottlerocket,
		userData: "[settings.kernel.sysctl]\n\"fs.inotify.max_user_watches\" = 1048576\n",
		want:     boot.NeverJoins, blocked: true, says: "sysctl",
	},
}

// TestUsersShapes: user data users ran, read as their nodes read it.
func TestUsersShapes(t *testing.T) {
	for _, s := range userShapes {
		t.Run(s.thread, func(t *testing.T) {
			o, ok := outcome(s.family, s.image, s.userData)
			if !ok {
				t.Fatal("no boot model reads it")
			}
			if o.Verdict != s.want || o.Registered() != s.registered {
				t.Errorf("the node %s; the thread says %s (registered %v)", o.Summary(), s.want, s.registered)
			}
			findings := ValidateWith(s.family, s.userData, Known{ImageFamily: s.image})
			blocked := slices.ContainsFunc(findings, func(f Finding) bool { return f.Severity == Error })
			if blocked != s.blocked {
				t.Errorf("validation blocks: %v, want %v: %v", blocked, s.blocked, findings)
			}
			text := o.Why + " " + strings.Join(o.Notes, " ")
			for _, f := range findings {
				text += " " + f.Message
			}
			if s.says != "" && !strings.Contains(text, s.says) {
				t.Errorf("nothing names %q: %s", s.says, text)
			}
		})
	}
}

// TestFoldedUserData: a Bottlerocket userData written as a folded YAML
// scalar (userData: >) reaches the node as one line, which is not TOML;
// the user's own fix was to write it otherwise
// (aws/karpenter-provider-aws#5915).
func TestFoldedUserData(t *testing.T) {
	var class struct {
		UserData string `json:"userData"`
	}
	manifest := "userData: >\n  [settings]\n  [settings.kubernetes]\n  api-server = 'https://1A2B3C4D.gr7.sa-east-1.eks.amazonaws.com'\n  cluster-certificate = '" + ca + "'\n  cluster-name = 'payments-sa'\n"
	if err := yaml.Unmarshal([]byte(manifest), &class); err != nil {
		t.Fatal(err)
	}
	f, ok := codes(ValidateWith(awsv1.AMIFamilyCustom, class.UserData, Known{ImageFamily: awsv1.AMIFamilyBottlerocket}))[CodeUnreadable]
	if !ok || f.Severity != Error || !strings.Contains(f.Message, "not TOML") {
		t.Errorf("a folded userData %q: %v; want an error that it is not TOML", class.UserData, f)
	}
}
