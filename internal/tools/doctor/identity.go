package doctor

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// Codes of the node identity.
const (
	// CodeIdentityNotAName is spec.role or spec.instanceProfile given as
	// an ARN where the API takes a name.
	CodeIdentityNotAName = "node-identity-not-a-name"
	// CodeControllerRoleAsNodeRole is the controller's own IAM role (its
	// ServiceAccount's IRSA role or Pod Identity association) as an
	// EC2NodeClass's node role.
	CodeControllerRoleAsNodeRole = "node-role-is-controller-role"
)

// PodIdentities is the part of EKS that says which IAM role a
// ServiceAccount's pods get through EKS Pod Identity.
type PodIdentities interface {
	ListPodIdentityAssociations(ctx context.Context, in *eks.ListPodIdentityAssociationsInput, opts ...func(*eks.Options)) (*eks.ListPodIdentityAssociationsOutput, error)
	DescribePodIdentityAssociation(ctx context.Context, in *eks.DescribePodIdentityAssociationInput, opts ...func(*eks.Options)) (*eks.DescribePodIdentityAssociationOutput, error)
}

var iamARN = regexp.MustCompile(`^arn:(aws[a-z-]*):iam::([0-9]{12}):(role|instance-profile)/(.+)$`)

// roleName is an IAM role's name from its ARN or name (a path dropped:
// aws-auth and AddRoleToInstanceProfile take the name alone).
func roleName(role string) string {
	if m := iamARN.FindStringSubmatch(role); m != nil {
		role = m[4]
	}
	return role[strings.LastIndexByte(role, '/')+1:]
}

// controllerRole is the controller's IAM role and where it was read.
type controllerRole struct{ arn, source string }

// controllerRoles are the IAM roles the controller's pods run as: the
// IRSA annotation of its ServiceAccount (the one its Deployment names, or
// one named karpenter or nodewright) and, with an account, the Pod
// Identity associations of those ServiceAccounts' names.
func controllerRoles(ctx context.Context, in Input) ([]controllerRole, error) {
	o := in.Objects
	accounts := map[string]bool{}
	for _, c := range o.Controllers {
		accounts[c.ServiceAccount] = true
	}
	var out []controllerRole
	for _, sa := range o.ServiceAccounts {
		key := sa.Namespace + "/" + sa.Name
		if !accounts[key] && sa.Name != "karpenter" && sa.Name != "nodewright" {
			continue
		}
		accounts[key] = true
		out = append(out, controllerRole{arn: sa.Annotations[whatif.IRSARoleAnnotation], source: fmt.Sprintf("ServiceAccount %s's %s", key, whatif.IRSARoleAnnotation)})
	}
	if in.Cloud == nil || in.Cloud.PodIdentities == nil {
		return out, nil
	}
	names := map[string]bool{"karpenter": true, "nodewright": true}
	for _, c := range o.Controllers {
		_, name, _ := strings.Cut(c.ServiceAccount, "/")
		names[name] = true
	}
	for _, sa := range slices.Sorted(maps.Keys(names)) {
		list, err := in.Cloud.PodIdentities.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{ClusterName: aws.String(in.Cloud.ClusterName), ServiceAccount: aws.String(sa)})
		if err != nil {
			return out, fmt.Errorf("listing the Pod Identity associations of cluster %s: %w", in.Cloud.ClusterName, err)
		}
		for _, a := range list.Associations {
			got, err := in.Cloud.PodIdentities.DescribePodIdentityAssociation(ctx, &eks.DescribePodIdentityAssociationInput{ClusterName: aws.String(in.Cloud.ClusterName), AssociationId: a.AssociationId})
			if err != nil {
				return out, fmt.Errorf("describing Pod Identity association %s: %w", aws.ToString(a.AssociationId), err)
			}
			out = append(out, controllerRole{arn: aws.ToString(got.Association.RoleArn),
				source: fmt.Sprintf("the Pod Identity association of ServiceAccount %s/%s", aws.ToString(a.Namespace), aws.ToString(a.ServiceAccount))})
		}
	}
	return out, nil
}

