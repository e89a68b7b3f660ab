package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
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

// NewRequirement builds a requirement from a node selector operator (and
// Gte and Lte, which NodePools accept). Validate first: an operator it
// does not know, or a comparison without one integer, matches nothing.
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
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		r.complement = true
		v, err := comparedValue(op, values)
		if err != nil {
			// Matches nothing: greater than the largest integer.
			v, op = math.MaxInt64, corev1.NodeSelectorOpGt
		}
		switch op {
		case corev1.NodeSelectorOpGt:
			r.greaterThan = &v
		case v1.NodeSelectorOpGte:
			v-- // at least v: greater than v-1
			r.greaterThan = &v
		case corev1.NodeSelectorOpLt:
			r.lessThan = &v
		case v1.NodeSelectorOpLte:
			v++ // at most v: less than v+1
			r.lessThan = &v
		}
	default:
		r.complement, r.absentOK = false, false // matches nothing
	}
	return r
}

// ValidateOperator says what is wrong with a requirement's operator and
// values, or returns nil: Kubernetes' operators and Gte and Lte, In with
// values, Exists and DoesNotExist without, comparisons with one integer.
func ValidateOperator(op corev1.NodeSelectorOperator, values []string) error {
	switch op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if op == corev1.NodeSelectorOpIn && len(values) == 0 {
			return fmt.Errorf("operator In needs at least one value")
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(values) > 0 {
			return fmt.Errorf("operator %s takes no values, got %v", op, values)
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		_, err := comparedValue(op, values)
		return err
	default:
		return fmt.Errorf("unknown operator %q: use In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte", op)
	}
	return nil
}

// comparedValue is the one integer of a comparison.
func comparedValue(op corev1.NodeSelectorOperator, values []string) (int64, error) {
	if len(values) != 1 {
		return 0, fmt.Errorf("operator %s takes exactly one integer value, got %d values", op, len(values))
	}
	v, err := strconv.ParseInt(values[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("operator %s takes an integer value, got %q", op, values[0])
	}
	return v, nil
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

// Matches reports whether a label with the value (present) or no such
// label (!present) meets the requirement.
func (r *Requirement) Matches(value string, present bool) bool {
	if !present {
		return r.absentOK
	}
	return r.Has(value)
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

// Value is a value the label may take, for a node that must carry one: the
// first allowed value of a set; for a complement (NotIn, Exists, Gt, Lt)
// the least non-negative integer within its bounds it does not exclude.
// false when the label may take none, or need not be present (In with no
// value left, DoesNotExist).
func (r *Requirement) Value() (string, bool) {
	if !r.complement {
		for _, v := range r.Values() {
			if r.withinBounds(v) {
				return v, true
			}
		}
		return "", false
	}
	lo := int64(0)
	if r.greaterThan != nil && *r.greaterThan >= 0 {
		lo = *r.greaterThan + 1
	}
	for v := lo; r.lessThan == nil || v < *r.lessThan; v++ {
		if s := strconv.FormatInt(v, 10); r.Has(s) {
			return s, true
		}
		if v-lo > int64(len(r.values)) {
			break // past every excluded value
		}
	}
	return "", false
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
