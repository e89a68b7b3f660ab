package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/nodewright/nodewright/api/v1"
	decide "github.com/nodewright/nodewright/internal/decide/disruption"
)

// lastPod is the pod node added last.
func (w *world) lastPod() *corev1.Pod { return w.objs.Pods[len(w.objs.Pods)-1] }

func command(d *decide.Decision, reason v1.DisruptionReason) *decide.Command {
	for i := range d.Commands {
		if d.Commands[i].Reason == reason {
			return d.Commands[i]
		}
	}
	return nil
}

// Empty nodes go in one command, as many as the budget lets; the others
// say the budget holds them.
func TestEmptyNodesGoWithinTheBudget(t *testing.T) {
	w := newWorld(t)
	w.pool("default", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} }, v1.CapacityTypeOnDemand)
	for _, n := range []string{"a", "b", "c"} {
		w.node("default", n, "m5.large", "")
	}
	d := w.decide()
	c := command(d, v1.DisruptionReasonEmpty)
	if c == nil || len(c.NodeNames()) != 2 || len(c.Replacements) != 0 {
		t.Fatalf("commands %q, want one Empty command of two nodes and no replacement", names(d))
	}
	var said []string
	for _, b := range d.Blocked {
		said = append(said, b.String())
	}
	if !strings.Contains(strings.Join(said, "\n"), "NodePool default allows 0 of 2 now") {
		t.Errorf("the budget that holds the third node is not said: %q", said)
	}
}

// A node its NodePool's requirements no longer admit is drifted and
// replaced by one they admit.
func TestRequirementsDriftReplacesTheNode(t *testing.T) {
	w := newWorld(t)
	w.pool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{"m6i"}
	}, v1.CapacityTypeOnDemand)
	w.node("default", "old", "m5.large", "500m")
	d := w.decide()
	c := command(d, v1.DisruptionReasonDrifted)
	if c == nil || len(c.Replacements) != 1 {
		t.Fatalf("commands %q, want the drifted node replaced", names(d))
	}
	for _, it := range c.Replacements[0].InstanceTypes {
		if !strings.HasPrefix(it.Name, "m6i.") {
			t.Errorf("replacement of type %s, which the NodePool does not admit", it.Name)
		}
	}
}

// A pod that must not be disrupted keeps its drifted node, and the node
// says which pod; a PodDisruptionBudget that allows no eviction does the
// same.
func TestPodsThatMustStayHoldTheirNode(t *testing.T) {
	for name, hold := range map[string]func(w *world){
		"do-not-disrupt": func(w *world) {
			w.lastPod().Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		},
		"PodDisruptionBudget": func(w *world) {
			w.lastPod().Labels = map[string]string{"app": "ledger"}
			w.objs.PDBs = append(w.objs.PDBs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: "default"},
				Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &intstr.IntOrString{IntVal: 0}, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger"}}},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}})
		},
	} {
		w := newWorld(t)
		w.pool("default", func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{"m6i"} }, v1.CapacityTypeOnDemand)
		w.node("default", "old", "m5.large", "500m")
		hold(w)
		d := w.decide()
		if len(d.Commands) != 0 {
			t.Errorf("%s: commands %q, want the node kept", name, names(d))
		}
		if got := why(d, "old"); !strings.Contains(got, "default/pod-old") {
			t.Errorf("%s: the node says %q, not naming the pod that holds it", name, got)
		}
	}
}

// An oversized node is replaced by a cheaper one its pods fit on; a
// NodePool that consolidates only empty nodes keeps it.
func TestUnderutilizedNodeReplacedByACheaperOne(t *testing.T) {
	for _, policy := range []v1.ConsolidationPolicy{v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyWhenEmpty} {
		w := newWorld(t)
		w.pool("default", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = policy }, v1.CapacityTypeOnDemand)
		w.node("default", "big", "m5.4xlarge", "500m")
		d := w.decide()
		c := command(d, v1.DisruptionReasonUnderutilized)
		if policy == v1.ConsolidationPolicyWhenEmpty {
			if c != nil {
				t.Errorf("WhenEmpty: commands %q, want the node with a pod kept", names(d))
			}
			continue
		}
		if c == nil || len(c.Replacements) != 1 {
			t.Fatalf("commands %q, want big replaced", names(d))
		}
		if c.Savings <= 0 {
			t.Errorf("replacement %v saves %v", c.Replacements[0].InstanceTypes[0].Name, c.Savings)
		}
	}
}

// Underutilized nodes whose pods fit on one node go in one command that
// leaves one node for them (two deleted, or three for a replacement).
func TestUnderutilizedNodesMergeOntoOne(t *testing.T) {
	w := newWorld(t)
	w.pool("default", nil, v1.CapacityTypeOnDemand)
	for _, n := range []string{"a", "b", "c"} {
		w.node("default", n, "m5.large", "200m")
	}
	d := w.decide()
	c := command(d, v1.DisruptionReasonUnderutilized)
	if c == nil || len(c.NodeNames())-len(c.Replacements) != 2 || len(d.Commands) != 1 {
		t.Fatalf("commands %q, want one command leaving one node for the three pods", names(d))
	}
	if c.Savings <= 0 {
		t.Errorf("the command saves %v", c.Savings)
	}
}
