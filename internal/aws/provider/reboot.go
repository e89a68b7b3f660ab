package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// Reboot reboots an instance nodewright launched (EC2 RebootInstances:
// the instance keeps its id, volumes and addresses; its operating system
// starts again). An instance without nodewright's tags is never rebooted:
// that is a NotOwnedError; one that is gone a NotFoundError.
func (p *Launcher) Reboot(ctx context.Context, id string) error {
	_, instanceID, err := ParseProviderID(id)
	if err != nil {
		return err
	}
	inst, err := p.describe(ctx, instanceID)
	if err != nil {
		return err
	}
	if !p.owns(inst.Tags) {
		return &cloudprovider.NotOwnedError{Message: fmt.Sprintf("instance %s lacks %s; nodewright reboots only the instances it launched",
			instanceID, strings.Join(p.missingTags(inst.Tags), ", "))}
	}
	if inst.State == nil || inst.State.Name != ec2types.InstanceStateNameRunning {
		return &cloudprovider.NotFoundError{Message: fmt.Sprintf("instance %s is not running", instanceID)}
	}
	if _, err := p.ec2.RebootInstances(ctx, &ec2.RebootInstancesInput{InstanceIds: []string{instanceID}}); err != nil {
		if hasCode(err, "InvalidInstanceID.NotFound") {
			return &cloudprovider.NotFoundError{Message: "instance " + instanceID + " does not exist"}
		}
		return fmt.Errorf("rebooting instance %s: %w", instanceID, err)
	}
	return nil
}
