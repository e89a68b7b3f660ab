package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/sdk"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/fake/account"
	simaws "github.com/nodewright/nodewright/internal/fake/aws"
	"github.com/nodewright/nodewright/internal/scheduling"
)

func batchClaim(name string, b cloudprovider.LaunchBatch) *v1.NodeClaim {
	nc := claim(name, in(scheduling.LabelInstanceType, "m5.large"), in(v1.LabelCapacityType, "spot", "on-demand"))
	nc.Annotations = map[string]string{cloudprovider.AnnotationLaunchBatch: b.String()}
	return nc
}

// tagsOf are an instance's tags in the account.
func tagsOf(a *simaws.Account, id string) map[string]string {
	for _, inst := range a.Instances() {
		if aws.ToString(inst.InstanceId) == id {
			out := map[string]string{}
			for _, t := range inst.Tags {
				out[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			return out
		}
	}
	return nil
}

// The NodeClaims of a launch batch launch in one fleet, each gets an
// instance of its own tagged with its name, and asking again, in this
// process or after a restart (a new launcher) and whether or not the
// request is still the same, returns the same instance: nothing is ever
// launched twice. A NodeClaim beyond the batch's size gets no instance.
func TestLaunchBatch(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	b := cloudprovider.LaunchBatch{ID: "batch-1", Size: 4}
	names := []string{"m-0", "m-1", "m-2", "m-3"}
	fleets := f.account.Stats().CallsBy["CreateFleet"]
	got := make([]*cloudprovider.Instance, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			inst, err := f.provider.Create(ctx, batchClaim(name, b), f.class, f.types)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			got[i] = inst
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := f.account.Stats().CallsBy["CreateFleet"] - fleets; n != 1 {
		t.Errorf("%d CreateFleet calls for a batch of 4, want 1", n)
	}
	held := map[string]string{}
	for i, inst := range got {
		if other, ok := held[inst.InstanceID]; ok {
			t.Errorf("%s and %s both got instance %s", other, names[i], inst.InstanceID)
		}
		held[inst.InstanceID] = names[i]
		tags := tagsOf(f.account, inst.InstanceID)
		if tags[provider.TagNodeClaim] != names[i] || tags["Name"] != "default/"+names[i] || tags[provider.TagLaunchBatch] != b.ID || inst.NodeClaim != names[i] {
			t.Errorf("%s's instance %s: tags %v", names[i], inst.InstanceID, tags)
		}
	}

	again := func(what string, l *provider.Launcher) {
		t.Helper()
		for i, name := range names {
			inst, err := l.Create(ctx, batchClaim(name, b), f.class, f.types)
			if err != nil || inst.InstanceID != got[i].InstanceID {
				t.Errorf("%s: %s got %+v, %v; want its instance %s", what, name, inst, err, got[i].InstanceID)
			}
		}
		if n := len(f.account.Instances()); n != 4 {
			t.Errorf("%s: %d instances in the account, want the batch's 4", what, n)
		}
	}
	again("asked again", f.provider)
	restarted := func() *provider.Launcher {
		return provider.New(f.account.EC2(), f.resolver, f.cluster, clock.RealClock{})
	}
	again("after a restart", restarted())
	// After a restart with a request that differs (the class's tags
	// changed), EC2 refuses the batch's token with
	// IdempotentParameterMismatch; the instances are found by their tag.
	_, err := f.account.EC2().CreateFleet(ctx, &ec2.CreateFleetInput{ClientToken: aws.String(b.ID), Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "IdempotentParameterMismatch" {
		t.Errorf("another request with the batch's token: %v, want IdempotentParameterMismatch", err)
	}
	f.class.Spec.Tags = map[string]string{"team": "a"}
	again("after a restart with another request", restarted())

	_, err = restarted().Create(ctx, batchClaim("m-4", b), f.class, f.types)
	if !cloudprovider.IsInsufficientCapacity(err) || !strings.Contains(err.Error(), b.ID) {
		t.Errorf("a fifth NodeClaim of a batch of 4: %v, want InsufficientCapacity naming the batch", err)
	}
	if n := len(f.account.Instances()); n != 4 {
		t.Errorf("%d instances in the account, want the batch's 4", n)
	}
}

// An instance that carries a batch's tag but is not nodewright's (another
// cluster's) is never taken by the batch's NodeClaims.
func TestLaunchBatchLeavesForeignInstancesAlone(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	b := cloudprovider.LaunchBatch{ID: "batch-2", Size: 2}
	foreign := f.account.AddInstance("m5.large", "us-east-1a", "", map[string]string{
		"kubernetes.io/cluster/other": "owned", v1.LabelNodePool: "default", provider.TagNodeClaim: provider.Untaken(b.ID), provider.TagLaunchBatch: b.ID,
		awsv1.LabelEC2NodeClass: "default",
	})
	// The batch's fleet was refused before this process asked (a request
	// that differs): only what the tags find can be the batch's.
	f.class.Spec.Tags = map[string]string{"team": "a"}
	if _, err := f.provider.Create(ctx, batchClaim("first", b), f.class, f.types); err != nil {
		t.Fatal(err)
	}
	f.class.Spec.Tags = nil
	inst, err := provider.New(f.account.EC2(), f.resolver, f.cluster, clock.RealClock{}).Create(ctx, batchClaim("second", b), f.class, f.types)
	if err != nil || inst.InstanceID == foreign {
		t.Fatalf("second member: %+v, %v; want its own instance, never the foreign %s", inst, err, foreign)
	}
	if tags := tagsOf(f.account, foreign); tags[provider.TagNodeClaim] != provider.Untaken(b.ID) {
		t.Errorf("the foreign instance was retagged: %v", tags)
	}
}

// A batch whose fleet finds no capacity of its capacity type leaves its
// NodeClaims to launch on their own, each trying the next capacity type.
func TestLaunchBatchWithoutCapacity(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	for _, zone := range account.Zones() {
		f.account.SetUnavailable("spot", "m5.large", zone, true)
	}
	b := cloudprovider.LaunchBatch{ID: "batch-3", Size: 3}
	for _, name := range []string{"a", "b", "c"} {
		inst, err := f.provider.Create(ctx, batchClaim(name, b), f.class, f.types)
		if err != nil || inst.CapacityType != v1.CapacityTypeOnDemand || inst.NodeClaim != name {
			t.Errorf("%s without spot capacity: %+v, %v; want an on-demand instance of its own", name, inst, err)
		}
	}
	if n := len(f.account.Instances()); n != 3 {
		t.Errorf("%d instances, want 3", n)
	}
}

// meetingTags holds each CreateTags call until n are waiting at once.
type meetingTags struct {
	sdk.EC2
	meet    chan struct{}
	once    sync.Once
	n       int
	waiting int
	mu      sync.Mutex
}

func (m *meetingTags) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	m.mu.Lock()
	m.waiting++
	if m.waiting == m.n {
		m.once.Do(func() { close(m.meet) })
	}
	m.mu.Unlock()
	select {
	case <-m.meet:
	case <-time.After(30 * time.Second):
		return nil, errors.New("no other member of the batch tagged its instance meanwhile")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return m.EC2.CreateTags(ctx, in, opts...)
}

// The members of a launch batch tag their instances at once, not one
// after another behind the batch: at a large scale-up, EC2's CreateTags
// limit makes each tag a wait, and the controller's workers all waited
// on one batch. Each still gets an instance of its own.
func TestLaunchBatchMembersTagTheirInstancesAtOnce(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	b := cloudprovider.LaunchBatch{ID: "batch-4", Size: 4}
	tags := &meetingTags{EC2: f.account.EC2(), meet: make(chan struct{}), n: b.Size}
	l := provider.New(tags, f.resolver, f.cluster, clock.RealClock{})
	got := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range b.Size {
		name := fmt.Sprintf("t-%d", i)
		wg.Go(func() {
			inst, err := l.Create(ctx, batchClaim(name, b), f.class, f.types)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if other, ok := got[inst.InstanceID]; ok {
				t.Errorf("%s and %s both got instance %s", other, name, inst.InstanceID)
			}
			got[inst.InstanceID] = name
			if held := tagsOf(f.account, inst.InstanceID)[provider.TagNodeClaim]; held != name {
				t.Errorf("%s's instance %s is tagged for %q", name, inst.InstanceID, held)
			}
		})
	}
	wg.Wait()
}

// Launch batches whose members together outnumber EC2's CreateTags
// bucket (100 requests) tag their instances without one refused call:
// the members beyond the launcher's burst are told to try again later
// (and come back when told) rather than meet RequestLimitExceeded, which
// after the SDK's retries would fail their launches.
func TestLaunchBatchesLargerThanTheTagBucketAreNeverThrottled(t *testing.T) {
	f := setup(t)
	f.account.SetFaults(simaws.Faults{RateLimits: 1})
	ctx := context.Background()
	var wg sync.WaitGroup
	var waited atomic.Int32
	const members = 120
	for i := range members {
		b := cloudprovider.LaunchBatch{ID: fmt.Sprintf("batch-big-%d", i%2), Size: 60}
		name := fmt.Sprintf("big-%d", i)
		wg.Go(func() {
			inst, err := f.provider.Create(ctx, batchClaim(name, b), f.class, f.types)
			for after, later := cloudprovider.RetryAfter(err); later; after, later = cloudprovider.RetryAfter(err) {
				waited.Add(1)
				time.Sleep(after)
				inst, err = f.provider.Create(ctx, batchClaim(name, b), f.class, f.types)
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			if held := tagsOf(f.account, inst.InstanceID)[provider.TagNodeClaim]; held != name {
				t.Errorf("%s's instance %s is tagged for %q", name, inst.InstanceID, held)
			}
		})
	}
	wg.Wait()
	stats := f.account.Stats()
	if n := stats.CallsBy["CreateTags"]; n != members {
		t.Errorf("%d CreateTags calls for %d members", n, members)
	}
	if n := stats.ThrottledBy["CreateTags"]; n > 0 {
		t.Errorf("EC2 refused %d of the batch's CreateTags calls with RequestLimitExceeded", n)
	}
	if waited.Load() == 0 {
		t.Errorf("no member of %d was told to wait for its turn to tag", members)
	}
}
