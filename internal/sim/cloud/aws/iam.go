package aws

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// IAM is the simulated IAM API of an account: roles and instance profiles.
type IAM struct{ account *Account }

// IAM returns the account's IAM API.
func (a *Account) IAM() *IAM { return &IAM{account: a} }

// AddRole creates a role.
func (a *Account) AddRole(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roles[name] = true
}

func (a *Account) profile(name string) (*iamtypes.InstanceProfile, error) {
	p, ok := a.profiles[name]
	if !ok {
		return nil, apiError("NoSuchEntity", fmt.Sprintf("Instance Profile %s cannot be found.", name))
	}
	return p, nil
}

// GetInstanceProfile returns an instance profile with its roles.
func (s *IAM) GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	if err := s.account.call(ctx, serviceCall("GetInstanceProfile")); err != nil {
		return nil, err
	}
	a := s.account
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := a.profile(aws.ToString(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	copied := *p
	copied.Roles = append([]iamtypes.Role(nil), p.Roles...)
	return &iam.GetInstanceProfileOutput{InstanceProfile: &copied}, nil
}

// CreateInstanceProfile creates an empty instance profile.
func (s *IAM) CreateInstanceProfile(ctx context.Context, in *iam.CreateInstanceProfileInput, _ ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error) {
	if err := s.account.call(ctx, serviceCall("CreateInstanceProfile")); err != nil {
		return nil, err
	}
	a := s.account
	a.mu.Lock()
	defer a.mu.Unlock()
	name := aws.ToString(in.InstanceProfileName)
	if _, exists := a.profiles[name]; exists {
		return nil, apiError("EntityAlreadyExists", fmt.Sprintf("Instance Profile %s already exists.", name))
	}
	p := &iamtypes.InstanceProfile{
		InstanceProfileName: aws.String(name), InstanceProfileId: aws.String(fmt.Sprintf("AIPA%016d", len(a.profiles)+1)),
		Arn:        aws.String(fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", accountID, name)),
		Path:       aws.String(aws.ToString(in.Path)),
		CreateDate: aws.Time(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)),
		Tags:       in.Tags,
	}
	a.profiles[name] = p
	return &iam.CreateInstanceProfileOutput{InstanceProfile: p}, nil
}

// AddRoleToInstanceProfile puts a role in a profile; a profile holds one.
func (s *IAM) AddRoleToInstanceProfile(ctx context.Context, in *iam.AddRoleToInstanceProfileInput, _ ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error) {
	if err := s.account.call(ctx, serviceCall("AddRoleToInstanceProfile")); err != nil {
		return nil, err
	}
	a := s.account
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := a.profile(aws.ToString(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	role := aws.ToString(in.RoleName)
	if !a.roles[role] {
		return nil, apiError("NoSuchEntity", fmt.Sprintf("The role with name %s cannot be found.", role))
	}
	if len(p.Roles) > 0 {
		return nil, apiError("LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
	}
	p.Roles = []iamtypes.Role{{RoleName: aws.String(role), Arn: aws.String(fmt.Sprintf("arn:aws:iam::%s:role/%s", accountID, role))}}
	return &iam.AddRoleToInstanceProfileOutput{}, nil
}

// RemoveRoleFromInstanceProfile empties a profile.
func (s *IAM) RemoveRoleFromInstanceProfile(ctx context.Context, in *iam.RemoveRoleFromInstanceProfileInput, _ ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error) {
	if err := s.account.call(ctx, serviceCall("RemoveRoleFromInstanceProfile")); err != nil {
		return nil, err
	}
	a := s.account
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := a.profile(aws.ToString(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	var kept []iamtypes.Role
	for _, r := range p.Roles {
		if aws.ToString(r.RoleName) != aws.ToString(in.RoleName) {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(p.Roles) {
		return nil, apiError("NoSuchEntity", "The role is not in the instance profile.")
	}
	p.Roles = kept
	return &iam.RemoveRoleFromInstanceProfileOutput{}, nil
}

// DeleteInstanceProfile deletes an empty profile.
func (s *IAM) DeleteInstanceProfile(ctx context.Context, in *iam.DeleteInstanceProfileInput, _ ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error) {
	if err := s.account.call(ctx, serviceCall("DeleteInstanceProfile")); err != nil {
		return nil, err
	}
	a := s.account
	a.mu.Lock()
	defer a.mu.Unlock()
	name := aws.ToString(in.InstanceProfileName)
	p, err := a.profile(name)
	if err != nil {
		return nil, err
	}
	if len(p.Roles) > 0 {
		return nil, apiError("DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
	}
	delete(a.profiles, name)
	return &iam.DeleteInstanceProfileOutput{}, nil
}

// TagInstanceProfile adds or replaces tags.
func (s *IAM) TagInstanceProfile(ctx context.Context, in *iam.TagInstanceProfileInput, _ ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error) {
	if err := s.account.call(ctx, serviceCall("TagInstanceProfile")); err != nil {
		return nil, err
	}
	a := s.account
	a.mu.Lock()
	defer a.mu.Unlock()
	p, err := a.profile(aws.ToString(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	for _, t := range in.Tags {
		replaced := false
		for i := range p.Tags {
			if aws.ToString(p.Tags[i].Key) == aws.ToString(t.Key) {
				p.Tags[i].Value, replaced = t.Value, true
			}
		}
		if !replaced {
			p.Tags = append(p.Tags, t)
		}
	}
	return &iam.TagInstanceProfileOutput{}, nil
}
