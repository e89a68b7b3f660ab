package awsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	simaccount "github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// IAM, SSM, EKS and Pricing through the endpoint with the SDK's clients
// answer what the account answers in process, errors included.
func TestOtherServicesOverHTTP(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	account.AddAccessEntry(fmt.Sprintf("arn:aws:iam::%s:role/%s", simaccount.AccountID, simaccount.NodeRole), "EC2_LINUX")
	srv := httptest.NewServer(&Server{EC2: account.EC2(), IAM: account.IAM(), SSM: account.SSM(), EKS: account.EKS(), Pricing: account.Pricing()})
	t.Cleanup(srv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDSIMULATED", "secret", "")
	ctx := context.Background()

	iamClient := iam.New(iam.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	if _, err := iamClient.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("nodes"), Path: aws.String("/nodewright/"),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamClient.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("nodes"), RoleName: aws.String(simaccount.NodeRole)}); err != nil {
		t.Fatal(err)
	}
	profileIn := &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("nodes")}
	profileHTTP, err := iamClient.GetInstanceProfile(ctx, profileIn)
	if err != nil {
		t.Fatal(err)
	}
	profile, _ := account.IAM().GetInstanceProfile(ctx, profileIn)
	if len(profile.InstanceProfile.Roles) != 1 || len(profile.InstanceProfile.Tags) != 1 {
		t.Fatalf("the profile made over HTTP: %+v", profile.InstanceProfile)
	}
	same(t, "GetInstanceProfile", profileHTTP, profile)
	_, err = iamClient.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("missing")})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "NoSuchEntity" {
		t.Errorf("a missing instance profile: %v, want NoSuchEntity", err)
	}

	ssmClient := ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	paramIn := &ssm.GetParameterInput{Name: aws.String(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", simaws.KubernetesVersion))}
	paramHTTP, err := ssmClient.GetParameter(ctx, paramIn)
	if err != nil {
		t.Fatal(err)
	}
	param, _ := account.SSM().GetParameter(ctx, paramIn)
	same(t, "GetParameter", paramHTTP, param)
	if _, err := ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/missing")}); !errors.As(err, &api) || api.ErrorCode() != "ParameterNotFound" {
		t.Errorf("a missing parameter: %v, want ParameterNotFound", err)
	}

	eksClient := eks.New(eks.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	clusterIn := &eks.DescribeClusterInput{Name: aws.String(simaccount.ClusterName)}
	clusterHTTP, err := eksClient.DescribeCluster(ctx, clusterIn)
	if err != nil {
		t.Fatal(err)
	}
	cluster, _ := account.EKS().DescribeCluster(ctx, clusterIn)
	same(t, "DescribeCluster", clusterHTTP, cluster)
	entryIn := &eks.DescribeAccessEntryInput{ClusterName: aws.String(simaccount.ClusterName), PrincipalArn: aws.String(fmt.Sprintf("arn:aws:iam::%s:role/%s", simaccount.AccountID, simaccount.NodeRole))}
	entryHTTP, err := eksClient.DescribeAccessEntry(ctx, entryIn)
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := account.EKS().DescribeAccessEntry(ctx, entryIn)
	same(t, "DescribeAccessEntry", entryHTTP, entry)
	if _, err := eksClient.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("other")}); !errors.As(err, &api) || api.ErrorCode() != "ResourceNotFoundException" {
		t.Errorf("another cluster: %v, want ResourceNotFoundException", err)
	}

	pricingClient := pricing.New(pricing.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	productsIn := &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(5), Filters: []pricingtypes.Filter{
		{Field: aws.String("regionCode"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("us-east-1")},
	}}
	productsHTTP, err := pricingClient.GetProducts(ctx, productsIn)
	if err != nil {
		t.Fatal(err)
	}
	products, _ := account.Pricing().GetProducts(ctx, productsIn)
	if len(products.PriceList) == 0 {
		t.Fatal("the account prices nothing")
	}
	same(t, "GetProducts", productsHTTP, products)
}

// SQS through the endpoint with the SDK's client: the account's events
// arrive on its event queue, a received message is hidden until deleted,
// and the SDK's checksums hold.
func TestSQSOverHTTP(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	account.SetEventQueue("interruptions", 2*time.Minute)
	srv := httptest.NewServer(&Server{SQS: account.SQS()})
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIMULATED", "secret", "")})

	if _, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")}); !errors.As(err, new(*sqstypes.QueueDoesNotExist)) {
		t.Errorf("a missing queue: %v, want QueueDoesNotExist", err)
	}
	got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions")})
	if err != nil {
		t.Fatal(err)
	}
	url := got.QueueUrl
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(`{"hello":"world"}`)}); err != nil {
		t.Fatal(err)
	}
	received, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(received.Messages) != 1 || aws.ToString(received.Messages[0].Body) != `{"hello":"world"}` {
		t.Fatalf("received %+v, want the message sent", received.Messages)
	}
	again, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 1})
	if err != nil || len(again.Messages) != 0 {
		t.Errorf("a received message is visible again before its timeout: %+v, %v", again, err)
	}
	handle := received.Messages[0].ReceiptHandle
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle}); !errors.As(err, new(*sqstypes.ReceiptHandleIsInvalid)) {
		t.Errorf("deleting twice: %v, want ReceiptHandleIsInvalid", err)
	}
	if n := account.QueueMessages("interruptions"); n != 0 {
		t.Errorf("the queue holds %d messages after the delete", n)
	}
}
