package scheduling

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Solve places the pending pods: on existing nodes first, then on NodeClaims
// planned in this round, then on new NodeClaims from the NodePools in weight
// order, choosing the cheapest instance types. The same input always gives
// the same plan.
func Solve(in Input) *Plan {
	s := newSolver(in)
	s.deferring = true
	for _, p := range s.pods {
		s.schedule(p)
	}
	s.deferring = false
	s.placeDeferred()
	s.retryTopology()
	return s.finish()
}

// retryTopology places again, while that places any, the pods refused for
// their topology terms: a pod whose required affinity targets pods placed
// after it fits now. The result does not depend on the pods' order.
func (s *solver) retryTopology() {
	for {
		var retry []*podInfo
		kept := s.plan.Unschedulable[:0]
		for _, u := range s.plan.Unschedulable {
			if p := s.failed[u.Pod]; p != nil && len(p.topology) > 0 {
				retry = append(retry, p)
				continue
			}
			kept = append(kept, u)
		}
		if len(retry) == 0 {
			return
		}
		s.plan.Unschedulable = kept
		for _, p := range retry {
			s.remaining = s.remaining.Add(p.requests)
		}
		placed := 0
		for _, p := range retry {
			before := len(s.plan.Unschedulable)
			s.schedule(p)
			if len(s.plan.Unschedulable) == before {
				placed++
			}
		}
		if placed == 0 {
			return
		}
	}
}

type solver struct {
	policy Policy
	// refusals are the NodePools' refusals of the pod being tried.
	refusals []Refusal
	pools    []*pool
	targets  []*target
	// index finds the targets with room for a pod, in target order.
	index capacityIndex
	topo  *topology
	pods  []*podInfo
	plan  *Plan
	// universes caches spreadUniverse.
	universes map[string][]string
	// remaining is the sum of the requests of the pods not yet placed.
	remaining Resources
	// scanFrom remembers, per class of identical pods whose constraints
	// only tighten as pods are placed, the first target that has not yet
	// refused one of them: targets before it refuse them all.
	scanFrom map[string]int
	// reservations is how many more instances each capacity reservation
	// takes.
	reservations map[string]int
	// deferring makes the main pass set interchangeable pods that need a
	// new NodeClaim aside in deferred, to be packed together.
	deferring bool
	deferred  []*podInfo
	// forcedShape, when set, is the shape newClaim gives a NodeClaim.
	forcedShape *InstanceType
	// failed are the pods refused, for retryTopology.
	failed map[*corev1.Pod]*podInfo
	// softTaints: some node or NodePool has a PreferNoSchedule taint,
	// which pods avoid until nothing else takes them.
	softTaints bool
}

// target is an existing node or a planned NodeClaim.
type target struct {
	name     string
	pool     *pool
	existing bool
	index    int
	reqs     Requirements
	taints   []corev1.Taint
	// allocatable of an existing node; for claims, maxAlloc is the
	// element-wise maximum over its instance types.
	allocatable Resources
	types       []*InstanceType
	max         Resources
	// shape is the instance type a NodeClaim was sized for; pods join it
	// only when it is one of their fitting shapes.
	shape    *InstanceType
	requests Resources
	daemon   Resources
	pods     []*podInfo
	ports    []hostPort
	// volumeLimits and attached: an existing node's attach limits per CSI
	// driver and the volumes attached to it.
	volumeLimits map[string]int
	attached     map[string]map[string]bool
}

// attachFits reports whether a pod's volumes still fit the node's attach
// limits (volumes already attached, such as a shared claim, count once).
func (t *target) attachFits(p *podInfo) bool {
	for driver, ids := range p.attach {
		limit, ok := t.volumeLimits[driver]
		if !ok {
			continue
		}
		n := len(t.attached[driver])
		for _, id := range ids {
			if !t.attached[driver][id] {
				n++
			}
		}
		if n > limit {
			return false
		}
	}
	return true
}

