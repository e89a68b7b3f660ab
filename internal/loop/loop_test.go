package loop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/internal/loop"
)

// The work runs when the clock reaches each interval, and only then.
func TestEveryFollowsTheClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	done := make(chan struct{})
	go func() {
		loop.Every(ctx, clk, time.Minute, true, func(context.Context) { runs.Add(1) })
		close(done)
	}()
	for runs.Load() != 1 || !clk.HasWaiters() {
		time.Sleep(time.Millisecond) // until the loop waits on the clock
	}
	clk.Step(59 * time.Second)
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs before the interval passed, want 1 (at the start)", n)
	}
	clk.Step(time.Second)
	for runs.Load() != 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}

// Wait returns when the clock has moved d, or false when ctx ends.
func TestWait(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	got := make(chan bool)
	go func() { got <- loop.Wait(context.Background(), clk, time.Minute) }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Minute)
	if !<-got {
		t.Error("Wait returned false after the clock moved")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if loop.Wait(ctx, clk, time.Minute) {
		t.Error("Wait returned true for an ended context")
	}
}
