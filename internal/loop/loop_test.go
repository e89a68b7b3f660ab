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

// After a round that took half the interval, Paced waits four times the
// round's length (two intervals) before the next.
func TestPacedRestsAfterALongRound(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := make(chan time.Time, 10)
	first := true
	go loop.Paced(ctx, clk, time.Minute, 4, func(context.Context) {
		at <- clk.Now()
		if first {
			first = false
			clk.Step(30 * time.Second) // the first round takes 30 s
		}
	})
	var runs []time.Time
	for step := 0; len(runs) < 2 && step < 10_000; step++ {
		select {
		case t := <-at:
			runs = append(runs, t)
		case <-time.After(time.Millisecond):
			clk.Step(5 * time.Second)
		}
	}
	if len(runs) < 2 {
		t.Fatalf("%d rounds, want 2", len(runs))
	}
	if gap := runs[1].Sub(runs[0]); gap < 150*time.Second {
		t.Errorf("the round after a 30 s one started %v after it, want at least 2m30s (30 s, then 2 minutes' rest)", gap)
	}
}
