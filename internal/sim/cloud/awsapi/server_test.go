package awsapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	simaccount "github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// endpoint serves a seeded account and returns a real SDK EC2 client for
// it, and the account's in-process EC2 to compare with.
func endpoint(t *testing.T) (*ec2.Client, *simaws.EC2) {
	t.Helper()
	account := simaws.NewAccount()
	account.Seed()
	ctx := context.Background()
	if _, err := account.IAM().CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("profile")}); err != nil {
		t.Fatal(err)
	}
	if _, err := account.IAM().AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("profile"), RoleName: aws.String(simaccount.NodeRole)}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Server{EC2: account.EC2()})
	t.Cleanup(srv.Close)
	client := ec2.New(ec2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIMULATED", "secret", ""),
	})
	return client, account.EC2()
}

// same compares what the SDK read over HTTP with what the account
// returned in process (times to the millisecond the wire carries).
func same(t *testing.T, what string, overHTTP, inProcess any) {
	t.Helper()
	if diff := cmp.Diff(normalize(t, inProcess), normalize(t, overHTTP)); diff != "" {
		t.Errorf("%s over HTTP differs from the account's answer (-account +http):\n%s", what, diff)
	}
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	rv := reflect.ValueOf(v)
	cp := reflect.New(rv.Elem().Type())
	cp.Elem().Set(rv.Elem())
	if f := cp.Elem().FieldByName("ResultMetadata"); f.IsValid() {
		f.Set(reflect.Zero(f.Type()))
	}
	data, err := json.Marshal(cp.Interface())
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return truncateTimes(out)
}

// truncateTimes cuts RFC 3339 times in decoded JSON to milliseconds.
func truncateTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = truncateTimes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = truncateTimes(e)
		}
	case string:
		if ts, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return ts.Truncate(time.Millisecond).UTC().Format(time.RFC3339Nano)
		}
	}
	return v
}

// The SDK's EC2 client reads through the endpoint exactly what the
// account answers in process: discovery, instance types and prices,
// launch templates, a fleet launch and the instances it made, with tags.
func TestEC2OverHTTPMatchesTheAccount(t *testing.T) {
	client, direct := endpoint(t)
	ctx := context.Background()
	discovery := []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"nodewright-sim"}}}

	subnetsHTTP, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: discovery})
	if err != nil {
		t.Fatal(err)
	}
	subnets, _ := direct.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: discovery})
	if len(subnets.Subnets) == 0 {
		t.Fatal("the seeded account has no discovered subnets")
	}
	same(t, "DescribeSubnets", subnetsHTTP, subnets)

	groupsHTTP, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: discovery})
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := direct.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: discovery})
	same(t, "DescribeSecurityGroups", groupsHTTP, groups)

	imagesIn := &ec2.DescribeImagesInput{ImageIds: []string{"ami-0a1b2c3d4e5f60001", "ami-0a1b2c3d4e5f60002"}}
	imagesHTTP, err := client.DescribeImages(ctx, imagesIn)
	if err != nil {
		t.Fatal(err)
	}
	images, _ := direct.DescribeImages(ctx, imagesIn)
	same(t, "DescribeImages", imagesHTTP, images)

	typesIn := &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "p4d.24xlarge", "inf2.xlarge", "t4g.small"}}
	typesHTTP, err := client.DescribeInstanceTypes(ctx, typesIn)
	if err != nil {
		t.Fatal(err)
	}
	types, _ := direct.DescribeInstanceTypes(ctx, typesIn)
	if len(types.InstanceTypes) != 4 {
		t.Fatalf("the account describes %d of the 4 instance types", len(types.InstanceTypes))
	}
	same(t, "DescribeInstanceTypes", typesHTTP, types)

	spotIn := &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"}}
	spotHTTP, err := client.DescribeSpotPriceHistory(ctx, spotIn)
	if err != nil {
		t.Fatal(err)
	}
	spot, _ := direct.DescribeSpotPriceHistory(ctx, spotIn)
	same(t, "DescribeSpotPriceHistory", spotHTTP, spot)

	tags := []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("general-abcde")}, {Key: aws.String("kubernetes.io/cluster/nodewright-sim"), Value: aws.String("owned")}}
	template, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("nodewright/test"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String("ami-0a1b2c3d4e5f60001"), UserData: aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi\n"))),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")},
			SecurityGroupIds:   []string{aws.ToString(groups.SecurityGroups[0].GroupId)},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ltIn := &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nodewright/test"}}
	ltHTTP, err := client.DescribeLaunchTemplates(ctx, ltIn)
	if err != nil {
		t.Fatal(err)
	}
	lt, _ := direct.DescribeLaunchTemplates(ctx, ltIn)
	if len(lt.LaunchTemplates) != 1 || aws.ToString(lt.LaunchTemplates[0].LaunchTemplateId) != aws.ToString(template.LaunchTemplate.LaunchTemplateId) {
		t.Fatalf("the launch template created over HTTP is not in the account: %+v", lt.LaunchTemplates)
	}
	same(t, "DescribeLaunchTemplates", ltHTTP, lt)

	fleet, err := client.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant, ClientToken: aws.String("token-1"),
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: template.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet.Instances) != 1 || len(fleet.Instances[0].InstanceIds) != 1 || fleet.Instances[0].InstanceType != "m5.large" {
		for _, e := range fleet.Errors {
			t.Logf("fleet error %s: %s", aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
		}
		t.Fatalf("CreateFleet over HTTP launched %+v", fleet.Instances)
	}
	id := fleet.Instances[0].InstanceIds[0]
	instancesIn := &ec2.DescribeInstancesInput{InstanceIds: []string{id}}
	instancesHTTP, err := client.DescribeInstances(ctx, instancesIn)
	if err != nil {
		t.Fatal(err)
	}
	instances, _ := direct.DescribeInstances(ctx, instancesIn)
	same(t, "DescribeInstances", instancesHTTP, instances)
	got := map[string]string{}
	for _, tag := range instancesHTTP.Reservations[0].Instances[0].Tags {
		got[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if got["karpenter.sh/nodeclaim"] != "general-abcde" {
		t.Errorf("the instance's tags over HTTP: %v", got)
	}

	// Tags set over HTTP reach the instance in the account.
	if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("general-fghij")}}}); err != nil {
		t.Fatal(err)
	}
	instances, _ = direct.DescribeInstances(ctx, instancesIn)
	for _, tag := range instances.Reservations[0].Instances[0].Tags {
		if aws.ToString(tag.Key) == "karpenter.sh/nodeclaim" && aws.ToString(tag.Value) != "general-fghij" {
			t.Errorf("CreateTags over HTTP left the instance's NodeClaim tag at %s", aws.ToString(tag.Value))
		}
	}
}

