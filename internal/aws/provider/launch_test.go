package provider_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// Throttled calls are retried with the SDK's backoff and the launch
// succeeds; when every attempt is throttled, the error says so and
// nothing is launched.
func TestThrottlingIsRetriedWithBackoff(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	f.account.SetFaults(simaws.Faults{ThrottleEvery: 2})
	before := f.account.Stats()
	inst, err := f.provider.Create(ctx, claim("throttled", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatalf("a launch under throttling must succeed by retrying: %v", err)
	}
	st := f.account.Stats()
	if st.Throttled == before.Throttled || st.Retries-before.Retries < st.Throttled-before.Throttled || st.Backoff <= before.Backoff {
		t.Errorf("stats %+v (before %+v): want throttled calls, each retried after a backoff", st, before)
	}
	if _, err := f.provider.Get(ctx, inst.ProviderID); err != nil {
		t.Errorf("get under throttling: %v", err)
	}

	f.account.SetFaults(simaws.Faults{ThrottleEvery: 1})
	_, err = f.provider.Create(ctx, claim("refused", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("every call throttled: want an error naming RequestLimitExceeded, got %v", err)
	}
	f.account.SetFaults(simaws.Faults{})
	if n := len(f.account.Instances()); n != 1 {
		t.Errorf("%d instances; the refused launch must launch nothing", n)
	}
}

func TestLatencyDelaysEveryCall(t *testing.T) {
	f := setup(t)
	f.account.SetFaults(simaws.Faults{Latency: 30 * time.Millisecond})
	start := time.Now()
	if _, err := f.provider.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("a call took %v with 30ms latency", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := f.provider.List(ctx); err == nil {
		t.Error("a call slower than its context's deadline must fail")
	}
}

// Instances move pending → running → shutting-down → terminated; Delete
// keeps reporting nil until the instance is gone, then NotFound.
func TestInstanceStatesAndDeleteUntilGone(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	now := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	f.account.SetClock(now)
	f.account.SetTransitions(20*time.Second, 40*time.Second)
	inst, err := f.provider.Create(ctx, claim("states", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		got, err := f.provider.Get(ctx, inst.ProviderID)
		if cloudprovider.IsNotFound(err) {
			return "gone"
		}
		if err != nil {
			t.Fatal(err)
		}
		return got.State
	}
	if s := state(); s != "pending" {
		t.Errorf("just launched: %s", s)
	}
	now.Step(20 * time.Second)
	if s := state(); s != "running" {
		t.Errorf("after 20s: %s", s)
	}
	for i := 0; i < 2; i++ {
		if err := f.provider.Delete(ctx, inst.ProviderID, cloudprovider.Holder{}); err != nil {
			t.Fatalf("delete %d while shutting down: %v", i+1, err)
		}
		if s := state(); s != "shutting-down" {
			t.Errorf("after delete %d: %s", i+1, s)
		}
	}
	if listed, err := f.provider.List(ctx); err != nil || len(listed) != 1 {
		t.Errorf("a shutting-down instance is still listed: %+v %v", listed, err)
	}
	now.Step(40 * time.Second)
	if s := state(); s != "gone" {
		t.Errorf("after shutting down: %s", s)
	}
	if err := f.provider.Delete(ctx, inst.ProviderID, cloudprovider.Holder{}); !cloudprovider.IsNotFound(err) {
		t.Errorf("delete once terminated: %v", err)
	}
}

// An EC2NodeClass whose AMIs fit none of a NodeClaim's instance types is
// refused with the architectures on both sides, and launches nothing.
func TestNoAMIForTheArchitecture(t *testing.T) {
	f := setup(t)
	var amd64Only []awsv1.AMI
	for _, ami := range f.class.Status.AMIs {
		for _, r := range ami.Requirements {
			if r.Key == scheduling.LabelArch && r.Values[0] == "amd64" {
				amd64Only = append(amd64Only, ami)
			}
		}
	}
	f.class.Status.AMIs = amd64Only
	_, err := f.provider.Create(context.Background(), claim("arm", in(scheduling.LabelInstanceType, "t4g.large", "m7g.large")), f.class, f.types)
	if !cloudprovider.IsNodeClassNotReady(err) || !strings.Contains(err.Error(), "no AMI for arm64") || !strings.Contains(err.Error(), "ami-al2023x8664") {
		t.Errorf("want NodeClassNotReady naming arm64 and the amd64 AMI, got %v", err)
	}
	if n := len(f.account.Instances()); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}
