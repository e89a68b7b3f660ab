package scheduling

import (
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Requirements constrain several labels; a node must meet all of them.
type Requirements map[string]*Requirement

// NewRequirements builds requirements from node selector requirements.
func NewRequirements(reqs ...corev1.NodeSelectorRequirement) Requirements {
	out := Requirements{}
	for _, r := range reqs {
		out.Add(NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return out
}

// LabelRequirements requires each label to have its value.
func LabelRequirements(labels map[string]string) Requirements {
	out := make(Requirements, len(labels))
	for k, v := range labels {
		if k == LabelHostname { // one node's own
			out[k] = NewRequirement(k, corev1.NodeSelectorOpIn, v)
			continue
		}
		out[k] = labelRequirements.get(k, v)
	}
	return out
}

// labelRequirements holds the requirements LabelRequirements made, one per
// label and value: a decision reads every node's labels, and thousands of
// nodes share most of theirs (NodePool, zone, architecture, instance
// type's), so they share the requirement (a Requirement is not changed
// once made). Past labelRequirementsMax (labels of many values, or of
// nodes long gone) the table starts again.
var labelRequirements = &labelTable{}

const labelRequirementsMax = 20_000

type labelTable struct {
	mu   sync.Mutex
	reqs map[[2]string]*Requirement
}

func (t *labelTable) get(key, value string) *Requirement {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.reqs[[2]string{key, value}]; ok {
		return r
	}
	if t.reqs == nil || len(t.reqs) >= labelRequirementsMax {
		t.reqs = map[[2]string]*Requirement{}
	}
	r := NewRequirement(key, corev1.NodeSelectorOpIn, value)
	t.reqs[[2]string{key, value}] = r
	return r
}

// Add narrows the requirements by r.
func (rs Requirements) Add(r *Requirement) {
	if existing, ok := rs[r.Key]; ok {
		r = existing.Intersect(r)
	}
	rs[r.Key] = r
}

// AddAll narrows the requirements by every requirement of o.
func (rs Requirements) AddAll(o Requirements) {
	for _, r := range o {
		rs.Add(r)
	}
}

// addForClaim narrows a NodeClaim's requirements by a pod's: all but
// the hostname, which is each node's own (a pod's NotIn names existing
// nodes; a NodeClaim cannot require it).
func (rs Requirements) addForClaim(pod Requirements) {
	for k, r := range pod {
		if k != LabelHostname {
			rs.Add(r)
		}
	}
}

// Copy returns an independent copy (requirements themselves are immutable).
func (rs Requirements) Copy() Requirements {
	out := make(Requirements, len(rs))
	for k, r := range rs {
		out[k] = r
	}
	return out
}

// Keys returns the keys, sorted.
func (rs Requirements) Keys() []string {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Incompatibility explains why node-side requirements cannot satisfy
// pod-side requirements: the first key on which they conflict.
type Incompatibility struct {
	Key string
	// Node is nil when the node side has no such label.
	Node, Pod *Requirement
}

func (i *Incompatibility) Error() string {
	if i.Node == nil {
		return fmt.Sprintf("has no %s label, pod selects %s", i.Key, i.Pod)
	}
	return fmt.Sprintf("requires %s, pod selects %s", i.Node, i.Pod)
}

// Compatible returns nil when a node meeting rs can also meet pod, else the
// first conflicting key (in key order, for deterministic messages). Keys rs
// does not constrain are accepted when the pod allows the label to be
// absent, or when undefinedOK says a label will be supplied (by the
// instance type).
func (rs Requirements) Compatible(pod Requirements, undefinedOK func(key string) bool) *Incompatibility {
	var first *Incompatibility
	for key, p := range pod {
		n, ok := rs[key]
		var bad bool
		switch {
		case ok:
			bad = !n.Intersect(p).Satisfiable()
		default:
			bad = !p.absentOK && (undefinedOK == nil || !undefinedOK(key))
		}
		if bad && (first == nil || key < first.Key) {
			first = &Incompatibility{Key: key, Pod: p}
			if ok {
				first.Node = n
			}
		}
	}
	return first
}

// Labels returns the labels a node meeting the requirements carries: one
// for every requirement with a single allowed value.
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for k, r := range rs {
		if v, ok := r.Single(); ok {
			out[k] = v
		}
	}
	return out
}

// NodeSelectorRequirements expresses the requirements for a NodeClaim, in
// key order.
func (rs Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, k := range rs.Keys() {
		out = append(out, rs[k].NodeSelectorRequirements()...)
	}
	return out
}
