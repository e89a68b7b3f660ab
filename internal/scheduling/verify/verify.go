// Package verify checks a scheduling plan independently of the solver:
// it builds the nodes the plan would launch and checks every placement
// with the Kubernetes scheduler's own helpers and its own counting.
package verify

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// node is a node of the plan, existing or new.
type node struct {
	obj         *corev1.Node
	allocatable scheduling.Resources
	pods        []*corev1.Pod
	overhead    scheduling.Resources
}

// Plan returns every violation of the plan, empty when it is sound.
func Plan(in scheduling.Input, plan *scheduling.Plan) []string {
	var errs []string
	nodes := map[string]*node{}
	order := make([]string, 0, len(in.Nodes)+len(plan.NodeClaims))
	pools := map[string]*scheduling.NodePool{}
	for _, np := range in.NodePools {
		pools[np.Name] = np
	}
	for _, n := range in.Nodes {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Requirements.Labels()}, Spec: corev1.NodeSpec{Taints: n.Taints}}
		nodes[n.Name] = &node{obj: obj, allocatable: n.Allocatable, pods: append([]*corev1.Pod(nil), n.Pods...)}
		order = append(order, n.Name)
	}
	for _, e := range plan.Existing {
		nodes[e.Node].pods = append(nodes[e.Node].pods, e.Pods...)
	}
	for _, c := range plan.NodeClaims {
		np := pools[c.NodePool]
		lbls := map[string]string{}
		for k, v := range c.InstanceType.Requirements.Labels() {
			lbls[k] = v
		}
		for k, v := range c.Requirements.Labels() {
			lbls[k] = v
		}
		lbls[scheduling.LabelZone] = c.Offering.Zone
		lbls[v1.LabelCapacityType] = c.Offering.CapacityType
		lbls[scheduling.LabelHostname] = c.Name
		lbls[v1.LabelNodePool] = c.NodePool
		// The deprecated labels the kubelet and the cloud node controller
		// set beside the current ones.
		for old, current := range map[string]string{
			"beta.kubernetes.io/arch": scheduling.LabelArch, "beta.kubernetes.io/os": scheduling.LabelOS,
			corev1.LabelInstanceType: scheduling.LabelInstanceType, corev1.LabelFailureDomainBetaZone: scheduling.LabelZone,
			corev1.LabelFailureDomainBetaRegion: scheduling.LabelRegion,
		} {
			if v, ok := lbls[current]; ok {
				lbls[old] = v
			}
		}
		if r, ok := c.Requirements[scheduling.LabelZone]; ok && !r.Has(c.Offering.Zone) {
			errs = append(errs, fmt.Sprintf("NodeClaim %s: offering zone %s outside its requirements %s", c.Name, c.Offering.Zone, r))
		}
		for _, r := range np.Requirements {
			if v, ok := lbls[r.Key]; ok && !r.Has(v) {
				errs = append(errs, fmt.Sprintf("NodeClaim %s: label %s=%s breaks NodePool %s requirement %s", c.Name, r.Key, v, np.Name, r))
			}
		}
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: lbls}, Spec: corev1.NodeSpec{Taints: np.Taints}}
		nodes[c.Name] = &node{obj: obj, allocatable: c.InstanceType.Allocatable, pods: c.Pods, overhead: c.DaemonOverhead}
		order = append(order, c.Name)
	}
	where := map[*corev1.Pod]*node{}
	for _, name := range order {
		n := nodes[name]
		errs = append(errs, checkNode(n)...)
		for _, p := range n.pods {
			where[p] = n
		}
	}
	placed := map[*corev1.Pod]bool{}
	for _, p := range plan.Order {
		placed[p] = true
	}
	for _, p := range in.Pods {
		_, isPlaced := where[p]
		if isPlaced != placed[p] {
			errs = append(errs, fmt.Sprintf("pod %s/%s: placed=%v but on a node=%v", p.Namespace, p.Name, placed[p], isPlaced))
		}
	}
	errs = append(errs, checkPodAffinity(where, in.Namespaces)...)
	errs = append(errs, checkSpread(in, plan, where, nodes)...)
	errs = append(errs, checkReservations(in, plan)...)
	return errs
}

func anyReserved(types []*scheduling.InstanceType) bool {
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.CapacityType == v1.CapacityTypeReserved {
				return true
			}
		}
	}
	return false
}

