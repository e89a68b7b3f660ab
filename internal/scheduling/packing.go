package scheduling

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Packing interchangeable pods. Pods with no placement constraint beyond
// their requests and node requirements can go on any node of their pool
// that has room, so the cheapest set of nodes for them is a cutting-stock
// problem: node kinds are instance types with prices, items are the
// distinct request vectors with their counts. It is solved as the
// configuration linear program of Gilmore and Gomory: a column is a
// pattern (an instance type and how many pods of each request vector one
// node of it holds); column generation adds patterns whose reduced cost at
// the current dual prices is negative, found per instance type by a
// bounded branch-and-bound knapsack. The LP's value bounds any plan from
// below; rounding its solution down gives whole nodes whose price is at
// most that bound, and the few pods left over are packed by the greedy
// first fit.

// packItem is a request vector and how many pods have it.
type packItem struct {
	requests Resources
	count    int
}

// packItems counts the distinct requests, in order of first appearance.
func packItems(requests []Resources) []packItem {
	index := map[Resources]int{}
	var items []packItem
	for _, r := range requests {
		i, ok := index[r]
		if !ok {
			i = len(items)
			index[r] = i
			items = append(items, packItem{requests: r})
		}
		items[i].count++
	}
	return items
}

// packTypes makes bins of a pool's instance types: allocatable less the
// DaemonSet overhead, at the cheapest offering reqs allow plus
// nodeTieBreak.
func (pl *pool) packTypes(types []*InstanceType, reqs Requirements) []packType {
	out := make([]packType, len(types))
	for i, it := range types {
		o, _ := it.CheapestOffering(reqs)
		out[i] = packType{room: it.Allocatable.Sub(pl.daemon), price: o.Price + nodeTieBreak}
	}
	return out
}

// nodeTieBreak is what the packing adds to every node's hourly price: far
// below any difference of price EC2 has (a ten-thousandth of a dollar),
// it makes the fewer nodes win where two packings cost the same (two
// m5.large or one m5.xlarge): fewer kubelets, fewer addresses, less for
// the API server to watch.
const nodeTieBreak = 1e-7

// packType is an instance type as a bin: the room pods have on one node
// and its price.
type packType struct {
	room  Resources
	price float64
}

// packNode is one node of the packing: a type and how many pods of each
// item it holds.
type packNode struct {
	typ    int
	counts []int
}

// Limits that keep a packing fast whatever the input: beyond maxPackItems
// distinct request vectors the greedy first fit places the pods alone.
const (
	maxPackItems      = 64
	maxPackIterations = 60
	// packColumnsPerRound is how many improving patterns one round adds.
	packColumnsPerRound = 10
	// knapsackNodes bounds one pass of a knapsack search while planning;
	// beyond it the best pattern found so far is used and the bound stays
	// valid through the relaxation. boundKnapsackNodes is the bound's.
	knapsackNodes      = 10000
	boundKnapsackNodes = 200000
	// knapsackGap is how close to the best a pattern must be proved: a
	// pattern within it of the optimum serves column generation as well.
	knapsackGap = 1e-3
)

// packer holds one packing problem.
type packer struct {
	items []packItem
	types []packType
	// dims are the resources any item requests.
	dims []int
	// typeIndex maps the types kept to the caller's.
	typeIndex []int
	// nodeLimit bounds each knapsack search pass.
	nodeLimit int
	// patterns are the columns generated so far; seen dedupes them.
	patterns []packNode
	seen     map[string]bool
}