// identityRule checks each EC2NodeClass's spec.role and
// spec.instanceProfile as node identities: names where the API takes
// names, and not the controller's own role.
func identityRule(ctx context.Context, r *Report, in Input) error {
	controllers, err := controllerRoles(ctx, in)
	for _, nc := range in.Objects.EC2NodeClasses {
		object := "EC2NodeClass/" + nc.Name
		if m := iamARN.FindStringSubmatch(nc.Spec.Role); m != nil {
			r.add(Finding{Code: CodeIdentityNotAName, Severity: Error, Object: object,
				Message:  fmt.Sprintf("EC2NodeClass %s's spec.role is an ARN; it takes the role's name: the instance profile made for the class is checked against the whole ARN as a name, and aws-auth and access entries are matched by an ARN built from the name", nc.Name),
				Evidence: "spec.role: " + nc.Spec.Role,
				Fix:      fmt.Sprintf("set spec.role to %s (the ARN's last part; the role's account is the cluster's)", roleName(nc.Spec.Role))})
		}
		if p := nc.Spec.InstanceProfile; p != nil && iamARN.MatchString(*p) {
			r.add(Finding{Code: CodeIdentityNotAName, Severity: Error, Object: object,
				Message:  fmt.Sprintf("EC2NodeClass %s's spec.instanceProfile is an ARN; it takes the instance profile's name, which launches pass to EC2 as its name, so no instance launches", nc.Name),
				Evidence: "spec.instanceProfile: " + *p,
				Fix:      fmt.Sprintf("set spec.instanceProfile to %s", roleName(*p))})
		}
		if nc.Spec.Role == "" {
			continue
		}
		name := roleName(nc.Spec.Role)
		if c, ok := controllerRoleNamed(controllers, name); ok {
			r.add(Finding{Code: CodeControllerRoleAsNodeRole, Severity: Error, Object: object,
				Message:  fmt.Sprintf("EC2NodeClass %s's node role %s is the controller's own role (%s): nodes need a node role, which the cluster maps as nodes (aws-auth or an EC2_LINUX access entry) and which has the worker node policies; the controller's has neither, so its nodes never register", nc.Name, name, c.source),
				Evidence: fmt.Sprintf("spec.role: %s; %s: %s", nc.Spec.Role, c.source, c.arn),
				Fix:      nodeRoleFix(nc)})
			continue
		}
		if strings.Contains(strings.ToLower(name), "controller") {
			r.add(Finding{Code: CodeControllerRoleAsNodeRole, Severity: Warning, Object: object,
				Message:  fmt.Sprintf("EC2NodeClass %s's node role %s is named as a controller's role; nodes need a node role (the worker node policies, mapped as nodes)", nc.Name, name),
				Evidence: "spec.role: " + nc.Spec.Role,
				Fix:      nodeRoleFix(nc) + "; if it is a node role after all, keep it"})
		}
	}
	return err
}

func controllerRoleNamed(roles []controllerRole, name string) (controllerRole, bool) {
	for _, c := range roles {
		if c.arn != "" && roleName(c.arn) == name {
			return c, true
		}
	}
	return controllerRole{}, false
}

// nodeRoleFix is the value to give spec.role.
func nodeRoleFix(nc *awsv1.EC2NodeClass) string {
	cluster := "<cluster>"
	for _, t := range nc.Spec.SubnetSelectorTerms {
		if v := t.Tags["karpenter.sh/discovery"]; v != "" && v != "*" {
			cluster = v
		}
	}
	return fmt.Sprintf("set spec.role to the node role: the role with AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryReadOnly and AmazonSSMManagedInstanceCore that aws-auth or an EC2_LINUX access entry maps (the getting-started guide names it KarpenterNodeRole-%s)", cluster)
}
