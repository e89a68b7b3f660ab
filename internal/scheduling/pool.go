package scheduling

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// pool is a NodePool with what the solver derives from it once.
type pool struct {
	*NodePool
	// launchable instance types have an AMI and an offering, cheapest
	// first; excludedByAMI have no AMI of their architecture.
	launchable, excludedByAMI []*InstanceType
	// reserved are the capacity reservations the pool can launch into.
	reserved []reservedSlot
	// providedKeys are the labels instance types supply.
	providedKeys map[string]bool
	daemon       Resources
	// daemonPorts are the host ports the DaemonSets' pods take on every
	// node of the pool.
	daemonPorts []hostPort
	limits      Resources
	limited     [numResources]bool
	nodesLimit  int64
	used        Resources
	nodes       int64
	claims      int
	// committed is the capacity accounted for each claim.
	committed map[*target]Resources
	cache     map[string]cachedCandidates
	// domainCache caches domainValues.
	domainCache map[string][]string
	// shapeCache caches shapesFor.
	shapeCache map[string]*shapes
	// relaxMinValues: a NodeClaim opens on the types that fit even when
	// they offer fewer values than minValues asks (Policy.RelaxMinValues).
	relaxMinValues bool
}

type cachedCandidates struct {
	types []*InstanceType
	why   string
	// noAMI: types meet the requirements, but the class has no AMI for them.
	noAMI bool
}

func newPool(np *NodePool, daemonSets []*appsv1.DaemonSet, relaxMinValues bool) *pool {
	pl := &pool{NodePool: np, relaxMinValues: relaxMinValues, providedKeys: map[string]bool{}, nodesLimit: -1, committed: map[*target]Resources{}, cache: map[string]cachedCandidates{}, shapeCache: map[string]*shapes{}}
	pl.reserved = reservedSlots(np)
	price := map[*InstanceType]float64{}
	for _, it := range np.InstanceTypes {
		for k := range it.Requirements {
			pl.providedKeys[k] = true
		}
		o, ok := it.CheapestOffering(np.Requirements)
		if !ok {
			continue
		}
		if !hasAMI(it, np.AMIs) {
			pl.excludedByAMI = append(pl.excludedByAMI, it)
			continue
		}
		price[it] = o.Price
		pl.launchable = append(pl.launchable, it)
	}
	sort.SliceStable(pl.launchable, func(i, j int) bool {
		a, b := pl.launchable[i], pl.launchable[j]
		if price[a] != price[b] {
			return price[a] < price[b]
		}
		return a.Name < b.Name
	})
	pl.addDaemonSets(daemonSets)
	for name := range np.Limits {
		if name == "nodes" {
			pl.nodesLimit, _ = limitOf(np.Limits, name)
			continue
		}
		if i := resourceIndex(name); i >= 0 {
			pl.limits[i], _ = limitOf(np.Limits, name)
			pl.limited[i] = true
		}
	}
	usage, _ := ParseResources(np.Usage)
	pl.used = usage
	if n, ok := limitOf(np.Usage, "nodes"); ok {
		pl.nodes = n
	}
	return pl
}

func hasAMI(it *InstanceType, amis []AMI) bool {
	for _, ami := range amis {
		if typeCompatible(it, ami.Requirements) {
			return true
		}
	}
	return false
}

// provides reports whether instance types supply a label.
func (pl *pool) provides(key string) bool { return pl.providedKeys[key] }

// withinLimits reports whether capacity more fits the pool's limits.
func (pl *pool) withinLimits(more Resources) bool {
	total := pl.used.Add(more)
	for i, limited := range pl.limited {
		if limited && total[i] > pl.limits[i] {
			return false
		}
	}
	return true
}

// account records the capacity of a claim's cheapest instance type.
func (pl *pool) account(t *target, types []*InstanceType) {
	pl.used = pl.used.Sub(pl.committed[t]).Add(types[0].Capacity)
	pl.committed[t] = types[0].Capacity
}

