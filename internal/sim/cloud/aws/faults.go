package aws

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// Faults are failures the simulated account injects into every API call.
type Faults struct {
	// ThrottleEvery throttles one call in this many (0: never) with
	// RequestLimitExceeded, counted over all APIs, so a given sequence of
	// calls is throttled the same way every time.
	ThrottleEvery int
	// RateLimits scales EC2's documented token buckets (limits.go), which
	// throttle each EC2 API on its own: 1 is an account's defaults, 0.1 a
	// tenth of them, 0 no limit.
	RateLimits float64
	// Latency delays every call.
	Latency time.Duration
	// HangNodePool makes CreateFleet calls for this NodePool's instances
	// (tagged karpenter.sh/nodepool) never answer, until the caller gives
	// up: a launch stuck on the AWS side.
	HangNodePool string
	// PricingDenied makes the Pricing API refuse every call with
	// AccessDeniedException, as it does a role without pricing:GetProducts.
	PricingDenied bool
	// DescribeLag is EC2's eventual consistency: an instance is not
	// described (NotFound by its ID, absent from lists) until this long
	// after its launch.
	DescribeLag time.Duration
	// HideInstances makes DescribeInstances find none of the account's
	// instances, as a wrong region or credential answers: NotFound by
	// ID, empty lists.
	HideInstances bool
	// ClockSkew shifts the times EC2 reports (an instance's launch time)
	// from the account's clock: negative, EC2's clock runs behind the
	// controller's.
	ClockSkew time.Duration
	// PartialFleet is how many of a CreateFleet call's instances (of
	// more than one) fail with InsufficientInstanceCapacity, the others
	// launching: EC2's partial answer.
	PartialFleet int
}

// Stats count the account's API calls.
type Stats struct {
	// Calls are attempts, including the throttled ones; Throttled were
	// refused with RequestLimitExceeded; Retries were attempts after a
	// throttled one.
	Calls, Throttled, Retries int
	// CallsBy and ThrottledBy count the attempts and the throttled ones
	// by action (throttled by the EC2 token buckets or ThrottleEvery).
	CallsBy, ThrottledBy map[string]int
	// Backoff is the time spent waiting before retries.
	Backoff time.Duration
}

// ServeOverHTTP makes the account answer a throttled call with the error
// instead of retrying it itself: over HTTP, the caller's SDK client
// retries (the in-process APIs play that client's part otherwise).
func (a *Account) ServeOverHTTP() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.overHTTP = true
}

// SetFaults sets the faults injected from now on.
func (a *Account) SetFaults(f Faults) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.faults = f
}

// Stats returns the API call counts so far.
func (a *Account) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.stats
	st.CallsBy, st.ThrottledBy = maps.Clone(a.stats.CallsBy), maps.Clone(a.stats.ThrottledBy)
	return st
}

// call is the client side of every simulated API call: it waits the
// injected latency, and when the account throttles the call (its faults
// or, for EC2, its token buckets) it backs off
// and tries again with the AWS SDK's standard retry policy (the real
// clients run the same policy in their middleware), returning the
// throttling error once the attempts are used up.
func (a *Account) call(ctx context.Context, r apiCall) error {
	for attempt := 1; ; attempt++ {
		faults, overHTTP, throttled := a.attempt(r, attempt)
		if err := sleep(ctx, faults.Latency); err != nil {
			return err
		}
		if !throttled {
			return nil
		}
		err := apiError("RequestLimitExceeded", "Request limit exceeded.")
		if overHTTP || !retryable(attempt, err) {
			return err
		}
		if err := a.backOff(ctx, attempt, err); err != nil {
			return err
		}
	}
}

// attempt counts an attempt at a call and decides whether the account
// throttles it. It returns the faults in force and whether the account is
// served over HTTP, where the caller's own SDK client retries.
func (a *Account) attempt(r apiCall, attempt int) (faults Faults, overHTTP, throttled bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	faults, overHTTP = a.faults, a.overHTTP
	a.stats.Calls++
	if a.stats.CallsBy == nil {
		a.stats.CallsBy, a.stats.ThrottledBy = map[string]int{}, map[string]int{}
	}
	a.stats.CallsBy[r.action]++
	if attempt > 1 {
		a.stats.Retries++
	}
	throttled = faults.ThrottleEvery > 0 && a.stats.Calls%faults.ThrottleEvery == 0 || a.throttles(r, faults.RateLimits)
	if throttled {
		a.stats.Throttled++
		a.stats.ThrottledBy[r.action]++
	}
	return faults, overHTTP, throttled
}

// retryable reports whether the standard retry policy tries a call again
// after the attempt failed with err.
func retryable(attempt int, err error) bool {
	return attempt < retryer.MaxAttempts() && retryer.IsErrorRetryable(err)
}

// backOff waits the standard retry policy's delay after a throttled
// attempt, and counts it.
func (a *Account) backOff(ctx context.Context, attempt int, err error) error {
	delay, derr := retryer.RetryDelay(attempt, err)
	if derr != nil {
		return errors.Join(err, derr)
	}
	a.mu.Lock()
	a.stats.Backoff += delay
	a.mu.Unlock()
	return sleep(ctx, delay)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryer is the AWS SDK's standard retry policy, safe for concurrent use
// (its backoff draws from crypto/rand).
var retryer = retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = noRateLimit{} })

// noRateLimit leaves out the SDK's client-side retry quota, which would
// stop retries under sustained throttling in a long simulation.
type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}

func (noRateLimit) AddTokens(uint) error { return nil }
