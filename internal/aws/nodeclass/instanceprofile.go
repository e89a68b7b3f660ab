package nodeclass

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

type iamAPI interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, opts ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(ctx context.Context, in *iam.CreateInstanceProfileInput, opts ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	AddRoleToInstanceProfile(ctx context.Context, in *iam.AddRoleToInstanceProfileInput, opts ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
	RemoveRoleFromInstanceProfile(ctx context.Context, in *iam.RemoveRoleFromInstanceProfileInput, opts ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error)
	DeleteInstanceProfile(ctx context.Context, in *iam.DeleteInstanceProfileInput, opts ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error)
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9+=,.@_-]`)

// TagRegion tags the instance profiles nodewright makes with the region
// whose controller made them: IAM is global, and two clusters of one name
// in two regions (a disaster-recovery pair) must not share, re-role or
// delete each other's profiles. The IAM policy conditions on it.
const TagRegion = corev1.LabelTopologyRegion

// maxProfileName is IAM's limit on an instance profile's name.
const maxProfileName = 128

// ProfileName is the instance profile nodewright manages for an
// EC2NodeClass with a role, in a cluster and region: unique per region,
// so the same cluster name in two regions has two profiles. A name over
// IAM's 128 characters is cut and ends in a hash of the whole, so two
// long names stay apart.
func ProfileName(cluster, region, nodeClass string) string {
	name := unsafeNameChars.ReplaceAllString(fmt.Sprintf("nodewright_%s_%s_%s", cluster, region, nodeClass), "_")
	if len(name) <= maxProfileName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:8])
	return name[:maxProfileName-len(suffix)] + suffix
}

// LegacyProfileName is the name profiles were made under before it held
// the region. Such a profile may serve the same cluster name in another
// region, so nodewright no longer launches with it, changes its role or
// deletes it.
func LegacyProfileName(cluster, nodeClass string) string {
	name := unsafeNameChars.ReplaceAllString(fmt.Sprintf("nodewright_%s_%s", cluster, nodeClass), "_")
	if len(name) > maxProfileName {
		name = name[:maxProfileName]
	}
	return name
}

// profileName is the profile this resolver's controller manages for the
// EC2NodeClass; an error when the controller's region is not known.
func (r *Resolver) profileName(nc *awsv1.EC2NodeClass) (string, error) {
	if r.Region == "" {
		return "", fmt.Errorf("EC2NodeClass %s: the controller's region is not known, so the instance profile for spec.role cannot be named; set the region (--region or AWS_REGION)", nc.Name)
	}
	return ProfileName(r.ClusterName, r.Region, nc.Name), nil
}

// InstanceProfile returns the instance profile nodes of the EC2NodeClass
// launch with: the one it names, which must exist, or the one nodewright
// manages for its role — created (tagged as the cluster's) when missing,
// its role replaced when the EC2NodeClass's role changed.
func (r *Resolver) InstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil {
		return r.namedProfile(ctx, *nc.Spec.InstanceProfile)
	}
	if adopted, err := r.adoptedProfile(ctx, nc); err != nil || adopted != "" {
		return adopted, err
	}
	name, err := r.profileName(nc)
	if err != nil {
		return "", err
	}
	roles, err := r.managedProfileRoles(ctx, name, nc)
	if err != nil {
		return "", err
	}
	if err := r.holdRole(ctx, name, nc.Spec.Role, roles); err != nil {
		return "", err
	}
	return name, nil
}

// namedProfile checks that the instance profile the EC2NodeClass names
// exists.
func (r *Resolver) namedProfile(ctx context.Context, name string) (string, error) {
	if _, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		if isNotFound(err) {
			return "", fmt.Errorf("instance profile %s does not exist; create it with the node role, or set spec.role instead", name)
		}
		return "", fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	return name, nil
}

// managedProfileRoles are the roles of the instance profile nodewright
// manages for the EC2NodeClass, which it creates when missing; a profile
// of that name that nodewright did not make is refused.
func (r *Resolver) managedProfileRoles(ctx context.Context, name string, nc *awsv1.EC2NodeClass) ([]iamtypes.Role, error) {
	out, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	switch {
	case err == nil && !r.ownedFor(out.InstanceProfile.Tags, nc.Name):
		return nil, fmt.Errorf("instance profile %s exists but nodewright did not make it for EC2NodeClass %s in %s (it lacks the tags kubernetes.io/cluster/%s=owned, %s=%s and %s=%s), so nodewright leaves it alone; name it in spec.instanceProfile to launch with it, or delete it",
			name, nc.Name, r.Region, r.ClusterName, awsv1.LabelEC2NodeClass, nc.Name, TagRegion, r.Region)
	case err == nil:
		return out.InstanceProfile.Roles, nil
	case isNotFound(err):
		return nil, r.createProfile(ctx, name, nc.Name)
	}
	return nil, fmt.Errorf("getting instance profile %s: %w", name, err)
}

// createProfile creates an instance profile tagged as the cluster's, made
// for the EC2NodeClass.
func (r *Resolver) createProfile(ctx context.Context, name, nodeClass string) error {
	if _, err := r.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String(name),
		Tags: []iamtypes.Tag{
			{Key: aws.String("kubernetes.io/cluster/" + r.ClusterName), Value: aws.String("owned")},
			{Key: aws.String(awsv1.LabelEC2NodeClass), Value: aws.String(nodeClass)},
			{Key: aws.String("eks:eks-cluster-name"), Value: aws.String(r.ClusterName)},
			{Key: aws.String(TagRegion), Value: aws.String(r.Region)},
		},
	}); err != nil {
		return fmt.Errorf("creating instance profile %s: %w", name, err)
	}
	return nil
}

// holdRole makes the instance profile hold the role: it holds one role at
// most, so the roles before it, of an earlier spec.role, are removed.
func (r *Resolver) holdRole(ctx context.Context, name, role string, roles []iamtypes.Role) error {
	for _, held := range roles {
		if aws.ToString(held.RoleName) == role {
			return nil
		}
		if _, err := r.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: held.RoleName,
		}); err != nil {
			return fmt.Errorf("removing the old role %s from instance profile %s: %w", aws.ToString(held.RoleName), name, err)
		}
	}
	if _, err := r.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
		InstanceProfileName: aws.String(name), RoleName: aws.String(role),
	}); err != nil {
		if isNotFound(err) {
			return fmt.Errorf("role %s does not exist; spec.role must name the node IAM role", role)
		}
		return fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
	}
	return nil
}

// adoptedProfile is the instance profile the EC2NodeClass's status names
// when another controller made it for this EC2NodeClass (the reference
// names its profiles CLUSTER_HASH, under /karpenter/...) and it still
// holds spec.role: nodewright keeps launching with it rather than making
// its own, and deletes it with the EC2NodeClass. Empty when there is none.
func (r *Resolver) adoptedProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	name := nc.Status.InstanceProfile
	if name == "" || name == ProfileName(r.ClusterName, r.Region, nc.Name) || name == LegacyProfileName(r.ClusterName, nc.Name) {
		return "", nil
	}
	out, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	if !r.ownedFor(out.InstanceProfile.Tags, nc.Name) {
		return "", nil
	}
	for _, role := range out.InstanceProfile.Roles {
		if aws.ToString(role.RoleName) == nc.Spec.Role {
			return name, nil
		}
	}
	return "", nil
}

// ownedFor reports tags that mark an instance profile as this cluster's
// in this region, made for the EC2NodeClass. A profile without the
// region's tag is not this region's: the same cluster name in another
// region may launch with it.
func (r *Resolver) ownedFor(tags []iamtypes.Tag, nodeClass string) bool {
	owned, forClass, here := r.profileTags(tags, nodeClass)
	return owned && forClass && here
}

// profileTags says what an instance profile's tags mark it as: this
// cluster's, made for the EC2NodeClass, in this region.
func (r *Resolver) profileTags(tags []iamtypes.Tag, nodeClass string) (owned, forClass, here bool) {
	for _, t := range tags {
		switch aws.ToString(t.Key) {
		case "kubernetes.io/cluster/" + r.ClusterName:
			owned = aws.ToString(t.Value) == "owned"
		case awsv1.LabelEC2NodeClass:
			forClass = aws.ToString(t.Value) == nodeClass
		case TagRegion:
			here = r.Region != "" && aws.ToString(t.Value) == r.Region
		}
	}
	return owned, forClass, here
}

// DeleteInstanceProfile deletes the instance profile nodewright manages for
// an EC2NodeClass with a role (a profile the EC2NodeClass names is the
// user's and stays). A profile already gone is fine.
func (r *Resolver) DeleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if nc.Spec.InstanceProfile != nil {
		return nil
	}
	if adopted, err := r.adoptedProfile(ctx, nc); err != nil {
		return err
	} else if adopted != "" {
		if err := r.deleteProfile(ctx, adopted, nc.Name); err != nil {
			return err
		}
	}
	name, err := r.profileName(nc)
	if err != nil {
		return err
	}
	return r.deleteProfile(ctx, name, nc.Name)
}

// deleteProfile removes an instance profile's roles and deletes it; one
// already gone, or one not tagged as made for the EC2NodeClass in this
// cluster, is left as it is.
func (r *Resolver) deleteProfile(ctx context.Context, name, nodeClass string) error {
	out, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	if !r.ownedFor(out.InstanceProfile.Tags, nodeClass) {
		return nil
	}
	for _, role := range out.InstanceProfile.Roles {
		if _, err := r.IAM.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: role.RoleName,
		}); err != nil && !isNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(role.RoleName), name, err)
		}
	}
	if _, err := r.IAM.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isNotFound(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	return nil
}

// LegacyProfile is the name of the EC2NodeClass's profile of the name made
// before profiles held the region, when it exists and was made for the
// class in this cluster; empty otherwise. nodewright leaves it in place
// (it may serve the same cluster name in another region) and says so.
func (r *Resolver) LegacyProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if nc.Spec.InstanceProfile != nil {
		return "", nil
	}
	name := LegacyProfileName(r.ClusterName, nc.Name)
	out, err := r.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	for _, t := range out.InstanceProfile.Tags {
		if aws.ToString(t.Key) == TagRegion && aws.ToString(t.Value) != r.Region {
			return "", nil // another region's
		}
	}
	if owned, forClass, _ := r.profileTags(out.InstanceProfile.Tags, nc.Name); !owned || !forClass {
		return "", nil
	}
	return name, nil
}