// attach records a placed pod's volumes on its node.
func (t *target) attach(ids map[string][]string) {
	if len(t.volumeLimits) == 0 {
		return
	}
	if t.attached == nil {
		t.attached = map[string]map[string]bool{}
	}
	for driver, list := range ids {
		if t.attached[driver] == nil {
			t.attached[driver] = map[string]bool{}
		}
		for _, id := range list {
			t.attached[driver][id] = true
		}
	}
}

func newSolver(in Input) *solver {
	s := &solver{policy: in.Policy, topo: newTopology(in.Namespaces, in.DefaultSpread, in.Policy.IgnorePreferences), plan: &Plan{}, universes: map[string][]string{}, scanFrom: map[string]int{}, failed: map[*corev1.Pod]*podInfo{}}
	for _, np := range in.NodePools {
		s.pools = append(s.pools, newPool(np, in.DaemonSets, in.Policy.RelaxMinValues))
	}
	sort.SliceStable(s.pools, func(i, j int) bool {
		if s.pools[i].Weight != s.pools[j].Weight {
			return s.pools[i].Weight > s.pools[j].Weight
		}
		return s.pools[i].Name < s.pools[j].Name
	})
	s.initReservations(in.Nodes)
	for _, pl := range s.pools {
		s.softTaints = s.softTaints || hasSoftTaint(pl.Taints)
	}
	for _, n := range in.Nodes {
		s.softTaints = s.softTaints || hasSoftTaint(n.Taints)
	}
	nodes := append([]*Node(nil), in.Nodes...)
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Starting != nodes[j].Starting {
			return nodes[i].Starting < nodes[j].Starting
		}
		return nodes[i].Name < nodes[j].Name
	})
	existing := make([]*target, len(nodes))
	attachLimited := false
	for i, n := range nodes {
		attachLimited = attachLimited || len(n.VolumeLimits) > 0
		existing[i] = s.existingTarget(n)
		s.addTarget(existing[i])
		s.plan.Existing = append(s.plan.Existing, &ExistingPlacement{Node: n.Name})
	}
	s.addPending(in, attachLimited)
	s.countPlaced(nodes, existing)
	sortPods(s.pods)
	for _, p := range s.pods {
		s.remaining = s.remaining.Add(p.requests)
	}
	return s
}

// existingTarget is a node as a target, holding its pods' requests and
// host ports. Pods with spread or pod (anti-)affinity terms of their own
// get a podInfo (their terms count); the others, most of them, are only
// counted in the groups that select them (countPlaced).
func (s *solver) existingTarget(n *Node) *target {
	t := &target{name: n.Name, existing: true, reqs: n.Requirements, taints: n.Taints, allocatable: n.Allocatable, volumeLimits: n.VolumeLimits,
		requests: n.DevicesAllocated}
	t.attach(n.Attached)
	for _, pod := range n.Pods {
		if !s.topo.hasTerms(pod) {
			requests, _ := PodRequests(pod)
			t.requests = t.requests.Add(requests)
			t.ports = appendHostPorts(t.ports, pod)
			continue
		}
		p := newPodInfo(pod, s.policy.IgnorePreferences)
		t.requests = t.requests.Add(p.requests)
		t.ports = append(t.ports, p.hostPorts...)
		t.pods = append(t.pods, p)
	}
	return t
}

// countPlaced counts the nodes' pods in the topology groups that select
// them, once the pending pods made their groups; the terms of those with
// terms (anti-affinity) count too.
func (s *solver) countPlaced(nodes []*Node, existing []*target) {
	var withTerms []*podInfo
	for _, t := range existing {
		withTerms = append(withTerms, t.pods...)
	}
	for _, p := range withTerms {
		terms, err := s.topo.termsOf(p.pod, p.terms)
		if err == nil {
			p.topology = terms
		}
	}
	for _, p := range append(withTerms, s.pods...) {
		p.classify(s.topo)
	}
	for i, t := range existing {
		for _, p := range t.pods {
			s.record(p, t)
		}
		// t.pods are the node's pods with terms, in the node's order: the
		// others are counted without a podInfo.
		next := 0
		for _, pod := range nodes[i].Pods {
			if next < len(t.pods) && t.pods[next].pod == pod {
				next++
				continue
			}
			s.recordPlaced(pod, t)
		}
	}
}