// checkReservations checks that NodeClaims in capacity reservations can
// only launch there, that other NodeClaims cannot, and that no instance
// type and zone gets more reserved NodeClaims than its reservations hold.
func checkReservations(in scheduling.Input, plan *scheduling.Plan) []string {
	var errs []string
	capacity := map[string]int{}
	seen := map[string]bool{}
	for _, np := range in.NodePools {
		for _, it := range np.InstanceTypes {
			for _, o := range it.Offerings {
				if o.CapacityType != v1.CapacityTypeReserved {
					continue
				}
				if o.Available && !seen[o.ReservationID] {
					seen[o.ReservationID] = true
					capacity[it.Name+"/"+o.Zone] += o.ReservationCapacity
				}
			}
		}
	}
	used := map[string]int{}
	for _, c := range plan.NodeClaims {
		ct := c.Requirements[v1.LabelCapacityType]
		if c.Offering.CapacityType != v1.CapacityTypeReserved {
			if (ct == nil || ct.Has(v1.CapacityTypeReserved)) && anyReserved(c.InstanceTypes) {
				errs = append(errs, fmt.Sprintf("NodeClaim %s: %s but its requirements allow reserved capacity", c.Name, c.Offering.CapacityType))
			}
			continue
		}
		if ct == nil || ct.Has(v1.CapacityTypeSpot) || ct.Has(v1.CapacityTypeOnDemand) || len(c.InstanceTypes) != 1 {
			errs = append(errs, fmt.Sprintf("NodeClaim %s: reserved but not pinned to reserved capacity and one instance type", c.Name))
		}
		key := c.InstanceType.Name + "/" + c.Offering.Zone
		if used[key]++; used[key] > capacity[key] {
			errs = append(errs, fmt.Sprintf("NodeClaim %s: reservations of %s hold %d instances, the plan uses %d", c.Name, key, capacity[key], used[key]))
		}
	}
	return errs
}

// checkNode checks resources, node affinity, taints and host ports.
func checkNode(n *node) []string {
	var errs []string
	used := n.overhead
	ports := map[string]string{}
	for _, p := range n.pods {
		r, _ := scheduling.PodRequests(p)
		used = used.Add(r)
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n.obj); err != nil || !ok {
			errs = append(errs, fmt.Sprintf("pod %s/%s on %s: node affinity or selector not met (%v)", p.Namespace, p.Name, n.obj.Name, err))
		}
		if taint, bad := corev1helpers.FindMatchingUntoleratedTaint(n.obj.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}); bad {
			errs = append(errs, fmt.Sprintf("pod %s/%s on %s: taint %s not tolerated", p.Namespace, p.Name, n.obj.Name, taint.ToString()))
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%d", port.Protocol, port.HostPort)
				if other, dup := ports[key]; dup {
					errs = append(errs, fmt.Sprintf("pods %s and %s/%s on %s both use host port %s", other, p.Namespace, p.Name, n.obj.Name, key))
				}
				ports[key] = p.Namespace + "/" + p.Name
			}
		}
	}
	if !used.Fits(n.allocatable) {
		errs = append(errs, fmt.Sprintf("node %s: pods and DaemonSets request %s, allocatable is %s", n.obj.Name, used, n.allocatable))
	}
	return errs
}

func selectorOf(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// inNamespaces reports whether p is in a namespace the term looks at: the
// owner's when it names none, else those it lists and those its selector
// selects (by the namespaces' labels).
func inNamespaces(term corev1.PodAffinityTerm, owner, p *corev1.Pod, namespaces map[string]map[string]string) bool {
	if term.NamespaceSelector == nil && len(term.Namespaces) == 0 {
		return p.Namespace == owner.Namespace
	}
	if slices.Contains(term.Namespaces, p.Namespace) {
		return true
	}
	if term.NamespaceSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	return err == nil && sel.Matches(labels.Set(namespaces[p.Namespace]))
}

// checkPodAffinity checks required pod affinity and anti-affinity in the
// final placement.
func checkPodAffinity(where map[*corev1.Pod]*node, namespaces map[string]map[string]string) []string {
	var errs []string
	pods := make([]*corev1.Pod, 0, len(where))
	for p := range where {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	domainOf := func(p *corev1.Pod, key string) (string, bool) {
		v, ok := where[p].obj.Labels[key]
		return v, ok
	}
	for _, p := range pods {
		a := p.Spec.Affinity
		if a == nil {
			continue
		}
		if a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				d, ok := domainOf(p, term.TopologyKey)
				if !ok {
					continue
				}
				sel := selectorOf(term.LabelSelector)
				for _, q := range pods {
					if q == p || !inNamespaces(term, p, q, namespaces) || !sel.Matches(labels.Set(q.Labels)) {
						continue
					}
					if dq, ok := domainOf(q, term.TopologyKey); ok && dq == d {
						errs = append(errs, fmt.Sprintf("pod %s/%s: anti-affinity on %s violated by %s/%s in %s", p.Namespace, p.Name, term.TopologyKey, q.Namespace, q.Name, d))
					}
				}
			}
		}
		if a.PodAffinity != nil {
			for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				d, ok := domainOf(p, term.TopologyKey)
				sel := selectorOf(term.LabelSelector)
				found := false
				for _, q := range pods {
					if ok && inNamespaces(term, p, q, namespaces) && sel.Matches(labels.Set(q.Labels)) {
						if dq, ok := domainOf(q, term.TopologyKey); ok && dq == d {
							found = true
							break
						}
					}
				}
				if !found {
					errs = append(errs, fmt.Sprintf("pod %s/%s: no pod for its affinity on %s in %s", p.Namespace, p.Name, term.TopologyKey, d))
				}
			}
		}
	}
	return errs
}

