package aws_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// limited is a seeded account throttled by EC2's token buckets at scale,
// answering throttled calls with the error as it does over HTTP (no
// retries), on a clock the test moves.
func limited(t *testing.T, scale float64) (*simaws.Account, *clocktesting.FakePassiveClock) {
	t.Helper()
	a := simaws.NewAccount()
	a.Seed()
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a.SetClock(clock)
	a.ServeOverHTTP()
	a.SetFaults(simaws.Faults{RateLimits: scale})
	return a, clock
}

func throttled(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "RequestLimitExceeded"
}

// accepted makes n calls and returns how many were not throttled.
func accepted(n int, call func() error) int {
	ok := 0
	for range n {
		if !throttled(call()) {
			ok++
		}
	}
	return ok
}

// Each EC2 API has its own bucket, sized by its category as AWS documents:
// a Describe call takes from a bucket of 100 refilled at 20 a second; an
// unfiltered, unpaginated DescribeInstances from one of 50 refilled at 10;
// CreateFleet, a mutating call, from one of 50 refilled at 5.
func TestEC2TokenBuckets(t *testing.T) {
	a, clock := limited(t, 1)
	ctx := context.Background()
	ec2api := a.EC2()
	describeAll := func() error { _, err := ec2api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); return err }
	describeTagged := func() error {
		_, err := ec2api.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/nodepool"}}}})
		return err
	}
	subnets := func() error { _, err := ec2api.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); return err }
	fleet := func() error { _, err := ec2api.CreateFleet(ctx, &ec2.CreateFleetInput{}); return err }

	for _, c := range []struct {
		name       string
		call       func() error
		burst, sec int
	}{
		{"unfiltered DescribeInstances", describeAll, 50, 10},
		{"filtered DescribeInstances", describeTagged, 100, 20},
		{"DescribeSubnets", subnets, 100, 20},
		{"CreateFleet", fleet, 50, 5},
	} {
		// Another API's empty bucket takes nothing from this one's.
		if got := accepted(c.burst+10, c.call); got != c.burst {
			t.Errorf("%s: %d of %d calls at once accepted, want the bucket's %d", c.name, got, c.burst+10, c.burst)
		}
	}
	clock.SetTime(clock.Now().Add(time.Second))
	for _, c := range []struct {
		name string
		call func() error
		sec  int
	}{{"unfiltered DescribeInstances", describeAll, 10}, {"DescribeSubnets", subnets, 20}, {"CreateFleet", fleet, 5}} {
		if got := accepted(c.sec+5, c.call); got != c.sec {
			t.Errorf("%s: %d calls accepted a second after the bucket emptied, want its refill of %d", c.name, got, c.sec)
		}
	}
	st := a.Stats()
	if st.ThrottledBy["CreateFleet"] != 10+5 || st.ThrottledBy["DescribeSubnets"] != 10+5 || st.ThrottledBy["DescribeInstances"] != 10+10+5 {
		t.Errorf("throttled calls by action: %v", st.ThrottledBy)
	}
}

// TerminateInstances also takes one token per instance from a resource
// bucket of 1,000 refilled at 20 a second; a tenth of the limits is a
// tenth of every bucket.
func TestEC2ResourceBucketAndScale(t *testing.T) {
	a, clock := limited(t, 0.1)
	ctx := context.Background()
	terminate := func(n int) error {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("i-%017x", i)
		}
		_, err := a.EC2().TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
		return err
	}
	// 100 instances empty the scaled resource bucket; the next call is
	// throttled although its request bucket (10) has tokens left.
	if err := terminate(100); throttled(err) {
		t.Fatalf("terminating 100 instances with a full bucket of 100: %v", err)
	}
	if err := terminate(1); !throttled(err) {
		t.Fatalf("terminating one more instance: %v, want RequestLimitExceeded", err)
	}
	clock.SetTime(clock.Now().Add(time.Second)) // +2 instance tokens
	if err := terminate(2); throttled(err) {
		t.Fatalf("terminating 2 instances a second later: %v", err)
	}
	if err := terminate(1); !throttled(err) {
		t.Fatalf("terminating a third: %v, want RequestLimitExceeded", err)
	}
	// Without limits nothing is throttled.
	a.SetFaults(simaws.Faults{})
	if got := accepted(500, func() error { return terminate(1) }); got != 500 {
		t.Errorf("without limits %d of 500 calls accepted", got)
	}
}
