package nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// expiringWithin is how close to its end a reservation is called expiring.
const expiringWithin = 10 * time.Minute

// Reservation is a resolved capacity reservation and how many more
// instances it can take now.
type Reservation struct {
	awsv1.CapacityReservation
	Available int
}

// CapacityReservations resolves capacityReservationSelectorTerms (ORed) to
// the active reservations they select, sorted by id. A term naming an id
// that does not exist selects nothing.
func (r *Resolver) CapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass, now time.Time) ([]Reservation, error) {
	if len(nc.Spec.CapacityReservationSelectorTerms) == 0 {
		return nil, nil
	}
	seen := map[string]Reservation{}
	for _, term := range nc.Spec.CapacityReservationSelectorTerms {
		if err := r.addReservations(ctx, reservationQuery(term), now, seen); err != nil {
			return nil, err
		}
	}
	out := make([]Reservation, 0, len(seen))
	for _, res := range seen {
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// reservationQuery asks for the active reservations a selector term
// selects.
func reservationQuery(term awsv1.CapacityReservationSelectorTerm) *ec2.DescribeCapacityReservationsInput {
	in := &ec2.DescribeCapacityReservationsInput{Filters: append(tagFilters(term.Tags),
		ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}})}
	if term.ID != "" {
		in.CapacityReservationIds = []string{term.ID}
	}
	if term.OwnerID != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{term.OwnerID}})
	}
	if term.InstanceMatchCriteria != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{term.InstanceMatchCriteria}})
	}
	return in
}

// addReservations adds the reservations a query finds to seen, by id; a
// reservation id that does not exist finds nothing.
func (r *Resolver) addReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, now time.Time, seen map[string]Reservation) error {
	pages := ec2.NewDescribeCapacityReservationsPaginator(r.EC2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("describing capacity reservations: %w", err)
		}
		for _, cr := range page.CapacityReservations {
			res := reservationOf(cr, now)
			seen[res.ID] = res
		}
	}
	return nil
}

func reservationOf(cr ec2types.CapacityReservation, now time.Time) Reservation {
	res := Reservation{
		CapacityReservation: awsv1.CapacityReservation{
			ID: aws.ToString(cr.CapacityReservationId), InstanceType: aws.ToString(cr.InstanceType),
			AvailabilityZone: aws.ToString(cr.AvailabilityZone), OwnerID: aws.ToString(cr.OwnerId),
			InstanceMatchCriteria: string(cr.InstanceMatchCriteria), ReservationType: string(cr.ReservationType), State: "active",
			Interruptible: aws.ToBool(cr.Interruptible),
		},
		Available: int(aws.ToInt32(cr.AvailableInstanceCount)),
	}
	if res.ReservationType == "" {
		res.ReservationType = string(ec2types.CapacityReservationTypeDefault)
	}
	if cr.EndDate != nil {
		end := metav1.NewTime(*cr.EndDate)
		res.EndTime = &end
		if end.Sub(now) <= expiringWithin {
			// Nothing new is launched into a reservation about to end.
			res.State, res.Available = "expiring", 0
		}
	}
	return res
}

// describeReservationTerms summarises capacityReservationSelectorTerms for
// messages.
func describeReservationTerms(terms []awsv1.CapacityReservationSelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		var p []string
		if t.ID != "" {
			p = append(p, "id "+t.ID)
		}
		if len(t.Tags) > 0 {
			p = append(p, describeTags(t.Tags))
		}
		if t.OwnerID != "" {
			p = append(p, "ownerID "+t.OwnerID)
		}
		if t.InstanceMatchCriteria != "" {
			p = append(p, "instanceMatchCriteria "+t.InstanceMatchCriteria)
		}
		parts = append(parts, strings.Join(p, " "))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}
