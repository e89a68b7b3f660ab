package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Delete terminates an instance nodewright launched. It returns nil while
// the instance is being terminated and a NotFoundError once it is gone, so
// callers repeat it until then. An instance without nodewright's tags is
// never terminated: that is a NotOwnedError. Neither is an instance whose
// NodeClaim tag names another NodeClaim than the holder (a NodeClaim
// whose status.providerID was edited to point at another node).
func (p *Launcher) Delete(ctx context.Context, id string, holder cloudprovider.Holder) error {
	_, instanceID, err := ParseProviderID(id)
	if err != nil {
		return err
	}
	inst, err := p.describe(ctx, instanceID)
	if err != nil {
		return err
	}
	if !p.owns(inst.Tags) {
		return &cloudprovider.NotOwnedError{Message: fmt.Sprintf("instance %s lacks %s; nodewright terminates only the instances it launched, so it is left running",
			instanceID, strings.Join(p.missingTags(inst.Tags), ", "))}
	}
	if tag := tagValue(inst.Tags, TagNodeClaim); holder.NodeClaim != "" && tag != holder.NodeClaim && (holder.LaunchBatch == "" || tag != Untaken(holder.LaunchBatch)) {
		return &cloudprovider.NotOwnedError{Message: fmt.Sprintf("instance %s was launched for NodeClaim %q (its %s tag), not for NodeClaim %s; it is left running (was status.providerID edited?)",
			instanceID, tag, TagNodeClaim, holder.NodeClaim)}
	}
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{instanceID}}); err != nil {
		if hasCode(err, "InvalidInstanceID.NotFound") {
			return &cloudprovider.NotFoundError{Message: "instance " + instanceID + " does not exist"}
		}
		return fmt.Errorf("terminating instance %s: %w", instanceID, err)
	}
	return nil
}

// DeleteLaunchTemplates deletes the launch templates nodewright made for an
// EC2NodeClass of this cluster, when the EC2NodeClass is deleted.
func (p *Launcher) DeleteLaunchTemplates(ctx context.Context, nodeClass string) error {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + p.clusterTag()), Values: []string{"owned"}},
		{Name: aws.String("tag:" + awsv1.LabelEC2NodeClass), Values: []string{nodeClass}},
	}})
	if err != nil {
		return fmt.Errorf("listing the launch templates of EC2NodeClass %s: %w", nodeClass, err)
	}
	for _, lt := range out.LaunchTemplates {
		if tagValue(lt.Tags, p.clusterTag()) != "owned" || tagValue(lt.Tags, awsv1.LabelEC2NodeClass) != nodeClass {
			continue // the filters say so; an endpoint that ignores one must not make a template ours
		}
		p.templates.Delete(aws.ToString(lt.LaunchTemplateName))
		if _, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: lt.LaunchTemplateName}); err != nil &&
			!hasCode(err, templateNotFound...) {
			return fmt.Errorf("deleting launch template %s: %w", aws.ToString(lt.LaunchTemplateName), err)
		}
	}
	return nil
}
