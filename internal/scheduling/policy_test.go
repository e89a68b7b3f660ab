package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Strict (the default) launches nothing for a NodePool whose types cannot
// meet its minValues, and says so; BestEffort launches on the types that
// fit, the NodeClaim's minValues lowered to what they offer, and says
// which.
func TestMinValuesPolicy(t *testing.T) {
	twoTypes := pool(t, "diverse", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{
			Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m6i.large"}, MinValues: ptr.To(3),
		}}
	})
	in := scheduling.Input{NodePools: []*scheduling.NodePool{twoTypes}, Pods: pods(1, "w", "900m", "900Mi")}
	strict := solve(t, in)
	if len(strict.NodeClaims) != 0 || !strings.Contains(reasons(strict)["w-0"], "fewer instance types than minValues requires: node.kubernetes.io/instance-type needs 3 values, 2 remain") {
		t.Errorf("Strict: %d NodeClaims, w-0 %q; want none, for minValues", len(strict.NodeClaims), reasons(strict)["w-0"])
	}
	in.Policy.RelaxMinValues = true
	relaxed := solve(t, in)
	if len(relaxed.NodeClaims) != 1 || len(relaxed.Unschedulable) != 0 {
		t.Fatalf("BestEffort: %d NodeClaims, unschedulable %v; want the pod on one", len(relaxed.NodeClaims), reasons(relaxed))
	}
	c := relaxed.NodeClaims[0]
	if got := c.Requirements[scheduling.LabelInstanceType].MinValues; got != 2 || len(c.InstanceTypes) != 2 {
		t.Errorf("BestEffort: minValues %d over %d types; want 2 over both", got, len(c.InstanceTypes))
	}
	if c.MinValuesRelaxed != "node.kubernetes.io/instance-type minValues 3, 2 offered" {
		t.Errorf("BestEffort: relaxed %q", c.MinValuesRelaxed)
	}
}

// A NodeClaim opened with relaxed minValues keeps as many values as it
// opened with: pods that would narrow it further open NodeClaims of their
// own, as the reference adds pods to a NodeClaim strictly. Where the
// types meet minValues nothing is relaxed.
func TestRelaxedMinValuesHoldForLaterPods(t *testing.T) {
	sizes := pool(t, "sizes", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{
			Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge", "m5.2xlarge"}, MinValues: ptr.To(4),
		}}
	})
	in := scheduling.Input{NodePools: []*scheduling.NodePool{sizes}, Pods: pods(6, "w", "1", "1Gi"), Policy: scheduling.Policy{RelaxMinValues: true}}
	plan := solve(t, in)
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("unschedulable: %v", reasons(plan))
	}
	for _, c := range plan.NodeClaims {
		mv := c.Requirements[scheduling.LabelInstanceType].MinValues
		if len(c.InstanceTypes) < mv || mv >= 4 || c.MinValuesRelaxed == "" {
			t.Errorf("%s: %d types, minValues %d, relaxed %q; want at least minValues types, relaxed below 4", c.Name, len(c.InstanceTypes), mv, c.MinValuesRelaxed)
		}
	}
	met := pool(t, "met", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{
			Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "m6i", "c6i"}, MinValues: ptr.To(3),
		}}
	})
	for _, c := range solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{met}, Pods: pods(4, "w", "1", "1Gi"), Policy: scheduling.Policy{RelaxMinValues: true}}).NodeClaims {
		if c.MinValuesRelaxed != "" || c.Requirements["karpenter.k8s.aws/instance-family"].MinValues != 3 {
			t.Errorf("%s relaxed %q though its types meet minValues", c.Name, c.MinValuesRelaxed)
		}
	}
}

// Under Ignore only pods' required terms count: preferred node affinity,
// preferred pod anti-affinity and ScheduleAnyway spread no longer cost a
// node each (the pods are planned as if they had none); DoNotSchedule
// spread still does.
func TestPreferencePolicyIgnore(t *testing.T) {
	app := func(p *corev1.Pod) { p.Labels["app"] = "web" }
	plain := len(solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: pods(3, "w", "500m", "512Mi", app)}).NodeClaims)
	if plain >= 3 {
		t.Fatalf("three pods without terms take %d NodeClaims; the case needs fewer", plain)
	}
	hostname := func(*corev1.Pod) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}
	for _, tc := range []struct {
		name            string
		pod             func(*corev1.Pod)
		respect, ignore int // NodeClaims for three pods; -1: as many as without the term
	}{
		{"preferred pod anti-affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: hostname(p)}}}}}
		}, 3, -1},
		{"ScheduleAnyway spread", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: hostname(p)}}
		}, 3, -1},
		{"DoNotSchedule spread", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: hostname(p)}}
		}, 3, 3},
	} {
		for _, ignore := range []bool{false, true} {
			in := scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: pods(3, "w", "500m", "512Mi", app, tc.pod), Policy: scheduling.Policy{IgnorePreferences: ignore}}
			plan := solve(t, in)
			want := tc.respect
			if ignore {
				want = tc.ignore
				if want < 0 {
					want = plain
				}
			}
			if len(plan.NodeClaims) != want || len(plan.Unschedulable) != 0 {
				t.Errorf("%s, ignore %t: %d NodeClaims (unschedulable %v), want %d", tc.name, ignore, len(plan.NodeClaims), reasons(plan), want)
			}
		}
	}
	big := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.8xlarge"}}}}}}}}
	}
	for _, ignore := range []bool{false, true} {
		plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: pods(1, "w", "500m", "512Mi", big), Policy: scheduling.Policy{IgnorePreferences: ignore}})
		if len(plan.NodeClaims) != 1 {
			t.Fatalf("ignore %t: %d NodeClaims", ignore, len(plan.NodeClaims))
		}
		if got := plan.NodeClaims[0].InstanceType.Name; (got == "m5.8xlarge") == ignore {
			t.Errorf("preferred node affinity for m5.8xlarge, ignore %t: planned %s", ignore, got)
		}
	}
}

// The policies parse as Karpenter spells them and print back the same.
func TestParsePolicy(t *testing.T) {
	p, err := scheduling.ParsePolicy("BestEffort", "Ignore")
	if err != nil || !p.RelaxMinValues || !p.IgnorePreferences {
		t.Errorf("BestEffort, Ignore: %+v %v", p, err)
	}
	if mv, pr := p.Names(); mv != "BestEffort" || pr != "Ignore" {
		t.Errorf("names %s %s", mv, pr)
	}
	if d, err := scheduling.ParsePolicy("", ""); err != nil || d != (scheduling.Policy{}) {
		t.Errorf("defaults: %+v %v", d, err)
	}
	for _, bad := range [][2]string{{"bestEffort", ""}, {"", "Prefer"}} {
		if _, err := scheduling.ParsePolicy(bad[0], bad[1]); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
