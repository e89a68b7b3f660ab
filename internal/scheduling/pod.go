package scheduling

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podInfo is what the solver needs of a pod, computed once.
type podInfo struct {
	pod      *corev1.Pod
	requests Resources
	// attach are the pod's volumes by CSI driver, for nodes' attach limits.
	attach map[string][]string
	// unknownResources are requested resources no instance type provides.
	unknownResources []string
	// terms are the alternative node requirements (nodeSelector ANDed with
	// each required node affinity term); at least one.
	terms       []Requirements
	preferred   []weightedTerm
	tolerations []corev1.Toleration
	hostPorts   []hostPort
	// topology holds the pod's spread and pod (anti-)affinity terms,
	// required and preferred.
	topology []*topologyTerm
	// preferences in the order they are dropped when the pod does not fit
	// with them; the first relaxed are dropped.
	preferences []preference
	relaxed     int
	// softTolerated: the pod, every preference relaxed, also accepts
	// PreferNoSchedule taints it does not tolerate (the last relaxation).
	softTolerated bool
	// countedBy are the groups that count this pod; repelledBy the
	// anti-affinity of other pods that keeps it out of their domains.
	countedBy, repelledBy []*topologyGroup
	// shapeSets caches shapesIn for the relaxation level shapesRelaxed.
	shapeSets     map[*pool][]*shapes
	shapesRelaxed int
	// class identifies pods that schedule identically and whose
	// constraints only tighten as other pods are placed; empty otherwise.
	class string
}

// monotoneClass returns a key shared by pods that place identically, for
// pods whose admission by a target can only turn from yes to no as pods are
// placed: no pod affinity, spread or preferences, whose answers can change
// the other way. Other pods get "".
func monotoneClass(p *podInfo) string {
	if len(p.preferences) > 0 {
		return ""
	}
	for _, t := range p.topology {
		if t.group.kind != kindAntiAffinity {
			return ""
		}
	}
	spec := p.pod.Spec
	terms := make([]string, len(p.terms)) // the volumes' requirements too
	for i, t := range p.terms {
		terms[i] = fingerprint(t)
	}
	key, err := json.Marshal(struct {
		Namespace   string
		Labels      map[string]string
		Requests    Resources
		Terms       []string
		Affinity    *corev1.Affinity
		Tolerations []corev1.Toleration
		Ports       string
	}{p.pod.Namespace, p.pod.Labels, p.requests, terms, spec.Affinity, spec.Tolerations, fmt.Sprint(p.hostPorts)})
	if err != nil {
		return ""
	}
	return string(key)
}

// preference is a preferred node affinity term or a preferred topology term.
type preference struct {
	node *weightedTerm
	topo *topologyTerm
}

// buildPreferences orders the preferences for relaxation: preferred pod
// (anti-)affinity first (lighter terms before heavier ones), then
// preferred node affinity (the heaviest, which alone is in force, first),
// then ScheduleAnyway spread constraints.
func (p *podInfo) buildPreferences() {
	p.preferences = nil
	var podPrefs, spreads []*topologyTerm
	for _, t := range p.topology {
		switch {
		case !t.preferred:
		case t.group.kind == kindSpread:
			spreads = append(spreads, t)
		default:
			podPrefs = append(podPrefs, t)
		}
	}
	sort.SliceStable(podPrefs, func(i, j int) bool { return podPrefs[i].weight < podPrefs[j].weight })
	for _, t := range podPrefs {
		p.preferences = append(p.preferences, preference{topo: t})
	}
	for i := range p.preferred { // heaviest first
		p.preferences = append(p.preferences, preference{node: &p.preferred[i]})
	}
	for _, t := range spreads {
		p.preferences = append(p.preferences, preference{topo: t})
	}
}

// addVolumeTerms ANDs what the pod's volumes require into its node
// terms: every combination of a pod term and one alternative per volume
// that can hold.
func (p *podInfo) addVolumeTerms(volumes [][]Requirements) {
	for _, alternatives := range volumes {
		var next []Requirements
		for _, term := range p.terms {
			for _, alt := range alternatives {
				merged := term.Copy()
				merged.AddAll(alt)
				next = append(next, merged)
			}
		}
		p.terms = next
	}
}

// activeTopology returns the required terms and the preferred ones not
// yet relaxed.
func (p *podInfo) activeTopology() []*topologyTerm {
	if len(p.preferences) == 0 {
		return p.topology
	}
	out := make([]*topologyTerm, 0, len(p.topology))
	for _, t := range p.topology {
		if !t.preferred {
			out = append(out, t)
		}
	}
	for _, pref := range p.preferences[p.relaxed:] {
		if pref.topo != nil {
			out = append(out, pref.topo)
		}
	}
	return out
}

// classify finds the groups that count the pod and those that repel it.
func (p *podInfo) classify(t *topology) {
	for _, g := range t.ordered {
		if !g.selects(p.pod) {
			continue
		}
		if g.kind == kindInverseAntiAffinity {
			p.repelledBy = append(p.repelledBy, g)
		} else {
			p.countedBy = append(p.countedBy, g)
		}
	}
}

type weightedTerm struct {
	weight int32
	reqs   Requirements
}

type hostPort struct {
	protocol corev1.Protocol
	ip       string
	port     int32
}

func (h hostPort) conflicts(o hostPort) bool {
	if h.port != o.port || h.protocol != o.protocol {
		return false
	}
	return h.ip == o.ip || h.ip == "" || o.ip == "" || h.ip == "0.0.0.0" || o.ip == "0.0.0.0"
}

