// Package interruption consumes the SQS queue EventBridge rules feed with
// EC2 and AWS Health events, and acts on the instances nodewright
// launched before AWS takes them: a spot interruption warning, a
// capacity reservation interruption or a scheduled change replaces the
// node while it still runs (its pods get room at once, the drain honours
// PodDisruptionBudgets until the instance goes), and marks the offering
// unavailable so the next launch goes elsewhere; an instance stopping or
// terminating deletes its NodeClaim; a rebalance recommendation is
// recorded, and acted on when configured.
package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Kind is what a message reports.
type Kind string

// The kinds of message, as metrics and logs name them.
const (
	SpotInterruption                Kind = "spot_interruption"
	RebalanceRecommendation         Kind = "rebalance_recommendation"
	ScheduledChange                 Kind = "scheduled_change"
	CapacityReservationInterruption Kind = "capacity_reservation_interruption"
	InstanceStopping                Kind = "instance_stopping"
	InstanceTerminating             Kind = "instance_terminating"
	// StateChangeIgnored: an instance entering a state that needs
	// nothing (pending, running).
	StateChangeIgnored Kind = "state_change_ignored"
	// Unknown and Malformed are messages nodewright cannot read: they
	// are logged and deleted.
	Unknown   Kind = "unknown"
	Malformed Kind = "malformed"
)

// Notice is how long EC2 gives an instance between a spot or capacity
// reservation interruption warning and taking it.
const Notice = 2 * time.Minute

// Message is an event about instances, read.
type Message struct {
	Kind        Kind
	InstanceIDs []string
	// At is when the event happened; Deadline when the instance goes
	// (zero: it does not, as for a rebalance recommendation).
	At, Deadline time.Time
	// Detail says more, for events: the state entered, or the AWS Health
	// event's type and description.
	Detail string
}

// ErrUnknown is a well-formed event nodewright has no use for.
var ErrUnknown = errors.New("not an event nodewright handles")

// envelope is an EventBridge event.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	EventDescription  []struct {
		LatestDescription string `json:"latestDescription"`
	} `json:"eventDescription"`
	AffectedEntities []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse reads an SQS message body: an EventBridge event. A body that is
// not one is an error; an event of another kind wraps ErrUnknown.
func Parse(body string) (Message, error) {
	e, err := readEnvelope(body)
	if err != nil {
		return Message{Kind: Malformed}, err
	}
	m := Message{At: e.Time}
	switch {
	case e.Source == "aws.health" && e.DetailType == "AWS Health Event":
		return parseHealth(m, e.Detail)
	case e.Source != "aws.ec2":
		return Message{Kind: Unknown}, fmt.Errorf("%s event %q: %w", e.Source, e.DetailType, ErrUnknown)
	}
	return parseEC2(m, e)
}

// readEnvelope reads the EventBridge event a body holds: it must have a
// source, a detail-type and a detail.
func readEnvelope(body string) (envelope, error) {
	var e envelope
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return envelope{}, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if e.Source == "" || e.DetailType == "" || len(e.Detail) == 0 {
		return envelope{}, errors.New("not an EventBridge event: no source, detail-type or detail")
	}
	return e, nil
}

// parseEC2 reads an EC2 event about one instance: an interruption warning,
// a rebalance recommendation or a change of state.
func parseEC2(m Message, e envelope) (Message, error) {
	var d ec2Detail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return Message{Kind: Malformed}, fmt.Errorf("%q event: reading its detail: %w", e.DetailType, err)
	}
	if d.InstanceID == "" {
		return Message{Kind: Malformed}, fmt.Errorf("%q event without an instance-id", e.DetailType)
	}
	m.InstanceIDs = []string{d.InstanceID}
	switch e.DetailType {
	case "EC2 Spot Instance Interruption Warning":
		m.Kind, m.Deadline = SpotInterruption, e.Time.Add(Notice)
	case "EC2 Capacity Reservation Instance Interruption Warning":
		m.Kind, m.Deadline = CapacityReservationInterruption, e.Time.Add(Notice)
	case "EC2 Instance Rebalance Recommendation":
		m.Kind = RebalanceRecommendation
	case "EC2 Instance State-change Notification":
		m.Detail = d.State
		m.Kind, m.Deadline = kindOfState(d.State, e.Time)
	default:
		return Message{Kind: Unknown}, fmt.Errorf("aws.ec2 event %q: %w", e.DetailType, ErrUnknown)
	}
	return m, nil
}

// kindOfState is the kind of an instance entering a state and, for one
// stopping or terminating, its deadline: the time of the event.
func kindOfState(state string, at time.Time) (Kind, time.Time) {
	switch state {
	case "stopping", "stopped":
		return InstanceStopping, at
	case "shutting-down", "terminated":
		return InstanceTerminating, at
	}
	return StateChangeIgnored, time.Time{}
}

// parseHealth reads an AWS Health event: EC2 scheduled changes (instance
// retirement, maintenance) are acted on; other Health events are not
// nodewright's.
func parseHealth(m Message, raw json.RawMessage) (Message, error) {
	var d healthDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		return Message{Kind: Malformed}, fmt.Errorf("AWS Health event: reading its detail: %w", err)
	}
	if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
		return Message{Kind: Unknown}, fmt.Errorf("AWS Health %s event of category %q: %w", d.Service, d.EventTypeCategory, ErrUnknown)
	}
	m.Kind, m.Detail = ScheduledChange, d.summary()
	m.InstanceIDs = d.instances()
	if len(m.InstanceIDs) == 0 {
		return Message{Kind: Malformed}, fmt.Errorf("AWS Health event %s affects no instance", d.EventTypeCode)
	}
	m.Deadline = healthTime(d.StartTime)
	return m, nil
}

// summary is the event's type, with its latest description when it has
// one.
func (d healthDetail) summary() string {
	if len(d.EventDescription) > 0 && d.EventDescription[0].LatestDescription != "" {
		return d.EventTypeCode + ": " + d.EventDescription[0].LatestDescription
	}
	return d.EventTypeCode
}

// instances are the instances the event affects.
func (d healthDetail) instances() []string {
	var out []string
	for _, a := range d.AffectedEntities {
		if a.EntityValue != "" {
			out = append(out, a.EntityValue)
		}
	}
	return out
}

// healthTime reads a time as AWS Health writes it, RFC 1123 ("Sat, 05 Jun
// 2021 11:30:00 GMT"), or RFC 3339; zero when it is neither.
func healthTime(s string) time.Time {
	for _, layout := range []string{http.TimeFormat, time.RFC1123, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
