package scheduling

import (
	"math"
	"testing"
)

// Two B pods (1 CPU, 3Gi) fit only the large type, which then has room for
// two A pods (1 CPU, 1Gi); the other two A pods are cheapest on the small
// type. The LP would buy half a large node for them (0.75 < 1.0); whole
// nodes cost 2.5, and that is what the packing must find.
func TestPackFindsTheCheapestWholeNodes(t *testing.T) {
	items := []packItem{
		{requests: MustParseResources("cpu=1,memory=1Gi,pods=1"), count: 4},
		{requests: MustParseResources("cpu=1,memory=3Gi,pods=1"), count: 2},
	}
	types := []packType{
		{room: MustParseResources("cpu=2,memory=2Gi,pods=10"), price: 1.0},
		{room: MustParseResources("cpu=4,memory=8Gi,pods=10"), price: 1.5},
		// Dominated: dearer and no roomier than the large type.
		{room: MustParseResources("cpu=4,memory=8Gi,pods=10"), price: 1.6},
	}
	nodes, bound, ok := pack(items, types)
	if !ok {
		t.Fatal("the packing gave up")
	}
	price, placed := 0.0, make([]int, len(items))
	for _, n := range nodes {
		var need Resources
		for i, c := range n.counts {
			placed[i] += c
			for range c {
				need = need.Add(items[i].requests)
			}
		}
		if !need.Fits(types[n.typ].room) {
			t.Errorf("node of type %d holds %s, more than its room %s", n.typ, need, types[n.typ].room)
		}
		price += types[n.typ].price
	}
	if placed[0] != 4 || placed[1] != 2 {
		t.Errorf("every pod should be placed once: %v", placed)
	}
	if math.Abs(price-2.5) > 1e-9 {
		t.Errorf("the cheapest whole nodes cost 2.5, the packing bought %v: %+v", price, nodes)
	}
	if bound > 2.25+1e-9 || bound < 2.0 {
		t.Errorf("the LP bound is 2.25 (one large node and half another); got %v", bound)
	}
}

// Too many distinct requests, or one no type fits, leave the pods to the
// first fit rather than to a partial packing.
func TestPackDeclinesWhatItCannotPack(t *testing.T) {
	room := []packType{{room: MustParseResources("cpu=2,memory=2Gi,pods=10"), price: 1}}
	if _, _, ok := pack([]packItem{{requests: MustParseResources("cpu=4,memory=1Gi,pods=1"), count: 1}}, room); ok {
		t.Error("an item no type fits should decline the packing")
	}
	many := make([]packItem, maxPackItems+1)
	for i := range many {
		many[i] = packItem{requests: Resources{cpuIndex: int64(10 + i), podsIndex: 1}, count: 1}
	}
	if _, _, ok := pack(many, room); ok {
		t.Errorf("more than %d distinct requests should decline the packing", maxPackItems)
	}
}

// The knapsack's answer is the best set of pods for one node: checked
// against every combination on a small node.
func TestKnapsackIsExactOnSmallNodes(t *testing.T) {
	items := []packItem{
		{requests: MustParseResources("cpu=100m,memory=100Mi,pods=1"), count: 30},
		{requests: MustParseResources("cpu=1500m,memory=2Gi,pods=1"), count: 30},
		{requests: MustParseResources("cpu=500m,memory=512Mi,pods=1"), count: 30},
		{requests: MustParseResources("cpu=250m,memory=1Gi,pods=1"), count: 3},
	}
	room := MustParseResources("cpu=1930m,memory=3246Mi,pods=17")
	pk, ok := newPacker(items, []packType{{room: room, price: 1}})
	if !ok {
		t.Fatal("no packer")
	}
	values := []float64{0.001, 0.013, 0.004, 0.0035}
	got, counts, upper := pk.knapsack(values, room)
	best := 0.0
	var walk func(i int, need Resources, value float64)
	walk = func(i int, need Resources, value float64) {
		if !need.Fits(room) {
			return
		}
		if i == len(items) {
			best = max(best, value)
			return
		}
		for c := 0; c <= items[i].count; c++ {
			var more Resources
			for range c {
				more = more.Add(items[i].requests)
			}
			if !need.Add(more).Fits(room) {
				break
			}
			walk(i+1, need.Add(more), value+float64(c)*values[i])
		}
	}
	walk(0, Resources{}, 0)
	if got < best*(1-knapsackGap) {
		t.Errorf("knapsack found %v (%v), the best is %v", got, counts, best)
	}
	if upper < best {
		t.Errorf("the upper bound %v is below the best value %v", upper, best)
	}
}
