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

// Wait waits d on clk; false when ctx ended first.
func Wait(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-clk.After(d):
		return true
	}
}
