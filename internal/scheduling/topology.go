package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

type topologyKind int

const (
	kindSpread topologyKind = iota
	kindAffinity
	kindAntiAffinity
	// kindInverseAntiAffinity counts the pods that own an anti-affinity
	// term, so that pods the term selects keep out of their domains.
	kindInverseAntiAffinity
)

func (k topologyKind) String() string {
	return [...]string{"topology spread", "pod affinity", "pod anti-affinity", "anti-affinity of placed pods"}[k]
}

// topologyGroup counts, per domain of one topology key, the pods a
// selector matches.
type topologyGroup struct {
	id            string
	kind          topologyKind
	key           string
	namespaces    map[string]bool // nil: all namespaces
	selector      labels.Selector
	maxSkew       int32
	minDomains    int32
	counts        map[string]int
	total         int
	selectorLabel string
	// inverse is, for an anti-affinity group, the group counting the
	// owners of the term.
	inverse *topologyGroup
	// eligible, for a spread group, picks the nodes whose pods and
	// domains count (the owner's nodeAffinityPolicy and nodeTaintsPolicy);
	// nil counts every node.
	eligible *nodeInclusion
}

// nodeInclusion is the spread constraint's node inclusion policies, as
// kube-scheduler applies them: with nodeAffinityPolicy Honor (the
// default) only nodes the owner's node selector and required node
// affinity admit count; with nodeTaintsPolicy Honor only nodes whose
// taints it tolerates.
type nodeInclusion struct {
	terms       []Requirements // nil: affinity ignored
	tolerations []corev1.Toleration
	taints      bool // honour taints
}

// admits reports whether a node (or NodeClaim) with the requirements and
// taints counts. A NodeClaim whose requirements only could meet the
// affinity counts.
func (n *nodeInclusion) admits(reqs Requirements, taints []corev1.Taint, undefinedOK func(string) bool) bool {
	if n == nil {
		return true
	}
	if n.taints {
		if _, ok := tolerates(n.tolerations, taints, false); !ok {
			return false
		}
	}
	if n.terms == nil {
		return true
	}
	for _, term := range n.terms {
		if reqs.Compatible(term, undefinedOK) == nil {
			return true
		}
	}
	return false
}

// selects reports whether the group counts pods like p (for inverse
// groups: whether p is kept out by the owners).
func (g *topologyGroup) selects(p *corev1.Pod) bool {
	if g.namespaces != nil && !g.namespaces[p.Namespace] {
		return false
	}
	return g.selector.Matches(labels.Set(p.Labels))
}

func (g *topologyGroup) record(domain string) {
	g.counts[domain]++
	g.total++
}

// topologyTerm is one of a pod's constraints on a group.
type topologyTerm struct {
	group *topologyGroup
	// preferred terms are dropped, one at a time, when they cannot be met.
	preferred bool
	weight    int32
}

// topology holds every group the pending pods and the placed pods need.
type topology struct {
	// namespaces are the cluster's namespaces and their labels, for pod
	// affinity terms' namespace selectors.
	namespaces map[string]map[string]string
	groups     map[string]*topologyGroup
	// ordered keeps groups in creation order, for deterministic iteration.
	ordered []*topologyGroup
	// defaults spread the pods that set no constraints of their own.
	defaults SpreadDefaults
	// ignorePreferences leaves out the terms that are not required
	// (Policy.IgnorePreferences).
	ignorePreferences bool
}

func newTopology(namespaces map[string]map[string]string, defaults SpreadDefaults, ignorePreferences bool) *topology {
	return &topology{namespaces: namespaces, groups: map[string]*topologyGroup{}, defaults: defaults, ignorePreferences: ignorePreferences}
}

func (t *topology) group(kind topologyKind, key string, namespaces map[string]bool, selector labels.Selector, maxSkew, minDomains int32) *topologyGroup {
	return t.spreadGroup(kind, key, namespaces, selector, maxSkew, minDomains, nil)
}