// Errors arrive as the SDK's API errors, with EC2's codes.
func TestEC2ErrorsOverHTTP(t *testing.T) {
	client, _ := endpoint(t)
	_, err := client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-missing"}})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidSubnetID.NotFound" {
		t.Fatalf("describing a missing subnet: %v, want InvalidSubnetID.NotFound", err)
	}
}

// The AWS CLI lists the account's instances, with their tags, through the
// endpoint.
func TestAWSCLIDescribesInstances(t *testing.T) {
	cli, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("the AWS CLI is not installed (Debian: apt-get install awscli)")
	}
	client, _ := endpoint(t)
	ctx := context.Background()
	// Launch through the SDK client, as nodewright does.
	subnets, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	template, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("cli"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0a1b2c3d4e5f60001"),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := client.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: template.LaunchTemplate.LaunchTemplateId, Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "c5.large", SubnetId: subnets.Subnets[0].SubnetId}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("general")}}}},
	})
	if err != nil || len(fleet.Instances) != 1 {
		t.Fatalf("launching: %v %+v", err, fleet)
	}
	cmd := exec.Command(cli, "ec2", "describe-instances", "--endpoint-url", *client.Options().BaseEndpoint, "--region", "us-east-1", "--output", "json")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=AKIDSIMULATED", "AWS_SECRET_ACCESS_KEY=secret", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_PAGER=")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("aws ec2 describe-instances: %v\n%s", err, exit.Stderr)
		}
		t.Fatal(err)
	}
	var listed struct {
		Reservations []struct {
			Instances []struct {
				InstanceID   string `json:"InstanceId"`
				InstanceType string
				State        struct{ Name string }
				Tags         []struct{ Key, Value string }
			}
		}
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		t.Fatalf("reading the CLI's JSON: %v\n%s", err, out)
	}
	if len(listed.Reservations) != 1 || len(listed.Reservations[0].Instances) != 1 {
		t.Fatalf("the CLI lists %s", out)
	}
	inst := listed.Reservations[0].Instances[0]
	if inst.InstanceID != fleet.Instances[0].InstanceIds[0] || inst.InstanceType != "c5.large" || len(inst.Tags) == 0 || inst.Tags[0].Key != "karpenter.sh/nodepool" || inst.Tags[0].Value != "general" {
		t.Errorf("the CLI lists %+v, want %s (c5.large) tagged karpenter.sh/nodepool=general", inst, fleet.Instances[0].InstanceIds[0])
	}
}

// A call EC2's token bucket refuses reaches the SDK as AWS answers it:
// HTTP 503 with the code RequestLimitExceeded, which its retryer treats
// as throttling.
func TestThrottlingOverHTTP(t *testing.T) {
	account := simaws.NewAccount()
	account.Seed()
	account.ServeOverHTTP()
	account.SetFaults(simaws.Faults{RateLimits: 0.02}) // DescribeSubnets: a bucket of 2
	srv := httptest.NewServer(&Server{EC2: account.EC2()})
	t.Cleanup(srv.Close)
	client := ec2.New(ec2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDSIMULATED", "secret", ""),
	})
	var err error
	for range 3 {
		if _, err = client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
			break
		}
	}
	var api smithy.APIError
	var resp *awshttp.ResponseError
	if !errors.As(err, &api) || api.ErrorCode() != "RequestLimitExceeded" || !errors.As(err, &resp) || resp.HTTPStatusCode() != http.StatusServiceUnavailable {
		t.Fatalf("the third DescribeSubnets in a row with a bucket of 2: %v, want RequestLimitExceeded with HTTP 503", err)
	}
	if !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
		t.Errorf("the SDK's retryer does not see %v as throttling", err)
	}
}