// pack returns whole nodes for as many of the items' pods as the rounded
// LP solution places, and the LP's lower bound on the price of any plan
// for all of them. ok is false when the problem is out of the packer's
// scope (too many items, an item no type fits) or the LP fails; then the
// caller packs greedily.
func pack(items []packItem, types []packType) (nodes []packNode, bound float64, ok bool) {
	pk, ok := newPacker(items, types)
	if !ok {
		return nil, 0, false
	}
	left := make([]int, len(items))
	for i, it := range items {
		left[i] = it.count
	}
	for first := true; ; first = false {
		for i := range pk.items {
			pk.items[i].count = left[i]
		}
		x, b, ok := pk.generate()
		if !ok {
			// A failed first LP leaves everything to the first fit; a
			// failed later one only what is left.
			return nodes, bound, !first
		}
		if first {
			bound = b
		}
		took := false
		for p, pat := range pk.patterns {
			for n := int(math.Floor(x[p] + 1e-9)); n > 0; n-- {
				node, any := pk.take(pat, left)
				if !any {
					break
				}
				nodes = append(nodes, node)
				took = true
			}
		}
		if !took {
			// Every pattern is used fractionally: open the most used one
			// for what is left of its pods, on the cheapest type that
			// holds them.
			best := 0
			for p := range x {
				if x[p] > x[best] {
					best = p
				}
			}
			node, any := pk.take(pk.patterns[best], left)
			if !any {
				return nodes, bound, true
			}
			node.typ = pk.typeIndex[pk.cheapestFor(node.counts)]
			nodes = append(nodes, node)
		}
	}
}

// take makes a node of a pattern with at most the pods left, and counts
// them off; any is false when the pattern holds none of them.
func (pk *packer) take(pat packNode, left []int) (node packNode, any bool) {
	node = packNode{typ: pk.typeIndex[pat.typ], counts: make([]int, len(left))}
	for i, c := range pat.counts {
		node.counts[i] = min(c, left[i])
		left[i] -= node.counts[i]
		any = any || node.counts[i] > 0
	}
	return node, any
}

// cheapestFor returns the cheapest type that holds the counts.
func (pk *packer) cheapestFor(counts []int) int {
	var need Resources
	for i, c := range counts {
		for range c {
			need = need.Add(pk.items[i].requests)
		}
	}
	best := -1
	for t, ty := range pk.types {
		if need.Fits(ty.room) && (best < 0 || ty.price < pk.types[best].price) {
			best = t
		}
	}
	return best
}

func newPacker(items []packItem, types []packType) (*packer, bool) {
	if len(items) == 0 || len(items) > maxPackItems {
		return nil, false
	}
	pk := &packer{items: slices.Clone(items), seen: map[string]bool{}, nodeLimit: knapsackNodes}
	var used Resources
	for _, it := range items {
		used = used.Max(it.requests)
	}
	for d := range used {
		if used[d] > 0 {
			pk.dims = append(pk.dims, d)
		}
	}
	pk.types, pk.typeIndex = pk.undominated(types)
	// Start from one single-item pattern per item, on the type that
	// holds that item most cheaply.
	for i, it := range items {
		best, bestCost, bestN := -1, math.Inf(1), 0
		for t, ty := range pk.types {
			n := min(it.count, pk.fitCount(it.requests, ty.room))
			if n > 0 && ty.price/float64(n) < bestCost {
				best, bestCost, bestN = t, ty.price/float64(n), n
			}
		}
		if best < 0 {
			return nil, false
		}
		counts := make([]int, len(items))
		counts[i] = bestN
		pk.add(packNode{typ: best, counts: counts})
	}
	return pk, true
}

// undominated drops types that fit no item and types another type beats:
// no dearer and at least as roomy in every resource the items use. The
// first of equal types stays.
func (pk *packer) undominated(types []packType) ([]packType, []int) {
	var out []packType
	var index []int
	for i, a := range types {
		fitsAny := false
		for _, it := range pk.items {
			if it.requests.Fits(a.room) {
				fitsAny = true
				break
			}
		}
		if !fitsAny {
			continue
		}
		dominated := false
		for j, b := range types {
			if i == j || b.price > a.price {
				continue
			}
			roomier, equal := true, b.price == a.price
			for _, d := range pk.dims {
				if b.room[d] < a.room[d] {
					roomier = false
					break
				}
				equal = equal && b.room[d] == a.room[d]
			}
			if roomier && (!equal || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, a)
			index = append(index, i)
		}
	}
	return out, index
}

// fitCount is how many pods of requests fit in room.
func (pk *packer) fitCount(requests, room Resources) int {
	n := math.MaxInt
	for _, d := range pk.dims {
		if requests[d] > 0 {
			n = min(n, int(room[d]/requests[d]))
		}
	}
	return max(n, 0)
}

