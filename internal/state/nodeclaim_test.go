package state_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// A NodeClaim opened with relaxed minValues carries what it was opened
// with and says so, as the reference's does; the others carry the
// NodePool's and "false".
func TestNodeClaimsSayWhetherMinValuesWereRelaxed(t *testing.T) {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "diverse"}}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{
		Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m6i.large", "m7i.large"}, MinValues: ptr.To(3)}}
	for _, tc := range []struct {
		relaxed   string
		minValues int
		want      *int
		note      string
	}{
		{"", 3, ptr.To(3), "false"},
		{"node.kubernetes.io/instance-type minValues 3, 2 offered", 2, ptr.To(2), "true"},
		{"node.kubernetes.io/instance-type minValues 3, 0 offered", 0, nil, "true"}, // the CRD's least is 1
	} {
		reqs := scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m6i.large"}})
		reqs[scheduling.LabelInstanceType].MinValues = tc.minValues
		nc := state.NodeClaimFor(np, nil, &scheduling.PlannedNodeClaim{NodePool: np.Name, Requirements: reqs, MinValuesRelaxed: tc.relaxed})
		if got := nc.Annotations[v1.AnnotationMinValuesRelaxed]; got != tc.note {
			t.Errorf("relaxed %q: annotated %q, want %q", tc.relaxed, got, tc.note)
		}
		for _, r := range nc.Spec.Requirements {
			if r.Key == scheduling.LabelInstanceType && !ptr.Equal(r.MinValues, tc.want) {
				t.Errorf("relaxed %q: minValues %v, want %v", tc.relaxed, r.MinValues, tc.want)
			}
		}
	}
}

// A NodeClaim carries a value for each label its requirements name that
// no instance type sets, as the reference resolves them: its NodePool's
// requirements keep admitting it, and its node has what pods select.
func TestNodeClaimsCarryTheirRequirementsLabels(t *testing.T) {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "payments"}}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"cost-center": "4410"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"payments", "billing"}},
		{Key: "example.com/workload", Operator: corev1.NodeSelectorOpExists},
		{Key: "example.com/shard", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"0", "1"}},
		{Key: "example.com/generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}},
		{Key: "example.com/legacy", Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
	}
	reqs := scheduling.NewRequirements()
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	// A pod selected billing: the NodeClaim's requirement narrowed.
	reqs.Add(scheduling.NewRequirement("team", corev1.NodeSelectorOpIn, "billing"))
	nc := state.NodeClaimFor(np, nil, &scheduling.PlannedNodeClaim{NodePool: np.Name, Requirements: reqs})
	want := map[string]string{v1.LabelNodePool: "payments", "cost-center": "4410", "team": "billing", "example.com/workload": "0",
		"example.com/shard": "2", "example.com/generation": "6"}
	if len(nc.Labels) != len(want) {
		t.Errorf("labels %v, want %v (instance type and offering labels come with the launch)", nc.Labels, want)
	}
	for k, v := range want {
		if nc.Labels[k] != v {
			t.Errorf("label %s=%q, want %q (labels %v)", k, nc.Labels[k], v, nc.Labels)
		}
	}
	// Launched (the instance type's labels added), it matches its NodePool.
	nc.Labels["karpenter.k8s.aws/instance-category"], nc.Labels[v1.LabelCapacityType] = "m", "spot"
	if d := state.Drift(nc, nil, np, nil, nil, now); d.Drifted() {
		t.Errorf("a NodeClaim made for its NodePool drifts: %+v", d)
	}
}
