package scheduling

import (
	"fmt"
	"sort"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Interchangeable pods — no spread, pod (anti-)affinity, preferences or
// host ports, not counted by any other pod's terms, one node affinity
// term — wait while the others are placed: the main pass defers those
// that no existing node or planned NodeClaim takes. Afterwards they fill
// the room the other NodeClaims left, then the rest of each group (same
// NodePool, same requirements) is packed as a whole (see packing.go): the
// NodeClaims of the rounded LP solution are opened with the pattern's
// instance type as their shape, and what the rounding leaves goes through
// the ordinary first fit. Every pod still enters through fits and
// newClaim, so limits, taints and requirements are checked as for any
// other.

// packable reports whether a pod may be deferred and packed.
func packable(p *podInfo) bool {
	return p.class != "" && len(p.topology) == 0 && len(p.countedBy) == 0 && len(p.repelledBy) == 0 &&
		len(p.preferences) == 0 && len(p.hostPorts) == 0 && len(p.terms) == 1 && len(p.unknownResources) == 0
}

// packGroup is the pods of one NodePool and requirements.
type packGroup struct {
	pool *pool
	reqs Requirements
	key  string
	pods []*podInfo
	// passed are the NodePools of more weight that admit the pods but
	// have no room for them.
	passed []PassedNodePool
}

// placeDeferred places the deferred pods.
func (s *solver) placeDeferred() {
	var waiting []*podInfo
	for _, p := range s.deferred {
		if !s.tryTargets(p) {
			waiting = append(waiting, p)
		}
	}
	var groups []*packGroup
	byKey := map[string]*packGroup{}
	var leftover []*podInfo
	type choice struct {
		pool   *pool
		merged Requirements
		passed []PassedNodePool
		ok     bool
	}
	byClass := map[string]choice{}
	for _, p := range waiting {
		ch, seen := byClass[p.class]
		if !seen {
			ch.pool, ch.merged, ch.passed, ch.ok = s.packPool(p)
			byClass[p.class] = ch
		}
		pl, merged, ok := ch.pool, ch.merged, ch.ok
		if !ok {
			leftover = append(leftover, p)
			continue
		}
		key := fingerprint(merged)
		g := byKey[pl.Name+"\x00"+key]
		if g == nil {
			g = &packGroup{pool: pl, reqs: merged, key: key, passed: ch.passed}
			byKey[pl.Name+"\x00"+key] = g
			groups = append(groups, g)
		}
		g.pods = append(g.pods, p)
	}
	for _, g := range groups {
		leftover = append(leftover, s.packGroup(g)...)
	}
	sortPods(leftover)
	s.remaining = Resources{}
	for _, p := range leftover {
		s.remaining = s.remaining.Add(p.requests)
	}
	for _, p := range leftover {
		s.schedule(p)
	}
}

// packPool finds the pool the first fit would open a NodeClaim from for
// p, with the requirements the NodeClaim would have; ok is false when
// that pool still has reserved capacity to hand out first, or none would.
func (s *solver) packPool(p *podInfo) (*pool, Requirements, []PassedNodePool, bool) {
	reqs := p.terms[0]
	var passed []PassedNodePool
	for _, pl := range s.pools {
		if _, ok := p.tolerates(pl.Taints); !ok {
			continue
		}
		if pl.Requirements.Compatible(reqs, pl.provides) != nil {
			continue
		}
		if pl.nodesLimit >= 0 && pl.nodes >= pl.nodesLimit {
			passed = append(passed, PassedNodePool{Name: pl.Name, Weight: pl.Weight, Reason: fmt.Sprintf("limit of %d nodes reached", pl.nodesLimit)})
			continue
		}
		merged := pl.Requirements.Copy()
		merged.addForClaim(reqs)
		if onlyReserved(merged[v1.LabelCapacityType]) {
			continue
		}
		if s.reservationsLeft(pl) {
			return nil, nil, nil, false
		}
		excludeReserved(pl, merged)
		if types, why := pl.candidatesByKey(fingerprint(merged), merged, p.requests); len(types) == 0 {
			if !pl.Static {
				passed = append(passed, PassedNodePool{Name: pl.Name, Weight: pl.Weight, Reason: why})
			}
			continue
		}
		return pl, merged, passed, true
	}
	return nil, nil, nil, false
}

// packGroup packs one group and returns the pods it did not place.
func (s *solver) packGroup(g *packGroup) []*podInfo {
	pl := g.pool
	types, _ := pl.candidatesByKey(g.key, g.reqs, Resources{})
	requests := make([]Resources, len(g.pods))
	queues := map[Resources][]*podInfo{}
	for i, p := range g.pods {
		requests[i] = p.requests
		queues[p.requests] = append(queues[p.requests], p)
	}
	items := packItems(requests)
	nodes, _, ok := pack(items, pl.packTypes(types, g.reqs))
	if !ok {
		return g.pods
	}
	var leftover []*podInfo
	for _, node := range nodes {
		var pods []*podInfo
		for i, n := range node.counts {
			q := queues[items[i].requests]
			pods = append(pods, q[:n]...)
			queues[items[i].requests] = q[n:]
		}
		sortPods(pods)
		leftover = append(leftover, s.openPacked(pl, types[node.typ], pods)...)
	}
	for _, it := range items {
		leftover = append(leftover, queues[it.requests]...)
	}
	if len(g.passed) > 0 {
		left := map[*podInfo]bool{}
		for _, p := range leftover {
			left[p] = true
		}
		for _, p := range g.pods {
			if !left[p] {
				s.plan.Fallbacks = append(s.plan.Fallbacks, &Fallback{Pod: p.pod, NodePool: pl.Name, Passed: g.passed})
			}
		}
	}
	return leftover
}

// openPacked opens a NodeClaim of shape for pods and returns those it did
// not take.
func (s *solver) openPacked(pl *pool, shape *InstanceType, pods []*podInfo) []*podInfo {
	s.forcedShape = shape
	t, c, _ := s.newClaim(pods[0], pl)
	s.forcedShape = nil
	if t == nil {
		return pods
	}
	s.commit(pods[0], t, c)
	// The pattern chose the pods for the shape; the first pod's fitting
	// shapes do not apply.
	saved := t.shape
	t.shape = nil
	var rest []*podInfo
	for _, p := range pods[1:] {
		if c, ok := s.fits(p, t); ok {
			s.commit(p, t, c)
		} else {
			rest = append(rest, p)
		}
	}
	t.shape = saved
	return rest
}

// tryTargets places p on the first existing node or planned NodeClaim that
// takes it.
func (s *solver) tryTargets(p *podInfo) bool {
	from := 0
	key := p.scanKey()
	if key != "" {
		from = s.scanFrom[key]
	}
	for i := s.index.next(from, p.requests); i >= 0; i = s.index.next(i+1, p.requests) {
		t := s.targets[i]
		if c, ok := s.fits(p, t); ok {
			s.commit(p, t, c)
			if key != "" {
				s.scanFrom[key] = i
			}
			return true
		}
	}
	if key != "" {
		s.scanFrom[key] = len(s.targets)
	}
	return false
}

// reservationsLeft reports whether any of a pool's reservations still
// takes an instance.
func (s *solver) reservationsLeft(pl *pool) bool {
	for _, slot := range pl.reserved {
		if s.reservations[slot.id] > 0 {
			return true
		}
	}
	return false
}

// sortPods orders pods as the main pass does.
func sortPods(pods []*podInfo) {
	sort.SliceStable(pods, func(i, j int) bool { return lessPod(pods[i], pods[j]) })
}
