package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// A CapacityBuffer of a Deployment keeps room for 4 more of its pods:
// nodewright resolves it (its own PodTemplate from the Deployment's,
// ReadyForProvisioning, 4 replicas), launches nodes for the room
// (Provisioning: FitsExistingCapacity), and when the Deployment grows by
// 4 pods they are scheduled at once on those nodes — well before a new
// node could boot (45 s here) — while the buffer is refilled on new
// nodes, fitting again at the end.
func TestCapacityBufferKeepsRoomForPodsToCome(t *testing.T) {
	const boot = 45 * time.Second
	name, manifest, err := scenarios.Load("capacity-buffer")
	if err != nil {
		t.Fatal(err)
	}
	_, then := scenarios.Then(name)
	sim := harness.Start(t, func(o *runner.Options) { o.Operator.CapacityBuffer, o.BootDelay = true, boot })
	ctx := context.Background()
	step := func(n string, m []byte) *runner.Snapshot {
		t.Helper()
		results, err := sim.RunSteps(ctx, []runner.Step{{Name: n, Manifest: m}}, 5*time.Minute, time.Minute+boot, nil)
		if err != nil {
			t.Fatal(err)
		}
		return results[0].Snapshot
	}
	fits := func(when string) *v1beta1.CapacityBuffer {
		t.Helper()
		b := &v1beta1.CapacityBuffer{}
		harness.WaitFor(t, "the buffer's room "+when, 2*time.Minute, func() bool {
			if err := sim.Kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-headroom"}, b); err != nil {
				return false
			}
			return meta.IsStatusConditionTrue(b.Status.Conditions, v1beta1.ConditionProvisioning)
		})
		return b
	}
	before := step(name, manifest)
	if !before.Done() {
		t.Fatalf("%d/%d pods Running", before.RunningPods, before.Pods)
	}
	b := fits("before the scale-up")
	ready := meta.FindStatusCondition(b.Status.Conditions, v1beta1.ConditionReadyForProvisioning)
	if ready == nil || ready.Status != metav1.ConditionTrue || b.Status.Replicas == nil || *b.Status.Replicas != 4 || b.Status.PodTemplateRef == nil {
		t.Fatalf("buffer status %+v", b.Status)
	}
	template := &corev1.PodTemplate{}
	if err := sim.Kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: b.Status.PodTemplateRef.Name}, template); err != nil ||
		template.Template.Labels["app"] != "web" || !metav1.IsControlledBy(template, b) {
		t.Fatalf("the buffer's PodTemplate: %v %+v", err, template.ObjectMeta)
	}
	if cpu := allocatableCPU(t, sim); cpu < 6 {
		t.Errorf("%d CPUs allocatable for 2 pods and a buffer of 4, 1 CPU each", cpu)
	}
	cutoff := time.Now()
	after := step(name+".then-1", then[0])
	if !after.Done() || after.Pods != 6 {
		t.Fatalf("after the scale-up: %d/%d pods Running", after.RunningPods, after.Pods)
	}
	pods := &corev1.PodList{}
	if err := sim.Kube.List(ctx, pods, client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	grown := 0
	for _, p := range pods.Items {
		if p.CreationTimestamp.Time.Before(cutoff.Add(-time.Second)) {
			continue
		}
		grown++
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && c.LastTransitionTime.Sub(p.CreationTimestamp.Time) > boot/2 {
				t.Errorf("pod %s waited %s to be scheduled: no room was kept for it", p.Name, c.LastTransitionTime.Sub(p.CreationTimestamp.Time))
			}
		}
	}
	if grown != 4 {
		t.Errorf("%d pods of the scale-up, want 4", grown)
	}
	fits("after the scale-up (refilled)")
	if cpu := allocatableCPU(t, sim); cpu < 10 {
		t.Errorf("%d CPUs allocatable for 6 pods and a buffer of 4: not refilled", cpu)
	}
}

// allocatableCPU is the whole CPUs the nodes offer.
func allocatableCPU(t *testing.T, sim *runner.Sim) int64 {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := sim.Kube.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	var milli int64
	for _, n := range nodes.Items {
		milli += n.Status.Allocatable.Cpu().MilliValue()
	}
	return milli / 1000
}
