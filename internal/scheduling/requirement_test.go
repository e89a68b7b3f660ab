package scheduling_test

import (
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Gte and Lte are Gt and Lt with the bound included; a malformed
// comparison or an unknown operator matches nothing.
func TestComparisonOperators(t *testing.T) {
	values := []string{"2", "3", "4", "5", "6"}
	for _, c := range []struct {
		op     corev1.NodeSelectorOperator
		values []string
		want   []string
	}{
		{corev1.NodeSelectorOpGt, []string{"4"}, []string{"5", "6"}},
		{v1.NodeSelectorOpGte, []string{"4"}, []string{"4", "5", "6"}},
		{corev1.NodeSelectorOpLt, []string{"4"}, []string{"2", "3"}},
		{v1.NodeSelectorOpLte, []string{"4"}, []string{"2", "3", "4"}},
		{v1.NodeSelectorOpGte, []string{"four"}, nil},
		{corev1.NodeSelectorOpLt, nil, nil},
		{"Equals", []string{"4"}, nil},
	} {
		r := scheduling.NewRequirement("karpenter.k8s.aws/instance-cpu", c.op, c.values...)
		var got []string
		for _, v := range values {
			if r.Has(v) {
				got = append(got, v)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v admits %v, want %v", c.op, c.values, got, c.want)
		}
		if wantErr := c.want == nil; (scheduling.ValidateOperator(c.op, c.values) != nil) != wantErr {
			t.Errorf("ValidateOperator(%s, %v) = %v", c.op, c.values, scheduling.ValidateOperator(c.op, c.values))
		}
	}
}

// A NodePool that requires at least 4 and at most 8 vCPUs launches only
// such instance types.
func TestNodePoolWithGteAndLte(t *testing.T) {
	np := pool(t, "sized", requirement("karpenter.k8s.aws/instance-cpu", v1.NodeSelectorOpGte, "4"), requirement("karpenter.k8s.aws/instance-cpu", v1.NodeSelectorOpLte, "8"),
		requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"))
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(3, "web", "100m", "128Mi")})
	if len(plan.NodeClaims) == 0 || len(plan.Unschedulable) > 0 {
		t.Fatalf("plan: %d NodeClaims, unschedulable %v", len(plan.NodeClaims), reasons(plan))
	}
	for _, c := range plan.NodeClaims {
		for _, it := range c.InstanceTypes {
			v, _ := it.Requirements["karpenter.k8s.aws/instance-cpu"].Single()
			if cpu, err := strconv.Atoi(v); err != nil || cpu < 4 || cpu > 8 {
				t.Errorf("NodeClaim %s lists %s with %s vCPUs", c.Name, it.Name, v)
			}
		}
	}
}
