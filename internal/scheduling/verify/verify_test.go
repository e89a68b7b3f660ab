package verify_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/scheduling/verify"
	"github.com/nodewright/nodewright/internal/sim/workload"
)

func pod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}}}
}

// The verifier is only useful if it catches broken plans: each case breaks
// a sound plan in one way.
func TestVerifierCatchesViolations(t *testing.T) {
	types := workload.SyntheticInstanceTypes()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	pool := scheduling.NodePoolFromObject(np, types, nil, nil)
	claim := func(name string, it int, pods ...*corev1.Pod) *scheduling.PlannedNodeClaim {
		return &scheduling.PlannedNodeClaim{Name: name, NodePool: "default", Requirements: scheduling.Requirements{},
			InstanceType: types[it], Offering: types[it].Offerings[0], Pods: pods}
	}
	tolerate := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpExists}}
		return p
	}
	anti := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: scheduling.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}}}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		plan func(pods []*corev1.Pod) *scheduling.Plan
		want string
	}{
		{"sound", []*corev1.Pod{tolerate(pod("a", "1"))}, func(p []*corev1.Pod) *scheduling.Plan {
			return &scheduling.Plan{NodeClaims: []*scheduling.PlannedNodeClaim{claim("n1", 0, p[0])}, Order: p}
		}, ""},
		{"over capacity", []*corev1.Pod{tolerate(pod("a", "2"))}, func(p []*corev1.Pod) *scheduling.Plan {
			return &scheduling.Plan{NodeClaims: []*scheduling.PlannedNodeClaim{claim("n1", 0, p[0])}, Order: p}
		}, "allocatable is"},
		{"taint", []*corev1.Pod{pod("a", "1")}, func(p []*corev1.Pod) *scheduling.Plan {
			return &scheduling.Plan{NodeClaims: []*scheduling.PlannedNodeClaim{claim("n1", 0, p[0])}, Order: p}
		}, "taint team=a:NoSchedule not tolerated"},
		{"anti-affinity", []*corev1.Pod{anti(tolerate(pod("a", "1"))), anti(tolerate(pod("b", "1")))}, func(p []*corev1.Pod) *scheduling.Plan {
			return &scheduling.Plan{NodeClaims: []*scheduling.PlannedNodeClaim{claim("n1", 3, p...)}, Order: p}
		}, "anti-affinity on kubernetes.io/hostname violated"},
		{"lost pod", []*corev1.Pod{tolerate(pod("a", "1"))}, func(p []*corev1.Pod) *scheduling.Plan {
			return &scheduling.Plan{Order: p}
		}, "placed=true but on a node=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := verify.Plan(scheduling.Input{NodePools: []*scheduling.NodePool{pool}, Pods: tc.pods}, tc.plan(tc.pods))
			got := strings.Join(errs, "\n")
			if tc.want == "" && got != "" {
				t.Errorf("a sound plan was rejected: %s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("want a violation mentioning %q, got %q", tc.want, got)
			}
		})
	}
}

// The lower bound of a single linear-priced type is the exact fractional
// cost: 0.1/vCPU + 0.1/GB of what the pods request.
func TestLowerBound(t *testing.T) {
	in := workload.A(500, 3)
	in.Pods = in.Pods[:100] // generic pods only
	var cpu, mem float64
	for _, p := range in.Pods {
		r, _ := scheduling.PodRequests(p)
		cpu += float64(r.CPU()) / 1000
		mem += float64(r.Memory())
	}
	// Each type has 2GiB per vCPU; the bound buys whichever runs out last.
	want := (0.1 + 0.1*float64(2<<30)/1e9) * max(cpu, mem/float64(2<<30))
	if got := workload.LowerBound(in); got < want*0.999 || got > want*1.001 {
		t.Errorf("lower bound %.4f, want %.4f", got, want)
	}
	if workload.PodAwareLowerBound(in) < workload.LowerBound(in)*0.999 {
		t.Error("the pod-aware bound must not be below the plain one")
	}
}
