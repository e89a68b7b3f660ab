package nodepool_test

import (
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

func TestBackoffDoublesUpToAnHour(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: time.Minute, 2: 2 * time.Minute, 4: 8 * time.Minute, 7: time.Hour, 30: time.Hour} {
		if got := nodepoolhealth.Backoff(failures); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

// The registration record backs a NodePool off after timeouts, for the
// doubling time from the latest, and forgets it all when a node registers.
func TestRegistrationsBackOff(t *testing.T) {
	r := nodepoolhealth.NewRegistrations()
	last := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	if !r.TimedOut("a", "x", last.Add(-time.Hour), "cause") {
		t.Error("a first timeout changes nothing")
	}
	r.TimedOut("a", "y", last.Add(-time.Minute), "cause")
	r.TimedOut("a", "z", last, "cause")
	// A NodeClaim reconciled again before its deletion is seen is one
	// timeout, not two.
	if r.TimedOut("a", "z", last.Add(time.Second), "cause") {
		t.Error("the same NodeClaim's timeout counted twice")
	}
	b, ok := r.Backoffs()["a"]
	if !ok || b.Failures != 3 || !b.Until.Equal(last.Add(4*time.Minute)) {
		t.Errorf("after 3 timeouts: %+v, %v", b, ok)
	}
	r.Restore("a", 1, last.Add(-time.Hour), "older")
	if b := r.Backoffs()["a"]; b.Failures != 3 {
		t.Errorf("a backoff from status replaced the one recorded since: %+v", b)
	}
	if !r.Registered("a") {
		t.Error("a registration after timeouts changes nothing")
	}
	if r.Registered("a") {
		t.Error("a second registration in a row changes something")
	}
	if !r.TimedOut("a", "z", last, "cause") || r.Backoffs()["a"].Failures != 1 {
		t.Errorf("a NodeClaim timing out after a registration starts a new count: %+v", r.Backoffs()["a"])
	}
	r.Registered("a")
	if b, ok := r.Backoffs()["a"]; !ok || !b.Until.IsZero() {
		t.Errorf("after a registration: %+v %v, want known with no backoff", b, ok)
	}
	r.Restore("b", 2, last, "from status")
	if b := r.Backoffs()["b"]; b.Failures != 2 || !b.Until.Equal(last.Add(2*time.Minute)) {
		t.Errorf("restored: %+v", b)
	}
}
