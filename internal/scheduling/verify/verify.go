// Package verify checks a scheduling plan independently of the solver:
// it builds the nodes the plan would launch and checks every placement
// with the Kubernetes scheduler's own helpers and its own counting.
package verify

import (
	"fmt"
	"maps"
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
	nodes := newPlanNodes(len(in.Nodes) + len(plan.NodeClaims))
	nodes.addExisting(in.Nodes, plan.Existing)
	errs := nodes.addClaims(in.NodePools, plan.NodeClaims)
	where := map[*corev1.Pod]*node{}
	for _, name := range nodes.order {
		n := nodes.byName[name]
		errs = append(errs, checkNode(n)...)
		for _, p := range n.pods {
			where[p] = n
		}
	}
	errs = append(errs, checkPlaced(in.Pods, plan.Order, where)...)
	errs = append(errs, checkPodAffinity(where, in.Namespaces)...)
	errs = append(errs, checkSpread(in, plan, where, nodes.byName)...)
	errs = append(errs, checkReservations(in, plan)...)
	return errs
}

// planNodes are the nodes of a plan by name, and in the order they are
// checked: existing nodes first, then new ones in creation order.
type planNodes struct {
	byName map[string]*node
	order  []string
}

// newPlanNodes returns an empty set with room for size nodes.
func newPlanNodes(size int) *planNodes {
	return &planNodes{byName: map[string]*node{}, order: make([]string, 0, size)}
}

// add records n under its name, after the nodes added before it.
func (ns *planNodes) add(n *node) {
	ns.byName[n.obj.Name] = n
	ns.order = append(ns.order, n.obj.Name)
}

// addExisting adds the existing nodes with the pods bound to them, then
// the pending pods the plan puts on them.
func (ns *planNodes) addExisting(existing []*scheduling.Node, placements []*scheduling.ExistingPlacement) {
	for _, n := range existing {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Requirements.Labels()}, Spec: corev1.NodeSpec{Taints: n.Taints}}
		ns.add(&node{obj: obj, allocatable: n.Allocatable, pods: append([]*corev1.Pod(nil), n.Pods...)})
	}
	for _, e := range placements {
		ns.byName[e.Node].pods = append(ns.byName[e.Node].pods, e.Pods...)
	}
}

// addClaims adds the nodes the plan's NodeClaims would become and returns
// where their labels break their own or their NodePool's requirements.
func (ns *planNodes) addClaims(nodePools []*scheduling.NodePool, claims []*scheduling.PlannedNodeClaim) []string {
	errs := make([]string, 0, len(claims))
	pools := map[string]*scheduling.NodePool{}
	for _, np := range nodePools {
		pools[np.Name] = np
	}
	for _, c := range claims {
		np := pools[c.NodePool]
		lbls := claimLabels(c)
		errs = append(errs, checkClaimLabels(c, np, lbls)...)
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: lbls}, Spec: corev1.NodeSpec{Taints: np.Taints}}
		ns.add(&node{obj: obj, allocatable: c.InstanceType.Allocatable, pods: c.Pods, overhead: c.DaemonOverhead})
	}
	return errs
}

// claimLabels are the labels the node of a NodeClaim would have: those of
// its instance type and requirements, and those set at launch.
func claimLabels(c *scheduling.PlannedNodeClaim) map[string]string {
	lbls := map[string]string{}
	maps.Copy(lbls, c.InstanceType.Requirements.Labels())
	maps.Copy(lbls, c.Requirements.Labels())
	lbls[scheduling.LabelZone] = c.Offering.Zone
	lbls[v1.LabelCapacityType] = c.Offering.CapacityType
	lbls[scheduling.LabelHostname] = c.Name
	lbls[v1.LabelNodePool] = c.NodePool
	addDeprecatedLabels(lbls)
	return lbls
}

// addDeprecatedLabels adds the deprecated labels the kubelet and the cloud
// node controller set beside the current ones.
func addDeprecatedLabels(lbls map[string]string) {
	for old, current := range map[string]string{
		"beta.kubernetes.io/arch": scheduling.LabelArch, "beta.kubernetes.io/os": scheduling.LabelOS,
		corev1.LabelInstanceType: scheduling.LabelInstanceType, corev1.LabelFailureDomainBetaZone: scheduling.LabelZone,
		corev1.LabelFailureDomainBetaRegion: scheduling.LabelRegion,
	} {
		if v, ok := lbls[current]; ok {
			lbls[old] = v
		}
	}
}

