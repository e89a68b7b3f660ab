package doctor

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// The controller's ServiceAccount as the Helm chart makes it, with the
// IRSA role of the getting-started guide's CloudFormation.
const controllerSA = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: karpenter
  namespace: kube-system
  annotations:
    eks.amazonaws.com/role-arn: arn:aws:iam::210987654321:role/orders-eu-karpenter
`

func roleClass(role string) string {
	return "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: nodes}\nspec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n" +
		"  " + role + "\n  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]\n  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: orders-eu}}]\n"
}

func TestNodeIdentities(t *testing.T) {
	const awsAuth = `apiVersion: v1
kind: ConfigMap
metadata: {name: aws-auth, namespace: kube-system}
data:
  mapRoles: |
    - rolearn: arn:aws:iam::210987654321:role/KarpenterNodeRole-orders-eu
      username: system:node:{{EC2PrivateDNSName}}
      groups: [system:bootstrappers, system:nodes]
`
	for _, tc := range []struct {
		name, role string
		extra      []string
		code       string
		severity   Severity
		want       []string
	}{
		{name: "the role's ARN", role: "role: arn:aws:iam::210987654321:role/KarpenterNodeRole-orders-eu", code: CodeIdentityNotAName, severity: Error,
			want: []string{"set spec.role to KarpenterNodeRole-orders-eu"}},
		{name: "a pathed role's ARN", role: "role: arn:aws:iam::210987654321:role/eks/nodes/KarpenterNodeRole-orders-eu", code: CodeIdentityNotAName, severity: Error,
			want: []string{"set spec.role to KarpenterNodeRole-orders-eu"}},
		{name: "the instance profile's ARN", role: "instanceProfile: arn:aws:iam::210987654321:instance-profile/KarpenterNodeInstanceProfile-orders-eu", code: CodeIdentityNotAName, severity: Error,
			want: []string{"set spec.instanceProfile to KarpenterNodeInstanceProfile-orders-eu"}},
		{name: "the controller's IRSA role", role: "role: orders-eu-karpenter", extra: []string{controllerSA}, code: CodeControllerRoleAsNodeRole, severity: Error,
			want: []string{"ServiceAccount kube-system/karpenter's eks.amazonaws.com/role-arn", "KarpenterNodeRole-orders-eu"}},
		{name: "the controller's IRSA role by ARN", role: "role: arn:aws:iam::210987654321:role/orders-eu-karpenter", extra: []string{controllerSA}, code: CodeControllerRoleAsNodeRole, severity: Error,
			want: []string{"controller's own role"}},
		{name: "a role named as a controller's", role: "role: KarpenterControllerRole-orders-eu", code: CodeControllerRoleAsNodeRole, severity: Warning,
			want: []string{"named as a controller's role", "KarpenterNodeRole-orders-eu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := loadText(t, append([]string{roleClass(tc.role), awsAuth}, tc.extra...)...)
			r := diagnose(t, Input{Objects: objs})
			f := expectOn(t, r, tc.code, tc.severity, "EC2NodeClass/nodes", tc.want...)
			if strings.Count(f.Fix+f.Message, "arn:aws:iam::") > 0 && strings.Contains(f.Fix, "role/arn:") {
				t.Errorf("a fix nests an ARN: %s", f.Fix)
			}
			for _, other := range r.Findings {
				if strings.Contains(other.Fix, "role/arn:") || strings.Contains(other.Message, "role/arn:") {
					t.Errorf("finding %s nests an ARN: %s", other.Code, other.Fix)
				}
			}
		})
	}
	// The twin: the node role, by name, mapped; the controller's SA beside it.
	r := diagnose(t, Input{Objects: loadText(t, roleClass("role: KarpenterNodeRole-orders-eu"), awsAuth, controllerSA)})
	expectNone(t, r, CodeIdentityNotAName, CodeControllerRoleAsNodeRole, CodeNodeRoleNotMapped)
}

// podIdentities is EKS's Pod Identity API over a fixed set of
// associations, as the account holds them.
type podIdentities map[string]ekstypes.PodIdentityAssociation

func (p podIdentities) ListPodIdentityAssociations(_ context.Context, in *eks.ListPodIdentityAssociationsInput, _ ...func(*eks.Options)) (*eks.ListPodIdentityAssociationsOutput, error) {
	out := &eks.ListPodIdentityAssociationsOutput{}
	for id, a := range p {
		if aws.ToString(a.ServiceAccount) == aws.ToString(in.ServiceAccount) && aws.ToString(a.ClusterName) == aws.ToString(in.ClusterName) {
			out.Associations = append(out.Associations, ekstypes.PodIdentityAssociationSummary{AssociationId: aws.String(id), Namespace: a.Namespace, ServiceAccount: a.ServiceAccount})
		}
	}
	return out, nil
}

func (p podIdentities) DescribePodIdentityAssociation(_ context.Context, in *eks.DescribePodIdentityAssociationInput, _ ...func(*eks.Options)) (*eks.DescribePodIdentityAssociationOutput, error) {
	a := p[aws.ToString(in.AssociationId)]
	return &eks.DescribePodIdentityAssociationOutput{Association: &a}, nil
}

// With Pod Identity the controller's role is in the account, not on its
// ServiceAccount.
func TestControllerRoleByPodIdentity(t *testing.T) {
	cloud := simCloud(t, func(*simaws.Account) {})
	cloud.PodIdentities = podIdentities{"a-0123456789abcdef0": {ClusterName: aws.String(cloud.ClusterName), Namespace: aws.String("karpenter"), ServiceAccount: aws.String("karpenter"),
		RoleArn: aws.String("arn:aws:iam::" + cloud.AccountID + ":role/KarpenterController-orders-eu")}}
	r := diagnose(t, Input{Objects: loadText(t, roleClass("role: KarpenterController-orders-eu")), Cloud: cloud})
	expectOn(t, r, CodeControllerRoleAsNodeRole, Error, "EC2NodeClass/nodes", "the Pod Identity association of ServiceAccount karpenter/karpenter")
}
