package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

func TestReservedCapacity(t *testing.T) {
	sim, snap := harness.Run(t, "reserved-capacity", nil)
	if !snap.Done() {
		t.Fatalf("not every pod runs on a Ready NodeClaim: %+v", snap)
	}
	ctx := context.Background()
	nc := harness.NodeClass(t, sim, "default")
	if len(nc.Status.CapacityReservations) != 1 || nc.Status.CapacityReservations[0].ID != simaws.SeedReservationID {
		t.Errorf("EC2NodeClass status capacityReservations: %+v", nc.Status.CapacityReservations)
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	byType := map[string]int{}
	for _, c := range claims.Items {
		ct := c.Labels[v1.LabelCapacityType]
		byType[ct]++
		if ct != v1.CapacityTypeReserved {
			continue
		}
		node := &corev1.Node{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		if node.Labels[awsv1.LabelCapacityReservationID] != simaws.SeedReservationID || node.Labels[corev1.LabelInstanceTypeStable] != "m5.large" ||
			node.Labels[corev1.LabelTopologyZone] != "us-east-1a" || node.Labels[v1.LabelCapacityType] != v1.CapacityTypeReserved {
			t.Errorf("reserved node %s has labels %v", node.Name, node.Labels)
		}
	}
	// Both reserved instances are used, and no more; the other pods run
	// on spot.
	if byType[v1.CapacityTypeReserved] != 2 || byType[v1.CapacityTypeSpot] == 0 || byType[v1.CapacityTypeOnDemand] != 0 {
		t.Errorf("NodeClaims by capacity type %v, want 2 reserved and the rest spot", byType)
	}
	for _, r := range sim.Account.CapacityReservations() {
		if aws.ToString(r.CapacityReservationId) == simaws.SeedReservationID && aws.ToInt32(r.AvailableInstanceCount) != 0 {
			t.Errorf("the reservation still has %d instances available", aws.ToInt32(r.AvailableInstanceCount))
		}
	}
}

// The healthy scenario still settles when the simulated AWS APIs throttle
// one call in four and answer slowly: nodewright's calls are retried.
func TestHealthyUnderThrottling(t *testing.T) {
	sim, snap := harness.Run(t, "healthy", func(o *runner.Options) {
		o.Faults.ThrottleEvery, o.Faults.Latency = 4, 20*time.Millisecond
	})
	if !snap.Done() {
		t.Fatalf("not every pod runs on a Ready NodeClaim under throttling: %+v", snap)
	}
	// A call throttled on every attempt fails and its controller tries
	// again later: with many NodeClaims launching at once that happens.
	if st := sim.Account.Stats(); st.Throttled == 0 || st.Retries == 0 {
		t.Errorf("stats %+v: want throttled calls, retried", st)
	}
}

// Without the Pricing API (a role without pricing:GetProducts) the healthy
// scenario still runs to the end, priced by the built-in table, and the
// EC2NodeClass and the summary say so.
func TestHealthyWithoutThePricingAPI(t *testing.T) {
	sim, snap := harness.Run(t, "healthy", func(o *runner.Options) { o.Faults.PricingDenied = true })
	if !snap.Done() {
		t.Fatalf("not every pod runs on a Ready NodeClaim without the Pricing API: %+v", snap.Problems)
	}
	c := meta.FindStatusCondition(harness.NodeClass(t, sim, "default").Status.Conditions, awsv1.ConditionPricesCurrent)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "BuiltInPrices" || !strings.Contains(c.Message, "pricing:GetProducts") {
		t.Errorf("PricesCurrent: %+v", c)
	}
	if !harness.ProblemsMention(snap, "PricesCurrent=False BuiltInPrices", "built-in table of us-east-1") {
		t.Errorf("the summary does not say the prices are the built-in ones: %v", snap.Problems)
	}
}
