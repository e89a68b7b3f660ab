package nodeclass_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
)

// A deleted EC2NodeClass stays until its NodeClaims are gone, then takes
// its launch templates and managed instance profile with it, and nothing
// of another EC2NodeClass.
func TestDeletedNodeClassWaitsForNodeClaimsThenCleansUp(t *testing.T) {
	k, account := startControllerWithAccount(t)
	ctx := context.Background()
	nc := scenarioNodeClass(t, "../../../scenarios/healthy-mixed-arch.yaml")
	if err := k.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc, _ = waitCondition(t, k, "default", awsv1.ConditionReady, metav1.ConditionTrue)
	if !controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		t.Fatalf("a Ready EC2NodeClass must carry %s: %v", awsv1.TerminationFinalizer, nc.Finalizers)
	}
	template := func(name, class string) {
		_, err := account.EC2().CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-al2023x8664")},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
				{Key: aws.String("kubernetes.io/cluster/nodewright-sim"), Value: aws.String("owned")},
				{Key: aws.String(awsv1.LabelEC2NodeClass), Value: aws.String(class)},
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	template("nodewright/nodewright-sim/mine", "default")
	template("nodewright/nodewright-sim/theirs", "other")

	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde"}, Spec: v1.NodeClaimSpec{
		NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
	}}
	if err := k.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	// It waits, and says for what.
	waitFor(t, "a WaitingOnNodeClaimTermination event", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := k.List(ctx, events); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "default" && e.Reason == "WaitingOnNodeClaimTermination" && strings.Contains(e.Message, "default-abcde") {
				return true, nil
			}
		}
		return false, nil
	})
	if err := k.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatalf("the EC2NodeClass went while NodeClaim default-abcde still used it: %v", err)
	}
	if n := templates(t, account.EC2()); n != 2 {
		t.Errorf("%d launch templates while a NodeClaim remains, want both", n)
	}

	if err := k.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the EC2NodeClass to be deleted", func(ctx context.Context) (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(nc), nc)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	lts, err := account.EC2().DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lts.LaunchTemplates) != 1 || aws.ToString(lts.LaunchTemplates[0].LaunchTemplateName) != "nodewright/nodewright-sim/theirs" {
		t.Errorf("launch templates left: %+v; want only the other EC2NodeClass's", lts.LaunchTemplates)
	}
	profile := nodeclass.ProfileName("nodewright-sim", "us-east-1", "default")
	if _, err := account.IAM().GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)}); err == nil {
		t.Errorf("instance profile %s made for the role is still there", profile)
	}
}

func waitFor(t *testing.T, what string, done func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, done); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func templates(t *testing.T, api interface {
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
}) int {
	t.Helper()
	out, err := api.DescribeLaunchTemplates(context.Background(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.LaunchTemplates)
}
