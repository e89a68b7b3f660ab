package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// AddCapacityReservation adds an On-Demand Capacity Reservation (or a
// Capacity Block). Unset fields default to: the account as owner, state
// active, every instance available, instance match criteria targeted and
// reservation type default.
func (a *Account) AddCapacityReservation(r ec2types.CapacityReservation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.OwnerId == nil {
		r.OwnerId = aws.String(accountID)
	}
	if r.State == "" {
		r.State = ec2types.CapacityReservationStateActive
	}
	if r.AvailableInstanceCount == nil {
		r.AvailableInstanceCount = aws.Int32(aws.ToInt32(r.TotalInstanceCount))
	}
	if r.InstanceMatchCriteria == "" {
		r.InstanceMatchCriteria = ec2types.InstanceMatchCriteriaTargeted
	}
	if r.ReservationType == "" {
		r.ReservationType = ec2types.CapacityReservationTypeDefault
	}
	a.reservations = append(a.reservations, &r)
}

// CapacityReservations returns copies of the account's reservations.
func (a *Account) CapacityReservations() []ec2types.CapacityReservation {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ec2types.CapacityReservation, 0, len(a.reservations))
	for _, r := range a.reservations {
		out = append(out, *r)
	}
	return out
}

// reservationFilters are the filters DescribeCapacityReservations knows.
var reservationFilters = resourceFilters[*ec2types.CapacityReservation]{
	fields: map[string]func(*ec2types.CapacityReservation) string{
		"instance-type":           func(r *ec2types.CapacityReservation) string { return deref(r.InstanceType) },
		"availability-zone":       func(r *ec2types.CapacityReservation) string { return deref(r.AvailabilityZone) },
		"owner-id":                func(r *ec2types.CapacityReservation) string { return deref(r.OwnerId) },
		"state":                   func(r *ec2types.CapacityReservation) string { return string(r.State) },
		"instance-match-criteria": func(r *ec2types.CapacityReservation) string { return string(r.InstanceMatchCriteria) },
		"reservation-type":        func(r *ec2types.CapacityReservation) string { return string(r.ReservationType) },
	},
	tags: func(r *ec2types.CapacityReservation) []ec2types.Tag { return r.Tags },
}

// DescribeCapacityReservations lists reservations by id and filters
// (instance-type, availability-zone, owner-id, state,
// instance-match-criteria, reservation-type, tag:KEY, tag-key).
func (e *EC2) DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, _ ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	if err := e.account.call(ctx, ec2Call("DescribeCapacityReservations")); err != nil {
		return nil, err
	}
	a := e.account
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range in.CapacityReservationIds {
		if a.reservation(id) == nil {
			return nil, apiError("InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id))
		}
	}
	found, err := reservationFilters.filter(a.reservations, in.Filters, func(r *ec2types.CapacityReservation) bool {
		return selected(in.CapacityReservationIds, deref(r.CapacityReservationId))
	})
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeCapacityReservationsOutput{}
	for _, r := range found {
		c := *r
		c.Tags = append([]ec2types.Tag(nil), r.Tags...)
		out.CapacityReservations = append(out.CapacityReservations, c)
	}
	return out, nil
}

func (a *Account) reservation(id string) *ec2types.CapacityReservation {
	for _, r := range a.reservations {
		if deref(r.CapacityReservationId) == id {
			return r
		}
	}
	return nil
}

// reserve finds the reservation an on-demand launch of a type in a zone
// runs in: the one its launch template targets, else an open one with
// room, as EC2 does. It returns the reservation (nil for none) or the
// fleet error code and message.
//
// Interruptible reservations take only launches that ask for interruptible
// reserved capacity (interruptible true), and those launch nowhere else.
func (a *Account) reserve(data ec2types.RequestLaunchTemplateData, instanceType, zone string, interruptible bool) (*ec2types.CapacityReservation, string, string) {
	spec := data.CapacityReservationSpecification
	if id, ok := targetedReservation(spec); ok {
		return a.reserveTargeted(id, instanceType, zone, interruptible)
	}
	if interruptible {
		return nil, "MissingParameter", "An interruptible reserved-capacity launch must target an interruptible capacity reservation"
	}
	if spec != nil && spec.CapacityReservationPreference == ec2types.CapacityReservationPreferenceNone {
		return nil, "", ""
	}
	return a.openReservation(instanceType, zone), "", ""
}

