package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// keyConstraints are the topology constraints of a pod on one key.
type keyConstraints struct {
	key      string
	terms    []*topologyTerm
	repelled []*topologyGroup
	counted  []*topologyGroup
}

// domains checks p's topology constraints on target t and chooses, for an
// undecided NodeClaim, the domain (zone, capacity type, ...) of every key
// the pod's constraints or counters need. It returns those choices as
// requirements, or why the pod cannot go there.
func (s *solver) domains(p *podInfo, t *target, reqs Requirements, explain bool) (Requirements, string, bool) {
	terms := p.activeTopology()
	if len(terms) == 0 && len(p.repelledBy) == 0 && len(p.countedBy) == 0 {
		return nil, "", true
	}
	byKey := constraintsByKey(p, terms)
	var pins Requirements
	for _, kc := range byKey {
		key := kc.key
		candidates, decided := s.candidateDomains(t, key, reqs)
		if len(candidates) == 0 {
			if len(kc.terms) == 0 || onlyAntiAffinity(kc.terms) {
				continue // not in any domain: nothing counts or repels it there
			}
			return nil, "node has no " + key + " label", false
		}
		if !decided && len(candidates) > 1 {
			s.orderDomains(candidates, kc)
		}
		chosen, reason := "", ""
		for _, d := range candidates {
			if s.domainAllows(p, kc, d, reqs) {
				chosen = d
				break
			}
		}
		if chosen == "" && explain {
			reason = s.domainRefusal(p, kc, candidates[0], reqs)
		}
		if chosen == "" {
			return nil, reason, false
		}
		if !decided {
			if pins == nil {
				pins = Requirements{}
			}
			pins.Add(NewRequirement(key, corev1.NodeSelectorOpIn, chosen))
		}
	}
	return pins, "", true
}

// constraintsByKey gathers a pod's topology terms and the groups that
// repel or count it by topology key, in key order.
func constraintsByKey(p *podInfo, terms []*topologyTerm) []*keyConstraints {
	var byKey []*keyConstraints
	get := func(key string) *keyConstraints {
		for _, kc := range byKey {
			if kc.key == key {
				return kc
			}
		}
		kc := &keyConstraints{key: key}
		byKey = append(byKey, kc)
		return kc
	}
	for _, term := range terms {
		kc := get(term.group.key)
		kc.terms = append(kc.terms, term)
	}
	for _, g := range p.repelledBy {
		kc := get(g.key)
		kc.repelled = append(kc.repelled, g)
	}
	for _, g := range p.countedBy {
		kc := get(g.key)
		kc.counted = append(kc.counted, g)
	}
	sort.Slice(byKey, func(i, j int) bool { return byKey[i].key < byKey[j].key })
	return byKey
}

func onlyAntiAffinity(terms []*topologyTerm) bool {
	for _, t := range terms {
		if t.group.kind != kindAntiAffinity {
			return false
		}
	}
	return true
}

// domainAllows checks every constraint on one key for domain d.
func (s *solver) domainAllows(p *podInfo, kc *keyConstraints, d string, reqs Requirements) bool {
	for _, term := range kc.terms {
		if !term.group.allows(d, p.counts(term.group), s.universeFor(term.group, reqs)) {
			return false
		}
	}
	for _, g := range kc.repelled {
		if !g.allows(d, false, nil) {
			return false
		}
	}
	return true
}

// domainRefusal explains why domain d is refused.
func (s *solver) domainRefusal(p *podInfo, kc *keyConstraints, d string, reqs Requirements) string {
	for _, term := range kc.terms {
		universe := s.universeFor(term.group, reqs)
		if self := p.counts(term.group); !term.group.allows(d, self, universe) {
			return term.group.why(d, self, universe)
		}
	}
	for _, g := range kc.repelled {
		if !g.allows(d, false, nil) {
			return g.why(d, false, nil)
		}
	}
	return ""
}

