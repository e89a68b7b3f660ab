package aws

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// Interruption is an event AWS announces for an instance before it acts.
type Interruption string

const (
	// SpotInterruption means EC2 reclaims a spot instance after the notice.
	SpotInterruption Interruption = "spot-interruption"
	// RebalanceRecommendation means a spot instance is at elevated risk of
	// interruption; nothing happens to it.
	RebalanceRecommendation Interruption = "rebalance-recommendation"
	// ScheduledChange means an AWS Health scheduled change retires the
	// instance at the event's start, after the notice.
	ScheduledChange Interruption = "scheduled-change"
	// CapacityReservationInterruption means the instance's capacity
	// reservation is reclaimed after the notice.
	CapacityReservationInterruption Interruption = "capacity-reservation-interruption"
)

// Interruptions are the kinds Interrupt takes.
func Interruptions() []Interruption {
	return []Interruption{SpotInterruption, RebalanceRecommendation, ScheduledChange, CapacityReservationInterruption}
}

// SetEventQueue makes the account deliver its EC2 and AWS Health events
// to an SQS queue (created if needed), as the EventBridge rules of an
// interruption queue do: interruption warnings, rebalance
// recommendations, scheduled changes, and instances stopping or
// terminating. notice is how long after a warning the instance is
// reclaimed (two minutes on AWS).
func (a *Account) SetEventQueue(name string, notice time.Duration) {
	a.CreateQueue(name)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.eventQueue, a.notice = name, notice
}

// Interrupt announces an interruption of a running or pending instance:
// the event reaches the event queue at once, and (but for a rebalance
// recommendation) the instance shuts down when the notice runs out.
func (a *Account) Interrupt(id string, kind Interruption) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advance()
	inst := a.instance(id)
	if inst == nil {
		return fmt.Errorf("no instance %s in the simulated account", id)
	}
	if err := checkInterruption(id, inst, kind); err != nil {
		return err
	}
	now := a.clock.Now()
	reclaim := now.Add(a.notice)
	if kind != RebalanceRecommendation {
		inst.reclaimAt = reclaim
	}
	a.sendEvent(eventFor(inst, kind, now, reclaim))
	return nil
}

// checkInterruption checks that the instance can get an interruption of
// this kind: it must be pending or running, spot for spot interruptions
// and rebalance recommendations, and in a capacity reservation for the
// reservation's interruptions.
func checkInterruption(id string, inst *Instance, kind Interruption) error {
	if st := inst.State.Name; st != ec2types.InstanceStateNamePending && st != ec2types.InstanceStateNameRunning {
		return fmt.Errorf("instance %s is %s: only a pending or running instance can be interrupted", id, st)
	}
	switch kind {
	case SpotInterruption, RebalanceRecommendation:
		if inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
			return fmt.Errorf("instance %s is not a spot instance: only spot instances get %s", id, kind)
		}
	case CapacityReservationInterruption:
		if inst.CapacityReservationId == nil {
			return fmt.Errorf("instance %s is not in a capacity reservation", id)
		}
	case ScheduledChange:
	default:
		return fmt.Errorf("unknown interruption %q: want one of %v", kind, Interruptions())
	}
	return nil
}

// ReclaimAt is when an interrupted instance shuts down (zero when it is
// not interrupted).
func (i *Instance) ReclaimAt() time.Time { return i.reclaimAt }

// event is an EventBridge event as an SQS target receives it.
type event struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// instanceAction is the detail of EC2's interruption warnings and
// rebalance recommendations.
type instanceAction struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action,omitempty"`
}

// healthEvent is the detail of an AWS Health event.
type healthEvent struct {
	EventArn          string             `json:"eventArn"`
	Service           string             `json:"service"`
	EventTypeCode     string             `json:"eventTypeCode"`
	EventTypeCategory string             `json:"eventTypeCategory"`
	StartTime         string             `json:"startTime"`
	EndTime           string             `json:"endTime"`
	EventDescription  []healthDesc       `json:"eventDescription"`
	AffectedEntities  []healthAffectedBy `json:"affectedEntities"`
}

type healthDesc struct {
	Language          string `json:"language"`
	LatestDescription string `json:"latestDescription"`
}

type healthAffectedBy struct {
	EntityValue string `json:"entityValue"`
}

func instanceARN(inst *Instance) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", account.Region, account.AccountID, aws.ToString(inst.InstanceId))
}

func eventFor(inst *Instance, kind Interruption, now, reclaim time.Time) event {
	id := aws.ToString(inst.InstanceId)
	e := event{Version: "0", Source: "aws.ec2", Account: account.AccountID, Region: account.Region, Time: now.UTC().Format(time.RFC3339),
		Resources: []string{instanceARN(inst)}}
	switch kind {
	case SpotInterruption:
		e.DetailType, e.Detail = "EC2 Spot Instance Interruption Warning", instanceAction{InstanceID: id, InstanceAction: "terminate"}
	case RebalanceRecommendation:
		e.DetailType, e.Detail = "EC2 Instance Rebalance Recommendation", instanceAction{InstanceID: id}
	case CapacityReservationInterruption:
		e.DetailType, e.Detail = "EC2 Capacity Reservation Instance Interruption Warning", instanceAction{InstanceID: id, InstanceAction: "terminate"}
	case ScheduledChange:
		e.Source, e.DetailType = "aws.health", "AWS Health Event"
		code := "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
		e.Detail = healthEvent{
			EventArn: fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%s", account.Region, code, code, id), Service: "EC2",
			EventTypeCode: code, EventTypeCategory: "scheduledChange",
			StartTime: reclaim.UTC().Format(http.TimeFormat), EndTime: reclaim.Add(time.Hour).UTC().Format(http.TimeFormat),
			EventDescription: []healthDesc{{Language: "en_US", LatestDescription: "EC2 has detected degradation of the underlying hardware hosting your instance; it is scheduled for retirement."}},
			AffectedEntities: []healthAffectedBy{{EntityValue: id}},
		}
	}
	return e
}

// stateChange is the event of an instance entering a state; only the
// states an interruption queue's rule selects are sent.
func stateChange(inst *Instance, now time.Time) (event, bool) {
	switch inst.State.Name {
	case ec2types.InstanceStateNameStopping, ec2types.InstanceStateNameStopped, ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
	default:
		return event{}, false
	}
	return event{Version: "0", Source: "aws.ec2", DetailType: "EC2 Instance State-change Notification", Account: account.AccountID,
		Region: account.Region, Time: now.UTC().Format(time.RFC3339), Resources: []string{instanceARN(inst)},
		Detail: struct {
			InstanceID string `json:"instance-id"`
			State      string `json:"state"`
		}{aws.ToString(inst.InstanceId), string(inst.State.Name)}}, true
}

// sendEvent delivers an event to the event queue, if there is one. The
// caller holds a.mu.
func (a *Account) sendEvent(e event) {
	if a.eventQueue == "" {
		return
	}
	a.events++
	e.ID = fmt.Sprintf("%08x-5e1d-4000-8000-%012x", a.events, a.events)
	body, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("encoding an EventBridge event: %v", err)) // fixed shapes: cannot fail
	}
	a.queues.send(a.eventQueue, string(body), a.clock.Now())
}
