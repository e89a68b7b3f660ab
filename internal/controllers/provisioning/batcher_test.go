package provisioning

import (
	"context"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// windowLength triggers the batcher every interval until it closes and
// returns how long the window stayed open.
func windowLength(b *Batcher, interval time.Duration, triggers int) time.Duration {
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		b.Wait(context.Background())
		closed <- time.Since(start)
	}()
	b.Trigger()
	for i := 0; i < triggers; i++ {
		select {
		case d := <-closed:
			return d
		case <-time.After(interval):
			b.Trigger()
		}
	}
	return <-closed
}

// Pods arriving every 50ms keep a 200ms-idle window open; it closes once
// they stop (never before the last of them).
func TestBatcherStaysOpenWhilePodsArrive(t *testing.T) {
	b := NewBatcher(200*time.Millisecond, 5*time.Second, clock.RealClock{})
	d := windowLength(b, 50*time.Millisecond, 10)
	if d < 500*time.Millisecond {
		t.Errorf("the window closed after %s, while pods were still arriving", d)
	}
	if d > 4*time.Second {
		t.Errorf("the window stayed open %s after the pods stopped", d)
	}
}

// A steady stream of pods cannot hold the window open past Max.
func TestBatcherClosesAtMax(t *testing.T) {
	b := NewBatcher(200*time.Millisecond, 600*time.Millisecond, clock.RealClock{})
	d := windowLength(b, 50*time.Millisecond, 200)
	if d < 600*time.Millisecond || d > 5*time.Second {
		t.Errorf("the window lasted %s; it must close at its 600ms maximum", d)
	}
}

func TestBatcherStopsWithContext(t *testing.T) {
	b := NewBatcher(time.Second, time.Minute, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Error("Wait reported a window on a cancelled context")
	}
}
