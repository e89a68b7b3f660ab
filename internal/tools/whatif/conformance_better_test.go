package whatif_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// cheaperThanOneNode: the plan costs less than the plan that puts the
// named pods on one node (the same objects, the pods given a required
// affinity to each other by hostname).
func cheaperThanOneNode(names ...string) expectation {
	return func(o *outcome) error {
		together := *o.objs
		together.Pods = nil
		named := map[string]bool{}
		for _, n := range o.pods(names) {
			named[n] = true
		}
		for _, p := range o.objs.Pods {
			if named[p.Name] {
				p = p.DeepCopy()
				if p.Labels == nil {
					p.Labels = map[string]string{}
				}
				p.Labels["conformance-together"] = "yes"
				if p.Spec.Affinity == nil {
					p.Spec.Affinity = &corev1.Affinity{}
				}
				p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"conformance-together": "yes"}},
					TopologyKey:   corev1.LabelHostname,
				}}}
			}
			together.Pods = append(together.Pods, p)
		}
		res, err := whatif.RunWith(&together, simulated())
		if err != nil {
			return err
		}
		if len(res.Plan.NodeClaims) != 1 || len(res.Plan.Unschedulable) > 0 {
			return fmt.Errorf("the pods together: %d NodeClaims, %d unschedulable; want one node", len(res.Plan.NodeClaims), len(res.Plan.Unschedulable))
		}
		if got, one := o.res.Plan.Price(), res.Plan.Price(); got >= one {
			return fmt.Errorf("the plan costs $%.5f/h, not less than one node for the pods ($%.5f/h)", got, one)
		}
		return nil
	}
}

// distinct: the named pods are placed on nodes whose key all differ.
func distinct(key string, names ...string) expectation {
	return func(o *outcome) error {
		seen := map[string]string{}
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			v, ok := at.label(key)
			if !ok {
				return fmt.Errorf("pod %s is on %s, which leaves %s open", n, at.name, key)
			}
			if other, dup := seen[v]; dup {
				return fmt.Errorf("pods %s and %s share %s=%s", other, n, key, v)
			}
			seen[v] = n
		}
		return nil
	}
}