// allThatFit are the instance types a planned NodeClaim lists: those it
// was sized with and, up to FallbackTypes in all, the cheapest other
// launchable types that meet its requirements, hold its pods and
// DaemonSets and keep the pool within its limits, so a launch has types
// to fall back on when the cheapest has no capacity (EC2 takes the
// cheapest available).
func (pl *pool) allThatFit(t *target) []*InstanceType {
	out := slices.Clone(t.types)
	if len(out) >= FallbackTypes {
		return out
	}
	key := fingerprint(t.reqs)
	cached, ok := pl.cache[key]
	if !ok {
		cached = pl.compatible(t.reqs)
		pl.cache[key] = cached
	}
	have := make(map[*InstanceType]bool, len(out))
	for _, it := range out {
		have[it] = true
	}
	for _, it := range cached.types { // cheapest first
		if len(out) >= FallbackTypes {
			break
		}
		if !have[it] && t.requests.Fits(it.Allocatable) && pl.withinLimits(it.Capacity.Sub(pl.committed[t])) {
			out = append(out, it)
		}
	}
	return out
}

// refusal types why candidatesByKey found no instance type for requests
// under the key's requirements (why is what it said).
func (pl *pool) refusal(key string, requests Resources, why string) Refusal {
	r := Refusal{Reason: why}
	cached := pl.cache[key]
	if cached.noAMI {
		r.NoAMI = true
		return r
	}
	if len(cached.types) == 0 {
		return r
	}
	need := pl.daemon.Add(requests)
	var largest Resources
	for _, it := range cached.types {
		largest = largest.Max(it.Allocatable)
	}
	if !slices.ContainsFunc(cached.types, func(it *InstanceType) bool { return need.Fits(it.Allocatable) }) {
		r.TooLarge = &Shortfall{Need: need, Largest: largest, DaemonSets: pl.daemon}
		return r
	}
	r.LimitReached = !slices.ContainsFunc(cached.types, func(it *InstanceType) bool {
		return need.Fits(it.Allocatable) && pl.withinLimits(it.Capacity)
	})
	return r
}

// candidatesByKey returns the launchable instance types that meet reqs and fit
// requests with the DaemonSet overhead, or why there are none.
func (pl *pool) candidatesByKey(key string, reqs Requirements, requests Resources) ([]*InstanceType, string) {
	cached, ok := pl.cache[key]
	if !ok {
		cached = pl.compatible(reqs)
		pl.cache[key] = cached
	}
	if len(cached.types) == 0 {
		return nil, cached.why
	}
	need := pl.daemon.Add(requests)
	var out []*InstanceType
	var largest Resources
	anyFits := false
	for _, it := range cached.types {
		largest = largest.Max(it.Allocatable)
		if need.Fits(it.Allocatable) {
			anyFits = true
			if pl.withinLimits(it.Capacity) {
				out = append(out, it)
			}
		}
	}
	if len(out) == 0 {
		if !anyFits { // (largest is each resource's most, perhaps of different types)
			none := ""
			if missing := need.Missing(largest); len(missing) > 0 {
				names := make([]string, len(missing))
				for i, m := range missing {
					names[i] = string(m)
				}
				none = "; none has " + strings.Join(names, ", ")
			}
			return nil, fmt.Sprintf("no instance type fits %s (the largest allows %s%s)", describeNeed(need, pl.daemon), describeAllocatable(largest), none)
		}
		if negative := pl.negativeLimits(); negative != "" {
			return nil, fmt.Sprintf("the NodePool's limits %s are below zero, so it admits no node: set them to 0 or more, or remove them", negative)
		}
		return nil, fmt.Sprintf("limits reached (%s in use of %s)", cmp.Or(pl.used.String(), "nothing"), pl.limitsString())
	}
	if !pl.relaxMinValues && !minValuesMet(out, reqs) {
		return nil, "fewer instance types than minValues requires: " + describeMinValues(out, reqs)
	}
	return out, ""
}

