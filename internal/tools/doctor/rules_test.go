package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/smithy-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// Each form of user data that loses or never sets the registration taint
// maps to its code; the healthy form of each family has no finding.
func TestUserDataRule(t *testing.T) {
	const nodeConfig = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"
	for _, tc := range []struct {
		name, family, userData, code string
		severity                     Severity
		fragment                     string
	}{
		{"AL2023 kubelet flag", awsv1.AMIFamilyAL2023, nodeConfig + "    flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n", CodeUserDataOverridesTaints, Error, "startupTaints"},
		{"AL2023 registerWithTaints", awsv1.AMIFamilyAL2023, nodeConfig + "    config:\n      registerWithTaints: [{key: dedicated, value: ci, effect: NoSchedule}]\n", CodeUserDataOverridesTaints, Warning, "registerWithTaints"},
		{"AL2 script calls bootstrap.sh", awsv1.AMIFamilyAL2, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=dedicated=ci:NoSchedule'\n", CodeUserDataOverridesTaints, Error, "bootstrap.sh"},
		{"Bottlerocket node-taints", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes.node-taints]\n\"dedicated\" = [\"ci:NoSchedule\"]\n", CodeUserDataOverridesTaints, Warning, "node-taints"},
		{"unreadable MIME", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\nbody", CodeUserDataUnreadable, Error, "boundary="},
		{"bootstrap.sh --opt=value", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args='--register-with-taints=karpenter.sh/unregistered:NoExecute'\n", CodeBootstrapArgsMalformed, Error, "--kubelet-extra-args VALUE"},
		{"single-quoted part with a space", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args \"--register-with-taints 'karpenter.sh/unregistered:NoExecute,dedicated=ci:NoSchedule' --node-labels 'team=ci, tier=a'\"\n", CodeBootstrapArgsMalformed, Warning, "double quotes"},
		{"Custom without the taint", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c\n", CodeCustomMissingUnregistered, Error, "karpenter.sh/unregistered:NoExecute"},
		{"Custom with the old taint name", awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=karpenter.sh/uninitialized:NoExecute'\n", CodeCustomMissingUnregistered, Error, "old name"},
		// Settings in a format the family does not read are lost.
		{"AL2 given a NodeConfig", awsv1.AMIFamilyAL2, nodeConfig + "    config:\n      imageGCHighThresholdPercent: 80\n", CodeUserDataFormatNotRead, Warning, "has no nodeadm"},
		{"AL2023 script calls bootstrap.sh", awsv1.AMIFamilyAL2023, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--image-gc-high-threshold=80'\n", CodeUserDataFormatNotRead, Warning, "AL2023 does not have"},
		{"Bottlerocket given a script", awsv1.AMIFamilyBottlerocket, "#!/bin/bash\necho hi\n", CodeUserDataFormatNotRead, Warning, "only TOML"},
		{"Bottlerocket given a NodeConfig", awsv1.AMIFamilyBottlerocket, nodeConfig + "    config:\n      imageGCHighThresholdPercent: 80\n", CodeUserDataFormatNotRead, Warning, "no nodeadm"},
		{"AL2023 given TOML", awsv1.AMIFamilyAL2023, "[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n", CodeUserDataFormatNotRead, Warning, "does not read Bottlerocket TOML"},
		// Settings nodewright's own configuration overwrites are lost.
		{"AL2023 maxPods", awsv1.AMIFamilyAL2023, nodeConfig + "    config:\n      maxPods: 110\n", CodeUserDataSettingOverridden, Warning, "spec.kubelet.maxPods"},
		{"AL2023 clusterDNS other than spec.kubelet's", awsv1.AMIFamilyAL2023, nodeConfig + "    config:\n      clusterDNS: [10.0.0.10]\n", CodeUserDataSettingOverridden, Warning, "spec.kubelet.clusterDNS"},
		{"Bottlerocket max-pods", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nmax-pods = 110\n", CodeUserDataSettingOverridden, Warning, "spec.kubelet.maxPods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := class("c", tc.family, tc.userData)
			if strings.Contains(tc.name, "clusterDNS") {
				nc.Spec.Kubelet = awsv1.KubeletConfiguration{"clusterDNS": {Raw: []byte(`["10.100.0.10"]`)}}
			}
			r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}}})
			fs := only(r, tc.code)
			if len(fs) == 0 || fs[0].Severity != tc.severity || fs[0].Object != "EC2NodeClass/c" {
				t.Fatalf("want %s %s on EC2NodeClass/c, got %+v", tc.severity, tc.code, r.Findings)
			}
			if all := fs[0].Message + fs[0].Evidence + fs[0].Fix; !strings.Contains(all, tc.fragment) || fs[0].Fix == "" {
				t.Errorf("finding lacks %q or a fix: %+v", tc.fragment, fs[0])
			}
		})
	}
	for _, tc := range []struct{ family, userData string }{
		{awsv1.AMIFamilyAL2023, nodeConfig + "    flags: [\"--node-labels=team=a\"]\n"},
		{awsv1.AMIFamilyAL2023, nodeConfig + "    config:\n      imageGCHighThresholdPercent: 80\n"},
		{awsv1.AMIFamilyAL2023, "#!/bin/bash\necho tuned > /etc/motd\n"},
		{awsv1.AMIFamilyAL2, "#!/bin/bash\necho tuned > /etc/motd\n"},
		{awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n"},
		{awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'\n"},
		// The generated clusterDNS not known, or equal: nothing is lost.
		{awsv1.AMIFamilyAL2023, nodeConfig + "    config:\n      clusterDNS: [10.100.0.10]\n"},
	} {
		nc := class("c", tc.family, tc.userData)
		nc.Spec.Kubelet = awsv1.KubeletConfiguration{"clusterDNS": {Raw: []byte(`["10.100.0.10"]`)}}
		r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}}})
		if len(r.Findings) != 0 {
			t.Errorf("%s %q: unexpected findings %+v", tc.family, tc.userData, r.Findings)
		}
	}
}

