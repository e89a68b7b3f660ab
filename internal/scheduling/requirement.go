package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Requirement is the set of values one label may take. It is either a
// finite set (In) or everything but a finite set (NotIn, Exists), further
// bounded by Gt/Lt, and says whether the label may be absent.
type Requirement struct {
	Key string
	// complement: the values are those NOT in values.
	complement bool
	values     map[string]struct{}
	// greaterThan and lessThan bound integer values when set.
	greaterThan, lessThan *int64
	// absentOK: a node without the label satisfies the requirement.
	absentOK bool
	// MinValues is the least number of distinct values the candidates must
	// cover; zero when not required.
	MinValues int
}

// NewRequirement builds a requirement from a node selector operator.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) *Requirement {
	r := &Requirement{Key: key, values: make(map[string]struct{}, len(values))}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.addValues(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.absentOK = true, true
		r.addValues(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.absentOK = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		r.complement = true
		bound := int64(math.MinInt64)
		if len(values) == 1 {
			if v, err := strconv.ParseInt(values[0], 10, 64); err == nil {
				bound = v
			}
		}
		if op == corev1.NodeSelectorOpGt {
			r.greaterThan = &bound
		} else {
			r.lessThan = &bound
		}
	default:
		// An unknown operator matches nothing.
	}
	return r
}

func (r *Requirement) addValues(values []string) {
	for _, v := range values {
		r.values[v] = struct{}{}
	}
}

// Has reports whether the label may take the value.
func (r *Requirement) Has(value string) bool {
	_, listed := r.values[value]
	if listed == r.complement {
		return false
	}
	return r.withinBounds(value)
}

func (r *Requirement) withinBounds(value string) bool {
	if r.greaterThan == nil && r.lessThan == nil {
		return true
	}
	v, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return false
	}
	return (r.greaterThan == nil || v > *r.greaterThan) && (r.lessThan == nil || v < *r.lessThan)
}

// Intersect returns the values both requirements allow.
func (r *Requirement) Intersect(o *Requirement) *Requirement {
	out := &Requirement{
		Key:         r.Key,
		absentOK:    r.absentOK && o.absentOK,
		greaterThan: maxBound(r.greaterThan, o.greaterThan),
		lessThan:    minBound(r.lessThan, o.lessThan),
		MinValues:   max(r.MinValues, o.MinValues),
	}
	switch {
	case r.complement && o.complement:
		out.complement = true
		out.values = make(map[string]struct{}, len(r.values)+len(o.values))
		for v := range r.values {
			out.values[v] = struct{}{}
		}
		for v := range o.values {
			out.values[v] = struct{}{}
		}
	case r.complement:
		out.values = filtered(o.values, func(v string) bool { _, excluded := r.values[v]; return !excluded })
	case o.complement:
		out.values = filtered(r.values, func(v string) bool { _, excluded := o.values[v]; return !excluded })
	default:
		small, large := r.values, o.values
		if len(small) > len(large) {
			small, large = large, small
		}
		out.values = filtered(small, func(v string) bool { _, ok := large[v]; return ok })
	}
	if !out.complement && (out.greaterThan != nil || out.lessThan != nil) {
		out.values = filtered(out.values, out.withinBounds)
	}
	return out
}

func filtered(values map[string]struct{}, keep func(string) bool) map[string]struct{} {
	out := make(map[string]struct{}, len(values))
	for v := range values {
		if keep(v) {
			out[v] = struct{}{}
		}
	}
	return out
}

func maxBound(a, b *int64) *int64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func minBound(a, b *int64) *int64 {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// Satisfiable reports whether some node can meet the requirement: with a
// value, or by lacking the label when that is allowed.
func (r *Requirement) Satisfiable() bool {
	return r.absentOK || r.Len() > 0
}

// Len is the number of allowed values; MaxInt for complements.
func (r *Requirement) Len() int {
	if r.complement {
		if r.greaterThan != nil && r.lessThan != nil && *r.lessThan-*r.greaterThan <= 1 {
			return 0
		}
		return math.MaxInt
	}
	return len(r.values)
}

// Values returns the allowed values of a finite requirement, sorted.
func (r *Requirement) Values() []string {
	if r.complement {
		return nil
	}
	out := make([]string, 0, len(r.values))
	for v := range r.values {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Single returns the only allowed value, if there is exactly one.
func (r *Requirement) Single() (string, bool) {
	if r == nil || r.complement || len(r.values) != 1 {
		return "", false
	}
	for v := range r.values {
		return v, true
	}
	return "", false
}

// NodeSelectorRequirements expresses the requirement as node selector
// requirements (ANDed).
func (r *Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	switch {
	case !r.complement && len(r.values) == 0:
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpDoesNotExist})
	case !r.complement:
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpIn, Values: r.Values()})
	default:
		if len(r.values) > 0 {
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpNotIn, Values: r.sortedExcluded()})
		} else if !r.absentOK && r.greaterThan == nil && r.lessThan == nil {
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpExists})
		}
		if r.greaterThan != nil {
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(*r.greaterThan, 10)}})
		}
		if r.lessThan != nil {
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(*r.lessThan, 10)}})
		}
	}
	return out
}

func (r *Requirement) sortedExcluded() []string {
	out := make([]string, 0, len(r.values))
	for v := range r.values {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// String describes the requirement for people: "pod-type=armapp",
// "kubernetes.io/arch in [amd64, arm64]", "team not in [a]", "no gpu label".
func (r *Requirement) String() string {
	var parts []string
	switch {
	case !r.complement && len(r.values) == 0:
		if r.absentOK {
			return "no " + r.Key + " label"
		}
		return r.Key + " with no possible value"
	case !r.complement && len(r.values) == 1:
		v, _ := r.Single()
		return r.Key + "=" + v
	case !r.complement:
		return r.Key + " in [" + strings.Join(r.Values(), ", ") + "]"
	}
	if len(r.values) > 0 {
		parts = append(parts, r.Key+" not in ["+strings.Join(r.sortedExcluded(), ", ")+"]")
	}
	if r.greaterThan != nil {
		parts = append(parts, fmt.Sprintf("%s > %d", r.Key, *r.greaterThan))
	}
	if r.lessThan != nil {
		parts = append(parts, fmt.Sprintf("%s < %d", r.Key, *r.lessThan))
	}
	if len(parts) == 0 {
		if r.absentOK {
			return "any " + r.Key
		}
		return r.Key + " set"
	}
	return strings.Join(parts, " and ")
}
