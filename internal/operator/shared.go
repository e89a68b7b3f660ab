package operator

import (
	"encoding/binary"
	"maps"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// sharedPartsMax bounds the parts remembered: past it the table starts
// again (pods keep what they share).
const sharedPartsMax = 20_000

// sharedParts gives the cached pods one copy of the parts many of them
// hold equal: the pods of one Deployment have the same container
// resources, labels, node selector, tolerations and owner. A Go map of a
// few entries takes over 500 bytes, so at 50,000 pods this is tens of
// megabytes; NodeClaims planned together list the same instance types. The cache's objects are never changed (readers get deep
// copies or promise not to write), so pods can share them.
type sharedParts struct {
	mu    sync.Mutex
	parts map[string]any
}

// pod replaces a pod's parts by equal ones another pod holds.
func (s *sharedParts) pod(p *corev1.Pod) {
	for _, containers := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range containers {
			r := &containers[i].Resources
			if key, ok := protoKey(r); ok {
				*r = shared(s, "resources", key, *r)
			}
		}
	}
	if len(p.Spec.Tolerations) > 0 {
		if key, ok := protoKey(pointers(p.Spec.Tolerations)...); ok {
			p.Spec.Tolerations = shared(s, "tolerations", key, p.Spec.Tolerations)
		}
	}
	if len(p.OwnerReferences) > 0 {
		if key, ok := protoKey(pointers(p.OwnerReferences)...); ok {
			p.OwnerReferences = shared(s, "owners", key, p.OwnerReferences)
		}
	}
	p.Labels = sharedStrings(s, p.Labels)
	p.Spec.NodeSelector = sharedStrings(s, p.Spec.NodeSelector)
	internStrings(p)
}

// nodeClaim replaces a NodeClaim's requirement values by an equal list
// another NodeClaim holds: the claims of one decision list the same
// instance types, hundreds of names each.
func (s *sharedParts) nodeClaim(nc *v1.NodeClaim) {
	for i := range nc.Spec.Requirements {
		r := &nc.Spec.Requirements[i]
		if len(r.Values) > 1 {
			r.Values = shared(s, "values", r.Key+"\x00"+strings.Join(r.Values, "\x00"), r.Values)
		}
	}
}

// internStrings gives a pod's strings that many pods hold equal one copy
// (unique: the copy goes once no pod holds it).
func internStrings(p *corev1.Pod) {
	p.Namespace, p.GenerateName = interned(p.Namespace), interned(p.GenerateName)
	p.Spec.NodeName, p.Spec.SchedulerName = interned(p.Spec.NodeName), interned(p.Spec.SchedulerName)
	p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = interned(p.Spec.ServiceAccountName), interned(p.Spec.DeprecatedServiceAccount)
	p.Spec.DNSPolicy, p.Spec.RestartPolicy = interned(p.Spec.DNSPolicy), interned(p.Spec.RestartPolicy)
	p.Status.Phase, p.Status.QOSClass, p.Status.NominatedNodeName = interned(p.Status.Phase), interned(p.Status.QOSClass), interned(p.Status.NominatedNodeName)
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		c.Type, c.Status, c.Reason = interned(c.Type), interned(c.Status), interned(c.Reason)
	}
	for _, containers := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range containers {
			containers[i].Name = interned(containers[i].Name)
		}
	}
}

func interned[S ~string](s S) S {
	if s == "" {
		return s
	}
	return S(unique.Make(string(s)).Value())
}

// shared is the part of this kind and key held first since the table
// started.
func shared[T any](s *sharedParts, kind, key string, part T) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	key = kind + "\x00" + key
	if have, ok := s.parts[key].(T); ok {
		return have
	}
	if s.parts == nil || len(s.parts) >= sharedPartsMax {
		s.parts = map[string]any{}
	}
	s.parts[key] = part
	return part
}

func sharedStrings(s *sharedParts, m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return shared(s, "strings", b.String(), m)
}

// protoKey is the protobuf encoding of parts (deterministic: maps are
// encoded by sorted key), each prefixed by its length.
func protoKey[T interface{ Marshal() ([]byte, error) }](parts ...T) (string, bool) {
	var key []byte
	for _, p := range parts {
		data, err := p.Marshal()
		if err != nil {
			return "", false
		}
		key = binary.AppendUvarint(key, uint64(len(data)))
		key = append(key, data...)
	}
	return string(key), true
}

// pointers are pointers to a slice's elements.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
