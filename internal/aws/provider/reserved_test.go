package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// reservedFixture adds a one-instance reservation of m5.large in
// us-east-1a, selected by the EC2NodeClass's tags term.
func reservedFixture(t *testing.T) (*fixture, *provider.CloudProvider) {
	t.Helper()
	f := setup(t)
	f.account.AddCapacityReservation(ec2types.CapacityReservation{
		CapacityReservationId: aws.String("cr-0123456789abcdef0"), InstanceType: aws.String("m5.large"),
		AvailabilityZone: aws.String("us-east-1a"), TotalInstanceCount: aws.Int32(1),
		Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("ml")}},
	})
	f.class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}
	cloud := &provider.CloudProvider{Launcher: f.provider, Types: &instancetypes.Cache{
		Provider: &instancetypes.Provider{EC2: f.account.EC2(), Pricing: f.account.Pricing(), Region: account.Region},
		Clock:    clock.RealClock{}, TTL: time.Hour,
	}}
	return f, cloud
}

func (f *fixture) reservationAvailable(t *testing.T) int32 {
	t.Helper()
	for _, r := range f.account.CapacityReservations() {
		if aws.ToString(r.CapacityReservationId) == "cr-0123456789abcdef0" {
			return aws.ToInt32(r.AvailableInstanceCount)
		}
	}
	t.Fatal("the reservation is gone")
	return 0
}

func TestCreateLaunchesIntoACapacityReservation(t *testing.T) {
	f, cloud := reservedFixture(t)
	ctx := context.Background()
	types, err := cloud.InstanceTypes(ctx, f.class)
	if err != nil {
		t.Fatal(err)
	}
	reservedClaim := func(name string) *v1.NodeClaim {
		return claim(name, in(v1.LabelCapacityType, v1.CapacityTypeReserved), in(scheduling.LabelZone, "us-east-1a"), in(scheduling.LabelInstanceType, "m5.large"))
	}
	inst, err := f.provider.Create(ctx, reservedClaim("reserved-a"), f.class, types)
	if err != nil {
		t.Fatal(err)
	}
	if inst.CapacityType != v1.CapacityTypeReserved || inst.Labels[v1.LabelCapacityType] != v1.CapacityTypeReserved ||
		inst.Labels[awsv1.LabelCapacityReservationID] != "cr-0123456789abcdef0" || inst.Zone != "us-east-1a" {
		t.Errorf("launched %s in %s with labels %v, want reserved in cr-0123456789abcdef0", inst.CapacityType, inst.Zone, inst.Labels)
	}
	if n := f.reservationAvailable(t); n != 0 {
		t.Errorf("the reservation has %d instances available after the launch, want 0", n)
	}

	// Fresh instance types show the reservation full: a reserved-only
	// NodeClaim gets the typed error and launches nothing.
	fresh, err := cloud.InstanceTypes(ctx, f.class)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.provider.Create(ctx, reservedClaim("reserved-b"), f.class, fresh); !cloudprovider.IsInsufficientCapacity(err) {
		t.Errorf("a full reservation: want InsufficientCapacity, got %v", err)
	}
	// The NodeClaim that filled it, asked again (a reconcile that read it
	// before its instance was recorded), keeps its instance.
	again, err := f.provider.Create(ctx, reservedClaim("reserved-a"), f.class, fresh)
	if err != nil || again.InstanceID != inst.InstanceID {
		t.Errorf("launching reserved-a again with the reservation full: %v, %v; want its instance %s", again, err, inst.InstanceID)
	}
	// Stale instance types still think it has room: EC2 refuses with
	// ReservationCapacityExceeded, which is insufficient capacity too.
	if _, err := f.provider.Create(ctx, reservedClaim("reserved-c"), f.class, types); !cloudprovider.IsInsufficientCapacity(err) {
		t.Errorf("EC2 refusing a full reservation: want InsufficientCapacity, got %v", err)
	}
	if n := len(f.account.Instances()); n != 1 {
		t.Errorf("%d instances; nothing may launch outside a reserved-only NodeClaim's reservation", n)
	}

	// Terminating the instance gives its place back, and a NodeClaim that
	// allows every capacity type takes the reservation before spot.
	if err := f.provider.Delete(ctx, inst.ProviderID, cloudprovider.Holder{}); err != nil {
		t.Fatal(err)
	}
	if n := f.reservationAvailable(t); n != 1 {
		t.Errorf("the reservation has %d instances available after termination, want 1", n)
	}
	// The 3-minute memory of the refused offering keeps it out until it
	// expires; a new provider has none.
	f.provider = provider.New(f.account.EC2(), f.resolver, f.cluster, clock.RealClock{})
	cloud.Launcher = f.provider
	if fresh, err = cloud.InstanceTypes(ctx, f.class); err != nil {
		t.Fatal(err)
	}
	unconstrained, err := f.provider.Create(ctx, claim("any", in(scheduling.LabelInstanceType, "m5.large", "c5.large")), f.class, fresh)
	if err != nil || unconstrained.CapacityType != v1.CapacityTypeReserved {
		t.Errorf("a NodeClaim allowing reserved capacity: %+v %v", unconstrained, err)
	}
	// A NodeClaim that excludes reserved capacity leaves it alone.
	if err := f.provider.Delete(ctx, unconstrained.ProviderID, cloudprovider.Holder{}); err != nil {
		t.Fatal(err)
	}
	notReserved := v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: "NotIn", Values: []string{v1.CapacityTypeReserved}}
	spot, err := f.provider.Create(ctx, claim("spot", in(scheduling.LabelInstanceType, "m5.large"), notReserved), f.class, fresh)
	if err != nil || spot.CapacityType != v1.CapacityTypeSpot || f.reservationAvailable(t) != 1 {
		t.Errorf("a NodeClaim excluding reserved capacity: %+v %v", spot, err)
	}
}
