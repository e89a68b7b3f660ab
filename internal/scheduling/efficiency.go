package scheduling

import "math"

// efficient caps a new NodeClaim's instance types at the price of the most
// cost-efficient one for the pods still to place, so that the claim fills
// a well-priced instance instead of growing into the largest type that
// fits. Efficiency is the price of covering the remaining demand with that
// type alone: price / min(1, allocatable/demand) over CPU, memory and pods.
// Among types within efficiencySlack of the best, the one covering most
// wins: nearly the same price in far fewer nodes.
func efficient(types []*InstanceType, reqs Requirements, demand Resources) []*InstanceType {
	prices := make([]float64, len(types))
	costs := make([]float64, len(types))
	covers := make([]float64, len(types))
	bestCost := math.Inf(1)
	for i, it := range types {
		prices[i], costs[i] = math.Inf(1), math.Inf(1)
		o, ok := it.CheapestOffering(reqs)
		if !ok {
			continue
		}
		prices[i] = o.Price
		covers[i] = coverage(it.Allocatable, demand)
		if covers[i] > 0 {
			costs[i] = o.Price / covers[i]
			bestCost = min(bestCost, costs[i])
		}
	}
	best := -1
	for i := range types {
		if costs[i] <= bestCost*(1+efficiencySlack) && (best < 0 || covers[i] > covers[best]) {
			best = i
		}
	}
	if best < 0 {
		return types
	}
	limit := prices[best]
	out := make([]*InstanceType, 0, len(types))
	for i, it := range types {
		if prices[i] <= limit {
			out = append(out, it)
		}
	}
	if !minValuesMet(out, reqs) {
		return types
	}
	return out
}

// efficiencySlack is how much dearer than the most efficient type a larger
// type may be and still be preferred.
const efficiencySlack = 0.03

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
