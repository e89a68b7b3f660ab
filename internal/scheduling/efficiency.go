package scheduling

import "math"

// Choosing instance types for cost. Each pod has a set of "fitting shapes":
// the instance types on which its own share of the node (its largest
// fraction of CPU, memory or pod slots) costs least, within
// efficiencySlack. A new NodeClaim takes the shape, among those of the pod
// that opened it, that covers most of the demand still to place (fewer,
// larger nodes at the same unit price), and keeps only instance types no
// dearer than it. Later pods join a NodeClaim only when its shape is one of
// theirs, so memory-heavy pods fill memory-cheap nodes and CPU-heavy pods
// CPU-cheap ones, as the cheapest fractional cover would.

// efficiencySlack is how much dearer than a pod's cheapest shape another
// shape may be and still count as fitting.
const efficiencySlack = 0.03

// shapes are the fitting shapes of pods with given requirements and
// requests.
type shapes struct {
	// fit holds the fitting shapes; price the cheapest offering of every
	// candidate type.
	fit   map[*InstanceType]bool
	price map[*InstanceType]float64
}

// shapesFor computes (and caches per requirements and requests) a pod's
// fitting shapes among candidate types.
func (pl *pool) shapesFor(key string, types []*InstanceType, reqs Requirements, requests Resources) *shapes {
	if sh, ok := pl.shapeCache[key]; ok {
		return sh
	}
	sh := &shapes{fit: map[*InstanceType]bool{}, price: make(map[*InstanceType]float64, len(types))}
	costs := make([]float64, len(types))
	best := math.Inf(1)
	for i, it := range types {
		costs[i] = math.Inf(1)
		o, ok := it.CheapestOffering(reqs)
		if !ok {
			continue
		}
		sh.price[it] = o.Price
		// The pod's share of what a new node leaves pods once the
		// DaemonSets every node runs have theirs: a node's fixed
		// overhead makes its small types dearer per pod than their
		// allocatable says.
		if share := share(requests, it.Allocatable.Sub(pl.daemon)); share > 0 {
			costs[i] = o.Price * share
			best = min(best, costs[i])
		}
	}
	for i, it := range types {
		if costs[i] <= best*(1+efficiencySlack) {
			sh.fit[it] = true
		}
	}
	pl.shapeCache[key] = sh
	return sh
}

// share is the largest fraction of a node's CPU, memory or pod slots the
// requests take.
func share(requests, alloc Resources) float64 {
	s := 0.0
	for _, i := range []int{cpuIndex, memoryIndex, podsIndex} {
		if requests[i] > 0 {
			if alloc[i] <= 0 {
				return 0
			}
			s = max(s, float64(requests[i])/float64(alloc[i]))
		}
	}
	return s
}

// chooseShape picks the new NodeClaim's shape among the pod's fitting
// shapes, the one covering most of the remaining demand, and returns the
// instance types no dearer than it.
func chooseShape(types []*InstanceType, sh *shapes, demand Resources, reqs Requirements) (*InstanceType, []*InstanceType) {
	var shape *InstanceType
	bestCover := -1.0
	for _, it := range types {
		if !sh.fit[it] {
			continue
		}
		if c := coverage(it.Allocatable, demand); c > bestCover || (c == bestCover && sh.price[it] < sh.price[shape]) {
			shape, bestCover = it, c
		}
	}
	if shape == nil {
		return nil, types
	}
	return shape, noDearer(types, sh, shape, reqs)
}

// noDearer returns the types no dearer than shape, or all of them when
// fewer would not meet minValues.
func noDearer(types []*InstanceType, sh *shapes, shape *InstanceType, reqs Requirements) []*InstanceType {
	limit := sh.price[shape]
	out := make([]*InstanceType, 0, len(types))
	for _, it := range types {
		if p, ok := sh.price[it]; ok && p <= limit {
			out = append(out, it)
		}
	}
	if !minValuesMet(out, reqs) {
		return types
	}
	return out
}

// coverage is the share of demand one instance covers, at most 1.
func coverage(alloc, demand Resources) float64 {
	cover := 1.0
	for _, i := range []int{cpuIndex, memoryIndex, podsIndex} {
		if demand[i] > 0 {
			cover = min(cover, float64(alloc[i])/float64(demand[i]))
		}
	}
	return cover
}