// checkClaimLabels checks that a NodeClaim's offering is in a zone it
// allows and that its labels meet its NodePool's requirements.
func checkClaimLabels(c *scheduling.PlannedNodeClaim, np *scheduling.NodePool, lbls map[string]string) []string {
	var errs []string
	if r, ok := c.Requirements[scheduling.LabelZone]; ok && !r.Has(c.Offering.Zone) {
		errs = append(errs, fmt.Sprintf("NodeClaim %s: offering zone %s outside its requirements %s", c.Name, c.Offering.Zone, r))
	}
	for _, r := range np.Requirements {
		if v, ok := lbls[r.Key]; ok && !r.Has(v) {
			errs = append(errs, fmt.Sprintf("NodeClaim %s: label %s=%s breaks NodePool %s requirement %s", c.Name, r.Key, v, np.Name, r))
		}
	}
	return errs
}

// checkPlaced checks that the pending pods on a node are exactly those the
// plan says it placed.
func checkPlaced(pending, order []*corev1.Pod, where map[*corev1.Pod]*node) []string {
	var errs []string
	placed := map[*corev1.Pod]bool{}
	for _, p := range order {
		placed[p] = true
	}
	for _, p := range pending {
		_, isPlaced := where[p]
		if isPlaced != placed[p] {
			errs = append(errs, fmt.Sprintf("pod %s/%s: placed=%v but on a node=%v", p.Namespace, p.Name, placed[p], isPlaced))
		}
	}
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
	capacity := reservedCapacity(in.NodePools)
	used := map[string]int{}
	for _, c := range plan.NodeClaims {
		if c.Offering.CapacityType != v1.CapacityTypeReserved {
			errs = append(errs, checkUnreservedClaim(c)...)
			continue
		}
		errs = append(errs, checkReservedClaim(c)...)
		key := c.InstanceType.Name + "/" + c.Offering.Zone
		if used[key]++; used[key] > capacity[key] {
			errs = append(errs, fmt.Sprintf("NodeClaim %s: reservations of %s hold %d instances, the plan uses %d", c.Name, key, capacity[key], used[key]))
		}
	}
	return errs
}

// reservedCapacity is how many instances the available reservations hold,
// by instance type and zone ("type/zone"). A reservation offered by
// several NodePools counts once.
func reservedCapacity(pools []*scheduling.NodePool) map[string]int {
	capacity := map[string]int{}
	seen := map[string]bool{}
	for _, np := range pools {
		for _, it := range np.InstanceTypes {
			for _, o := range it.Offerings {
				if o.CapacityType == v1.CapacityTypeReserved && o.Available && !seen[o.ReservationID] {
					seen[o.ReservationID] = true
					capacity[it.Name+"/"+o.Zone] += o.ReservationCapacity
				}
			}
		}
	}
	return capacity
}

// checkUnreservedClaim checks that a NodeClaim launched outside a
// reservation could not have used one.
func checkUnreservedClaim(c *scheduling.PlannedNodeClaim) []string {
	ct := c.Requirements[v1.LabelCapacityType]
	if (ct == nil || ct.Has(v1.CapacityTypeReserved)) && anyReserved(c.InstanceTypes) {
		return []string{fmt.Sprintf("NodeClaim %s: %s but its requirements allow reserved capacity", c.Name, c.Offering.CapacityType)}
	}
	return nil
}

// checkReservedClaim checks that a NodeClaim in a reservation is pinned to
// reserved capacity and to a single instance type.
func checkReservedClaim(c *scheduling.PlannedNodeClaim) []string {
	ct := c.Requirements[v1.LabelCapacityType]
	if ct == nil || ct.Has(v1.CapacityTypeSpot) || ct.Has(v1.CapacityTypeOnDemand) || len(c.InstanceTypes) != 1 {
		return []string{fmt.Sprintf("NodeClaim %s: reserved but not pinned to reserved capacity and one instance type", c.Name)}
	}
	return nil
}

// checkNode checks resources, node affinity, taints and host ports.
func checkNode(n *node) []string {
	var errs []string
	used := n.overhead
	ports := map[string]string{}
	for _, p := range n.pods {
		r, _ := scheduling.PodRequests(p)
		used = used.Add(r)
		errs = append(errs, checkPodOnNode(p, n)...)
		errs = append(errs, checkHostPorts(p, n, ports)...)
	}
	if !used.Fits(n.allocatable) {
		errs = append(errs, fmt.Sprintf("node %s: pods and DaemonSets request %s, allocatable is %s", n.obj.Name, used, n.allocatable))
	}
	return errs
}