// compatible filters the launchable instance types by requirements.
func (pl *pool) compatible(reqs Requirements) cachedCandidates {
	var out []*InstanceType
	for _, it := range pl.launchable {
		if typeCompatible(it, reqs) {
			out = append(out, it)
		}
	}
	if len(out) > 0 {
		return cachedCandidates{types: out}
	}
	var archs []string
	for _, it := range pl.excludedByAMI {
		if typeCompatible(it, reqs) {
			archs = append(archs, it.Requirements[LabelArch].Values()...)
		}
	}
	if len(archs) > 0 {
		return cachedCandidates{why: fmt.Sprintf("no AMI for %s in EC2NodeClass %s", strings.Join(uniqueSorted(archs), ", "), pl.NodeClass), noAMI: true}
	}
	if len(pl.launchable) == 0 && len(pl.excludedByAMI) == 0 {
		return cachedCandidates{why: "no instance type has an offering that meets the NodePool's requirements"}
	}
	return cachedCandidates{why: "no instance type meets " + describeRequirements(reqs, pl.providedKeys)}
}

// narrow keeps the instance types that still fit need and, when the
// requirements changed, still meet them. A NodeClaim being opened
// (opening) may have fewer than minValues asks when the pool relaxes it;
// one open already keeps the minValues it opened with.
func (pl *pool) narrow(types []*InstanceType, reqs Requirements, need Resources, reqsChanged, opening bool) ([]*InstanceType, bool) {
	// Most attempts fail; find out cheaply, largest types first.
	found := false
	for i := len(types) - 1; i >= 0; i-- {
		if need.Fits(types[i].Allocatable) && (!reqsChanged || typeCompatible(types[i], reqs)) {
			found = true
			break
		}
	}
	if !found {
		return nil, false
	}
	out := make([]*InstanceType, 0, len(types))
	for _, it := range types {
		if need.Fits(it.Allocatable) && (!reqsChanged || typeCompatible(it, reqs)) {
			out = append(out, it)
		}
	}
	if (!opening || !pl.relaxMinValues) && !minValuesMet(out, reqs) {
		return nil, false
	}
	return out, true
}

// typeCompatible reports whether an instance type can meet requirements:
// every label it provides is allowed, and an offering is available in an
// allowed zone and capacity type.
func typeCompatible(it *InstanceType, reqs Requirements) bool {
	if !labelsCompatible(it, reqs) {
		return false
	}
	_, ok := it.CheapestOffering(reqs)
	return ok
}

// labelsCompatible reports whether an instance type's labels meet
// requirements (zone and capacity type aside: those are the offerings').
func labelsCompatible(it *InstanceType, reqs Requirements) bool {
	for key, r := range reqs {
		if key == LabelZone || key == v1.LabelCapacityType {
			continue
		}
		tr, ok := it.Requirements[key]
		if !ok {
			// A label every instance type should carry but this one
			// lacks cannot have the value the requirement asks for.
			if instanceTypeLabel(key) && !r.absentOK {
				return false
			}
			continue
		}
		if v, single := tr.Single(); single {
			if !r.Has(v) {
				return false
			}
		} else if !tr.Intersect(r).Satisfiable() {
			return false
		}
	}
	return true
}

// addDaemonSets counts the DaemonSets whose pods would run on the pool's
// nodes: those tolerating its taints (startup taints go once the node is
// ready, and the DaemonSet's pods run then, so they count whether or not
// they tolerate those) whose node affinity its requirements admit. A
// DaemonSet that runs on every launchable type is overhead of every new
// node; one whose affinity admits only some types is overhead of those
// alone: they are the pool's own copies with that much less allocatable.
func (pl *pool) addDaemonSets(daemonSets []*appsv1.DaemonSet) {
	extra := map[*InstanceType]Resources{}
	for _, ds := range daemonSets {
		p, terms := pl.daemonSetTerms(ds)
		if len(terms) == 0 {
			continue
		}
		pl.daemonPorts = append(pl.daemonPorts, p.hostPorts...)
		runsOn := func(it *InstanceType) bool {
			for _, term := range terms {
				if labelsCompatible(it, term) {
					return true
				}
			}
			return false
		}
		some := slices.ContainsFunc(pl.launchable, func(it *InstanceType) bool { return !runsOn(it) })
		if !some {
			pl.daemon = pl.daemon.Add(p.requests)
			continue
		}
		for _, it := range pl.launchable {
			if runsOn(it) {
				extra[it] = extra[it].Add(p.requests)
			}
		}
	}
	for i, it := range pl.launchable {
		if e, ok := extra[it]; ok {
			cp := *it
			cp.Allocatable = it.Allocatable.Sub(e)
			pl.launchable[i] = &cp
		}
	}
}

