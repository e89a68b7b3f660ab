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