// addPending takes the pods to place: those their own volumes or terms
// keep off every node are ignored (unschedulable at once), the others
// counted by effective zone and queued.
func (s *solver) addPending(in Input, attachLimited bool) {
	universe := zoneUniverse(s.pools)
	s.plan.PendingByZone = map[string]int{}
	for _, pod := range in.Pods {
		p := newPodInfo(pod, s.policy.IgnorePreferences)
		// Spread constraints count the nodes the pod's own node selector
		// and affinity admit, as kube-scheduler does: its volumes limit
		// where it goes, not which domains count.
		nodeTerms := p.terms
		if v := in.Volumes[pod]; v != nil {
			if v.Refused != "" {
				s.plan.Unschedulable = append(s.plan.Unschedulable, &UnschedulablePod{Pod: pod, Reason: v.Refused, Ignored: true})
				continue
			}
			p.addVolumeTerms(v.Terms)
			p.attach = v.Attach
		}
		if d := in.Devices[pod]; d != nil {
			reason := s.failsOn(p, d.FailsOn)
			if reason == "" {
				reason = d.Refused
			}
			if reason != "" {
				s.plan.Unschedulable = append(s.plan.Unschedulable, &UnschedulablePod{Pod: pod, Reason: reason, Ignored: true, Claims: true})
				continue
			}
			p.addVolumeTerms(d.Terms)
			p.requests = p.requests.Add(d.Requests)
		}
		terms, err := s.topo.termsOf(pod, nodeTerms)
		if err != nil {
			s.plan.Unschedulable = append(s.plan.Unschedulable, &UnschedulablePod{Pod: pod, Reason: err.Error(), Ignored: true})
			continue
		}
		s.plan.PendingByZone[effectiveZone(p, universe)]++
		p.topology = terms
		p.buildPreferences()
		p.class = monotoneClass(p)
		if len(p.attach) > 0 && attachLimited {
			// Refused for its volumes by a node, another pod with other
			// volumes may still fit: no skipping of nodes that refused.
			p.class = ""
		}
		s.pods = append(s.pods, p)
	}
}

// failsOn is the error kube-scheduler stops scheduling the pod at: that
// of an existing node where its claims' selectors fail and that its
// filters before the DRA one pass (taints, node selector and affinity,
// volumes, host ports, room); "" when there is none.
func (s *solver) failsOn(p *podInfo, failing map[string]string) string {
	if len(failing) == 0 {
		return ""
	}
	for _, t := range s.targets {
		why, ok := failing[t.name]
		if !ok || !t.existing {
			continue
		}
		if _, ok := tolerates(p.tolerations, t.taints, false); !ok || portsConflict(p.hostPorts, t.ports) || !t.attachFits(p) ||
			!t.requests.Add(p.requests).withoutDevices().Fits(t.allocatable) {
			continue
		}
		for _, term := range p.terms {
			if t.reqs.Compatible(term, nil) == nil {
				return why
			}
		}
	}
	return ""
}

// schedule places one pod, relaxing its preferences one at a time when it
// does not fit with them.
func (s *solver) schedule(p *podInfo) {
	defer func() { s.remaining = s.remaining.Sub(p.requests) }()
	s.refusals = nil
	if len(p.unknownResources) > 0 {
		s.unschedulable(p, fmt.Sprintf("no instance type provides %s", strings.Join(p.unknownResources, ", ")))
		return
	}
	var reason string
	p.softTolerated = false
	for relax := 0; relax <= len(p.preferences); relax++ {
		p.relaxed = relax
		if reason = s.try(p); reason == "" {
			return
		}
	}
	if s.softTaints {
		// Last, nodes and NodePools whose PreferNoSchedule taints the
		// pod does not tolerate.
		p.softTolerated = true
		if reason = s.try(p); reason == "" {
			return
		}
	}
	s.unschedulable(p, reason)
}

func hasSoftTaint(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			return true
		}
	}
	return false
}

