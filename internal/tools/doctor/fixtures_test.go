package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func class(name, family, userData string) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{
		AMIFamily:                  &family,
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
	}}
	if userData != "" {
		nc.Spec.UserData = &userData
	}
	return nc
}

func pool(name, className string, archs ...string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: className}
	if len(archs) > 0 {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: archs}}
	}
	return np
}

func awsAuth(mapRoles string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "aws-auth", Namespace: "kube-system"}, Data: map[string]string{"mapRoles": mapRoles}}
}

const nodeRoleMapping = `- rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim
  username: system:node:{{EC2PrivateDNSName}}
  groups: [system:bootstrappers, system:nodes]
`

// simCloud is a seeded simulated account; setup changes it first.
func simCloud(t *testing.T, setup func(*simaws.Account)) *Cloud {
	t.Helper()
	a := simaws.NewAccount()
	a.Seed()
	if setup != nil {
		setup(a)
	}
	return &Cloud{
		Resolver:         &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion},
		InstanceProfiles: a.IAM(), AccessEntries: a.EKS(), Console: a.EC2(),
		ClusterName: account.ClusterName, AccountID: account.AccountID,
	}
}

func profileWithRole(t *testing.T, a *simaws.Account, profile, role string) {
	t.Helper()
	ctx := context.Background()
	if _, err := a.IAM().CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(profile)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.IAM().AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(profile), RoleName: aws.String(role)}); err != nil {
		t.Fatal(err)
	}
}

func diagnose(t *testing.T, in Input) *Report {
	t.Helper()
	if in.Now.IsZero() {
		in.Now = now
	}
	if in.Objects == nil {
		in.Objects = &whatif.Objects{}
	}
	r, err := Diagnose(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, r.Findings...)
	return r
}

// only returns the findings with the code.
func only(r *Report, code string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// expectOne asserts exactly one finding with the code and severity whose
// message, evidence and fix contain the fragments.
func expectOne(t *testing.T, r *Report, code string, sev Severity, object string, fragments ...string) Finding {
	t.Helper()
	fs := only(r, code)
	if len(fs) != 1 {
		t.Fatalf("want one %s, got %d: %+v", code, len(fs), r.Findings)
	}
	f := fs[0]
	if f.Severity != sev || f.Object != object {
		t.Errorf("%s: severity %s object %s, want %s %s", code, f.Severity, f.Object, sev, object)
	}
	all := f.Message + "\n" + f.Evidence + "\n" + f.Fix
	for _, frag := range fragments {
		if !strings.Contains(all, frag) {
			t.Errorf("%s lacks %q:\n%s", code, frag, all)
		}
	}
	if f.Message == "" || f.Fix == "" {
		t.Errorf("%s without message or fix: %+v", code, f)
	}
	return f
}

func expectNone(t *testing.T, r *Report, codes ...string) {
	t.Helper()
	for _, code := range codes {
		if fs := only(r, code); len(fs) > 0 {
			t.Errorf("unexpected %s: %+v", code, fs)
		}
	}
}

func node(name, instanceType, nodePool string, age time.Duration, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age)), Labels: map[string]string{
			corev1.LabelInstanceTypeStable: instanceType, v1.LabelNodePool: nodePool, corev1.LabelArchStable: "amd64",
			corev1.LabelHostname: name, corev1.LabelTopologyZone: "us-east-1a",
		}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name, Taints: taints},
		Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")},
		},
	}
}

func claimFor(n *corev1.Node, conditions ...metav1.Condition) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n.Labels[v1.LabelNodePool] + "-abcde", Labels: map[string]string{v1.LabelNodePool: n.Labels[v1.LabelNodePool]}}}
	nc.Status.NodeName, nc.Status.ProviderID, nc.Status.Conditions = n.Name, n.Spec.ProviderID, conditions
	return nc
}

func pod(name string, selector map[string]string, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
	}
}