func (t *topology) spreadGroup(kind topologyKind, key string, namespaces map[string]bool, selector labels.Selector, maxSkew, minDomains int32, eligible *nodeInclusion) *topologyGroup {
	ns := "*"
	if namespaces != nil {
		names := make([]string, 0, len(namespaces))
		for n := range namespaces {
			names = append(names, n)
		}
		sort.Strings(names)
		ns = strings.Join(names, ",")
	}
	id := fmt.Sprintf("%d|%s|%s|%s|%d|%d", kind, key, ns, selector.String(), maxSkew, minDomains)
	if eligible != nil {
		terms := make([]string, 0, len(eligible.terms))
		for _, r := range eligible.terms {
			terms = append(terms, fingerprint(r))
		}
		id += fmt.Sprintf("|%v|%v|%v", eligible.terms == nil, terms, eligible.taints)
		if eligible.taints {
			id += fmt.Sprint(eligible.tolerations)
		}
	}
	if g, ok := t.groups[id]; ok {
		return g
	}
	g := &topologyGroup{
		id: id, kind: kind, key: key, namespaces: namespaces, selector: selector,
		maxSkew: maxSkew, minDomains: minDomains, counts: map[string]int{}, selectorLabel: selector.String(), eligible: eligible,
	}
	t.groups[id] = g
	t.ordered = append(t.ordered, g)
	return g
}

// hasTerms reports whether a pod has spread or pod (anti-)affinity terms
// (its own, or the default spread).
func (t *topology) hasTerms(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return true
	}
	return len(p.Spec.TopologySpreadConstraints) > 0 || t.defaults.apply(p)
}

// termsOf registers the groups of a pod's spread constraints and pod
// (anti)affinity terms and returns the pod's terms. nodeTerms are the
// pod's node selector and required node affinity (for the spread
// constraints' node inclusion). Terms that cannot be parsed are reported
// as errors.

func (t *topology) termsOf(p *corev1.Pod, nodeTerms []Requirements) ([]*topologyTerm, error) {
	spread := t.defaults.For(p)
	var affinity []affinityTerm
	if a := p.Spec.Affinity; a != nil {
		affinity = podAffinityTerms(a)
	}
	if len(spread) == 0 && len(affinity) == 0 {
		return nil, nil // most pods: nothing to allocate
	}
	var terms []*topologyTerm
	own := map[string]bool{p.Namespace: true}
	for _, c := range spread {
		if t.ignorePreferences && c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		term, err := t.spreadTerm(p, c, own, nodeTerms)
		if err != nil {
			return nil, err
		}
		terms = append(terms, term)
	}
	for _, at := range affinity {
		if t.ignorePreferences && at.preferred {
			continue
		}
		term, err := t.affinityTerm(at, own)
		if err != nil {
			return nil, err
		}
		terms = append(terms, term)
	}
	return terms, nil
}

// affinityTerm is one pod (anti-)affinity term of a pod, with its kind and
// whether (and how much) it is preferred.
type affinityTerm struct {
	kind      topologyKind
	term      corev1.PodAffinityTerm
	preferred bool
	weight    int32
}