func (s *solver) unschedulable(p *podInfo, reason string) {
	s.plan.Unschedulable = append(s.plan.Unschedulable, &UnschedulablePod{Pod: p.pod, Reason: reason, Refusals: s.refusals})
	s.refusals = nil
	s.failed[p.pod] = p
}

// try places p on the first target that takes it, else on a new NodeClaim;
// it returns why not otherwise.
func (s *solver) try(p *podInfo) string {
	if s.tryTargets(p) || s.tryGrow(p) {
		return ""
	}
	if s.deferring && packable(p) {
		s.deferred = append(s.deferred, p)
		return ""
	}
	var (
		reasons []string
		passed  []PassedNodePool
	)
	s.refusals = nil
	for _, pl := range s.pools {
		t, c, refusal := s.newClaim(p, pl)
		reason := refusal.Reason
		if t != nil {
			if len(passed) > 0 {
				s.plan.Fallbacks = append(s.plan.Fallbacks, &Fallback{Pod: p.pod, NodePool: pl.Name, Passed: passed})
			}
			s.commit(p, t, c)
			return ""
		}
		refusal.NodePool = pl.Name
		s.refusals = append(s.refusals, refusal)
		reasons = append(reasons, "NodePool "+pl.Name+": "+reason)
		if admits(p, pl) {
			passed = append(passed, PassedNodePool{Name: pl.Name, Weight: pl.Weight, Reason: reason})
		}
	}
	if len(reasons) == 0 {
		return "no NodePool exists"
	}
	return strings.Join(reasons, "; ")
}

// admits reports a NodePool whose taints the pod tolerates and whose
// requirements one of its terms meets: a NodePool meant for it, that
// only capacity, limits or topology can keep it from.
func admits(p *podInfo, pl *pool) bool {
	if pl.Static {
		return false
	}
	if _, ok := p.tolerates(pl.Taints); !ok {
		return false
	}
	for _, term := range p.terms {
		if pl.Requirements.Compatible(p.requirementsWithPreferences(term), pl.provides) == nil {
			return true
		}
	}
	return false
}

// tryGrow places a pod whose required pod affinity by hostname selects
// pods on a NodeClaim too full for it on that NodeClaim, with the larger
// instance types that hold them all: no other node can take the pod, and
// a NodeClaim's types are not fixed until it launches. A NodeClaim is
// sized for the cheapest packing of the pods it opens with, so pods that
// must share its host would otherwise find it full.
func (s *solver) tryGrow(p *podInfo) bool {
	for _, term := range p.topology {
		g := term.group
		if term.preferred || g.kind != kindAffinity || g.key != LabelHostname || g.total == 0 {
			continue
		}
		for _, t := range s.targets {
			if t.existing || g.counts[t.name] == 0 {
				continue
			}
			need := t.requests.Add(p.requests)
			if need.Fits(t.maxAlloc()) {
				continue // it has the room: something else keeps the pod out
			}
			grown, _ := t.pool.candidatesByKey(fingerprint(t.reqs), t.reqs, need.Sub(t.daemon))
			if len(grown) == 0 {
				continue
			}
			types, shape := t.types, t.shape
			t.setTypes(grown)
			t.shape = nil
			if c, ok := s.fits(p, t); ok {
				s.commit(p, t, c)
				return true
			}
			t.setTypes(types)
			t.shape = shape
		}
	}
	return false
}

func (s *solver) addTarget(t *target) {
	t.index = s.index.add(t.free())
	s.targets = append(s.targets, t)
}

// free is what the target can still take: of its largest instance types
// for a NodeClaim.
func (t *target) free() Resources {
	if t.existing {
		return t.allocatable.Sub(t.requests)
	}
	return t.max.Sub(t.requests)
}

// change is what placing a pod on a target changes.
type change struct {
	reqs  Requirements
	types []*InstanceType
}

