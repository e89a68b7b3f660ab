package nodepool_test

import (
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/nodepool"
)

func TestBackoffDoublesUpToAnHour(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: time.Minute, 2: 2 * time.Minute, 4: 8 * time.Minute, 7: time.Hour, 30: time.Hour} {
		if got := nodepool.Backoff(failures); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

// The registration record backs a NodePool off after timeouts, for the
// doubling time from the latest, and forgets it all when a node registers.
func TestRegistrationsBackOff(t *testing.T) {
	r := nodepool.NewRegistrations()
	last := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	if !r.Record("a", last.Add(-time.Hour), false, "cause") {
		t.Error("a first timeout changes nothing")
	}
	r.Record("a", last.Add(-time.Minute), false, "cause")
	r.Record("a", last, false, "cause")
	b, ok := r.Backoffs(last.Add(time.Minute))["a"]
	if !ok || b.Failures != 3 || !b.Until.Equal(last.Add(4*time.Minute)) {
		t.Errorf("after 3 timeouts: %+v, %v", b, ok)
	}
	if _, ok := r.Backoffs(last.Add(4 * time.Minute))["a"]; ok {
		t.Error("still backed off when the backoff has run out")
	}
	if !r.Record("a", last, true, "") {
		t.Error("a registration after timeouts changes nothing")
	}
	if r.Record("a", last, true, "") {
		t.Error("a second registration in a row changes something")
	}
	if bs := r.Backoffs(last); len(bs) != 0 {
		t.Errorf("backed off after a registration: %+v", bs)
	}
}