// daemonSetTerms are the node affinity terms of a DaemonSet's pods that
// the pool's nodes meet (none when its pods do not run there: they do not
// tolerate the pool's taints, or select other nodes). A node of the pool
// gets the registered and initialized labels once it is up; DaemonSets
// that wait for them still run on it.
func (pl *pool) daemonSetTerms(ds *appsv1.DaemonSet) (*podInfo, []Requirements) {
	reqs := pl.Requirements.Copy()
	reqs.Add(NewRequirement(v1.LabelRegistered, corev1.NodeSelectorOpIn, "true"))
	reqs.Add(NewRequirement(v1.LabelInitialized, corev1.NodeSelectorOpIn, "true"))
	p := newPodInfo(&corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}, false)
	if _, ok := tolerates(p.tolerations, pl.Taints, false); !ok {
		return p, nil
	}
	var terms []Requirements
	for _, term := range p.terms {
		if reqs.Compatible(term, pl.provides) == nil {
			terms = append(terms, term)
		}
	}
	return p, terms
}

// DaemonSetRunsOn reports whether a DaemonSet's pods run on nodes of a
// NodePool (of one of its instance types), as the planner counts their
// overhead there.
func DaemonSetRunsOn(np *NodePool, ds *appsv1.DaemonSet) bool {
	pl := newPool(np, nil, false)
	_, terms := pl.daemonSetTerms(ds)
	for _, it := range pl.launchable {
		for _, term := range terms {
			if labelsCompatible(it, term) {
				return true
			}
		}
	}
	return false
}

// instanceTypeLabel reports whether instance types, not NodePools, set a
// label.
func instanceTypeLabel(key string) bool {
	return strings.HasPrefix(key, "karpenter.k8s.aws/instance-") || key == LabelInstanceType || key == LabelArch || key == LabelOS ||
		key == corev1.LabelWindowsBuild
}

// MinValuesMet reports whether instance types offer as many distinct
// values of each key as its requirement's minValues asks.
func MinValuesMet(types []*InstanceType, reqs Requirements) bool {
	return minValuesMet(types, reqs)
}

func minValuesMet(types []*InstanceType, reqs Requirements) bool {
	for key, r := range reqs {
		if r.MinValues > 0 && distinctValues(types, key) < r.MinValues {
			return false
		}
	}
	return true
}

func distinctValues(types []*InstanceType, key string) int {
	seen := map[string]bool{}
	for _, it := range types {
		if r, ok := it.Requirements[key]; ok {
			for _, v := range r.Values() {
				seen[v] = true
			}
		}
	}
	return len(seen)
}

// relaxMinValues lowers the minValues of reqs to the distinct values
// types offer where they offer fewer, as a NodeClaim opened under
// Policy.RelaxMinValues records them: later pods keep at least as many.
func relaxMinValues(reqs Requirements, types []*InstanceType) {
	for key, r := range reqs {
		if r.MinValues == 0 {
			continue
		}
		if n := distinctValues(types, key); n < r.MinValues {
			relaxed := *r
			relaxed.MinValues = n
			reqs[key] = &relaxed
		}
	}
}

// minValuesRelaxed says which keys a NodeClaim's requirements ask fewer
// values of than the NodePool's do, and how many; "" when none.
func minValuesRelaxed(pool, claim Requirements) string {
	var parts []string
	for _, key := range pool.Keys() {
		if r, c := pool[key], claim[key]; c != nil && r.MinValues > 0 && c.MinValues < r.MinValues {
			parts = append(parts, fmt.Sprintf("%s minValues %d, %d offered", key, r.MinValues, c.MinValues))
		}
	}
	return strings.Join(parts, "; ")
}