// targetedReservation is the id of the reservation a launch template
// targets, if it does.
func targetedReservation(spec *ec2types.LaunchTemplateCapacityReservationSpecificationRequest) (string, bool) {
	if spec == nil || spec.CapacityReservationTarget == nil || spec.CapacityReservationTarget.CapacityReservationId == nil {
		return "", false
	}
	return *spec.CapacityReservationTarget.CapacityReservationId, true
}

// reserveTargeted takes the reservation a launch template targets, if the
// launch fits it.
func (a *Account) reserveTargeted(id, instanceType, zone string, interruptible bool) (*ec2types.CapacityReservation, string, string) {
	r := a.reservation(id)
	if r == nil {
		return nil, "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
	}
	if code, msg := targetRefusal(r, id, instanceType, zone); code != "" {
		return nil, code, msg
	}
	if code, msg := interruptibleRefusal(r, id, interruptible); code != "" {
		return nil, code, msg
	}
	return r, "", ""
}

// targetRefusal is why a targeted reservation cannot take a launch of a
// type in a zone: it is not active, is for another type or zone, or is
// full. Empty when it can.
func targetRefusal(r *ec2types.CapacityReservation, id, instanceType, zone string) (string, string) {
	switch {
	case r.State != ec2types.CapacityReservationStateActive:
		return "InvalidCapacityReservationId.Malformed", fmt.Sprintf("The capacity reservation '%s' is %s, not active", id, r.State)
	case deref(r.InstanceType) != instanceType || deref(r.AvailabilityZone) != zone:
		return "InvalidParameterCombination", fmt.Sprintf("The capacity reservation '%s' is for %s in %s, not %s in %s",
			id, deref(r.InstanceType), deref(r.AvailabilityZone), instanceType, zone)
	case aws.ToInt32(r.AvailableInstanceCount) <= 0:
		return "ReservationCapacityExceeded", fmt.Sprintf("The requested reservation '%s' does not have sufficient compatible and available capacity for this request.", id)
	}
	return "", ""
}

// interruptibleRefusal is why a targeted reservation refuses a launch
// that does or does not ask for interruptible capacity: the two must
// agree. Empty when they do.
func interruptibleRefusal(r *ec2types.CapacityReservation, id string, interruptible bool) (string, string) {
	switch {
	case aws.ToBool(r.Interruptible) && !interruptible:
		return "InvalidParameterCombination", fmt.Sprintf("The capacity reservation '%s' is interruptible: launch into it with target capacity type reserved-capacity and reservation type interruptible-capacity-reservation", id)
	case !aws.ToBool(r.Interruptible) && interruptible:
		return "InvalidParameterCombination", fmt.Sprintf("The capacity reservation '%s' is not interruptible", id)
	}
	return "", ""
}

// openReservation is the first open reservation with room for a launch of
// a type in a zone; nil when there is none.
func (a *Account) openReservation(instanceType, zone string) *ec2types.CapacityReservation {
	for _, r := range a.reservations {
		if takesOpenLaunch(r, instanceType, zone) {
			return r
		}
	}
	return nil
}

// takesOpenLaunch reports an active, open, uninterruptible reservation
// with room for a launch of a type in a zone.
func takesOpenLaunch(r *ec2types.CapacityReservation, instanceType, zone string) bool {
	return r.InstanceMatchCriteria == ec2types.InstanceMatchCriteriaOpen && r.State == ec2types.CapacityReservationStateActive && !aws.ToBool(r.Interruptible) &&
		deref(r.InstanceType) == instanceType && deref(r.AvailabilityZone) == zone && aws.ToInt32(r.AvailableInstanceCount) > 0
}

// release gives a terminated instance's place back to its reservation.
func (a *Account) release(inst *Instance) {
	if inst.CapacityReservationId == nil {
		return
	}
	if r := a.reservation(*inst.CapacityReservationId); r != nil && aws.ToInt32(r.AvailableInstanceCount) < aws.ToInt32(r.TotalInstanceCount) {
		r.AvailableInstanceCount = aws.Int32(aws.ToInt32(r.AvailableInstanceCount) + 1)
	}
}