func TestNodeRoleRule(t *testing.T) {
	withRole := func(role string) *awsv1.EC2NodeClass {
		nc := class("default", awsv1.AMIFamilyAL2023, "")
		nc.Spec.Role = role
		return nc
	}
	objects := func(cm *corev1.ConfigMap, nc *awsv1.EC2NodeClass) *whatif.Objects {
		return &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: cm}
	}
	const nodeARN = "arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim"
	t.Run("controller role mapped instead", func(t *testing.T) {
		cm := awsAuth(strings.ReplaceAll(nodeRoleMapping, "KarpenterNodeRole", "KarpenterControllerRole"))
		r := diagnose(t, Input{Objects: objects(cm, withRole(account.NodeRole))})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", account.NodeRole, "KarpenterControllerRole-nodewright-sim is the controller's role",
			"- rolearn: "+nodeARN, "username: system:node:{{EC2PrivateDNSName}}", "- system:bootstrappers", "- system:nodes", "EC2_LINUX")
	})
	t.Run("with the account: the instance's console as evidence", func(t *testing.T) {
		cm := awsAuth(strings.ReplaceAll(nodeRoleMapping, "KarpenterNodeRole", "KarpenterControllerRole"))
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-xyzab"}}
		claim.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
		claim.Status.ProviderID = "aws:///us-east-1a/i-00000000000000007"
		cloud := simCloud(t, func(a *simaws.Account) {
			if err := a.LoadState(strings.NewReader(`{"instances":[{"InstanceId":"i-00000000000000007","ConsoleOutput":"kubelet: Unauthorized"}]}`)); err != nil {
				t.Fatal(err)
			}
		})
		o := objects(cm, withRole(account.NodeRole))
		o.NodeClaims = []*v1.NodeClaim{claim}
		r := diagnose(t, Input{Objects: o, Cloud: cloud})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "no EKS access entry either", "console of instance i-00000000000000007 (NodeClaim default-xyzab): kubelet: Unauthorized")
	})
	t.Run("mapped without a group", func(t *testing.T) {
		cm := awsAuth(strings.Replace(nodeRoleMapping, "system:bootstrappers, ", "", 1))
		r := diagnose(t, Input{Objects: objects(cm, withRole(account.NodeRole))})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "without group system:bootstrappers")
	})
	t.Run("mapped with another username", func(t *testing.T) {
		cm := awsAuth(strings.Replace(nodeRoleMapping, "system:node:{{EC2PrivateDNSName}}", "admin", 1))
		r := diagnose(t, Input{Objects: objects(cm, withRole(account.NodeRole))})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", `(it is "admin")`)
	})
	t.Run("mapRoles unreadable", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(awsAuth("rolearn: [unterminated"), withRole(account.NodeRole))})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, awsAuthObjectName, "not a YAML list")
	})
	t.Run("mapped", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(awsAuth(nodeRoleMapping), withRole(account.NodeRole))})
		expectNone(t, r, CodeNodeRoleNotMapped)
	})
	t.Run("no aws-auth and no account: unchecked", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(nil, withRole(account.NodeRole))})
		expectOne(t, r, CodeNotChecked, Info, "EC2NodeClass/default", "not checked", "aws-auth")
		expectNone(t, r, CodeNodeRoleNotMapped)
		if r.HasErrors() {
			t.Error("an unchecked mapping is an error")
		}
	})
	t.Run("EC2_LINUX access entry", func(t *testing.T) {
		cloud := simCloud(t, func(a *simaws.Account) { a.AddAccessEntry(nodeARN, "EC2_LINUX") })
		r := diagnose(t, Input{Objects: objects(nil, withRole(account.NodeRole)), Cloud: cloud})
		expectNone(t, r, CodeNodeRoleNotMapped)
	})
	t.Run("STANDARD access entry", func(t *testing.T) {
		cloud := simCloud(t, func(a *simaws.Account) { a.AddAccessEntry(nodeARN, "STANDARD") })
		r := diagnose(t, Input{Objects: objects(nil, withRole(account.NodeRole)), Cloud: cloud})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "type STANDARD", "EC2_LINUX")
	})
	t.Run("no aws-auth and no access entry", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(nil, withRole(account.NodeRole)), Cloud: simCloud(t, nil)})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "no EKS access entry either")
	})
	t.Run("instance profile's role", func(t *testing.T) {
		nc := withRole("")
		profile := "nodes-profile"
		nc.Spec.InstanceProfile = &profile
		cloud := simCloud(t, func(a *simaws.Account) { profileWithRole(t, a, profile, account.ControllerRole) })
		r := diagnose(t, Input{Objects: objects(awsAuth(nodeRoleMapping), nc), Cloud: cloud})
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "node role KarpenterControllerRole-nodewright-sim")
		mapped := simCloud(t, func(a *simaws.Account) { profileWithRole(t, a, profile, account.NodeRole) })
		expectNone(t, diagnose(t, Input{Objects: objects(awsAuth(nodeRoleMapping), nc), Cloud: mapped}), CodeNodeRoleNotMapped)
		missing := diagnose(t, Input{Objects: objects(awsAuth(nodeRoleMapping), nc), Cloud: simCloud(t, nil)})
		expectOne(t, missing, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "does not exist")
	})
}