func (pk *packer) add(p packNode) bool {
	key := strconv.Itoa(p.typ) + ":" + intsKey(p.counts)
	if pk.seen[key] {
		return false
	}
	pk.seen[key] = true
	pk.patterns = append(pk.patterns, p)
	return true
}

func intsKey(v []int) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ',')
	}
	return string(b)
}

// generate adds patterns until none improves the LP and returns the LP
// solution and a lower bound on the price of any plan: the best over the
// rounds of the dual value, scaled down by how far the knapsack
// relaxations say any type could still exceed its price.
func (pk *packer) generate() (x []float64, bound float64, ok bool) {
	for range maxPackIterations {
		x, duals, ok := pk.solve()
		if !ok {
			return nil, 0, false
		}
		type candidate struct {
			node    packNode
			reduced float64
		}
		var found []candidate
		worst := 1.0
		for t, r := range pk.priceAll(duals) {
			ty := pk.types[t]
			worst = max(worst, r.upper/ty.price)
			if reduced := (ty.price - r.value) / ty.price; reduced < -1e-9 {
				found = append(found, candidate{packNode{typ: t, counts: r.counts}, reduced})
			}
		}
		added := 0
		sort.SliceStable(found, func(i, j int) bool { return found[i].reduced < found[j].reduced })
		for _, c := range found {
			if added == packColumnsPerRound {
				break
			}
			if pk.add(c.node) {
				added++
			}
		}
		// Every round's duals, scaled to be feasible, give a bound.
		value := 0.0
		for i, it := range pk.items {
			value += duals[i] * float64(it.count)
		}
		bound = max(bound, value/worst)
		if added == 0 {
			return x, bound, true
		}
	}
	x, _, ok = pk.solve()
	return x, bound, ok
}

// solve solves the restricted master LP, min Σ price·λ subject to
// Σ counts·λ ≥ count for every item and λ ≥ 0, and returns λ (how many
// nodes of each pattern) and the dual prices π (what one more pod of each
// item would cost), read from the optimal basis: Bᵀπ = c_B. A degenerate
// solution has fewer positive columns than items; the basis is completed
// with surplus columns, which set those items' π to zero.
func (pk *packer) solve() (x, duals []float64, ok bool) {
	k, p := len(pk.items), len(pk.patterns)
	a := mat.NewDense(k, p+k, nil)
	c := make([]float64, p+k)
	b := make([]float64, k)
	for j, pat := range pk.patterns {
		c[j] = pk.types[pat.typ].price
		for i, n := range pat.counts {
			a.Set(i, j, float64(n))
		}
	}
	for i, it := range pk.items {
		a.Set(i, p+i, -1)
		b[i] = float64(it.count)
	}
	// The first patterns hold one item each: a feasible starting basis.
	start := make([]int, k)
	for i := range start {
		start[i] = i
	}
	_, x, err := lp.Simplex(c, a, b, 1e-10, start)
	if err != nil {
		return nil, nil, false
	}
	pi, ok := dualPrices(a, c, x, k, p)
	if !ok {
		return nil, nil, false
	}
	duals = make([]float64, k)
	for i := range duals {
		duals[i] = max(0, pi.AtVec(i))
	}
	return x[:p], duals, true
}