// podAffinityTerms are a pod's affinity terms, required then preferred,
// then its anti-affinity terms likewise.
func podAffinityTerms(a *corev1.Affinity) []affinityTerm {
	var out []affinityTerm
	if pa := a.PodAffinity; pa != nil {
		out = appendAffinityTerms(out, kindAffinity, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		out = appendAffinityTerms(out, kindAntiAffinity, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}

func appendAffinityTerms(out []affinityTerm, kind topologyKind, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) []affinityTerm {
	for _, term := range required {
		out = append(out, affinityTerm{kind: kind, term: term})
	}
	for _, wt := range preferred {
		out = append(out, affinityTerm{kind: kind, term: wt.PodAffinityTerm, preferred: true, weight: wt.Weight})
	}
	return out
}

// spreadTerm registers the group of one topology spread constraint.
func (t *topology) spreadTerm(p *corev1.Pod, c corev1.TopologySpreadConstraint, own map[string]bool, nodeTerms []Requirements) (*topologyTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("topology spread selector: %w", err)
	}
	if c.LabelSelector == nil {
		sel = labels.Nothing()
	}
	if len(c.MatchLabelKeys) > 0 {
		sel = withMatchLabelKeys(sel, c.MatchLabelKeys, p.Labels)
	}
	minDomains := int32(0)
	if c.MinDomains != nil {
		minDomains = *c.MinDomains
	}
	inclusion := &nodeInclusion{terms: nodeTerms, tolerations: p.Spec.Tolerations}
	if c.NodeAffinityPolicy != nil && *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore {
		inclusion.terms = nil
	}
	inclusion.taints = c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	g := t.spreadGroup(kindSpread, c.TopologyKey, own, sel, c.MaxSkew, minDomains, inclusion)
	return &topologyTerm{group: g, preferred: c.WhenUnsatisfiable == corev1.ScheduleAnyway}, nil
}

// withMatchLabelKeys narrows a selector to the pod's own values of the
// keys.
func withMatchLabelKeys(sel labels.Selector, keys []string, podLabels map[string]string) labels.Selector {
	reqs, _ := sel.Requirements()
	sel = labels.NewSelector().Add(reqs...)
	for _, k := range keys {
		if v, ok := podLabels[k]; ok {
			if r, err := labels.NewRequirement(k, "=", []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	return sel
}

// affinityTerm registers the group of one pod (anti-)affinity term; a
// required anti-affinity's group also keeps the pods it selects away
// from its owner.
func (t *topology) affinityTerm(at affinityTerm, own map[string]bool) (*topologyTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(at.term.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("pod affinity selector: %w", err)
	}
	if at.term.LabelSelector == nil {
		sel = labels.Nothing()
	}
	namespaces, err := t.termNamespaces(at.term, own)
	if err != nil {
		return nil, err
	}
	g := t.group(at.kind, at.term.TopologyKey, namespaces, sel, 0, 0)
	if at.kind == kindAntiAffinity && !at.preferred {
		g.inverse = t.group(kindInverseAntiAffinity, at.term.TopologyKey, namespaces, sel, 0, 0)
	}
	return &topologyTerm{group: g, preferred: at.preferred, weight: at.weight}, nil
}

// termNamespaces are the namespaces a term selects pods in: the pod's
// own, or those it lists and those its namespace selector selects (nil:
// every namespace).
func (t *topology) termNamespaces(term corev1.PodAffinityTerm, own map[string]bool) (map[string]bool, error) {
	namespaces := own
	if len(term.Namespaces) > 0 {
		namespaces = map[string]bool{}
		for _, n := range term.Namespaces {
			namespaces[n] = true
		}
	}
	if term.NamespaceSelector == nil {
		return namespaces, nil
	}
	nsSel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("pod affinity namespace selector: %w", err)
	}
	if nsSel.Empty() {
		return nil, nil
	}
	if len(term.Namespaces) == 0 {
		namespaces = map[string]bool{}
	}
	for name, lbls := range t.namespaces {
		if nsSel.Matches(labels.Set(lbls)) {
			namespaces[name] = true
		}
	}
	return namespaces, nil
}

// allows reports whether a pod may be placed in a domain of g, given the
// domains the pod could otherwise be in (for the spread minimum).
func (g *topologyGroup) allows(domain string, self bool, universe []string) bool {
	switch g.kind {
	case kindSpread:
		return g.skew(domain, self, universe) <= int(g.maxSkew)
	case kindAffinity:
		if g.total == 0 {
			return self
		}
		return g.counts[domain] > 0
	default: // anti-affinity, both directions
		return g.counts[domain] == 0
	}
}

// skew is the spread skew placing one more pod in domain would cause.
func (g *topologyGroup) skew(domain string, self bool, universe []string) int {
	minCount := 0
	if len(universe) > 0 && len(universe) >= int(g.minDomains) {
		minCount = math.MaxInt
		for _, u := range universe {
			minCount = min(minCount, g.counts[u])
		}
	}
	selfCount := 0
	if self {
		selfCount = 1
	}
	return g.counts[domain] + selfCount - minCount
}

// why explains a refusal of allows.
func (g *topologyGroup) why(domain string, self bool, universe []string) string {
	switch g.kind {
	case kindSpread:
		return fmt.Sprintf("topology spread on %s (maxSkew %d) over pods %s: %s=%s would have skew %d",
			g.key, g.maxSkew, g.selectorLabel, g.key, domain, g.skew(domain, self, universe))
	case kindAffinity:
		if g.total == 0 {
			return fmt.Sprintf("pod affinity on %s to pods %s: no such pod is running or planned", g.key, g.selectorLabel)
		}
		return fmt.Sprintf("pod affinity on %s to pods %s: none in %s=%s", g.key, g.selectorLabel, g.key, domain)
	case kindAntiAffinity:
		return fmt.Sprintf("pod anti-affinity on %s to pods %s: %s=%s already has one", g.key, g.selectorLabel, g.key, domain)
	default:
		return fmt.Sprintf("a pod in %s=%s has anti-affinity to pods %s", g.key, domain, g.selectorLabel)
	}
}