func TestAMIArchitectureRule(t *testing.T) {
	byID := func() *awsv1.EC2NodeClass {
		nc := class("arm", awsv1.AMIFamilyAL2, "")
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0a1b2c3d4e5f60001"}} // x86_64 in the account
		return nc
	}
	objects := func(nc *awsv1.EC2NodeClass, np *v1.NodePool) *whatif.Objects {
		return &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, NodePools: []*v1.NodePool{np}}
	}
	t.Run("resolved in the account", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(byID(), pool("arm64", "arm", "arm64")), Cloud: simCloud(t, nil)})
		expectOne(t, r, CodeAMIArchitectureMismatch, Error, "NodePool/arm64", "no AMI for arm64", "amd64", "id ami-0a1b2c3d4e5f60001", "- alias: al2@latest")
	})
	t.Run("from the status", func(t *testing.T) {
		nc := byID()
		nc.Status.AMIs = []awsv1.AMI{{ID: "ami-0a1b2c3d4e5f60001", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
		r := diagnose(t, Input{Objects: objects(nc, pool("arm64", "arm", "arm64"))})
		expectOne(t, r, CodeAMIArchitectureMismatch, Error, "NodePool/arm64", "(status.amis)")
		expectNone(t, diagnose(t, Input{Objects: objects(nc, pool("x86", "arm", "amd64"))}), CodeAMIArchitectureMismatch)
	})
	t.Run("an alias has both architectures", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(class("arm", awsv1.AMIFamilyAL2023, ""), pool("arm64", "arm", "arm64"))})
		expectNone(t, r, CodeAMIArchitectureMismatch)
	})
	t.Run("ids are unknown offline, and said so", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(byID(), pool("arm64", "arm", "arm64"))})
		expectNone(t, r, CodeAMIArchitectureMismatch, CodePodIncompatible)
		expectOne(t, r, CodeNotChecked, Info, "EC2NodeClass/arm", "id ami-0a1b2c3d4e5f60001", "--cloud aws")
	})
	t.Run("a NodePool open to any architecture", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(byID(), pool("any", "arm")), Cloud: simCloud(t, nil)})
		expectNone(t, r, CodeAMIArchitectureMismatch)
	})
}

func TestPodIncompatibleRule(t *testing.T) {
	labelled := func(name, value string) *v1.NodePool {
		np := pool(name, "default", "amd64")
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"pod-type": value}
		return np
	}
	tainted := pool("gpu", "default", "amd64")
	tainted.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	objects := func(p *corev1.Pod, pools ...*v1.NodePool) *whatif.Objects {
		return &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{class("default", awsv1.AMIFamilyAL2023, "")}, NodePools: pools, Pods: []*corev1.Pod{p}}
	}
	t.Run("label typo names the closest NodePool", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(pod("typo", map[string]string{"pod-type": "armapps"}, "1"), labelled("web", "frontend"), labelled("cicd-armapps", "armapp"))})
		f := expectOne(t, r, CodePodIncompatible, Error, "Pod/default/typo", "closest is NodePool cicd-armapps", "pod-type=armapp", "pod-type=armapps")
		if strings.Contains(f.Message, "closest is NodePool web") {
			t.Errorf("wrong NodePool named: %s", f.Message)
		}
	})
	t.Run("taint not tolerated", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(pod("plain", nil, "1"), tainted)})
		expectOne(t, r, CodePodIncompatible, Error, "Pod/default/plain", "nvidia.com/gpu=true:NoSchedule")
	})
	t.Run("larger than every instance type", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(pod("huge", nil, "1000"), pool("default", "default", "amd64"))})
		expectOne(t, r, CodePodIncompatible, Error, "Pod/default/huge", "no instance type fits")
	})
	t.Run("a Deployment's GPU pods on a NodePool without GPUs: one finding, a requirement that admits GPUs", func(t *testing.T) {
		np := pool("np", "default", "amd64")
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}})
		var pods []*corev1.Pod
		for i := range 2 {
			p := pod(fmt.Sprintf("trainer-7d9f8-%d", i), nil, "1")
			p.Labels = map[string]string{"pod-template-hash": "7d9f8"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "trainer-7d9f8", Controller: ptr.To(true)}}
			p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
			pods = append(pods, p)
		}
		o := &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{class("default", awsv1.AMIFamilyAL2023, "")}, NodePools: []*v1.NodePool{np}, Pods: pods}
		r := diagnose(t, Input{Objects: o})
		f := expectOne(t, r, CodePodIncompatible, Error, "Deployment/default/trainer", "2 pods of Deployment default/trainer")
		for _, want := range []string{"none of NodePool np's instance types has nvidia.com/gpu", "karpenter.k8s.aws/instance-category", "set its values to [", " g", "spec.template.spec.requirements"} {
			if !strings.Contains(f.Fix, want) {
				t.Errorf("fix %q does not say %q", f.Fix, want)
			}
		}
	})
	t.Run("a pod that fits", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects(pod("fine", map[string]string{"pod-type": "armapp"}, "1"), labelled("cicd-armapps", "armapp"))})
		expectNone(t, r, CodePodIncompatible)
	})
	t.Run("a pod blocked only by a missing AMI", func(t *testing.T) {
		nc := class("default", awsv1.AMIFamilyAL2, "")
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0a1b2c3d4e5f60001"}}
		o := &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, NodePools: []*v1.NodePool{pool("arm", "default", "arm64")}, Pods: []*corev1.Pod{pod("p", nil, "1")}}
		r := diagnose(t, Input{Objects: o, Cloud: simCloud(t, nil)})
		// The planner's own reason on the pod, the cause and its fix on the NodePool.
		expectOne(t, r, CodePodIncompatible, Error, "Pod/default/p", "no AMI for arm64 in EC2NodeClass default", "- alias: al2@latest")
		expectOne(t, r, CodeAMIArchitectureMismatch, Error, "NodePool/arm")
	})
}