// dualPrices solves Bᵀπ = c_B for the optimal basis: the positive columns
// of x, completed with surplus columns (the last k of a) while fewer than k.
func dualPrices(a *mat.Dense, c, x []float64, k, p int) (*mat.VecDense, bool) {
	var basis []int
	var ortho [][]float64
	independent := func(j int) bool {
		v := mat.Col(nil, j, a)
		for _, q := range ortho {
			floats.AddScaled(v, -floats.Dot(q, v), q)
		}
		norm := floats.Norm(v, 2)
		if norm < 1e-9 {
			return false
		}
		floats.Scale(1/norm, v)
		ortho = append(ortho, v)
		return true
	}
	for j := range x {
		if x[j] > 1e-9 && len(basis) < k && independent(j) {
			basis = append(basis, j)
		}
	}
	for i := 0; i < k && len(basis) < k; i++ {
		if x[p+i] <= 1e-9 && independent(p+i) {
			basis = append(basis, p+i)
		}
	}
	if len(basis) < k {
		return nil, false
	}
	bt := mat.NewDense(k, k, nil)
	cb := mat.NewVecDense(k, nil)
	for r, j := range basis {
		for i := range k {
			bt.Set(r, i, a.At(i, j))
		}
		cb.SetVec(r, c[j])
	}
	pi := mat.NewVecDense(k, nil)
	if err := pi.SolveVec(bt, cb); err != nil {
		return nil, false
	}
	return pi, true
}

// priced is a knapsack's answer for one type.
type priced struct {
	value, upper float64
	counts       []int
}

// priceAll solves the knapsack of every type at the dual prices, on as
// many goroutines as there are processors; the answers do not depend on
// how the work is split.
func (pk *packer) priceAll(duals []float64) []priced {
	out := make([]priced, len(pk.types))
	workers := min(runtime.GOMAXPROCS(0), len(pk.types))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for t := w; t < len(pk.types); t += workers {
				r := &out[t]
				r.value, r.counts, r.upper = pk.knapsack(duals, pk.types[t].room)
			}
		})
	}
	wg.Wait()
	return out
}

// knapsack finds the most valuable set of pods for one node of room,
// valuing a pod of item i at values[i], at most count of each, by depth-
// first branch and bound over the items, densest first, most pods first.
// It returns the value, the counts and an upper bound on the best value
// (within knapsackGap of it when the search finished).
func (pk *packer) knapsack(values []float64, room Resources) (float64, []int, float64) {
	ks := &knapsack{pk: pk, values: values, best: make([]int, len(pk.items)), cur: make([]int, len(pk.items))}
	for i, it := range pk.items {
		if values[i] > 1e-12 && it.count > 0 && it.requests.Fits(room) {
			ks.order = append(ks.order, i)
		}
	}
	// Resources are measured in shares of the node, so that the
	// multipliers of all of them move at the same pace.
	dims := len(pk.dims)
	ks.weight = make([]float64, len(pk.items)*dims)
	for i, it := range pk.items {
		for e, d := range pk.dims {
			if room[d] > 0 {
				ks.weight[i*dims+e] = float64(it.requests[d]) / float64(room[d])
			}
		}
	}
	capacity := make([]float64, dims)
	for e, d := range pk.dims {
		if room[d] > 0 {
			capacity[e] = 1
		}
	}
	// Densest first: value per share of the node the pod takes.
	density := make([]float64, len(pk.items))
	for _, i := range ks.order {
		share := 0.0
		for e := range dims {
			if capacity[e] > 0 {
				share += ks.weight[i*dims+e] / capacity[e]
			}
		}
		density[i] = values[i] / share
	}
	sort.SliceStable(ks.order, func(a, b int) bool { return density[ks.order[a]] > density[ks.order[b]] })
	densest := slices.Clone(ks.order)
	ks.relax(capacity)
	// One row of remaining room per search depth.
	ks.rem = make([]float64, (len(ks.order)+1)*dims)
	copy(ks.rem, capacity)
	upper := ks.bound(0)
	// Search in the relaxation's order, then, when that did not finish,
	// densest first: the two find good patterns for different nodes.
	for _, order := range [][]int{slices.Clone(ks.order), densest} {
		ks.order, ks.nodes = order, 0
		ks.suffixGain()
		ks.search(0, 0)
		if ks.nodes < ks.pk.nodeLimit {
			upper = min(upper, ks.bestValue*(1+knapsackGap))
			break
		}
	}
	return ks.bestValue, ks.best, max(upper, ks.bestValue)
}

type knapsack struct {
	pk     *packer
	values []float64
	order  []int
	// weight holds each item's requests in the packer's dimensions.
	weight []float64
	// mu prices each resource (Lagrange multipliers of the capacity
	// constraints); gain[j] is what the items from depth j on are worth
	// above their price at mu.
	mu, gain  []float64
	rem       []float64
	cur, best []int
	bestValue float64
	nodes     int
}

