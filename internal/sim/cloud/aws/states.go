package aws

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Instance states with EC2's codes.
var (
	statePending      = ec2types.InstanceState{Name: ec2types.InstanceStateNamePending, Code: aws.Int32(0)}
	stateRunning      = ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning, Code: aws.Int32(16)}
	stateShuttingDown = ec2types.InstanceState{Name: ec2types.InstanceStateNameShuttingDown, Code: aws.Int32(32)}
	stateTerminated   = ec2types.InstanceState{Name: ec2types.InstanceStateNameTerminated, Code: aws.Int32(48)}
)

// SetTransitions sets how long instances stay pending after launch and
// shutting-down after termination (zero: they move on at once).
func (a *Account) SetTransitions(pending, shuttingDown time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pendingFor, a.shuttingDownFor = pending, shuttingDown
}

// setState moves an instance to a state now.
func (a *Account) setState(inst *Instance, st ec2types.InstanceState) {
	s := st
	inst.State = &s
	inst.stateSince = a.clock.Now()
	if e, ok := stateChange(inst, inst.stateSince); ok {
		a.sendEvent(e)
	}
}

// advance moves instances on as time passes: pending → running,
// interrupted → shutting-down once their notice runs out, shutting-down
// → terminated (which gives a reservation its place back).
// The caller holds the lock.
func (a *Account) advance() {
	now := a.clock.Now()
	for _, inst := range a.instances {
		switch inst.State.Name {
		case ec2types.InstanceStateNamePending, ec2types.InstanceStateNameRunning:
			a.advanceLive(inst, now)
		case ec2types.InstanceStateNameShuttingDown:
			if now.Sub(inst.stateSince) >= a.shuttingDownFor {
				a.setState(inst, stateTerminated)
				a.release(inst)
			}
		}
	}
}

// advanceLive moves a pending or running instance on: it shuts down once
// its interruption notice runs out, and a pending one runs once it has
// been pending long enough.
func (a *Account) advanceLive(inst *Instance, now time.Time) {
	if !inst.reclaimAt.IsZero() && !now.Before(inst.reclaimAt) {
		inst.StateReason = reclaimReason(inst)
		a.setState(inst, stateShuttingDown)
		return
	}
	if inst.State.Name == ec2types.InstanceStateNamePending && now.Sub(inst.stateSince) >= a.pendingFor {
		a.setState(inst, stateRunning)
	}
}

// reclaimReason is the state reason of an instance EC2 reclaims: a spot
// interruption, or a retirement for any other instance.
func reclaimReason(inst *Instance) *ec2types.StateReason {
	if inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		return &ec2types.StateReason{Code: aws.String("Server.ScheduledStop"), Message: aws.String("Server.ScheduledStop: the instance was retired")}
	}
	return &ec2types.StateReason{Code: aws.String("Server.SpotInstanceTermination"),
		Message: aws.String("Server.SpotInstanceTermination: the instance was interrupted")}
}