var uninitialized = corev1.Taint{Key: CloudProviderTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}

func TestCloudProviderTaintRule(t *testing.T) {
	stuck := node("ip-10-0-0-4", "m5.large", "default", 5*time.Minute, uninitialized)
	cond := metav1.Condition{Type: v1.ConditionInitialized, Status: metav1.ConditionFalse, Reason: "KnownEphemeralTaintsExist",
		Message: "taint node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule is still on node ip-10-0-0-4; it is removed by the cloud controller manager", LastTransitionTime: metav1.NewTime(now.Add(-5 * time.Minute))}
	t.Run("node keeps the taint", func(t *testing.T) {
		r := diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{stuck}, NodeClaims: []*v1.NodeClaim{claimFor(stuck, cond)}}})
		expectOne(t, r, CodeCloudProviderTaint, Error, "NodeClaim/default-abcde", "cloud controller manager", "5m0s", "KnownEphemeralTaintsExist")
	})
	t.Run("a node without its NodeClaim", func(t *testing.T) {
		r := diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{stuck}}})
		expectOne(t, r, CodeCloudProviderTaint, Error, "Node/ip-10-0-0-4", "aws-cloud-controller-manager")
	})
	t.Run("a NodeClaim without its node", func(t *testing.T) {
		r := diagnose(t, Input{Objects: &whatif.Objects{NodeClaims: []*v1.NodeClaim{claimFor(stuck, cond)}}})
		expectOne(t, r, CodeCloudProviderTaint, Error, "NodeClaim/default-abcde", "cloud controller manager")
	})
	t.Run("within the grace period", func(t *testing.T) {
		fresh := node("ip-10-0-0-5", "m5.large", "default", 10*time.Second, uninitialized)
		expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{fresh}}}), CodeCloudProviderTaint)
		expectOne(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{fresh}}, Grace: 5 * time.Second}), CodeCloudProviderTaint, Error, "Node/ip-10-0-0-5")
	})
	t.Run("removed", func(t *testing.T) {
		expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{node("n", "m5.large", "default", time.Hour)}}}), CodeCloudProviderTaint)
	})
}

func TestStartupTaintRule(t *testing.T) {
	cilium := corev1.Taint{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}
	np := pool("default", "default")
	np.Spec.Template.Spec.StartupTaints = []corev1.Taint{cilium}
	stuck := node("ip-10-0-0-4", "m5.large", "default", 10*time.Minute, cilium)
	r := diagnose(t, Input{Objects: &whatif.Objects{NodePools: []*v1.NodePool{np}, Nodes: []*corev1.Node{stuck}}})
	expectOne(t, r, CodeStartupTaintNotRemoved, Warning, "Node/ip-10-0-0-4", "node.cilium.io/agent-not-ready", "NodePool default")

	notReady := node("ip-10-0-0-5", "m5.large", "default", 10*time.Minute, cilium)
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, n := range []*corev1.Node{notReady, node("ip-10-0-0-6", "m5.large", "default", 10*time.Minute), node("ip-10-0-0-7", "m5.large", "default", 5*time.Second, cilium)} {
		expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{NodePools: []*v1.NodePool{np}, Nodes: []*corev1.Node{n}}}), CodeStartupTaintNotRemoved)
	}
	cond := metav1.Condition{Type: v1.ConditionInitialized, Status: metav1.ConditionFalse, Reason: "StartupTaintsExist", Message: "startup taint is still on", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
	r = diagnose(t, Input{Objects: &whatif.Objects{NodeClaims: []*v1.NodeClaim{claimFor(stuck, cond)}}})
	expectOne(t, r, CodeStartupTaintNotRemoved, Warning, "NodeClaim/default-abcde", "startup taint is still on")
}

// A startup taint no DaemonSet tolerates is found before any node
// launches: an error when the DaemonSets are known (none tolerates it), a
// warning when the input has none; a DaemonSet that tolerates it (by key,
// or every taint) clears it.
func TestStartupTaintNeverRemovedRule(t *testing.T) {
	cilium := corev1.Taint{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}
	np := pool("default", "default")
	np.Spec.Template.Spec.StartupTaints = []corev1.Taint{cilium}
	daemonSet := func(tolerations ...corev1.Toleration) *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"}}
		ds.Spec.Template.Spec.Tolerations = tolerations
		return ds
	}
	classes := []*awsv1.EC2NodeClass{class("default", awsv1.AMIFamilyAL2023, "")}
	// No DaemonSet among the inputs: nothing is known, and it is said so.
	r := diagnose(t, Input{Objects: &whatif.Objects{NodePools: []*v1.NodePool{np}, EC2NodeClasses: classes}})
	expectNone(t, r, CodeStartupTaintNeverRemoved)
	expectOne(t, r, CodeNotChecked, Info, "NodePool/default", "node.cilium.io/agent-not-ready=true:NoExecute", "no DaemonSets", "-f -")
	other := daemonSet(corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists})
	r = diagnose(t, Input{Objects: &whatif.Objects{NodePools: []*v1.NodePool{np}, DaemonSets: []*appsv1.DaemonSet{other}}})
	expectOne(t, r, CodeStartupTaintNeverRemoved, Error, "NodePool/default", "none of the 1 DaemonSets tolerates it", "startupTaints")
	for _, ds := range []*appsv1.DaemonSet{
		daemonSet(corev1.Toleration{Key: cilium.Key, Operator: corev1.TolerationOpExists}),
		daemonSet(corev1.Toleration{Operator: corev1.TolerationOpExists}),
	} {
		expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{NodePools: []*v1.NodePool{np}, DaemonSets: []*appsv1.DaemonSet{other, ds}}}), CodeStartupTaintNeverRemoved)
	}
}

