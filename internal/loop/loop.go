// Package loop runs the controllers' periodic work on the injected
// clock, so tests step a fake clock instead of sleeping.
package loop

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Every calls f every interval on clk until ctx ends; with now, once at
// the start as well. f's errors are f's to report.
func Every(ctx context.Context, clk clock.WithTicker, interval time.Duration, now bool, f func(context.Context)) {
	ticker := clk.NewTicker(interval)
	defer ticker.Stop()
	if now {
		f(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			f(ctx)
		}
	}
}

// Paced is Every, except that after a round that took longer than a
// rest-th of the interval it waits rest times the round's length before
// the next: work that grows with the cluster then takes at most about a
// rest-th of a core, instead of running back to back.
func Paced(ctx context.Context, clk clock.WithTicker, interval time.Duration, rest int, f func(context.Context)) {
	Every(ctx, clk, interval, true, func(ctx context.Context) {
		start := clk.Now()
		f(ctx)
		if pause := time.Duration(rest) * clk.Since(start); pause > interval {
			Wait(ctx, clk, pause)
		}
	})
}

// Wait waits d on clk; false when ctx ended first.
func Wait(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-clk.After(d):
		return true
	}
}
