package provisioning

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// Every pod of a small scale-up is told where the plan put it; in a large
// one the events past the burst come at NominatedEventsPerSecond.
func TestNominatedEventsAreLimited(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	rec := record.NewFakeRecorder(10 * NominatedEventsBurst)
	p := &Provisioner{Recorder: rec, Clock: clk}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	tell := func(n int) int {
		// NodeClaims are created, and their pods told, in parallel.
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { p.nominatedEvent(pod, "pod should schedule on NodeClaim %s", "general-x") })
		}
		wg.Wait()
		told := len(rec.Events)
		for range told {
			<-rec.Events
		}
		return told
	}
	if got := tell(NominatedEventsBurst); got != NominatedEventsBurst {
		t.Fatalf("%d events for a scale-up of %d pods, want one per pod", got, NominatedEventsBurst)
	}
	if got := tell(5 * NominatedEventsBurst); got != 0 {
		t.Errorf("%d more events right after the burst, want none", got)
	}
	clk.Step(2 * time.Second)
	if got := tell(5 * NominatedEventsBurst); got != 2*NominatedEventsPerSecond {
		t.Errorf("%d events two seconds later, want %d", got, 2*NominatedEventsPerSecond)
	}
}