func TestExtendedResourceRule(t *testing.T) {
	gpu := node("ip-10-0-0-4", "g5.xlarge", "gpu", 10*time.Minute)
	r := diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{gpu}}})
	expectOne(t, r, CodeExtendedResource, Warning, "Node/ip-10-0-0-4", "nvidia.com/gpu", "g5.xlarge", "device plugin")

	registered := gpu.DeepCopy()
	registered.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{registered}}}), CodeExtendedResource)
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{node("cpu", "m5.large", "default", time.Hour)}}}), CodeExtendedResource)

	// A NodeClaim's capacity names the resource (here Neuron on a type
	// the catalog knows as CPU-only).
	inf := node("ip-10-0-0-9", "m5.large", "inf", 10*time.Minute)
	nc := claimFor(inf)
	nc.Status.Capacity = corev1.ResourceList{"aws.amazon.com/neuron": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("4")}
	r = diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{inf}, NodeClaims: []*v1.NodeClaim{nc}}})
	expectOne(t, r, CodeExtendedResource, Warning, "NodeClaim/inf-abcde", "aws.amazon.com/neuron")
}

func TestRegistrationTimeoutRule(t *testing.T) {
	np := pool("default", "default", "amd64")
	np.Status.Conditions = []metav1.Condition{{Type: v1.ConditionNodeRegistrationHealthy, Status: metav1.ConditionFalse, Reason: "RegistrationTimeout",
		Message: "2 NodeClaim(s) in a row timed out before their node registered", LastTransitionTime: metav1.NewTime(now)}}
	nc := class("default", awsv1.AMIFamilyAL2023, "")
	nc.Spec.Role = account.NodeRole
	events := []corev1.Event{
		{Reason: "RegistrationTimeout", InvolvedObject: corev1.ObjectReference{Kind: "NodeClaim", Name: "default-aaaaa"}, Message: "no node registered for NodeClaim default-aaaaa within 15m0s", Count: 1, LastTimestamp: metav1.NewTime(now.Add(-20 * time.Minute))},
		{Reason: "RegistrationTimeout", InvolvedObject: corev1.ObjectReference{Kind: "NodeClaim", Name: "default-bbbbb"}, Message: "no node registered for NodeClaim default-bbbbb within 15m0s", Count: 1, LastTimestamp: metav1.NewTime(now)},
		{Reason: "RegistrationTimeout", InvolvedObject: corev1.ObjectReference{Kind: "NodeClaim", Name: "other-ccccc"}, Count: 1},
	}
	t.Run("the cause is a finding on the EC2NodeClass", func(t *testing.T) {
		cm := awsAuth(strings.ReplaceAll(nodeRoleMapping, "KarpenterNodeRole", "KarpenterControllerRole"))
		o := &whatif.Objects{NodePools: []*v1.NodePool{np}, EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: cm}
		r := diagnose(t, Input{Objects: o, Events: events})
		expectOne(t, r, CodeRegistrationTimeouts, Error, "NodePool/default", "most likely cause: node-role-not-mapped", "2 RegistrationTimeout event(s)", "default-bbbbb within 15m0s")
	})
	t.Run("the cause is on the instance's console", func(t *testing.T) {
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-ddddd", Labels: map[string]string{v1.LabelNodePool: "default"}}}
		claim.Status.ProviderID = "aws:///us-east-1a/i-00000000000000001"
		cloud := simCloud(t, func(a *simaws.Account) {
			state := `{"instances":[{"InstanceId":"i-00000000000000001","ConsoleOutput":"booting\nkubelet: x509: certificate signed by unknown authority"}]}`
			if err := a.LoadState(strings.NewReader(state)); err != nil {
				t.Fatal(err)
			}
		})
		o := &whatif.Objects{NodePools: []*v1.NodePool{np}, EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: awsAuth(nodeRoleMapping), NodeClaims: []*v1.NodeClaim{claim}}
		r := diagnose(t, Input{Objects: o, Cloud: cloud})
		expectOne(t, r, CodeRegistrationTimeouts, Error, "NodePool/default", "from the instance's console", "i-00000000000000001", "x509: certificate signed by unknown authority")
	})
	t.Run("registrations are healthy", func(t *testing.T) {
		healthy := np.DeepCopy()
		healthy.Status.Conditions[0].Status = metav1.ConditionTrue
		o := &whatif.Objects{NodePools: []*v1.NodePool{healthy}, EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: awsAuth(nodeRoleMapping)}
		expectNone(t, diagnose(t, Input{Objects: o, Events: events}), CodeRegistrationTimeouts)
	})
}

// A node that registered without karpenter.sh/unregistered (user data
// validation bypassed) is reported from its NodeClaim's condition.
func TestUnregisteredTaintMissingAtRuntime(t *testing.T) {
	n := node("ip-10-0-0-4", "m5.large", "default", time.Minute)
	claim := claimFor(n, metav1.Condition{Type: v1.ConditionRegistered, Status: metav1.ConditionFalse, Reason: "UnregisteredTaintMissing", Message: "node ip-10-0-0-4 registered without karpenter.sh/unregistered:NoExecute"})
	r := diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claim}}})
	expectOne(t, r, CodeUserDataOverridesTaints, Error, "NodeClaim/default-abcde", "registered without karpenter.sh/unregistered")
	claim.Status.Conditions[0] = metav1.Condition{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, Reason: "Registered"}
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claim}}}), CodeUserDataOverridesTaints)
}

