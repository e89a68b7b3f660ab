package podevents_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/podevents"
)

// A NodeClaim's pod-event time is written for pods that leave its node
// (finish or are deleted) and for pods made on it, never for pods
// kube-scheduler binds to it: their binding is on the pod, so a scale-up
// costs no NodeClaim write.
func TestPodEventsAreWrittenForPodsThatLeave(t *testing.T) {
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "ip-a"}}
	pending := &corev1.Pod{}
	done := bound.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	deleting := bound.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name          string
		before, after *corev1.Pod
		want          bool
	}{
		{"bound", pending, bound, false},
		{"running on", bound, bound, false},
		{"finished", bound, done, true},
		{"being deleted", bound, deleting, true},
		{"deleted", nil, bound, true},
		{"deleted before it was bound", nil, pending, false},
		{"already finished", done, done, false},
	} {
		if got := podevents.PodLeft(c.before, c.after); got != c.want {
			t.Errorf("%s: PodLeft = %v, want %v", c.name, got, c.want)
		}
	}
	if !podevents.MadeOnNode(bound) || podevents.MadeOnNode(pending) || podevents.MadeOnNode(done) {
		t.Error("MadeOnNode: want true for a pod created with its node only")
	}
}