// universeFor returns the domains counted for a spread constraint's
// minimum: those of the nodes and NodePools the constraint's node
// inclusion policies admit; none for hostname, where a new node is always
// an empty domain.
func (s *solver) universeFor(g *topologyGroup, _ Requirements) []string {
	if g.kind != kindSpread || g.key == LabelHostname {
		return nil
	}
	return s.spreadUniverse(g)
}

// counts reports whether g counts the pod itself.
func (p *podInfo) counts(g *topologyGroup) bool {
	for _, c := range p.countedBy {
		if c == g {
			return true
		}
	}
	return false
}

// orderDomains prefers, for an undecided claim, the domain with the fewest
// pods of the first spread (or counting) group, then the name.
func (s *solver) orderDomains(candidates []string, kc *keyConstraints) {
	var g *topologyGroup
	for _, term := range kc.terms {
		if term.group.kind == kindSpread {
			g = term.group
			break
		}
	}
	if g == nil && len(kc.counted) > 0 {
		g = kc.counted[0]
	}
	if g == nil {
		return
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		ci, cj := g.counts[candidates[i]], g.counts[candidates[j]]
		if ci != cj {
			return ci < cj
		}
		return candidates[i] < candidates[j]
	})
}

// candidateDomains lists the values of key that t may take under reqs, and
// whether t's value is already decided.
func (s *solver) candidateDomains(t *target, key string, reqs Requirements) ([]string, bool) {
	if d, ok := t.domain(key); ok {
		if r, ok := reqs[key]; ok && !r.Has(d) {
			return nil, true
		}
		return []string{d}, true
	}
	if t.existing {
		return nil, true
	}
	var out []string
	for _, v := range t.pool.domainValues(key) {
		if r, ok := t.reqs[key]; ok && !r.Has(v) {
			continue
		}
		if r, ok := reqs[key]; ok && !r.Has(v) {
			continue
		}
		out = append(out, v)
	}
	return out, false
}

// domainValues lists, sorted, the values of key the pool's instance types
// or requirements can give a node.
func (pl *pool) domainValues(key string) []string {
	if pl.domainCache == nil {
		pl.domainCache = map[string][]string{}
	}
	if vs, ok := pl.domainCache[key]; ok {
		return vs
	}
	seen := map[string]bool{}
	if r, ok := pl.Requirements[key]; ok && !r.complement {
		for v := range r.values {
			seen[v] = true
		}
	} else {
		for _, it := range pl.launchable {
			if r, ok := it.Requirements[key]; ok {
				for v := range r.values {
					seen[v] = true
				}
			}
		}
	}
	vs := make([]string, 0, len(seen))
	for v := range seen {
		if r, ok := pl.Requirements[key]; !ok || r.Has(v) {
			vs = append(vs, v)
		}
	}
	sort.Strings(vs)
	pl.domainCache[key] = vs
	return vs
}

// spreadUniverse lists the domains a spread group counts: the values its
// key takes on the existing nodes it admits, and that the NodePools it
// admits can give a node (within its node affinity).
func (s *solver) spreadUniverse(g *topologyGroup) []string {
	if vs, ok := s.universes[g.id]; ok {
		return vs
	}
	seen := map[string]bool{}
	for _, pl := range s.pools {
		if !g.eligible.admits(pl.Requirements, pl.Taints, pl.provides) {
			continue
		}
		for _, v := range pl.domainValues(g.key) {
			if g.eligible.admitsValue(g.key, v) {
				seen[v] = true
			}
		}
	}
	for _, t := range s.targets {
		if t.existing && s.counts(g, t) {
			if d, ok := t.domain(g.key); ok {
				seen[d] = true
			}
		}
	}
	vs := make([]string, 0, len(seen))
	for v := range seen {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	s.universes[g.id] = vs
	return vs
}

// admitsValue reports whether the node affinity allows a node with the
// value of key (any term does).
func (n *nodeInclusion) admitsValue(key, value string) bool {
	if n == nil || n.terms == nil {
		return true
	}
	for _, term := range n.terms {
		if r, ok := term[key]; !ok || r.Has(value) {
			return true
		}
	}
	return false
}