// fits checks p against a target and returns the target's new state.
func (s *solver) fits(p *podInfo, t *target) (change, bool) {
	need := t.requests.Add(p.requests)
	if t.existing {
		if !need.Fits(t.allocatable) {
			return change{}, false
		}
		if _, ok := p.tolerates(t.taints); !ok {
			return change{}, false
		}
		if !t.attachFits(p) {
			return change{}, false
		}
	} else {
		if !need.Fits(t.maxAlloc()) {
			return change{}, false
		}
		if _, ok := p.tolerates(t.pool.Taints); !ok {
			return change{}, false
		}
	}
	if portsConflict(p.hostPorts, t.ports) {
		return change{}, false
	}
	var undefinedOK func(string) bool
	if !t.existing {
		undefinedOK = t.pool.provides
	}
	for _, term := range p.terms {
		reqs := p.requirementsWithPreferences(term)
		if t.reqs.Compatible(reqs, undefinedOK) != nil {
			continue
		}
		pins, _, ok := s.domains(p, t, reqs, false)
		if !ok {
			continue
		}
		if t.existing {
			return change{}, true
		}
		merged := t.reqs
		if len(reqs) > 0 || len(pins) > 0 {
			merged = t.reqs.Copy()
			merged.addForClaim(reqs)
			merged.AddAll(pins)
		}
		types, ok := t.pool.narrow(t.types, merged, need, len(reqs) > 0 || len(pins) > 0, false)
		if !ok {
			continue
		}
		// A pod of another shape may still use room the claim's cheapest
		// instance type has anyway.
		if types[0] != t.types[0] && !s.shapeFits(p, t) {
			continue
		}
		return change{reqs: merged, types: types}, true
	}
	return change{}, false
}

// shapeFits reports whether a NodeClaim's shape is one of the pod's fitting
// shapes (always, for claims without a shape).
func (s *solver) shapeFits(p *podInfo, t *target) bool {
	if t.shape == nil {
		return true
	}
	for _, sh := range p.shapesIn(t.pool) {
		if sh.fit[t.shape] {
			return true
		}
	}
	return false
}

// shapesIn returns the pod's fitting shapes in a pool, one set per
// alternative node affinity term, computed once per relaxation level.
func (p *podInfo) shapesIn(pl *pool) []*shapes {
	if p.shapesRelaxed != p.relaxed {
		p.shapeSets, p.shapesRelaxed = nil, p.relaxed
	}
	if sets, ok := p.shapeSets[pl]; ok {
		return sets
	}
	var sets []*shapes
	for _, term := range p.terms {
		merged := pl.Requirements.Copy()
		merged.addForClaim(p.requirementsWithPreferences(term))
		key := fingerprint(merged)
		if types, _ := pl.candidatesByKey(key, merged, p.requests); len(types) > 0 {
			sets = append(sets, pl.shapesFor(key+fmt.Sprint(p.requests), types, merged, p.requests))
		}
	}
	if p.shapeSets == nil {
		p.shapeSets = map[*pool][]*shapes{}
	}
	p.shapeSets[pl] = sets
	return sets
}

// untolerated says why a pod cannot have a pool's node for a taint, and
// where the taint comes from when the pool does not declare it.
func untolerated(pl *pool, taint corev1.Taint) string {
	reason := "taint " + taintString(taint) + " not tolerated"
	if slices.ContainsFunc(pl.UserDataTaints, func(t corev1.Taint) bool { return t.MatchTaint(&taint) }) {
		reason += " (EC2NodeClass " + pl.NodeClass + "'s user data registers every node with it)"
	}
	return reason
}