// checkPodOnNode checks that the node meets the pod's required node
// affinity and node selector, and that the pod tolerates its taints.
func checkPodOnNode(p *corev1.Pod, n *node) []string {
	var errs []string
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n.obj); err != nil || !ok {
		errs = append(errs, fmt.Sprintf("pod %s/%s on %s: node affinity or selector not met (%v)", p.Namespace, p.Name, n.obj.Name, err))
	}
	if taint, bad := untoleratedTaint(n.obj, p); bad {
		errs = append(errs, fmt.Sprintf("pod %s/%s on %s: taint %s not tolerated", p.Namespace, p.Name, n.obj.Name, taint.ToString()))
	}
	return errs
}

// untoleratedTaint returns a taint of the node that keeps the pod off it,
// if there is one.
func untoleratedTaint(n *corev1.Node, p *corev1.Pod) (corev1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(n.Spec.Taints, p.Spec.Tolerations, keepsPodsOff)
}

// keepsPodsOff reports whether a taint stops new pods from scheduling;
// PreferNoSchedule only discourages them.
func keepsPodsOff(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// checkHostPorts checks that the pod uses no host port another pod on the
// node already holds, and records the ports it takes in ports (by
// "protocol/port", the pod holding it).
func checkHostPorts(p *corev1.Pod, n *node, ports map[string]string) []string {
	var errs []string
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
	pl := newPlacement(where, namespaces)
	errs := make([]string, 0, len(pl.pods))
	for _, p := range pl.pods {
		errs = append(errs, pl.checkAffinityOf(p)...)
	}
	return errs
}

// placement is where the plan leaves every pod, for the checks that look
// at other pods.
type placement struct {
	where      map[*corev1.Pod]*node
	namespaces map[string]map[string]string
	// pods are the placed pods by namespace and name, so that messages
	// come in a stable order.
	pods []*corev1.Pod
}

// newPlacement returns the placement of where's pods.
func newPlacement(where map[*corev1.Pod]*node, namespaces map[string]map[string]string) *placement {
	pods := make([]*corev1.Pod, 0, len(where))
	for p := range where {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	return &placement{where: where, namespaces: namespaces, pods: pods}
}

// domainOf is the value of the topology key on the pod's node.
func (pl *placement) domainOf(p *corev1.Pod, key string) (string, bool) {
	v, ok := pl.where[p].obj.Labels[key]
	return v, ok
}

// selects reports whether an affinity term of owner, with its label
// selector sel, selects q.
func (pl *placement) selects(term corev1.PodAffinityTerm, sel labels.Selector, owner, q *corev1.Pod) bool {
	return inNamespaces(term, owner, q, pl.namespaces) && sel.Matches(labels.Set(q.Labels))
}

// checkAffinityOf checks the required anti-affinity, then affinity, terms
// of a pod.
func (pl *placement) checkAffinityOf(p *corev1.Pod) []string {
	a := p.Spec.Affinity
	if a == nil {
		return nil
	}
	var errs []string
	if a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			errs = append(errs, pl.checkAntiAffinityTerm(p, term)...)
		}
	}
	if a.PodAffinity != nil {
		for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			errs = append(errs, pl.checkAffinityTerm(p, term)...)
		}
	}
	return errs
}

// checkAntiAffinityTerm reports every other pod the term selects in the
// pod's own domain. A pod on a node without the topology key has no
// domain to share.
func (pl *placement) checkAntiAffinityTerm(p *corev1.Pod, term corev1.PodAffinityTerm) []string {
	d, ok := pl.domainOf(p, term.TopologyKey)
	if !ok {
		return nil
	}
	var errs []string
	sel := selectorOf(term.LabelSelector)
	for _, q := range pl.pods {
		if q == p || !pl.selects(term, sel, p, q) {
			continue
		}
		if dq, ok := pl.domainOf(q, term.TopologyKey); ok && dq == d {
			errs = append(errs, fmt.Sprintf("pod %s/%s: anti-affinity on %s violated by %s/%s in %s", p.Namespace, p.Name, term.TopologyKey, q.Namespace, q.Name, d))
		}
	}
	return errs
}

// checkAffinityTerm checks that some pod the term selects shares the pod's
// domain; the pod itself counts.
func (pl *placement) checkAffinityTerm(p *corev1.Pod, term corev1.PodAffinityTerm) []string {
	d, ok := pl.domainOf(p, term.TopologyKey)
	if ok && pl.selectedIn(p, term, d) {
		return nil
	}
	return []string{fmt.Sprintf("pod %s/%s: no pod for its affinity on %s in %s", p.Namespace, p.Name, term.TopologyKey, d)}
}

// selectedIn reports whether a pod the term of owner selects is in domain d.
func (pl *placement) selectedIn(owner *corev1.Pod, term corev1.PodAffinityTerm, d string) bool {
	sel := selectorOf(term.LabelSelector)
	for _, q := range pl.pods {
		if !pl.selects(term, sel, owner, q) {
			continue
		}
		if dq, ok := pl.domainOf(q, term.TopologyKey); ok && dq == d {
			return true
		}
	}
	return false
}