// PodRequests returns what a pod requests of a node: containers, init
// containers (the larger of their peak and the running sum), sidecars and
// pod overhead, plus one pod; a limit without its request is requested,
// as the API server stores the pod (RequestsAsStored).
func PodRequests(pod *corev1.Pod) (Resources, []string) {
	pod = RequestsAsStored(pod)
	var r Resources
	var unknown []string
	if spec := &pod.Spec; len(spec.Containers) == 1 && len(spec.InitContainers) == 0 && spec.Overhead == nil && spec.Resources == nil {
		// One container and nothing else: its requests are the pod's
		// (without the lists the general sum builds, for every pod of
		// every decision).
		r, unknown = ParseResources(spec.Containers[0].Resources.Requests)
	} else {
		r, unknown = ParseResources(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	}
	r[podsIndex]++
	return r, unknown
}

// newPodInfo reads a pod; ignorePreferences leaves its preferred node
// affinity out (Policy.IgnorePreferences).
func newPodInfo(pod *corev1.Pod, ignorePreferences bool) *podInfo {
	p := &podInfo{pod: pod, tolerations: pod.Spec.Tolerations}
	p.requests, p.unknownResources = PodRequests(pod)
	selector := LabelRequirements(normalizedLabels(pod.Spec.NodeSelector))
	var affinityTerms []corev1.NodeSelectorTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			affinityTerms = req.NodeSelectorTerms
		}
		for _, pt := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if ignorePreferences {
				break
			}
			p.preferred = append(p.preferred, weightedTerm{weight: pt.Weight, reqs: NewRequirements(normalized(pt.Preference.MatchExpressions)...)})
		}
		sort.SliceStable(p.preferred, func(i, j int) bool { return p.preferred[i].weight > p.preferred[j].weight })
	}
	if len(affinityTerms) == 0 {
		p.terms = []Requirements{selector}
	}
	for _, t := range affinityTerms {
		reqs := selector.Copy()
		reqs.AddAll(NewRequirements(normalized(t.MatchExpressions)...))
		p.terms = append(p.terms, reqs)
	}
	p.hostPorts = appendHostPorts(nil, pod)
	return p
}

// appendHostPorts appends the host ports the pod's containers and init
// containers take.
func appendHostPorts(ports []hostPort, pod *corev1.Pod) []hostPort {
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					protocol := port.Protocol
					if protocol == "" {
						protocol = corev1.ProtocolTCP
					}
					ports = append(ports, hostPort{protocol: protocol, ip: port.HostIP, port: port.HostPort})
				}
			}
		}
	}
	return ports
}

// deprecatedLabels are the beta and failure-domain labels Kubernetes
// replaced, with the labels that replace them: a pod selecting the old
// one means the new one, which every node has.
var deprecatedLabels = map[string]string{
	"beta.kubernetes.io/instance-type":         LabelInstanceType,
	"failure-domain.beta.kubernetes.io/zone":   LabelZone,
	"failure-domain.beta.kubernetes.io/region": LabelRegion,
	"beta.kubernetes.io/arch":                  LabelArch,
	"beta.kubernetes.io/os":                    LabelOS,
}

// normalizedLabels rewrites deprecated keys of a node selector.
func normalizedLabels(labels map[string]string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		if current, ok := deprecatedLabels[k]; ok {
			if out == nil {
				out = maps.Clone(labels)
			}
			delete(out, k)
			out[current] = v
		}
	}
	if out == nil {
		return labels
	}
	return out
}

// normalized rewrites deprecated keys of node selector requirements.
func normalized(reqs []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	out := reqs
	for i, r := range reqs {
		if current, ok := deprecatedLabels[r.Key]; ok {
			if &out[0] == &reqs[0] {
				out = slices.Clone(reqs)
			}
			out[i].Key = current
		}
	}
	return out
}

// requirementsWithPreferences returns the pod's node requirements for one
// alternative term, with the heaviest preferred node affinity term still
// in force ANDed in: preferred terms are alternatives, tried heaviest
// first, so a satisfiable heavier one is kept when a still heavier one
// cannot be met.
func (p *podInfo) requirementsWithPreferences(term Requirements) Requirements {
	for _, pref := range p.preferences[p.relaxed:] {
		if pref.node != nil {
			reqs := term.Copy()
			reqs.AddAll(pref.node.reqs)
			return reqs
		}
	}
	return term
}

// tolerates reports whether the pod may go where the taints are: taints
// that do not allow it are NoSchedule and NoExecute ones it does not
// tolerate and, until it is relaxed that far, PreferNoSchedule ones.
func (p *podInfo) tolerates(taints []corev1.Taint) (corev1.Taint, bool) {
	return tolerates(p.tolerations, taints, !p.softTolerated)
}

// scanKey is the pod's class for the target scan, which the relaxation of
// PreferNoSchedule changes.
func (p *podInfo) scanKey() string {
	if p.class == "" || !p.softTolerated {
		return p.class
	}
	return p.class + "\x00soft"
}

// tolerates reports whether tolerations allow the taints; PreferNoSchedule
// ones only count when strict.
func tolerates(tolerations []corev1.Toleration, taints []corev1.Taint, strict bool) (corev1.Taint, bool) {
	for _, taint := range taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule && !strict {
			continue
		}
		ok := false
		for i := range tolerations {
			if tolerations[i].ToleratesTaint(&taint) {
				ok = true
				break
			}
		}
		if !ok {
			return taint, false
		}
	}
	return corev1.Taint{}, true
}

func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// podKey orders pods for placement: larger CPU first, then larger memory,
// then older, then by namespace/name.
func lessPod(a, b *podInfo) bool {
	if a.requests.CPU() != b.requests.CPU() {
		return a.requests.CPU() > b.requests.CPU()
	}
	if a.requests.Memory() != b.requests.Memory() {
		return a.requests.Memory() > b.requests.Memory()
	}
	ta, tb := a.pod.CreationTimestamp, b.pod.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return podName(a.pod) < podName(b.pod)
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