// DescribeMinValues says, for each key with minValues, how many values it
// asks and how many the types offer.
func DescribeMinValues(types []*InstanceType, reqs Requirements) string {
	return describeMinValues(types, reqs)
}

func describeMinValues(types []*InstanceType, reqs Requirements) string {
	var parts []string
	for _, key := range reqs.Keys() {
		if r := reqs[key]; r.MinValues > 0 {
			parts = append(parts, fmt.Sprintf("%s needs %d values, %d remain", key, r.MinValues, distinctValues(types, key)))
		}
	}
	return strings.Join(parts, "; ")
}

// negativeLimits are the NodePool's limits below zero, as text; "" when
// none is.
func (pl *pool) negativeLimits() string {
	var parts []string
	for i, limited := range pl.limited {
		if limited && pl.limits[i] < 0 {
			var r Resources
			r[i] = pl.limits[i]
			parts = append(parts, r.String())
		}
	}
	return strings.Join(parts, " ")
}

func (pl *pool) limitsString() string {
	var parts []string
	for i, limited := range pl.limited {
		if limited {
			var r Resources
			r[i] = pl.limits[i]
			parts = append(parts, r.String())
		}
	}
	return strings.Join(parts, " ")
}

// fingerprint is a canonical text of requirements, for caching.
func fingerprint(reqs Requirements) string {
	var b strings.Builder
	for _, k := range reqs.Keys() {
		b.WriteString(reqs[k].String())
		fmt.Fprintf(&b, "|%d;", reqs[k].MinValues)
	}
	return b.String()
}

// describeNeed prints the CPU and memory a pod needs, with DaemonSets.
func describeNeed(need, daemon Resources) string {
	s := fmt.Sprintf("%s CPU / %s", formatCPU(need.CPU()), formatMemory(need.Memory()))
	for i := podsIndex + 1; i < numResources; i++ {
		if need[i] > 0 && i != 3 {
			s += fmt.Sprintf(" / %d %s", need[i], resourceNameAt(i))
		}
	}
	if !daemon.IsZero() {
		s += " (with DaemonSets)"
	}
	return s
}

func describeAllocatable(r Resources) string {
	return fmt.Sprintf("%s CPU / %s", formatCPU(r.CPU()), formatMemory(r.Memory()))
}

func formatCPU(milli int64) string {
	if milli%1000 == 0 {
		return fmt.Sprint(milli / 1000)
	}
	return fmt.Sprintf("%.2f", float64(milli)/1000)
}

func formatMemory(bytes int64) string {
	const gi = 1 << 30
	if bytes >= gi {
		if bytes%gi == 0 {
			return fmt.Sprintf("%dGi", bytes/gi)
		}
		return fmt.Sprintf("%.1fGi", float64(bytes)/gi)
	}
	return fmt.Sprintf("%dMi", bytes>>20)
}

// describeRequirements prints the requirements on instance type labels.
func describeRequirements(reqs Requirements, provided map[string]bool) string {
	var parts []string
	for _, k := range reqs.Keys() {
		if provided[k] {
			parts = append(parts, reqs[k].String())
		}
	}
	return strings.Join(parts, ", ")
}

func uniqueSorted(in []string) []string {
	sort.Strings(in)
	out := in[:0]
	for i, v := range in {
		if i == 0 || v != in[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Compatible reports whether an instance type can meet requirements: every
// label it provides is allowed and an offering exists in an allowed zone
// and capacity type.
func (it *InstanceType) Compatible(reqs Requirements) bool { return typeCompatible(it, reqs) }

// LabelsCompatible reports whether the instance type's labels meet the
// requirements, whatever its offerings (zone and capacity type aside).
func (it *InstanceType) LabelsCompatible(reqs Requirements) bool { return labelsCompatible(it, reqs) }