func TestPDBNeverAllowsRule(t *testing.T) {
	pods := []*corev1.Pod{}
	for _, n := range []string{"db-0", "db-1"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default", Labels: map[string]string{"app": "db"}}})
	}
	budget := func(mutate func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
		mutate(pdb)
		return pdb
	}
	for name, tc := range map[string]struct {
		pdb  *policyv1.PodDisruptionBudget
		want string
	}{
		"maxUnavailable 0":        {budget(func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0)) }), "spec.maxUnavailable: 0"},
		"minAvailable 100%":       {budget(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromString("100%")) }), "spec.minAvailable: 100%"},
		"minAvailable = replicas": {budget(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(2)) }), "spec.minAvailable: 2, and it covers 2 pod(s)"},
		"minAvailable below":      {budget(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(1)) }), ""},
		"maxUnavailable 1":        {budget(func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1)) }), ""},
		"status allows none, all healthy": {budget(func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MinAvailable = ptr.To(intstr.FromString("60%"))
			p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 2, CurrentHealthy: 2, DesiredHealthy: 2}
		}), "disruptionsAllowed 0 with 2 of 2 pods healthy"},
		"status allows none, a pod down": {budget(func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, ExpectedPods: 2, CurrentHealthy: 1, DesiredHealthy: 1}
		}), ""},
	} {
		r := diagnose(t, Input{Objects: &whatif.Objects{Pods: pods, PDBs: []*policyv1.PodDisruptionBudget{tc.pdb}}})
		if tc.want == "" {
			expectNone(t, r, CodePDBNeverAllows)
			continue
		}
		t.Run(name, func(t *testing.T) {
			expectOne(t, r, CodePDBNeverAllows, Warning, "PodDisruptionBudget/default/db", tc.want, "maxUnavailable: 1", "never consolidates")
		})
	}
}

func TestNodeNeverInitializedRule(t *testing.T) {
	n := node("ip-10-0-0-9", "m5.large", "default", time.Hour)
	registered := metav1.Condition{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Minute))}
	waiting := metav1.Condition{Type: v1.ConditionInitialized, Status: metav1.ConditionFalse, Reason: v1.ReasonStartupTaintsExist, Message: "startup taint x is still on the node"}
	r := diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claimFor(n, registered, waiting)}}})
	expectOne(t, r, CodeNodeNeverDisrupted, Warning, "NodeClaim/default-abcde", "20m0s", "neither consolidates", "StartupTaintsExist", "kubectl delete nodeclaim default-abcde")
	done := metav1.Condition{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue}
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claimFor(n, registered, done)}}}), CodeNodeNeverDisrupted)
	fresh := registered
	fresh.LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claimFor(n, fresh, waiting)}}}), CodeNodeNeverDisrupted)
}

func TestNodeRepairRules(t *testing.T) {
	failing := func(name, pool string, cond corev1.NodeConditionType, status corev1.ConditionStatus, since time.Duration) (*corev1.Node, *v1.NodeClaim) {
		n := node(name, "m5.large", pool, time.Hour)
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: cond, Status: status, Reason: "Broken", LastTransitionTime: metav1.NewTime(now.Add(-since))})
		if cond == corev1.NodeReady {
			n.Status.Conditions = n.Status.Conditions[1:]
		}
		nc := claimFor(n)
		nc.Name = "nc-" + name
		return n, nc
	}
	objs := &whatif.Objects{}
	add := func(n *corev1.Node, nc *v1.NodeClaim) {
		objs.Nodes, objs.NodeClaims = append(objs.Nodes, n), append(objs.NodeClaims, nc)
	}
	// One of five nodes of default is NotReady: replaced in 20 minutes.
	add(failing("sick", "default", corev1.NodeReady, corev1.ConditionUnknown, 10*time.Minute))
	for _, name := range []string{"a", "b", "c", "d"} {
		add(failing(name, "default", "KernelReady", corev1.ConditionTrue, time.Hour))
	}
	// Two of three nodes of gpu fail: repair is held.
	add(failing("g1", "gpu", corev1.NodeReady, corev1.ConditionFalse, time.Hour))
	add(failing("g2", "gpu", "KernelReady", corev1.ConditionFalse, time.Hour))
	add(failing("g3", "gpu", "KernelReady", corev1.ConditionTrue, time.Hour))
	r := diagnose(t, Input{Objects: objs})
	expectOne(t, r, CodeNodeUnhealthy, Warning, "NodeClaim/nc-sick", "Ready=Unknown", "in 20m0s", "kubectl delete nodeclaim nc-sick")
	expectOne(t, r, CodeNodeRepairHeld, Error, "NodePool/gpu", "2 of the 3 nodes of NodePool gpu", "node g1 has been Ready=False", "KernelReady=False", "at most 1")
	if n := len(only(r, CodeNodeUnhealthy)); n != 1 {
		t.Errorf("%d node-unhealthy findings, want the one of default (gpu's nodes are reported as held)", n)
	}
}

// deniedEntries refuses DescribeAccessEntry as EKS does a caller without
// eks:DescribeAccessEntry.
type deniedEntries struct{}

