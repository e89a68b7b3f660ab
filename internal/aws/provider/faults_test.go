package provider_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/scheduling"
	simaws "github.com/nodewright/nodewright/internal/sim/aws"
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
