package doctor

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// CodeRequirementOnNoLabel is a NodePool requirement on a label no
// instance type has, whose name is one instance types do have, spelt as
// another autoscaler spells it (eks.amazonaws.com/capacityType) or in
// the wrong domain (node.kubernetes.io/instance-family): it chooses no
// instance type, it only labels the nodes.
const CodeRequirementOnNoLabel = "requirement-on-no-instance-label"

// normalized is a label's name (after its domain) as compared across
// spellings: lower case, without dashes and underscores.
func normalized(key string) string {
	name := key[strings.LastIndexByte(key, '/')+1:]
	return separators.Replace(strings.ToLower(name))
}

var separators = strings.NewReplacer("-", "", "_", "", ".", "")

// instanceLabels are the label keys instance types and their offerings
// set, by their normalized names (read once: the catalog is built in).
var instanceLabels = sync.OnceValues(func() (map[string]string, error) {
	catalog, err := catalogTypes()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, it := range catalog {
		for key := range it.Requirements {
			out[normalized(key)] = key
		}
	}
	for _, key := range []string{v1.LabelCapacityType, v1.LabelNodePool, corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable} {
		out[normalized(key)] = key
	}
	return out, nil
})

// valueSpelling maps other autoscalers' capacity type values to the
// label's.
var valueSpelling = map[string]string{"ON_DEMAND": v1.CapacityTypeOnDemand, "SPOT": v1.CapacityTypeSpot, "on_demand": v1.CapacityTypeOnDemand, "ondemand": v1.CapacityTypeOnDemand}

// requirementLabelRule reports requirements on labels no instance type
// has but whose name says the one meant.
func requirementLabelRule(r *Report, o *whatif.Objects) error {
	known, err := instanceLabels()
	if err != nil {
		return err
	}
	for _, np := range o.NodePools {
		for i, req := range np.Spec.Template.Spec.Requirements {
			meant, ok := known[normalized(req.Key)]
			if !ok || meant == req.Key {
				continue
			}
			if _, set := np.Spec.Template.ObjectMeta.Labels[req.Key]; set {
				continue
			}
			values := make([]string, 0, len(req.Values))
			for _, v := range req.Values {
				if to, ok := valueSpelling[v]; ok {
					v = to
				}
				values = append(values, v)
			}
			sort.Strings(values)
			field := fmt.Sprintf("spec.template.spec.requirements[%d]", i)
			r.add(Finding{Code: CodeRequirementOnNoLabel, Severity: Warning, Object: "NodePool/" + np.Name,
				Message:  fmt.Sprintf("NodePool %s's requirement on %s chooses no instance type: no instance type has that label, so the nodes are only labelled %s with a value it allows, whatever they are; the label instance types have is %s", np.Name, req.Key, req.Key, meant),
				Evidence: fmt.Sprintf("%s: {key: %s, operator: %s, values: %v}", field, req.Key, req.Operator, req.Values),
				Fix:      fmt.Sprintf("set %s.key to %s (values: [%s])", field, meant, strings.Join(values, ", "))})
		}
	}
	return nil
}