// newClaim opens a NodeClaim from a pool for p, or says why it cannot.
func (s *solver) newClaim(p *podInfo, pl *pool) (*target, change, Refusal) {
	if pl.Static {
		return nil, change{}, Refusal{Reason: "a static NodePool (spec.replicas) keeps its replicas and launches no node for pods", Static: true}
	}
	if taint, ok := p.tolerates(pl.Taints); !ok {
		return nil, change{}, Refusal{Reason: untolerated(pl, taint), Taint: &taint}
	}
	if pl.nodesLimit >= 0 && pl.nodes >= pl.nodesLimit {
		return nil, change{}, Refusal{Reason: fmt.Sprintf("limit of %d nodes reached", pl.nodesLimit), LimitReached: true}
	}
	if portsConflict(p.hostPorts, pl.daemonPorts) {
		return nil, change{}, Refusal{Reason: "a DaemonSet's pods take the host port it asks for on every node of the pool", HostPort: true}
	}
	var refusal Refusal
	for _, term := range p.terms {
		reqs := p.requirementsWithPreferences(term)
		if inc := pl.Requirements.Compatible(reqs, pl.provides); inc != nil {
			if refusal.Reason == "" {
				refusal = Refusal{Reason: inc.Error(), Conflict: inc}
			}
			continue
		}
		merged := pl.Requirements.Copy()
		merged.addForClaim(reqs)
		if t, c, ok := s.reservedClaim(p, pl, reqs, merged); ok {
			return t, c, Refusal{}
		}
		if onlyReserved(merged[v1.LabelCapacityType]) {
			if refusal.Reason == "" {
				refusal.Reason = reservedOnlyReason(pl, pl.daemon.Add(p.requests))
			}
			continue
		}
		excludeReserved(pl, merged)
		key := fingerprint(merged)
		types, why := pl.candidatesByKey(key, merged, p.requests)
		if len(types) == 0 {
			if refusal.Reason == "" {
				refusal = pl.refusal(key, p.requests, why)
			}
			continue
		}
		t := &target{
			name: fmt.Sprintf("%s-%d", pl.Name, pl.claims+1), pool: pl, reqs: merged,
			requests: pl.daemon, daemon: pl.daemon, ports: slices.Clone(pl.daemonPorts),
		}
		t.setTypes(types)
		pins, why, ok := s.domains(p, t, reqs, true)
		if !ok {
			if refusal.Reason == "" {
				refusal.Reason = why
			}
			continue
		}
		if len(pins) > 0 {
			merged.AddAll(pins)
		}
		types, ok = pl.narrow(types, merged, pl.daemon.Add(p.requests), len(pins) > 0, true)
		if !ok {
			if refusal.Reason == "" {
				refusal.Reason = "no instance type is offered in " + describePins(pins)
			}
			continue
		}
		sh := pl.shapesFor(key+fmt.Sprint(p.requests), types, merged, p.requests)
		if _, ok := sh.price[s.forcedShape]; ok {
			t.shape, types = s.forcedShape, noDearer(types, sh, s.forcedShape, merged)
		} else {
			t.shape, types = chooseShape(types, sh, s.remaining.Max(p.requests), merged)
		}
		pl.claims++
		pl.nodes++
		t.reqs = merged
		s.addTarget(t)
		return t, change{reqs: merged, types: types}, Refusal{}
	}
	return nil, change{}, refusal
}

// commit places p on t.
func (s *solver) commit(p *podInfo, t *target, c change) {
	if !t.existing {
		t.pool.account(t, c.types)
		t.reqs = c.reqs
		if t.pool.relaxMinValues {
			relaxMinValues(t.reqs, c.types)
		}
		t.setTypes(c.types)
	}
	t.requests = t.requests.Add(p.requests)
	t.ports = append(t.ports, p.hostPorts...)
	t.pods = append(t.pods, p)
	t.attach(p.attach)
	s.index.set(t.index, t.free())
	s.record(p, t)
	s.plan.Order = append(s.plan.Order, p.pod)
}

// record counts a placed pod in every group that selects it (spread
// groups: when they count its node).
func (s *solver) record(p *podInfo, t *target) {
	for _, g := range p.countedBy {
		if d, ok := t.domain(g.key); ok && s.counts(g, t) {
			g.record(d)
		}
	}
	for _, term := range p.topology {
		if term.group.inverse != nil {
			if d, ok := t.domain(term.group.key); ok {
				term.group.inverse.record(d)
			}
		}
	}
}

// recordPlaced counts a placed pod without terms of its own in every group
// that selects it, as classify and record do for a podInfo.
func (s *solver) recordPlaced(pod *corev1.Pod, t *target) {
	for _, g := range s.topo.ordered {
		if g.kind == kindInverseAntiAffinity || !g.selects(pod) {
			continue
		}
		if d, ok := t.domain(g.key); ok && s.counts(g, t) {
			g.record(d)
		}
	}
}

