package scheduling_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/workload"
)

// Workload A mixes spread on zone and hostname, zone affinity and hostname
// anti-affinity: every pod is placed, on at most one node per
// anti-affinity pod, and the verifier accepts the plan.
func TestWorkloadAIsPlacedSoundly(t *testing.T) {
	for _, n := range []int{100, 1000} {
		plan := solve(t, workload.A(n, 7))
		if len(plan.Unschedulable) > 0 {
			t.Fatalf("%d pods: %d unschedulable, first: %s", n, len(plan.Unschedulable), plan.Unschedulable[0].Reason)
		}
		if len(plan.NodeClaims) > n/5 {
			t.Errorf("%d pods on %d nodes; %d anti-affinity pods need only %d", n, len(plan.NodeClaims), n/5, n/5)
		}
	}
}

// randomWorkload draws pods from every constraint the solver honours.
func randomWorkload(rng *rand.Rand, t testing.TB) scheduling.Input {
	values := []string{"a", "b", "c"}
	pick := func() string { return values[rng.IntN(len(values))] }
	cpus := []string{"100m", "500m", "1", "2", "7"}
	mems := []string{"128Mi", "1Gi", "4Gi", "30Gi"}
	n := 5 + rng.IntN(60)
	pods := make([]*corev1.Pod, 0, n)
	for i := range n {
		p := newPod(fmt.Sprintf("p-%d", i), cpus[rng.IntN(len(cpus))], mems[rng.IntN(len(mems))])
		p.Labels["app"] = pick()
		switch rng.IntN(8) {
		case 0:
			p.Spec.NodeSelector = map[string]string{scheduling.LabelArch: []string{"amd64", "arm64"}[rng.IntN(2)]}
		case 1:
			key := []string{scheduling.LabelZone, scheduling.LabelHostname, "karpenter.sh/capacity-type"}[rng.IntN(3)]
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick()}},
			}}
		case 2:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: []string{scheduling.LabelZone, scheduling.LabelHostname}[rng.IntN(2)], LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick()}},
			}}}}
		case 3:
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: scheduling.LabelZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick()}},
			}}}}
		case 4:
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 9100, ContainerPort: 9100, Protocol: corev1.ProtocolTCP}}
		case 5:
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}}}},
			}}}}
		}
		pods = append(pods, p)
	}
	return scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: pods}
}

// Random workloads never panic, always verify, and plan the same twice.
func TestRandomWorkloads(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := randomWorkload(rand.New(rand.NewPCG(seed, 1)), t)
			a, b := summary(solve(t, in)), summary(solve(t, in))
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("not deterministic:\n%s", diff)
			}
		})
	}
}

func FuzzSolve(f *testing.F) {
	for seed := range uint64(5) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		solve(t, randomWorkload(rand.New(rand.NewPCG(seed, 2)), t))
	})
}
