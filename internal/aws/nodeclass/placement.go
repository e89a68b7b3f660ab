package nodeclass

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// PlacementGroup resolves placementGroupSelector to the available
// placement group it names; nil without a selector or when none matches.
func (r *Resolver) PlacementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) (*awsv1.PlacementGroup, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	in := &ec2.DescribePlacementGroupsInput{}
	if sel.ID != nil {
		in.GroupIds = []string{*sel.ID}
	} else {
		in.GroupNames = []string{aws.ToString(sel.Name)}
	}
	out, err := r.EC2.DescribePlacementGroups(ctx, in)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describing placement group %s: %w", describePlacement(sel), err)
	}
	for _, g := range out.PlacementGroups {
		if g.State != ec2types.PlacementGroupStateAvailable {
			continue
		}
		pg := &awsv1.PlacementGroup{
			ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), Strategy: string(g.Strategy), PartitionCount: aws.ToInt32(g.PartitionCount),
		}
		return pg, nil
	}
	return nil, nil
}

func describePlacement(sel *awsv1.PlacementGroupSelector) string {
	if sel.ID != nil {
		return "id " + *sel.ID
	}
	return "name " + aws.ToString(sel.Name)
}

// placementCondition says which placement group nodes launch in.
func placementCondition(nc *awsv1.EC2NodeClass, r Resolution) metav1.Condition {
	sel := nc.Spec.PlacementGroupSelector
	switch {
	case sel == nil:
		return metav1.Condition{Type: awsv1.ConditionPlacementGroupReady, Status: metav1.ConditionTrue, Reason: awsv1.ReasonResolved,
			Message: "no placementGroupSelector: nodes launch outside placement groups"}
	case r.PlacementErr != nil:
		return metav1.Condition{Type: awsv1.ConditionPlacementGroupReady, Status: metav1.ConditionFalse, Reason: awsv1.ReasonResolutionFailed, Message: r.PlacementErr.Error()}
	case r.PlacementGroup == nil:
		return metav1.Condition{Type: awsv1.ConditionPlacementGroupReady, Status: metav1.ConditionFalse, Reason: awsv1.ReasonPlacementGroupNotFound,
			Message: "no available placement group has spec.placementGroupSelector " + describePlacement(sel) +
				"; create it (aws ec2 create-placement-group) or fix the selector; nothing launches from this EC2NodeClass until it exists"}
	}
	pg := r.PlacementGroup
	msg := fmt.Sprintf("placement group %s (%s, %s strategy)", pg.ID, pg.Name, pg.Strategy)
	if pg.Strategy == "partition" {
		msg += fmt.Sprintf(", %d partitions", pg.PartitionCount)
	}
	return metav1.Condition{Type: awsv1.ConditionPlacementGroupReady, Status: metav1.ConditionTrue, Reason: awsv1.ReasonResolved, Message: msg}
}