// counts reports whether a spread group counts a target's pods and domain.
func (s *solver) counts(g *topologyGroup, t *target) bool {
	if g.eligible == nil {
		return true
	}
	if t.existing {
		return g.eligible.admits(t.reqs, t.taints, nil)
	}
	return g.eligible.admits(t.reqs, t.pool.Taints, t.pool.provides)
}

// domain returns the target's value of a topology key, when it has one.
func (t *target) domain(key string) (string, bool) {
	if key == LabelHostname && !t.existing {
		return t.name, true
	}
	if r, ok := t.reqs[key]; ok {
		return r.Single()
	}
	return "", false
}

// maxAlloc is the element-wise maximum allocatable of a claim's instance
// types: no pod set beyond it fits.
func (t *target) maxAlloc() Resources { return t.max }

func (t *target) setTypes(types []*InstanceType) {
	t.types = types
	t.max = Resources{}
	for _, it := range types {
		t.max = t.max.Max(it.Allocatable)
	}
}

func portsConflict(a, b []hostPort) bool {
	for _, x := range a {
		for _, y := range b {
			if x.conflicts(y) {
				return true
			}
		}
	}
	return false
}

func describePins(pins Requirements) string {
	parts := make([]string, 0, len(pins))
	for _, k := range pins.Keys() {
		parts = append(parts, pins[k].String())
	}
	return strings.Join(parts, ", ")
}

// finish prices the claims and assembles the plan.
func (s *solver) finish() *Plan {
	byNode := map[string]*ExistingPlacement{}
	for _, e := range s.plan.Existing {
		byNode[e.Node] = e
	}
	placed := map[*corev1.Pod]bool{}
	for _, pod := range s.plan.Order {
		placed[pod] = true
	}
	for _, t := range s.targets {
		var pods []*corev1.Pod
		for _, p := range t.pods {
			if placed[p.pod] {
				pods = append(pods, p.pod)
			}
		}
		if t.existing {
			byNode[t.name].Pods = pods
			continue
		}
		types, cheapest := cheapestFirst(t.pool.allThatFit(t), t.reqs)
		names := make([]string, len(types))
		for i, it := range types {
			names[i] = it.Name
		}
		reqs := t.reqs.Copy()
		reqs.Add(NewRequirement(LabelInstanceType, corev1.NodeSelectorOpIn, names...))
		s.plan.NodeClaims = append(s.plan.NodeClaims, &PlannedNodeClaim{
			Name: t.name, NodePool: t.pool.Name, Requirements: reqs, InstanceTypes: types, MinValuesRelaxed: minValuesRelaxed(t.pool.Requirements, reqs),
			Requests: t.requests, DaemonOverhead: t.daemon, Pods: pods,
			InstanceType: types[0], Offering: cheapest,
		})
	}
	return s.plan
}

// cheapestFirst orders instance types by the price of their cheapest
// offering that meets reqs (then by name), keeps at most MaxInstanceTypes
// and returns the first one's offering.
func cheapestFirst(types []*InstanceType, reqs Requirements) ([]*InstanceType, Offering) {
	type priced struct {
		it    *InstanceType
		price float64
	}
	ranked := make([]priced, len(types))
	for i, it := range types {
		o, _ := it.CheapestOffering(reqs)
		ranked[i] = priced{it, o.Price}
	}
	slices.SortStableFunc(ranked, func(a, b priced) int {
		if c := cmp.Compare(a.price, b.price); c != 0 {
			return c
		}
		return strings.Compare(a.it.Name, b.it.Name)
	})
	types = types[:min(len(ranked), MaxInstanceTypes)]
	for i := range types {
		types[i] = ranked[i].it
	}
	cheapest, _ := types[0].CheapestOffering(reqs)
	return types, cheapest
}

// limitOf reads a resource limit, or reports that there is none.
func limitOf(list corev1.ResourceList, name corev1.ResourceName) (int64, bool) {
	q, ok := list[name]
	if !ok {
		return 0, false
	}
	if name == corev1.ResourceCPU {
		return Counted(q, resource.Milli), true
	}
	return Counted(q, 0), true
}
