package runner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod's latest reason is the one said last: by lastTimestamp, and
// within one second by the order the events were written.
func TestNewerEvent(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	event := func(rv string, last metav1.Time) corev1.Event {
		return corev1.Event{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}, LastTimestamp: last}
	}
	later := metav1.NewTime(at.Add(time.Second))
	for name, tc := range map[string]struct {
		a, b corev1.Event
		want bool
	}{
		"a second later":                       {event("10", later), event("12", at), true},
		"a second earlier":                     {event("12", at), event("10", later), false},
		"the same second, written after":       {event("12", at), event("10", at), true},
		"the same second, written before":      {event("10", at), event("12", at), false},
		"the same second, the same write":      {event("10", at), event("10", at), false},
		"the same second, no ordered versions": {event("x", at), event("10", at), false},
	} {
		if got := Newer(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Newer = %v, want %v", name, got, tc.want)
		}
	}
}
