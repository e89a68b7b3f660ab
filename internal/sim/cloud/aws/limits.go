package aws

import (
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// EC2 throttles each API of an account separately with token buckets
// ("Request throttling for the Amazon EC2 API", Amazon EC2 Developer
// Guide): every request takes a token from its API's request bucket, and
// RunInstances, StartInstances, StopInstances and TerminateInstances also
// take one token per instance from a resource bucket. A bucket holds at
// most its capacity and gains its refill rate every second. The sizes
// below are the documented defaults of an account; AWS raises them on
// request.
type bucketSize struct{ capacity, refill float64 }

var (
	// Describe*, List*, Search* and Get* actions.
	nonMutatingBucket = bucketSize{capacity: 100, refill: 20}
	// The non-mutating actions of unfilteredActions, called with neither a
	// filter (ids included) nor pagination.
	unfilteredBucket = bucketSize{capacity: 50, refill: 10}
	// Every other action, CreateFleet and CreateLaunchTemplate among them,
	// unless it has its own size in ownBuckets.
	mutatingBucket = bucketSize{capacity: 50, refill: 5}
)

var unfilteredActions = sets.New("DescribeInstances", "DescribeInstanceStatus", "DescribeNetworkInterfaces",
	"DescribeSecurityGroups", "DescribeSnapshots", "DescribeSpotInstanceRequests", "DescribeVolumes")

// ownBuckets are the documented "uncategorized" request buckets of the
// actions the simulated account serves.
var ownBuckets = map[string]bucketSize{
	"CreateTags":                  {capacity: 100, refill: 10},
	"TerminateInstances":          {capacity: 100, refill: 5},
	"CreateLaunchTemplateVersion": {capacity: 100, refill: 5},
	"ModifyLaunchTemplate":        {capacity: 100, refill: 5},
}

// resourceBuckets count instances rather than requests.
var resourceBuckets = map[string]bucketSize{
	"TerminateInstances": {capacity: 1000, refill: 20},
}

// requestBucket is the request bucket an action's call takes a token from.
func requestBucket(action string, unfiltered bool) bucketSize {
	if b, ok := ownBuckets[action]; ok {
		return b
	}
	if !nonMutating(action) {
		return mutatingBucket
	}
	if unfiltered && unfilteredActions.Has(action) {
		return unfilteredBucket
	}
	return nonMutatingBucket
}

func nonMutating(action string) bool {
	for _, p := range []string{"Describe", "List", "Search", "Get"} {
		if len(action) > len(p) && action[:len(p)] == p {
			return true
		}
	}
	return false
}

// apiCall is one call as the throttling sees it.
type apiCall struct {
	action string
	// ec2 calls go through EC2's token buckets. AWS documents no fixed
	// bucket sizes for the calls nodewright makes to SSM, IAM, EKS and
	// Pricing, so only the Faults throttle those.
	ec2 bool
	// unfiltered: no filter, ids or pagination (see unfilteredActions).
	unfiltered bool
	// resources is the instances a call with a resource bucket acts on.
	resources int
}

func ec2Call(action string) apiCall { return apiCall{action: action, ec2: true} }

func serviceCall(action string) apiCall { return apiCall{action: action} }

type tokenBucket struct {
	tokens float64
	at     time.Time
}

// take takes n tokens from a bucket of size b (scaled) at now, refilling
// it first; false when it has fewer than n.
func (t *tokenBucket) take(b bucketSize, scale float64, n int, now time.Time) bool {
	capacity, refill := b.capacity*scale, b.refill*scale
	if t.at.IsZero() {
		t.tokens = capacity
	} else if d := now.Sub(t.at).Seconds(); d > 0 {
		t.tokens = min(capacity, t.tokens+d*refill)
	}
	t.at = now
	if t.tokens < float64(n) {
		return false
	}
	t.tokens -= float64(n)
	return true
}

// throttles reports whether EC2's token buckets refuse r now; it takes
// the tokens when they do not. Called with a.mu held.
func (a *Account) throttles(r apiCall, scale float64) bool {
	if !r.ec2 || scale <= 0 {
		return false
	}
	now := a.clock.Now()
	size := requestBucket(r.action, r.unfiltered)
	key := r.action
	if size == unfilteredBucket {
		key += "/unfiltered"
	}
	if !a.bucket(key).take(size, scale, 1, now) {
		return true
	}
	if size, ok := resourceBuckets[r.action]; ok && r.resources > 0 {
		return !a.bucket(r.action+"/instances").take(size, scale, r.resources, now)
	}
	return false
}

func (a *Account) bucket(key string) *tokenBucket {
	if a.buckets == nil {
		a.buckets = map[string]*tokenBucket{}
	}
	b := a.buckets[key]
	if b == nil {
		b = &tokenBucket{}
		a.buckets[key] = b
	}
	return b
}
