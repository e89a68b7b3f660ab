package v1

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeValidate checks what the API server admits but a node cannot
// carry: label keys and values, requirement keys and values, taint keys
// and values, as Kubernetes validates them on a Node. The CRD, as the
// reference's, checks their shape only loosely (its patterns), so a
// NodePool with, say, a label key holding a space is admitted; it then
// launches nothing and says why on ValidationSucceeded.
func (np *NodePool) RuntimeValidate() error {
	spec := field.NewPath("spec", "template")
	var errs field.ErrorList
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		path := spec.Child("metadata", "labels").Key(k)
		errs = append(errs, qualifiedName(path, k)...)
		errs = append(errs, labelValue(path, v)...)
	}
	for i, r := range np.Spec.Template.Spec.Requirements {
		path := spec.Child("spec", "requirements").Index(i)
		errs = append(errs, qualifiedName(path.Child("key"), r.Key)...)
		if known, ok := knownValues[r.Key]; ok && r.Operator == corev1.NodeSelectorOpIn && !slices.ContainsFunc(r.Values, func(v string) bool { return slices.Contains(known, v) }) {
			errs = append(errs, field.NotSupported(path.Child("values"), r.Values, known))
		}
		if r.Operator == corev1.NodeSelectorOpIn || r.Operator == corev1.NodeSelectorOpNotIn {
			for j, v := range r.Values {
				errs = append(errs, labelValue(path.Child("values").Index(j), v)...)
			}
		}
	}
	for _, list := range []struct {
		name   string
		taints []corev1.Taint
	}{{"taints", np.Spec.Template.Spec.Taints}, {"startupTaints", np.Spec.Template.Spec.StartupTaints}} {
		for i, t := range list.taints {
			path := spec.Child("spec", list.name).Index(i)
			errs = append(errs, qualifiedName(path.Child("key"), t.Key)...)
			errs = append(errs, labelValue(path.Child("value"), t.Value)...)
		}
	}
	return errs.ToAggregate()
}

// knownValues are the values a well-known label can have: a requirement
// In that names none of them selects no instance type (one that names
// some as well as others still does).
var knownValues = map[string][]string{
	LabelCapacityType:                    {CapacityTypeSpot, CapacityTypeOnDemand, CapacityTypeReserved},
	"karpenter.k8s.aws/instance-tenancy": {"default", "dedicated"},
}

func qualifiedName(path *field.Path, s string) field.ErrorList {
	msgs := validation.IsQualifiedName(s)
	errs := make(field.ErrorList, 0, len(msgs))
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, s, msg))
	}
	return errs
}

func labelValue(path *field.Path, s string) field.ErrorList {
	msgs := validation.IsValidLabelValue(s)
	errs := make(field.ErrorList, 0, len(msgs))
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, s, fmt.Sprint(msg)))
	}
	return errs
}
