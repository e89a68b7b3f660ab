package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// A decision counts its pods by the zone they may go to: one zone, more
// than one (flexible), or none the NodePools launch in; a pod its own
// volume claim keeps off every node is ignored and counted apart.
func TestPendingPodsByEffectiveZone(t *testing.T) {
	zone := func(zones ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
				}}},
			}}}
		}
	}
	selector := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "us-east-1c"} }
	free := newPod("free", "100m", "100Mi")
	one := newPod("one", "100m", "100Mi", zone("us-east-1a"))
	two := newPod("two", "100m", "100Mi", zone("us-east-1a", "us-east-1b"))
	elsewhere := newPod("elsewhere", "100m", "100Mi", zone("eu-west-1a"))
	bySelector := newPod("by-selector", "100m", "100Mi", selector)
	byVolume := newPod("by-volume", "100m", "100Mi")
	noClaim := newPod("no-claim", "100m", "100Mi")
	volumeZone := scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}})
	plan := solve(t, scheduling.Input{
		NodePools: []*scheduling.NodePool{pool(t, "default")},
		Pods:      []*corev1.Pod{free, one, two, elsewhere, bySelector, byVolume, noClaim},
		Volumes: map[*corev1.Pod]*scheduling.VolumeTopology{
			byVolume: {Terms: [][]scheduling.Requirements{{volumeZone}}},
			noClaim:  {Refused: "PersistentVolumeClaim default/data of volume data does not exist"},
		},
	})
	want := map[string]int{scheduling.ZoneFlexible: 2, "us-east-1a": 1, "us-east-1b": 1, "us-east-1c": 1, scheduling.ZoneNone: 1}
	if len(plan.PendingByZone) != len(want) {
		t.Errorf("pods by zone: %v, want %v", plan.PendingByZone, want)
	}
	for z, n := range want {
		if plan.PendingByZone[z] != n {
			t.Errorf("pods by zone: %v, want %v", plan.PendingByZone, want)
			break
		}
	}
	if plan.Ignored() != 1 || len(plan.Unschedulable) != 2 {
		t.Errorf("ignored %d of %d unschedulable pods, want 1 of 2 (no-claim ignored, elsewhere unschedulable): %v", plan.Ignored(), len(plan.Unschedulable), reasons(plan))
	}
}
