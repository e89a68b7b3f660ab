// Package provisioning turns pending pods into NodeClaims: it batches pod
// events, runs the scheduling engine over the cluster's state and creates
// the NodeClaims the plan asks for.
package provisioning

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Batcher groups triggers into windows: a window opens at the first
// trigger, each further trigger keeps it open for Idle more, and it closes
// after Max at the latest.
type Batcher struct {
	Idle, Max time.Duration
	Clock     clock.WithTicker
	trigger   chan struct{}
}

// NewBatcher returns a batcher.
func NewBatcher(idle, maxWait time.Duration, c clock.WithTicker) *Batcher {
	return &Batcher{Idle: idle, Max: maxWait, Clock: c, trigger: make(chan struct{}, 1)}
}

// Trigger notes that something changed; it never blocks.
func (b *Batcher) Trigger() {
	select {
	case b.trigger <- struct{}{}:
	default:
	}
}

// Wait blocks until a window closes (true) or ctx ends (false).
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-b.trigger:
	case <-ctx.Done():
		return false
	}
	deadline := b.Clock.NewTimer(b.Max)
	defer deadline.Stop()
	idle := b.Clock.NewTimer(b.Idle)
	defer idle.Stop()
	for {
		select {
		case <-b.trigger:
			idle.Stop()
			idle = b.Clock.NewTimer(b.Idle)
		case <-idle.C():
			return true
		case <-deadline.C():
			return true
		case <-ctx.Done():
			return false
		}
	}
}
