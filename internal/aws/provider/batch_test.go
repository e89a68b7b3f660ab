package provider_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
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
// instance of its own without a tag written on the way (the record is
// the NodeClaim's status.providerID, written by its caller), and asking
// again, in this process or after a restart (a new launcher that reads
// the records) and whether or not the request is still the same, returns
// the same instance: nothing is ever launched twice. A NodeClaim beyond
// the batch's size gets no instance.
func TestLaunchBatch(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	b := cloudprovider.LaunchBatch{ID: "batch-1", Size: 4}
	names := []string{"m-0", "m-1", "m-2", "m-3"}
	before := f.account.Stats().CallsBy
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
	after := f.account.Stats().CallsBy
	if n := after["CreateFleet"] - before["CreateFleet"]; n != 1 {
		t.Errorf("%d CreateFleet calls for a batch of 4, want 1", n)
	}
	if n := after["CreateTags"] - before["CreateTags"]; n != 0 {
		t.Errorf("%d CreateTags calls on the launch path, want none", n)
	}
	held := map[string]string{}
	records := map[string]string{}
	for i, inst := range got {
		if other, ok := held[inst.InstanceID]; ok {
			t.Errorf("%s and %s both got instance %s", other, names[i], inst.InstanceID)
		}
		held[inst.InstanceID] = names[i]
		records[inst.InstanceID] = names[i]
		tags := tagsOf(f.account, inst.InstanceID)
		if tags[provider.TagNodeClaim] != provider.Untaken(b.ID) || tags["Name"] != "default/"+provider.Untaken(b.ID) || tags[provider.TagLaunchBatch] != b.ID || inst.NodeClaim != names[i] {
			t.Errorf("%s's instance %s (NodeClaim %q): tags %v, want the batch's until garbage collection tags it", names[i], inst.InstanceID, inst.NodeClaim, tags)
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
		l := provider.New(f.account.EC2(), f.resolver, f.cluster, clock.RealClock{})
		l.Recorded = recordsOf(b.ID, records)
		return l
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

// recordsOf reads records (instance ID → NodeClaim) as a batch's
// NodeClaims would show them.
func recordsOf(batch string, records map[string]string) provider.Recorded {
	return func(_ context.Context, id string) (map[string]string, error) {
		if id != batch {
			return nil, nil
		}
		return maps.Clone(records), nil
	}
}

// A restart between members choosing their instances and recording them
// loses the choices that were not recorded: after it, the members whose
// instance is recorded (on the NodeClaim, or by the tag garbage
// collection wrote from it) keep it, and the others share the rest, one
// each, whatever order they ask in. No instance is held twice and none is
// launched again.
func TestLaunchBatchAfterARestartBeforeTheRecords(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	b := cloudprovider.LaunchBatch{ID: "batch-r", Size: 4}
	first := map[string]*cloudprovider.Instance{}
	for _, name := range []string{"r-0", "r-1", "r-2", "r-3"} {
		inst, err := f.provider.Create(ctx, batchClaim(name, b), f.class, f.types)
		if err != nil {
			t.Fatal(err)
		}
		first[name] = inst
	}
	// r-0 recorded its instance; r-1's was recorded and tagged since; the
	// process ended before r-2 and r-3 recorded theirs.
	if err := f.provider.TagHolder(ctx, first["r-1"], "r-1"); err != nil {
		t.Fatal(err)
	}
	l := provider.New(f.account.EC2(), f.resolver, f.cluster, clock.RealClock{})
	l.Recorded = recordsOf(b.ID, map[string]string{first["r-0"].InstanceID: "r-0", first["r-1"].InstanceID: "r-1"})
	held := map[string]string{first["r-0"].InstanceID: "r-0", first["r-1"].InstanceID: "r-1"}
	for _, name := range []string{"r-3", "r-2", "r-1"} {
		inst, err := l.Create(ctx, batchClaim(name, b), f.class, f.types)
		if err != nil {
			t.Fatalf("%s after the restart: %v", name, err)
		}
		if name == "r-1" {
			if inst.InstanceID != first["r-1"].InstanceID {
				t.Errorf("r-1 after the restart got %s, want the instance tagged with it, %s", inst.InstanceID, first["r-1"].InstanceID)
			}
			continue
		}
		if other, ok := held[inst.InstanceID]; ok {
			t.Errorf("%s after the restart got %s, held by %s", name, inst.InstanceID, other)
		}
		held[inst.InstanceID] = name
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

// Garbage collection tags launch batches' instances with their
// NodeClaims after their launch. More instances than EC2's CreateTags
// bucket (100 requests) are tagged without one refused call, the Name tag
// following, and a call that cannot have its turn before its deadline
// sends nothing.
func TestTagHolderIsPacedUnderTheTagBucket(t *testing.T) {
	f := setup(t)
	f.account.SetFaults(simaws.Faults{RateLimits: 1})
	ctx := context.Background()
	const members = 120
	type member struct {
		name string
		inst *cloudprovider.Instance
	}
	var launched []member
	for i := range members {
		b := cloudprovider.LaunchBatch{ID: fmt.Sprintf("batch-big-%d", i%2), Size: 60}
		name := fmt.Sprintf("big-%d", i)
		inst, err := f.provider.Create(ctx, batchClaim(name, b), f.class, f.types)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		launched = append(launched, member{name, inst})
	}
	listed, err := f.provider.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*cloudprovider.Instance{}
	for _, inst := range listed {
		if inst.NodeClaim != "" {
			t.Errorf("instance %s lists as NodeClaim %q's before it is tagged", inst.InstanceID, inst.NodeClaim)
		}
		byID[inst.InstanceID] = inst
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	before := f.account.Stats().CallsBy["CreateTags"]
	if err := f.provider.TagHolder(canceled, byID[launched[0].inst.InstanceID], launched[0].name); !cloudprovider.IsRetryLater(err) {
		t.Errorf("a tag that cannot have its turn before its deadline: %v, want RetryLater", err)
	}
	if n := f.account.Stats().CallsBy["CreateTags"] - before; n != 0 {
		t.Errorf("%d CreateTags calls sent past the deadline", n)
	}
	for _, m := range launched {
		if err := f.provider.TagHolder(ctx, byID[m.inst.InstanceID], m.name); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if tags := tagsOf(f.account, m.inst.InstanceID); tags[provider.TagNodeClaim] != m.name || tags["Name"] != "default/"+m.name {
			t.Errorf("%s's instance %s is tagged %v", m.name, m.inst.InstanceID, tags)
		}
	}
	stats := f.account.Stats()
	if n := stats.ThrottledBy["CreateTags"]; n > 0 {
		t.Errorf("EC2 refused %d CreateTags calls with RequestLimitExceeded", n)
	}
	listed, err = f.provider.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range listed {
		if inst.NodeClaim == "" {
			t.Errorf("instance %s lists without its NodeClaim after it is tagged", inst.InstanceID)
		}
	}
}