// checkSpread replays the placements in order and checks every
// DoNotSchedule spread constraint when its pod was placed. A new node is
// always a possible empty hostname domain; other keys range over the
// values the NodePools' instance types can have within the NodePools'
// requirements, and those of existing nodes.
func checkSpread(in scheduling.Input, plan *scheduling.Plan, where map[*corev1.Pod]*node, nodes map[string]*node) []string {
	var errs []string
	s := &spreadCheck{in: in, where: where, nodes: nodes}
	for _, n := range in.Nodes {
		s.placed = append(s.placed, n.Pods...)
	}
	for _, p := range plan.Order {
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			if msg, bad := s.violation(p, c); bad {
				errs = append(errs, msg)
			}
		}
		s.placed = append(s.placed, p)
	}
	return errs
}

// spreadCheck is the state of the spread replay: the pods placed so far.
type spreadCheck struct {
	in     scheduling.Input
	where  map[*corev1.Pod]*node
	nodes  map[string]*node
	placed []*corev1.Pod
}

// violation reports whether placing p breaks the spread constraint c,
// given the pods placed before it, and how.
func (s *spreadCheck) violation(p *corev1.Pod, c corev1.TopologySpreadConstraint) (string, bool) {
	counted := inclusion(p, c)
	sel := selectorOf(c.LabelSelector)
	counts := s.domainCounts(p, c.TopologyKey, sel, counted)
	d := s.where[p].obj.Labels[c.TopologyKey]
	self := 0
	if sel.Matches(labels.Set(p.Labels)) {
		self = 1
	}
	minCount := 0
	if c.TopologyKey != scheduling.LabelHostname {
		minCount = s.minDomainCount(c, counts, counted)
	}
	if skew := counts[d] + self - minCount; skew > int(c.MaxSkew) {
		return fmt.Sprintf("pod %s/%s: spread on %s has skew %d > %d in %s", p.Namespace, p.Name, c.TopologyKey, skew, c.MaxSkew, d), true
	}
	return "", false
}

// domainCounts counts, by value of key, the placed pods in p's namespace
// that sel selects on nodes the constraint counts.
func (s *spreadCheck) domainCounts(p *corev1.Pod, key string, sel labels.Selector, counted func(*corev1.Node) bool) map[string]int {
	counts := map[string]int{}
	for _, q := range s.placed {
		n := s.where[q]
		if q.Namespace != p.Namespace || !sel.Matches(labels.Set(q.Labels)) || !counted(n.obj) {
			continue
		}
		if d, ok := n.obj.Labels[key]; ok {
			counts[d]++
		}
	}
	return counts
}

// minDomainCount is the fewest matching pods in any eligible domain, or 0
// when there are fewer domains than the constraint's minDomains.
func (s *spreadCheck) minDomainCount(c corev1.TopologySpreadConstraint, counts map[string]int, counted func(*corev1.Node) bool) int {
	domains := spreadDomains(s.in, s.nodes, c.TopologyKey, counted)
	if c.MinDomains != nil && len(domains) < int(*c.MinDomains) {
		return 0
	}
	minCount := -1
	for u := range domains {
		if minCount < 0 || counts[u] < minCount {
			minCount = counts[u]
		}
	}
	return minCount
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
			if _, bad := untoleratedTaint(n, p); bad {
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
		for _, it := range np.InstanceTypes {
			addLaunchableDomains(u, np, it, key, counted)
		}
	}
	for _, n := range nodes {
		if v, ok := n.obj.Labels[key]; ok && counted(n.obj) {
			u[v] = true
		}
	}
	return u
}

// addLaunchableDomains adds to u the values of key that a node of the
// instance type, launched by the NodePool, could have and that the
// constraint would count.
func addLaunchableDomains(u map[string]bool, np *scheduling.NodePool, it *scheduling.InstanceType, key string, counted func(*corev1.Node) bool) {
	r, ok := it.Requirements[key]
	if !ok {
		return
	}
	allowed := np.Requirements[key]
	for _, v := range r.Values() {
		if u[v] || (allowed != nil && !allowed.Has(v)) {
			continue
		}
		if counted(launchableNode(np, it, key, v)) {
			u[v] = true
		}
	}
}

// launchableNode is a node of the instance type, launched by the NodePool,
// with value v for key.
func launchableNode(np *scheduling.NodePool, it *scheduling.InstanceType, key, v string) *corev1.Node {
	lbls := it.Requirements.Labels()
	maps.Copy(lbls, np.Requirements.Labels())
	lbls[key] = v
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: lbls}, Spec: corev1.NodeSpec{Taints: np.Taints}}
}
