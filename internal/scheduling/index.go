package scheduling

// capacityIndex finds, in target order, the targets whose free CPU,
// memory and pod slots could take a pod: a segment tree of per-range
// maxima, so first-fit skips full targets in logarithmic time.
type capacityIndex struct {
	size int // leaves, a power of two
	n    int // targets indexed
	free [3][]int64
}

var indexedResources = [3]int{cpuIndex, memoryIndex, podsIndex}

func (x *capacityIndex) grow() {
	size := max(1, 2*x.size)
	old := x.free
	for d := range x.free {
		x.free[d] = make([]int64, 2*size)
		for i := range x.free[d] {
			x.free[d][i] = -1
		}
	}
	oldSize := x.size
	x.size = size
	for i := 0; i < x.n; i++ {
		for d := range x.free {
			x.free[d][size+i] = old[d][oldSize+i]
		}
	}
	for i := size - 1; i >= 1; i-- {
		for d := range x.free {
			x.free[d][i] = max(x.free[d][2*i], x.free[d][2*i+1])
		}
	}
}

// add appends a target with free capacity and returns its position.
func (x *capacityIndex) add(free Resources) int {
	if x.n == x.size {
		x.grow()
	}
	x.n++
	x.set(x.n-1, free)
	return x.n - 1
}

// set records a target's free capacity.
func (x *capacityIndex) set(i int, free Resources) {
	for d, r := range indexedResources {
		j := x.size + i
		x.free[d][j] = free[r]
		for j /= 2; j >= 1; j /= 2 {
			x.free[d][j] = max(x.free[d][2*j], x.free[d][2*j+1])
		}
	}
}

// next returns the first position at or after from whose free capacity
// covers need in CPU, memory and pods, or -1.
func (x *capacityIndex) next(from int, need Resources) int {
	if from >= x.n {
		return -1
	}
	return x.search(1, 0, x.size, from, need)
}

func (x *capacityIndex) search(node, lo, hi, from int, need Resources) int {
	if hi <= from {
		return -1
	}
	for d, r := range indexedResources {
		if x.free[d][node] < need[r] {
			return -1
		}
	}
	if hi-lo == 1 {
		if lo >= x.n {
			return -1
		}
		return lo
	}
	mid := (lo + hi) / 2
	if i := x.search(2*node, lo, mid, from, need); i >= 0 {
		return i
	}
	return x.search(2*node+1, mid, hi, from, need)
}