// relax chooses the multipliers: for any mu ≥ 0, mu·room plus each
// item's count times its value above its price at mu bounds the value
// of the node (the Lagrangian relaxation of the capacity constraints).
// Coordinate descent from the best single-resource price makes that
// bound tight; any mu it stops at is valid.
func (ks *knapsack) relax(capacity []float64) {
	dims := len(capacity)
	ks.mu = make([]float64, dims)
	bestDim, bestBound := -1, math.Inf(1)
	for e := range dims {
		rate := 0.0
		for _, i := range ks.order {
			if w := ks.weight[i*dims+e]; w > 0 {
				rate = max(rate, ks.values[i]/w)
			} else {
				rate = math.Inf(1)
			}
		}
		if b := rate * capacity[e]; b < bestBound {
			bestDim, bestBound = e, b
		}
	}
	if bestDim >= 0 && !math.IsInf(bestBound, 1) {
		ks.mu[bestDim] = bestBound / capacity[bestDim]
	}
	ks.descend(capacity, 4)
	ks.subgradient(capacity, 60)
	ks.descend(capacity, 2)
	// Search the items in the order of their value over their price at
	// mu: the first dive then follows the relaxation's solution.
	ratio := make([]float64, len(ks.pk.items))
	for _, i := range ks.order {
		cost := 0.0
		for e := range dims {
			cost += ks.mu[e] * ks.weight[i*dims+e]
		}
		ratio[i] = ks.values[i] / max(cost, 1e-300)
	}
	sort.SliceStable(ks.order, func(a, b int) bool { return ratio[ks.order[a]] > ratio[ks.order[b]] })
	ks.suffixGain()
}

// suffixGain computes gain for the current order.
func (ks *knapsack) suffixGain() {
	dims := len(ks.mu)
	ks.gain = make([]float64, len(ks.order)+1)
	for j := len(ks.order) - 1; j >= 0; j-- {
		i := ks.order[j]
		r := ks.values[i]
		for e := range dims {
			r -= ks.mu[e] * ks.weight[i*dims+e]
		}
		ks.gain[j] = ks.gain[j+1] + float64(ks.pk.items[i].count)*max(0, r)
	}
}

// lagrangian is the bound at mu for the whole node, and its subgradient.
func (ks *knapsack) lagrangian(capacity, mu, grad []float64) float64 {
	dims := len(capacity)
	value := 0.0
	for e := range dims {
		value += mu[e] * capacity[e]
		grad[e] = capacity[e]
	}
	for _, i := range ks.order {
		r := ks.values[i]
		for e := range dims {
			r -= mu[e] * ks.weight[i*dims+e]
		}
		if r > 0 {
			n := float64(ks.pk.items[i].count)
			value += n * r
			for e := range dims {
				grad[e] -= n * ks.weight[i*dims+e]
			}
		}
	}
	return value
}

// subgradient lowers the bound by projected subgradient steps of Polyak's
// length towards the value of a greedy fill, keeping the best mu seen.
func (ks *knapsack) subgradient(capacity []float64, rounds int) {
	dims := len(capacity)
	target := ks.greedy(capacity)
	mu := slices.Clone(ks.mu)
	grad := make([]float64, dims)
	best := ks.lagrangian(capacity, ks.mu, grad)
	for range rounds {
		value := ks.lagrangian(capacity, mu, grad)
		if value < best {
			best = value
			copy(ks.mu, mu)
		}
		norm := floats.Dot(grad, grad)
		if norm == 0 || value <= target {
			return
		}
		step := (value - target) / norm
		for e := range dims {
			mu[e] = max(0, mu[e]-step*grad[e])
		}
	}
}