func (deniedEntries) DescribeAccessEntry(context.Context, *eks.DescribeAccessEntryInput, ...func(*eks.Options)) (*eks.DescribeAccessEntryOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform: eks:DescribeAccessEntry"}
}

// An AWS call that fails is a finding of its own and every other check
// still reports: with the access entry lookup refused, aws-auth still
// answers whether the node role may join, and the other rules run.
func TestDoctorDegradesPerCheck(t *testing.T) {
	nc := class("default", awsv1.AMIFamilyAL2023, "")
	nc.Spec.Role = account.NodeRole
	cloud := simCloud(t, nil)
	cloud.AccessEntries = deniedEntries{}
	t.Run("aws-auth maps the role", func(t *testing.T) {
		r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: awsAuth(nodeRoleMapping)}, Cloud: cloud})
		expectOne(t, r, CodeCheckFailed, Warning, "EC2NodeClass/default", "could not check the EKS access entry of node role "+account.NodeRole, "AccessDeniedException", "add eks:DescribeAccessEntry", "CONFIG_MAP")
		expectNone(t, r, CodeNodeRoleNotMapped)
	})
	t.Run("aws-auth does not map it", func(t *testing.T) {
		cm := awsAuth(strings.ReplaceAll(nodeRoleMapping, "KarpenterNodeRole", "KarpenterControllerRole"))
		r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: cm}, Cloud: cloud})
		expectOne(t, r, CodeCheckFailed, Warning, "EC2NodeClass/default", "eks:DescribeAccessEntry")
		expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/default", "is not mapped in aws-auth")
	})
	t.Run("no aws-auth: unchecked, not an error", func(t *testing.T) {
		r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}}, Cloud: cloud})
		expectOne(t, r, CodeNotChecked, Info, "EC2NodeClass/default", "not checked", "could not be read")
		expectNone(t, r, CodeNodeRoleNotMapped)
	})
	t.Run("the cluster cannot be described", func(t *testing.T) {
		broken := &Cloud{ClusterName: "prod", Unavailable: errors.New("describing EKS cluster prod: AccessDeniedException")}
		bad := class("bad", awsv1.AMIFamilyAL2, "#!/bin/bash\n/etc/eks/bootstrap.sh prod --kubelet-extra-args '--register-with-taints=a=b:NoSchedule'\n")
		r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{bad}}, Cloud: broken})
		expectOne(t, r, CodeCheckFailed, Warning, "Cluster/prod", "eks:DescribeCluster", "AccessDeniedException")
		if len(r.Findings) < 2 {
			t.Errorf("the other checks did not report: %+v", r.Findings)
		}
	})
}

func TestAccountOfARN(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:eks:us-east-1:111122223333:cluster/prod":      "111122223333",
		"arn:aws-cn:eks:cn-north-1:444455556666:cluster/a:b/c": "444455556666",
		"not-an-arn": "",
	} {
		if got := AccountOfARN(arn); got != want {
			t.Errorf("AccountOfARN(%q) = %q, want %q", arn, got, want)
		}
	}
}

// EC2NodeClasses priced without the Pricing API are reported with since
// when and what to grant; current prices are not.
func TestPricesRule(t *testing.T) {
	nc := class("default", awsv1.AMIFamilyAL2023, "")
	nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionPricesCurrent, Status: metav1.ConditionFalse, Reason: "BuiltInPrices",
		LastTransitionTime: metav1.NewTime(now.Add(-time.Hour)), Message: "on-demand prices are the built-in table of us-east-1 published 2026-07-06"}}
	r := diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}}})
	expectOne(t, r, CodeStalePrices, Warning, "EC2NodeClass/default", "BuiltInPrices", "published 2026-07-06", "since", "pricing:GetProducts", "ec2:DescribeSpotPriceHistory")
	nc.Status.Conditions[0].Status = metav1.ConditionTrue
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}}}), CodeStalePrices)
}

// A reboot that failed and kept the node is reported with how to replace
// it; a reboot that worked, or one whose NodeClaim is being replaced,
// is not.
func TestNodeRebootFailedRule(t *testing.T) {
	n := node("ip-10-0-0-7", "m5.large", "default", time.Hour)
	failed := metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse, Reason: v1.ReasonRebootFailed, LastTransitionTime: metav1.NewTime(now),
		Message: "the reboot failed: annotation karpenter.sh/reboot-termination-grace-period=\"-5m\" is not a duration of zero or more (such as 5m)"}
	r := diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claimFor(n, failed)}}})
	expectOne(t, r, CodeNodeRebootFailed, Warning, "NodeClaim/default-abcde", "reboot of this node failed", "-5m", "kubectl delete nodeclaim default-abcde")
	succeeded := failed
	succeeded.Reason = v1.ReasonRebootSucceeded
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{Nodes: []*corev1.Node{n}, NodeClaims: []*v1.NodeClaim{claimFor(n, succeeded)}}}), CodeNodeRebootFailed)
}

// A CapacityBuffer whose pod template cannot be found keeps no room, and
// doctor says which object to create.
func TestCapacityBufferNotReadyRule(t *testing.T) {
	b := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "headroom", Namespace: "web"}}
	b.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionFalse, Reason: v1beta1.ReasonPodTemplateNotFound,
		Message: "PodTemplate web/api (spec.podTemplateRef) does not exist"}}
	r := diagnose(t, Input{Objects: &whatif.Objects{CapacityBuffers: []*v1beta1.CapacityBuffer{b}}})
	expectOne(t, r, CodeCapacityBufferNotReady, Warning, "CapacityBuffer/web/headroom", "keeps no room", "web/api", "create the PodTemplate in namespace web")
	b.Status.Conditions[0].Status = metav1.ConditionTrue
	expectNone(t, diagnose(t, Input{Objects: &whatif.Objects{CapacityBuffers: []*v1beta1.CapacityBuffer{b}}}), CodeCapacityBufferNotReady)
}