// checkSpread replays the placements in order and checks every
// DoNotSchedule spread constraint when its pod was placed. A new node is
// always a possible empty hostname domain; other keys range over the
// values the NodePools' instance types can have within the NodePools'
// requirements, and those of existing nodes.
func checkSpread(in scheduling.Input, plan *scheduling.Plan, where map[*corev1.Pod]*node, nodes map[string]*node) []string {
	var errs []string
	var placed []*corev1.Pod
	for _, n := range in.Nodes {
		placed = append(placed, n.Pods...)
	}
	for _, p := range plan.Order {
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			counted := inclusion(p, c)
			sel := selectorOf(c.LabelSelector)
			counts := map[string]int{}
			for _, q := range placed {
				n := where[q]
				if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) && counted(n.obj) {
					if d, ok := n.obj.Labels[c.TopologyKey]; ok {
						counts[d]++
					}
				}
			}
			d := where[p].obj.Labels[c.TopologyKey]
			self := 0
			if sel.Matches(labels.Set(p.Labels)) {
				self = 1
			}
			minCount := 0
			if c.TopologyKey != scheduling.LabelHostname {
				domains := spreadDomains(in, nodes, c.TopologyKey, counted)
				minCount = -1
				for u := range domains {
					if minCount < 0 || counts[u] < minCount {
						minCount = counts[u]
					}
				}
				if c.MinDomains != nil && len(domains) < int(*c.MinDomains) {
					minCount = 0
				}
			}
			if skew := counts[d] + self - minCount; skew > int(c.MaxSkew) {
				errs = append(errs, fmt.Sprintf("pod %s/%s: spread on %s has skew %d > %d in %s", p.Namespace, p.Name, c.TopologyKey, skew, c.MaxSkew, d))
			}
		}
		placed = append(placed, p)
	}
	return errs
}

// inclusion is kube-scheduler's node inclusion for a spread constraint:
// nodes the pod's required node affinity admits (nodeAffinityPolicy Honor,
// the default) and, with nodeTaintsPolicy Honor, whose taints it
// tolerates.
func inclusion(p *corev1.Pod, c corev1.TopologySpreadConstraint) func(*corev1.Node) bool {
	affinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	taints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	required := nodeaffinity.GetRequiredNodeAffinity(p)
	return func(n *corev1.Node) bool {
		if affinity {
			if ok, err := required.Match(n); err != nil || !ok {
				return false
			}
		}
		if taints {
			if _, bad := corev1helpers.FindMatchingUntoleratedTaint(n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}); bad {
				return false
			}
		}
		return true
	}
}

// spreadDomains are the values of key on the nodes a constraint counts,
// and on the nodes the NodePools could launch that it would count.
func spreadDomains(in scheduling.Input, nodes map[string]*node, key string, counted func(*corev1.Node) bool) map[string]bool {
	u := map[string]bool{}
	for _, np := range in.NodePools {
		allowed := np.Requirements[key]
		for _, it := range np.InstanceTypes {
			r, ok := it.Requirements[key]
			if !ok {
				continue
			}
			for _, v := range r.Values() {
				if u[v] || (allowed != nil && !allowed.Has(v)) {
					continue
				}
				lbls := it.Requirements.Labels()
				for k, val := range np.Requirements.Labels() {
					lbls[k] = val
				}
				lbls[key] = v
				if counted(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: lbls}, Spec: corev1.NodeSpec{Taints: np.Taints}}) {
					u[v] = true
				}
			}
		}
	}
	for _, n := range nodes {
		if v, ok := n.obj.Labels[key]; ok && counted(n.obj) {
			u[v] = true
		}
	}
	return u
}