// greedy is the value of filling the node densest first, each item as
// much as fits.
func (ks *knapsack) greedy(capacity []float64) float64 {
	dims := len(capacity)
	rem := slices.Clone(capacity)
	value := 0.0
	for _, i := range ks.order {
		n := ks.pk.items[i].count
		for e := range dims {
			if w := ks.weight[i*dims+e]; w > 0 {
				n = min(n, int(rem[e]/w))
			}
		}
		for e := range dims {
			rem[e] -= float64(n) * ks.weight[i*dims+e]
		}
		value += float64(n) * ks.values[i]
	}
	return value
}

// descend runs sweeps of coordinate descent on the multipliers.
func (ks *knapsack) descend(capacity []float64, sweeps int) {
	dims := len(capacity)
	type breakpoint struct{ at, weight float64 }
	points := make([]breakpoint, 0, len(ks.order))
	for range sweeps {
		for e := range dims {
			// Minimise t·capacity[e] + Σ n·max(0, r − t·w) over t ≥ 0,
			// with r an item's value less its price in the other
			// resources: the slope rises by n·w at t = r/w.
			points = points[:0]
			slope := capacity[e]
			for _, i := range ks.order {
				r := ks.values[i]
				for f := range dims {
					if f != e {
						r -= ks.mu[f] * ks.weight[i*dims+f]
					}
				}
				w := ks.weight[i*dims+e]
				if r <= 0 || w <= 0 {
					continue
				}
				n := float64(ks.pk.items[i].count) * w
				slope -= n
				points = append(points, breakpoint{r / w, n})
			}
			t := 0.0
			if slope < 0 {
				sort.Slice(points, func(a, b int) bool { return points[a].at < points[b].at })
				for _, p := range points {
					slope += p.weight
					if slope >= 0 {
						t = p.at
						break
					}
				}
			}
			ks.mu[e] = t
		}
	}
}

// bound is the most the items from depth j on could add in the room left
// at that depth.
func (ks *knapsack) bound(j int) float64 {
	dims := len(ks.mu)
	b := ks.gain[j]
	for e, r := range ks.rem[j*dims : (j+1)*dims] {
		b += ks.mu[e] * r
	}
	return b
}

func (ks *knapsack) search(j int, value float64) {
	ks.nodes++
	if value > ks.bestValue {
		ks.bestValue = value
		copy(ks.best, ks.cur)
	}
	if j == len(ks.order) || ks.nodes >= ks.pk.nodeLimit || value+ks.bound(j) <= ks.bestValue*(1+knapsackGap) {
		return
	}
	dims := len(ks.mu)
	rem, next := ks.rem[j*dims:(j+1)*dims], ks.rem[(j+1)*dims:(j+2)*dims]
	i := ks.order[j]
	w := ks.weight[i*dims : (i+1)*dims]
	n := ks.pk.items[i].count
	for e := range dims {
		if w[e] > 0 {
			n = min(n, int(rem[e]/w[e]))
		}
	}
	for c := n; c >= 0 && ks.nodes < ks.pk.nodeLimit; c-- {
		for e := range dims {
			next[e] = rem[e] - float64(c)*w[e]
		}
		ks.cur[i] = c
		ks.search(j+1, value+float64(c)*ks.values[i])
	}
	ks.cur[i] = 0
}

// PackingLowerBound is a lower bound on the hourly price of any set of new
// nodes of the first NodePool that holds all the pods (DaemonSet overhead
// included): the configuration LP's dual value, certified against every
// instance type by the knapsack relaxations. It is far tighter than a
// fractional cover of total CPU and memory, because it knows that pods
// are whole and that each node has its own allocatable and pod slots. ok
// is false when the pods have more distinct requests than the packer
// takes, or one fits no instance type.
func PackingLowerBound(in Input) (float64, bool) {
	if len(in.NodePools) == 0 {
		return 0, false
	}
	pl := newPool(in.NodePools[0], in.DaemonSets, false)
	requests := make([]Resources, len(in.Pods))
	for i, pod := range in.Pods {
		requests[i], _ = PodRequests(pod)
	}
	pk, ok := newPacker(packItems(requests), pl.packTypes(pl.launchable, pl.Requirements))
	if !ok {
		return 0, false
	}
	pk.nodeLimit = boundKnapsackNodes
	_, bound, ok := pk.generate()
	return bound, ok && bound > 0
}