// An id the account lacks selects no AMI: said as such, with the terms
// and a value to use, not as an architecture "for no architecture".
func TestAMINotFoundInTheAccount(t *testing.T) {
	nc := class("payments", awsv1.AMIFamilyAL2023, "")
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0badc0ffee0000001"}}
	o := &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, NodePools: []*v1.NodePool{pool("checkout", "payments", "arm64")}}
	r := diagnose(t, Input{Objects: o, Cloud: simCloud(t, nil)})
	f := expectOne(t, r, CodeAMINotFound, Error, "EC2NodeClass/payments", "id ami-0badc0ffee0000001", "- alias: al2023@latest")
	if strings.Contains(f.Message+f.Fix, "no architecture") {
		t.Errorf("garbled: %+v", f)
	}
	expectNone(t, r, CodeAMIArchitectureMismatch)
}

// The node role's ARN is written in the account's partition (China and
// GovCloud clusters' aws-auth and access entries use theirs), and a
// finding on aws-auth says when the access entries, which admit a role
// whatever aws-auth says, were not read — a warning, not an error, where
// a NodeClaim of the class has registered all the same.
func TestNodeRoleAcrossPartitionsAndAccessEntries(t *testing.T) {
	nc := class("batch", awsv1.AMIFamilyAL2023, "")
	nc.Spec.Role = "eks-batch-nodes"
	controllerMapped := awsAuth(`- rolearn: arn:aws-cn:iam::444455556666:role/eks-batch-karpenter
  username: system:node:{{EC2PrivateDNSName}}
  groups: [system:bootstrappers, system:nodes]
`)
	objects := func(claims ...*v1.NodeClaim) *whatif.Objects {
		return &whatif.Objects{EC2NodeClasses: []*awsv1.EC2NodeClass{nc}, AWSAuth: controllerMapped, NodeClaims: claims}
	}

	t.Run("offline, aws-auth's partition", func(t *testing.T) {
		r := diagnose(t, Input{Objects: objects()})
		f := expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/batch", "- rolearn: arn:aws-cn:iam::444455556666:role/eks-batch-nodes",
			"access entries were not read (no account was given (--cloud))", "nodewright doctor --cloud aws --cluster-name")
		if strings.Contains(f.Fix, "arn:aws:") {
			t.Errorf("a fix in the aws partition for a China cluster: %s", f.Fix)
		}
	})
	t.Run("offline, a NodeClaim of the class registered", func(t *testing.T) {
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "batch-7hq2x", Annotations: map[string]string{nodeclass.AnnotationHash: nodeclass.Hash(nc)}}}
		claim.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "batch"}
		claim.Status.Conditions = []metav1.Condition{{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, Reason: "Registered"}}
		r := diagnose(t, Input{Objects: objects(claim)})
		expectOne(t, r, CodeNodeRoleNotMapped, Warning, "EC2NodeClass/batch", "NodeClaim batch-7hq2x of EC2NodeClass batch has registered", "Registered=True")
		if r.HasErrors() {
			t.Errorf("an error where the class's nodes register: %+v", r.Findings)
		}
		// Launched before the class's role changed: it says nothing of
		// the role the class names now.
		before := nc.DeepCopy()
		before.Spec.Role = "eks-batch-nodes-old"
		claim.Annotations[nodeclass.AnnotationHash] = nodeclass.Hash(before)
		expectOne(t, diagnose(t, Input{Objects: objects(claim)}), CodeNodeRoleNotMapped, Error, "EC2NodeClass/batch", "access entries were not read")
	})
	t.Run("the account's partition: its access entry admits the role", func(t *testing.T) {
		const arn = "arn:aws-us-gov:iam::111122223333:role/eks-batch-nodes"
		cloud := simCloud(t, func(a *simaws.Account) { a.AddAccessEntry(arn, "EC2_LINUX") })
		cloud.Partition = "aws-us-gov"
		r := diagnose(t, Input{Objects: objects(), Cloud: cloud})
		expectNone(t, r, CodeNodeRoleNotMapped)
	})
	t.Run("the account's partition: no access entry", func(t *testing.T) {
		cloud := simCloud(t, nil)
		cloud.Partition = "aws-us-gov"
		r := diagnose(t, Input{Objects: objects(), Cloud: cloud})
		f := expectOne(t, r, CodeNodeRoleNotMapped, Error, "EC2NodeClass/batch", "no EKS access entry either", "arn:aws-us-gov:iam::111122223333:role/eks-batch-nodes")
		if strings.Contains(f.Message, "were not read") {
			t.Errorf("says the access entries were not read though they were: %s", f.Message)
		}
	})
}

// With --cloud aws the partition comes from the EKS cluster's ARN, else
// from the region the SDK was configured with.
func TestPartitionOfTheAccount(t *testing.T) {
	for in, want := range map[string]string{"cn-northwest-1": "aws-cn", "us-gov-west-1": "aws-us-gov", "eu-west-1": "aws", "": ""} {
		if got := PartitionOfRegion(in); got != want {
			t.Errorf("PartitionOfRegion(%q) = %q, want %q", in, got, want)
		}
	}
	if got := PartitionOfARN("arn:aws-cn:eks:cn-north-1:444455556666:cluster/batch"); got != "aws-cn" {
		t.Errorf("PartitionOfARN = %q, want aws-cn", got)
	}
}
