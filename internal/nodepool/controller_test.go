package nodepool_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/nodepool"
)

func TestBackoffDoublesUpToAnHour(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: time.Minute, 2: 2 * time.Minute, 4: 8 * time.Minute, 7: time.Hour, 30: time.Hour} {
		if got := nodepool.Backoff(failures); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
	last := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		nodepool.AnnotationRegistrationFailures: "3", nodepool.AnnotationLastRegistrationFailure: last.Format(time.RFC3339),
	}}}
	if until, n := nodepool.BackedOffUntil(np); n != 3 || !until.Equal(last.Add(4*time.Minute)) {
		t.Errorf("backed off until %s after %d failures", until, n)
	}
	if until, n := nodepool.BackedOffUntil(&v1.NodePool{}); n != 0 || !until.IsZero() {
		t.Errorf("a NodePool without failures is backed off until %s", until)
	}
}
