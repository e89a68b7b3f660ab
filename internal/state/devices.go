package state

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// DRA is what Dynamic Resource Allocation objects say to the scheduler:
// the devices pods' resource claims need, the devices nodes' drivers
// publish, and those their claims took. Claims are evaluated as
// kube-scheduler does, by its structured allocator, against the
// ResourceSlices an instance type's drivers would publish.
type DRA struct {
	classes   classLister
	claims    map[types.NamespacedName]*resourcev1.ResourceClaim
	templates map[types.NamespacedName]*resourcev1.ResourceClaimTemplate
	// published are the devices each node's drivers publish (by node name).
	published map[string]scheduling.Resources
	// anySlices: the objects hold ResourceSlices (a dump may leave them out).
	anySlices bool
	// allocated are the devices the claims allocated on each node take.
	allocated map[string]scheduling.Resources
	// ignore: pods with claims are left alone (Options.IgnoreDRARequests).
	ignore bool
	cache  *cel.Cache
	// allocators per instance type, made when first asked.
	allocators map[allocatorKey]structured.Allocator
	// slices are the ResourceSlices each node's drivers publish (by node
	// name), taken the devices the claims allocated.
	slices map[string][]*resourcev1.ResourceSlice
	taken  sets.Set[structured.DeviceID]
	// nodeAllocators, the free devices and what claims (by claimsKey) do
	// on each node, made when first asked.
	nodeAllocators map[string]structured.Allocator
	free           map[string][]scheduling.DeviceSet
	onNode         map[string]map[string]nodeResult
}

// draFeatures are the DRA features kube-scheduler 1.34 enables by
// default that change what is allocated: prioritized lists
// (firstAvailable) and admin access. (It also enables device status,
// which selects the allocator's newer implementation; allocations are
// the same.)
var draFeatures = structured.Features{PrioritizedList: true, AdminAccess: true}

// placeholderNode is the node a planned node's devices are published on.
const placeholderNode = "planned-node"

func newDRA(o Objects, ignore bool) *DRA {
	d := &DRA{classes: classLister(o.DeviceClasses), claims: map[types.NamespacedName]*resourcev1.ResourceClaim{},
		templates: map[types.NamespacedName]*resourcev1.ResourceClaimTemplate{}, published: map[string]scheduling.Resources{},
		allocated: map[string]scheduling.Resources{}, ignore: ignore, anySlices: len(o.ResourceSlices) > 0,
		cache: cel.NewCache(64, cel.Features{}), allocators: map[allocatorKey]structured.Allocator{},
		slices: map[string][]*resourcev1.ResourceSlice{}, taken: sets.New[structured.DeviceID](), nodeAllocators: map[string]structured.Allocator{},
		free: map[string][]scheduling.DeviceSet{}, onNode: map[string]map[string]nodeResult{}}
	for _, c := range o.ResourceClaims {
		d.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
		if node, ok := allocatedNode(c); ok {
			d.allocated[node] = addResults(d.allocated[node], c.Status.Allocation)
		}
		if a := c.Status.Allocation; a != nil {
			for _, r := range a.Devices.Results {
				if !adminAccess(r) {
					d.taken.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
				}
			}
		}
	}
	for _, t := range o.ResourceClaimTemplates {
		d.templates[types.NamespacedName{Namespace: t.Namespace, Name: t.Name}] = t
	}
	for _, s := range o.ResourceSlices {
		if s.Spec.NodeName != nil {
			d.published[*s.Spec.NodeName] = d.published[*s.Spec.NodeName].AddDevices(s.Spec.Driver, int64(len(s.Spec.Devices)))
			d.slices[*s.Spec.NodeName] = append(d.slices[*s.Spec.NodeName], s)
		}
	}
	return d
}

// classLister serves DeviceClasses to the allocator.
type classLister []*resourcev1.DeviceClass

func (l classLister) List() ([]*resourcev1.DeviceClass, error) { return l, nil }

func (l classLister) Get(name string) (*resourcev1.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, apierrors.NewNotFound(resourcev1.Resource("deviceclasses"), name)
}

// allocatedNode is the node a claim's devices are allocated on.
func allocatedNode(c *resourcev1.ResourceClaim) (string, bool) {
	a := c.Status.Allocation
	if a == nil || a.NodeSelector == nil {
		return "", false
	}
	for _, term := range a.NodeSelector.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0], true
			}
		}
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0], true
			}
		}
	}
	return "", false
}

// addResults counts an allocation's devices, by driver: those it holds
// (admin access holds none, as kube-scheduler counts it).
func addResults(r scheduling.Resources, a *resourcev1.AllocationResult) scheduling.Resources {
	if a == nil {
		return r
	}
	for _, res := range a.Devices.Results {
		if !adminAccess(res) {
			r = r.AddDevices(res.Driver, 1)
		}
	}
	return r
}

// adminAccess reports a device allocated for admin access (monitoring,
// say): kube-scheduler does not count it as allocated.
func adminAccess(r resourcev1.DeviceRequestAllocationResult) bool {
	return r.AdminAccess != nil && *r.AdminAccess
}

// size gives a node what its drivers publish and its claims took: the
// devices of its ResourceSlices; before its drivers publish (a node
// launching or initializing, or objects without ResourceSlices), those
// its instance type would publish.
//
// The devices the claims of the pods expected on the node take count
// too: pods planned onto a node still launching, whose claims
// kube-scheduler has not allocated yet. requested are the drivers its
// NodeClaim was launched for.
func (d *DRA) size(sn *scheduling.Node, initialized bool, types []*scheduling.InstanceType, requested []string) {
	it := typeOf(sn.Requirements, types)
	if published, ok := d.published[sn.Name]; ok && !published.IsZero() {
		sn.Allocatable = sn.Allocatable.Add(published)
	} else if (!initialized || !d.anySlices) && it != nil {
		for _, set := range it.Devices {
			// Devices the launch attaches only when asked (EFA) are the
			// node's only if its NodeClaim asked for the driver's.
			if set.OnRequest && !slices.Contains(requested, set.Driver) {
				continue
			}
			sn.Allocatable = sn.Allocatable.AddDevices(set.Driver, int64(len(set.Devices)))
		}
	}
	sn.DevicesAllocated = d.allocated[sn.Name]
	if d.ignore || it == nil || len(it.Devices) == 0 {
		return
	}
	for _, p := range sn.Pods {
		if p.Spec.NodeName != "" || len(p.Spec.ResourceClaims) == 0 {
			continue
		}
		claims, _, why := d.claimsOf(p)
		if why != "" || len(claims) == 0 {
			continue
		}
		if results, err := d.allocate(it, claims); err == nil {
			for i := range results {
				sn.DevicesAllocated = addResults(sn.DevicesAllocated, &results[i])
			}
		}
	}
}

// typeOf is the instance type a node's requirements name (one).
func typeOf(reqs scheduling.Requirements, types []*scheduling.InstanceType) *scheduling.InstanceType {
	r, ok := reqs[scheduling.LabelInstanceType]
	if !ok || len(r.Values()) != 1 {
		return nil
	}
	name := r.Values()[0]
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	return nil
}

// demand is what the claims of the pods require of their nodes, for the
// pods that have claims.
// The nodes are those the pods may go to: those whose drivers published
// devices are judged by those devices.
func (d *DRA) demand(pods []*corev1.Pod, pools []*scheduling.NodePool, nodes []*scheduling.Node) map[*corev1.Pod]*scheduling.DeviceDemand {
	var out map[*corev1.Pod]*scheduling.DeviceDemand
	var c *candidates
	for _, p := range pods {
		if len(p.Spec.ResourceClaims) == 0 {
			continue
		}
		if out == nil {
			out, c = map[*corev1.Pod]*scheduling.DeviceDemand{}, newCandidates(pools)
			c.nodes = d.publishing(nodes)
		}
		out[p] = d.ofPod(p, c)
	}
	return out
}

// candidates are the instance types with devices the NodePools can
// launch, with the cheapest price of each, and what claims took on them
// (the pods of a workload have the same claims: they are evaluated once).
type candidates struct {
	pools []*scheduling.NodePool
	types []*scheduling.InstanceType
	price map[*scheduling.InstanceType]float64
	fits  map[string]*scheduling.DeviceDemand
	// nodes are the nodes whose drivers published devices, by name.
	nodes []*scheduling.Node
}

// publishing are the nodes whose drivers published devices, by name.
func (d *DRA) publishing(nodes []*scheduling.Node) []*scheduling.Node {
	var out []*scheduling.Node
	for _, n := range nodes {
		if !d.published[n.Name].IsZero() {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *scheduling.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func newCandidates(pools []*scheduling.NodePool) *candidates {
	c := &candidates{pools: pools, types: instanceTypes(pools), price: map[*scheduling.InstanceType]float64{}, fits: map[string]*scheduling.DeviceDemand{}}
	for _, it := range c.types {
		c.price[it] = lowestPrice(it, pools)
	}
	return c
}

// IgnoredReason is why a pod with resource claims is not planned with
// Options.IgnoreDRARequests.
const IgnoredReason = "the pod has resource claims (DRA) and --ignore-dra-requests is set, so nodewright launches nothing for it (Karpenter's default); " +
	"set --ignore-dra-requests=false to plan nodes whose devices satisfy its claims"

// ofPod is what one pod's claims require: the node an allocated claim is
// on; for the others, an instance type whose devices satisfy them all.
func (d *DRA) ofPod(p *corev1.Pod, c *candidates) *scheduling.DeviceDemand {
	if d.ignore {
		return &scheduling.DeviceDemand{Refused: IgnoredReason}
	}
	claims, allocatedOn, why := d.claimsOf(p)
	if why != "" {
		return &scheduling.DeviceDemand{Refused: why}
	}
	out := &scheduling.DeviceDemand{}
	if allocatedOn != "" {
		out.Terms = append(out.Terms, []scheduling.Requirements{
			scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: scheduling.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{allocatedOn}})})
	}
	if len(claims) == 0 {
		return out
	}
	fit := d.fit(claims, c)
	if fit.Refused != "" {
		return fit
	}
	out.Requests, out.FailsOn = fit.Requests, fit.FailsOn
	out.Terms = append(out.Terms, fit.Terms...)
	return out
}

// fit is where claims not allocated yet can be: the instance types whose
// devices satisfy them, and the devices they take.
func (d *DRA) fit(claims []*resourcev1.ResourceClaim, c *candidates) *scheduling.DeviceDemand {
	key := claimsKey(claims)
	if f, ok := c.fits[key]; ok {
		return f
	}
	f := d.evaluate(key, claims, c)
	c.fits[key] = f
	return f
}

// claimsKey identifies claims by what they ask and how they are named.
func claimsKey(claims []*resourcev1.ResourceClaim) string {
	var b strings.Builder
	for _, c := range claims {
		spec, _ := json.Marshal(c.Spec)
		b.WriteString(describeClaim(c))
		b.Write(spec)
		b.WriteByte(0)
	}
	return b.String()
}

func (d *DRA) evaluate(key string, claims []*resourcev1.ResourceClaim, c *candidates) *scheduling.DeviceDemand {
	if why := d.missingClass(claims); why != "" {
		return &scheduling.DeviceDemand{Refused: why}
	}
	fits := map[*scheduling.InstanceType]scheduling.Resources{}
	var cheapest *scheduling.InstanceType
	var failed error
	for _, it := range c.types {
		// An error (a selector reading an attribute a type's devices lack)
		// rules out that type, as kube-scheduler rules out such a node.
		results, err := d.allocate(it, claims)
		if err != nil {
			failed = cmp.Or(failed, fmt.Errorf("on %s: %w", it.Name, err))
			continue
		}
		if results == nil {
			continue
		}
		var took scheduling.Resources
		for i := range results {
			took = addResults(took, &results[i])
		}
		fits[it] = took
		if cheapest == nil || c.price[it] < c.price[cheapest] {
			cheapest = it
		}
	}
	admitted := map[*scheduling.InstanceType]bool{}
	var requests scheduling.Resources
	if cheapest != nil {
		// The devices the allocator takes can differ by type (a
		// prioritized list takes the first alternative a type has): the
		// pod asks for what it takes on the cheapest type, and goes to
		// the types where it takes no more.
		requests = fits[cheapest]
		for it, took := range fits {
			if took.Fits(requests) {
				admitted[it] = true
			}
		}
	}
	typeTerms := c.terms(admitted)
	on := d.onNodes(key, claims, c.nodes, typeTerms)
	switch {
	case cheapest == nil && len(on.extra) > 0:
		// Only devices existing nodes publish satisfy the claims.
		return &scheduling.DeviceDemand{Requests: on.took, Terms: [][]scheduling.Requirements{on.judged(nil)}, FailsOn: on.failed}
	case cheapest == nil && failed != nil:
		return &scheduling.DeviceDemand{Refused: fmt.Sprintf("the pod's resource claims cannot be evaluated %v; guard the selector with has() or fix it", failed), FailsOn: on.failed}
	case cheapest == nil:
		return &scheduling.DeviceDemand{Refused: d.explain(claims, c.types), FailsOn: on.failed}
	}
	return &scheduling.DeviceDemand{Requests: requests, Terms: [][]scheduling.Requirements{on.judged(typeTerms)}, FailsOn: on.failed}
}

// FailsOnNodeMarker is in the reason a pod is not planned for when its
// claims' selectors fail on an existing node's devices.
const FailsOnNodeMarker = "kube-scheduler stops scheduling the pod at that error"

// nodeResult is what the allocator says of claims on one node: whether
// they fit, the devices they take, or the error it stops at.
type nodeResult struct {
	fit  bool
	took scheduling.Resources
	err  error
}

// nodeFits is how claims fare on the nodes whose drivers published
// devices: the nodes (by hostname) the instance types' terms admit where
// they do not fit, those the terms do not admit where they fit, the
// devices they take on the first of those, and the nodes (by name)
// whose devices the allocator stops at an error on.
type nodeFits struct {
	excluded, extra []string
	took            scheduling.Resources
	failed          map[string]string
}

// onNodes runs kube-scheduler's allocator for the claims (of key) on
// each node against the devices its drivers published and the claims
// left free, and sets the result against what the instance types'
// terms admit of the node.
func (d *DRA) onNodes(key string, claims []*resourcev1.ResourceClaim, nodes []*scheduling.Node, typeTerms []scheduling.Requirements) nodeFits {
	var out nodeFits
	for _, n := range nodes {
		r := d.resultOn(key, n, claims)
		hostname := n.Name
		if h, ok := n.Requirements[scheduling.LabelHostname]; ok {
			if v, ok := h.Single(); ok {
				hostname = v
			}
		}
		admitted := slices.ContainsFunc(typeTerms, func(t scheduling.Requirements) bool { return n.Requirements.Compatible(t, nil) == nil })
		if r.err != nil {
			if out.failed == nil {
				out.failed = map[string]string{}
			}
			out.failed[n.Name] = fmt.Sprintf("the pod's resource claims cannot be evaluated on node %s's devices: %v; %s, "+
				"so no node launched for it helps: fix the selector (guard what it reads with has()) or what the node's driver publishes", n.Name, r.err, FailsOnNodeMarker)
		}
		switch {
		case r.fit && !admitted:
			if out.extra == nil {
				out.took = r.took
			}
			out.extra = append(out.extra, hostname)
		case !r.fit && admitted:
			out.excluded = append(out.excluded, hostname)
		}
	}
	return out
}

// resultOn is what the allocator says of the claims (of key) on a node,
// once per snapshot.
func (d *DRA) resultOn(key string, n *scheduling.Node, claims []*resourcev1.ResourceClaim) nodeResult {
	byNode, ok := d.onNode[key]
	if !ok {
		byNode = map[string]nodeResult{}
		d.onNode[key] = byNode
	}
	if r, ok := byNode[n.Name]; ok {
		return r
	}
	results, err := d.allocateOnNode(n, claims)
	r := nodeResult{fit: err == nil && results != nil, err: err}
	for i := range results {
		r.took = addResults(r.took, &results[i])
	}
	byNode[n.Name] = r
	return r
}

// judged are the instance types' terms, less the existing nodes they
// admit whose devices the claims do not fit, and the nodes they do not
// admit whose devices the claims fit.
func (f nodeFits) judged(typeTerms []scheduling.Requirements) []scheduling.Requirements {
	out := make([]scheduling.Requirements, 0, len(typeTerms)+1)
	for _, t := range typeTerms {
		if len(f.excluded) > 0 {
			t = t.Copy()
			t.Add(scheduling.NewRequirement(scheduling.LabelHostname, corev1.NodeSelectorOpNotIn, f.excluded...))
		}
		out = append(out, t)
	}
	if len(f.extra) > 0 {
		out = append(out, scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: scheduling.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: f.extra}))
	}
	return out
}

// terms are the alternatives that admit the instance types: by name
// where every NodePool's type of that name is admitted, by name and
// NodePool where NodeOverlays give a name different devices in
// different NodePools.
func (c *candidates) terms(admitted map[*scheduling.InstanceType]bool) []scheduling.Requirements {
	everywhere := map[string]bool{}
	for it := range admitted {
		everywhere[it.Name] = true
	}
	for _, it := range c.types {
		if !admitted[it] {
			everywhere[it.Name] = false
		}
	}
	var anywhere []string
	for name, all := range everywhere {
		if all {
			anywhere = append(anywhere, name)
		}
	}
	var out []scheduling.Requirements
	if len(anywhere) > 0 {
		slices.Sort(anywhere)
		out = append(out, scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: anywhere}))
	}
	for _, np := range c.pools {
		var names []string
		for _, it := range np.InstanceTypes {
			if admitted[it] && !everywhere[it.Name] {
				names = append(names, it.Name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			out = append(out, scheduling.NewRequirements(
				corev1.NodeSelectorRequirement{Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: slices.Compact(names)},
				corev1.NodeSelectorRequirement{Key: v1.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{np.Name}}))
		}
	}
	return out
}

// lowestPrice is the cheapest offering of the type in any of the
// NodePools that admit it.
func lowestPrice(it *scheduling.InstanceType, pools []*scheduling.NodePool) float64 {
	best := math.Inf(1)
	for _, np := range pools {
		if o, ok := it.CheapestOffering(np.Requirements); ok && slices.Contains(np.InstanceTypes, it) {
			best = min(best, o.Price)
		}
	}
	return best
}

// claimsOf are a pod's claims still to allocate (those of templates not
// generated yet made from their template), and the node its allocated
// claims are on; or why they cannot be read.
func (d *DRA) claimsOf(p *corev1.Pod) (claims []*resourcev1.ResourceClaim, allocatedOn, why string) {
	moving := p.Spec.NodeName != ""
	for _, pc := range p.Spec.ResourceClaims {
		claim, why := d.claimOf(p, pc)
		if why != "" {
			return nil, "", why
		}
		if claim == nil {
			continue
		}
		node, allocated := allocatedNode(claim)
		switch {
		case allocated && !moving:
			if allocatedOn != "" && allocatedOn != node {
				return nil, "", fmt.Sprintf("the pod's ResourceClaims are allocated on two nodes, %s and %s; kube-scheduler cannot place it", allocatedOn, node)
			}
			allocatedOn = node
		case allocated && pc.ResourceClaimName != nil && len(claim.Status.ReservedFor) > 1:
			return nil, "", fmt.Sprintf("ResourceClaim %s/%s is shared by %d pods on node %s: its devices stay there while any of them runs, so the pod cannot move",
				claim.Namespace, claim.Name, len(claim.Status.ReservedFor), node)
		default:
			// Unallocated; or the pod's own claim, allocated again
			// wherever the pod goes.
			fresh := &resourcev1.ResourceClaim{ObjectMeta: claim.ObjectMeta, Spec: *withDefaults(&claim.Spec)}
			claims = append(claims, fresh)
		}
	}
	return claims, allocatedOn, ""
}

// claimOf is the claim one of a pod's resource claims refers to: a named
// claim, or the claim generated from a template (the template's spec
// until it is generated); nil for an entry that names neither.
func (d *DRA) claimOf(p *corev1.Pod, pc corev1.PodResourceClaim) (*resourcev1.ResourceClaim, string) {
	switch {
	case pc.ResourceClaimName != nil:
		key := types.NamespacedName{Namespace: p.Namespace, Name: *pc.ResourceClaimName}
		c, ok := d.claims[key]
		if !ok {
			return nil, fmt.Sprintf("ResourceClaim %s (spec.resourceClaims %q) does not exist; create it, or use a ResourceClaimTemplate", key, pc.Name)
		}
		return c, ""
	case pc.ResourceClaimTemplateName != nil:
		for _, st := range p.Status.ResourceClaimStatuses {
			if st.Name == pc.Name && st.ResourceClaimName != nil {
				if c, ok := d.claims[types.NamespacedName{Namespace: p.Namespace, Name: *st.ResourceClaimName}]; ok {
					return c, ""
				}
			}
		}
		key := types.NamespacedName{Namespace: p.Namespace, Name: *pc.ResourceClaimTemplateName}
		t, ok := d.templates[key]
		if !ok {
			return nil, fmt.Sprintf("ResourceClaimTemplate %s (spec.resourceClaims %q) does not exist; create it in the pod's namespace", key, pc.Name)
		}
		return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name + "-" + pc.Name,
			Annotations: map[string]string{fromTemplate: t.Name}}, Spec: *withDefaults(&t.Spec.Spec)}, ""
	}
	return nil, ""
}

// withDefaults is a claim's spec as the API server stores it: requests
// without an allocation mode take exactly one device. (Manifests read
// from files were never defaulted.)
func withDefaults(spec *resourcev1.ResourceClaimSpec) *resourcev1.ResourceClaimSpec {
	out := spec.DeepCopy()
	for i := range out.Devices.Requests {
		r := &out.Devices.Requests[i]
		if e := r.Exactly; e != nil {
			e.AllocationMode, e.Count = defaultMode(e.AllocationMode, e.Count)
		}
		for j := range r.FirstAvailable {
			sub := &r.FirstAvailable[j]
			sub.AllocationMode, sub.Count = defaultMode(sub.AllocationMode, sub.Count)
		}
	}
	return out
}

func defaultMode(mode resourcev1.DeviceAllocationMode, count int64) (resourcev1.DeviceAllocationMode, int64) {
	if mode == "" {
		mode = resourcev1.DeviceAllocationModeExactCount
	}
	if mode == resourcev1.DeviceAllocationModeExactCount && count == 0 {
		count = 1
	}
	return mode, count
}

// instanceTypes are the instance types with devices that the NodePools
// can launch (their requirements admit them and they have an offering),
// once each.
func instanceTypes(pools []*scheduling.NodePool) []*scheduling.InstanceType {
	var out []*scheduling.InstanceType
	seen := map[*scheduling.InstanceType]bool{}
	for _, np := range pools {
		for _, it := range np.InstanceTypes {
			if len(it.Devices) > 0 && !seen[it] && it.Compatible(np.Requirements) {
				seen[it] = true
				out = append(out, it)
			}
		}
	}
	return out
}

// allocate runs kube-scheduler's allocator for the claims on a node of
// the instance type: nil when they do not fit. Devices a launch attaches
// only when asked (EFA) are on the node only if the claims need them: a
// node launched for the claims has them only if the claims do not fit
// without them.
func (d *DRA) allocate(it *scheduling.InstanceType, claims []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, error) {
	res, err := d.allocateOn(it, false, claims)
	if err != nil || res != nil || !d.classesTakeOnRequest(it, claims) {
		return res, err
	}
	return d.allocateOn(it, true, claims)
}

// classesTakeOnRequest reports whether a DeviceClass of the claims
// selects a device of the type that is attached on request: only then can
// attaching them make the claims fit.
func (d *DRA) classesTakeOnRequest(it *scheduling.InstanceType, claims []*resourcev1.ResourceClaim) bool {
	asks := choicesOf(claims)
	for _, set := range it.Devices {
		if !set.OnRequest {
			continue
		}
		for _, ask := range asks {
			class, err := d.classes.Get(ask.class)
			if err != nil {
				continue
			}
			for _, dev := range set.Devices {
				if ok, err := d.meets(cel.Device{Driver: set.Driver, Attributes: dev.Attributes, Capacity: dev.Capacity}, class.Spec.Selectors); ok || err != nil {
					return true
				}
			}
		}
	}
	return false
}

// allocatorKey is an instance type with or without the devices attached
// on request.
type allocatorKey struct {
	it        *scheduling.InstanceType
	onRequest bool
}

func (d *DRA) allocateOn(it *scheduling.InstanceType, onRequest bool, claims []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, error) {
	if possible, err := d.precheck(devicesOf(it, onRequest), claims); !possible {
		return nil, err
	}
	key := allocatorKey{it, onRequest}
	a, ok := d.allocators[key]
	if !ok {
		var err error
		if a, err = structured.NewAllocator(context.Background(), draFeatures, structured.AllocatedState{}, d.classes, slicesOf(it, onRequest), d.cache); err != nil {
			return nil, err
		}
		d.allocators[key] = a
	}
	return a.Allocate(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: placeholderNode}}, claims)
}

// allocateOnNode runs kube-scheduler's allocator for the claims on an
// existing node: its drivers' devices the allocated claims left free.
// What the allocator says is the answer, its errors included; the count
// check only spares it allocations that cannot succeed.
func (d *DRA) allocateOnNode(n *scheduling.Node, claims []*resourcev1.ResourceClaim) ([]resourcev1.AllocationResult, error) {
	if possible, err := d.precheck(d.freeOn(n.Name), claims); err == nil && !possible {
		return nil, nil
	}
	a, ok := d.nodeAllocators[n.Name]
	if !ok {
		var err error
		if a, err = structured.NewAllocator(context.Background(), draFeatures, structured.AllocatedState{AllocatedDevices: d.taken}, d.classes, d.slices[n.Name], d.cache); err != nil {
			return nil, err
		}
		d.nodeAllocators[n.Name] = a
	}
	return a.Allocate(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Requirements.Labels()}}, claims)
}

// freeOn are the devices of a node the allocator can give: those of the
// newest generation of each of its pools, not held by a claim, without
// binding conditions (a feature kube-scheduler 1.34 leaves off).
func (d *DRA) freeOn(node string) []scheduling.DeviceSet {
	if sets, ok := d.free[node]; ok {
		return sets
	}
	type poolKey struct{ driver, pool string }
	newest := map[poolKey]int64{}
	for _, s := range d.slices[node] {
		k := poolKey{s.Spec.Driver, s.Spec.Pool.Name}
		newest[k] = max(newest[k], s.Spec.Pool.Generation)
	}
	out := make([]scheduling.DeviceSet, 0, len(d.slices[node]))
	for _, s := range d.slices[node] {
		if s.Spec.Pool.Generation < newest[poolKey{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		set := scheduling.DeviceSet{Driver: s.Spec.Driver}
		for _, dev := range s.Spec.Devices {
			if len(dev.BindingConditions) == 0 && !d.taken.Has(structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, dev.Name)) {
				set.Devices = append(set.Devices, dev)
			}
		}
		out = append(out, set)
	}
	d.free[node] = out
	return out
}

// devicesOf are the devices a node of the type has; those attached on
// request only with onRequest.
func devicesOf(it *scheduling.InstanceType, onRequest bool) []scheduling.DeviceSet {
	out := make([]scheduling.DeviceSet, 0, len(it.Devices))
	for _, set := range it.Devices {
		if !set.OnRequest || onRequest {
			out = append(out, set)
		}
	}
	return out
}

// precheck evaluates the claims' selectors (their DeviceClasses' first,
// then their own, as the allocator does) on every one of the devices,
// and reports whether the allocator can succeed at all: every request
// has as many matching devices as it asks (one of a prioritized list's
// alternatives does), and the devices they match are as many as the
// requests ask together.
//
// The first error is returned: the allocator stops at the first error,
// and which device it reaches first depends on the order it takes a
// node's pools in, which is a map's; on an error kube-scheduler aborts
// the pod's scheduling attempt. No node is planned where that can
// happen. A doomed allocation is not started: before giving up, the
// allocator tries the devices in every order (sixteen GPUs asked of a
// type with eight take it 8! tries).
func (d *DRA) precheck(devices []scheduling.DeviceSet, claims []*resourcev1.ResourceClaim) (bool, error) {
	type requestKey struct {
		claim   *resourcev1.ResourceClaim
		request string
	}
	least := map[requestKey]int64{} // the fewest devices a request takes; -1: it cannot be met
	var matched sets.Set[string]
	for _, ask := range choicesOf(claims) {
		if _, err := d.classes.Get(ask.class); err != nil {
			return true, nil //nolint:nilerr // the allocator says so, by name
		}
		ids, err := d.matching(devices, ask)
		if err != nil {
			return false, err
		}
		k := requestKey{ask.claim, ask.request}
		if _, seen := least[k]; !seen {
			least[k] = -1
		}
		want := ask.count
		switch {
		case ask.admin:
			want = 0 // admin access takes devices in use too, and holds none
		case ask.mode == resourcev1.DeviceAllocationModeAll:
			want = max(int64(len(ids)), 1)
		}
		if int64(len(ids)) < want {
			continue
		}
		matched = matched.Union(ids)
		if least[k] < 0 || want < least[k] {
			least[k] = want
		}
	}
	total := int64(0)
	for _, n := range least {
		if n < 0 {
			return false, nil
		}
		total += n
	}
	return int64(matched.Len()) >= total, nil
}

// choice is one way a claim's request may be met: an exact request, or
// one of a prioritized list's alternatives.
type choice struct {
	claim     *resourcev1.ResourceClaim
	request   string
	class     string
	selectors []resourcev1.DeviceSelector
	mode      resourcev1.DeviceAllocationMode
	count     int64
	admin     bool
}

// choicesOf lists the claims' requests and their alternatives in order.
func choicesOf(claims []*resourcev1.ResourceClaim) []choice {
	var out []choice
	for _, c := range claims {
		for _, req := range c.Spec.Devices.Requests {
			if e := req.Exactly; e != nil {
				out = append(out, choice{c, req.Name, e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.AdminAccess != nil && *e.AdminAccess})
			}
			for _, sub := range req.FirstAvailable {
				out = append(out, choice{c, req.Name, sub.DeviceClassName, sub.Selectors, sub.AllocationMode, sub.Count, false})
			}
		}
	}
	return out
}

// matching are the devices (by set and name) that meet a choice's
// DeviceClass (which exists) and selectors, or the first error
// evaluating them.
func (d *DRA) matching(devices []scheduling.DeviceSet, ask choice) (sets.Set[string], error) {
	class, err := d.classes.Get(ask.class)
	if err != nil {
		return nil, err
	}
	out := sets.New[string]()
	for i, set := range devices {
		for _, dev := range set.Devices {
			in := cel.Device{Driver: set.Driver, Attributes: dev.Attributes, Capacity: dev.Capacity}
			ok, err := d.meets(in, class.Spec.Selectors)
			if err != nil {
				return nil, fmt.Errorf("DeviceClass %s: %w", class.Name, err)
			}
			if !ok {
				continue
			}
			if ok, err = d.meets(in, ask.selectors); err != nil {
				return nil, fmt.Errorf("claim %s/%s: %w", ask.claim.Namespace, ask.claim.Name, err)
			} else if ok {
				out.Insert(fmt.Sprintf("%d/%s", i, dev.Name))
			}
		}
	}
	return out, nil
}

// meets reports whether a device meets all of the selectors.
func (d *DRA) meets(in cel.Device, selectors []resourcev1.DeviceSelector) (bool, error) {
	for i, sel := range selectors {
		if sel.CEL == nil {
			continue
		}
		expr := d.cache.GetOrCompile(sel.CEL.Expression)
		if expr.Error != nil {
			return false, nil //nolint:nilerr // refused by the API server; the allocator says so
		}
		ok, _, err := expr.DeviceMatches(context.Background(), in)
		if err != nil {
			return false, fmt.Errorf("selector #%d: CEL runtime error on a %s device: %w", i, in.Driver, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// slicesOf are the ResourceSlices a node of the instance type would have,
// one pool per driver; the devices attached on request with onRequest.
func slicesOf(it *scheduling.InstanceType, onRequest bool) []*resourcev1.ResourceSlice {
	sets := devicesOf(it, onRequest)
	out := make([]*resourcev1.ResourceSlice, 0, len(sets))
	for _, set := range sets {
		out = append(out, &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: it.Name + "-" + set.Driver},
			Spec: resourcev1.ResourceSliceSpec{Driver: set.Driver, NodeName: ptrTo(placeholderNode), Devices: set.Devices,
				Pool: resourcev1.ResourcePool{Name: it.Name, Generation: 1, ResourceSliceCount: 1}},
		})
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// describeRequests names a constraint's requests ("all requests" when
// it names none).
func describeRequests(names []string) string {
	if len(names) == 0 {
		return "the devices of all its requests"
	}
	return "the devices of requests " + strings.Join(names, ", ")
}

// explain says why no instance type the NodePools admit satisfies the
// claims: a DeviceClass missing, the request whose selectors match no
// device, or the count no type has, with the closest type.
func (d *DRA) explain(claims []*resourcev1.ResourceClaim, types []*scheduling.InstanceType) string {
	if len(types) == 0 {
		return "the pod's resource claims need devices, and no instance type the NodePools admit has any: " +
			"admit a GPU or accelerator family (for example karpenter.k8s.aws/instance-family In [g6, g5]) in a NodePool the pod can use"
	}
	for _, c := range claims {
		for _, req := range c.Spec.Devices.Requests {
			if why := d.explainRequest(c, req, types); why != "" {
				return why
			}
		}
	}
	for _, c := range claims {
		for _, con := range c.Spec.Devices.Constraints {
			if con.MatchAttribute != nil {
				return fmt.Sprintf("%s: every request has devices on some instance type the NodePools admit, but none has devices that meet the claim's constraint "+
					"that %s match (matchAttribute %s): if the devices share it on the node, say so with a NodeOverlay's dynamicResources.attributeBindings",
					describeClaim(c), describeRequests(con.Requests), *con.MatchAttribute)
			}
		}
	}
	return fmt.Sprintf("no single instance type the NodePools admit satisfies all of the pod's resource claims together (%s each fit alone somewhere)", claimNames(claims))
}

// explainRequest says why one request fits no type; "" when it fits one.
func (d *DRA) explainRequest(c *resourcev1.ResourceClaim, req resourcev1.DeviceRequest, types []*scheduling.InstanceType) string {
	where := fmt.Sprintf("%s request %q", describeClaim(c), req.Name)
	alternatives := []resourcev1.DeviceSubRequest{}
	if req.Exactly != nil {
		e := req.Exactly
		alternatives = append(alternatives, resourcev1.DeviceSubRequest{Name: "", DeviceClassName: e.DeviceClassName, Selectors: e.Selectors,
			AllocationMode: e.AllocationMode, Count: e.Count, Tolerations: e.Tolerations})
	}
	alternatives = append(alternatives, req.FirstAvailable...)
	var reasons []string
	for _, alt := range alternatives {
		why := d.explainAlternative(c, alt, types)
		if why == "" {
			return ""
		}
		if alt.Name != "" {
			why = fmt.Sprintf("alternative %q: %s", alt.Name, why)
		}
		reasons = append(reasons, why)
	}
	return where + ": " + strings.Join(reasons, "; ")
}

// deviceCount is how many devices a node of the type has, of every
// driver.
func deviceCount(it *scheduling.InstanceType) int64 {
	var n int64
	for _, set := range it.Devices {
		n += int64(len(set.Devices))
	}
	return n
}

// explainAlternative tries one way to satisfy a request on every type:
// its DeviceClass alone, then with its selectors, then its count.
func (d *DRA) explainAlternative(c *resourcev1.ResourceClaim, alt resourcev1.DeviceSubRequest, types []*scheduling.InstanceType) string {
	try := func(selectors []resourcev1.DeviceSelector, count int64) (fit *scheduling.InstanceType, err error) {
		probe := &resourcev1.ResourceClaim{ObjectMeta: c.ObjectMeta, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "probe", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: alt.DeviceClassName,
				Selectors: selectors, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count, Tolerations: alt.Tolerations}}}}}}
		for _, it := range types {
			if deviceCount(it) < count {
				continue // too few devices of any driver
			}
			res, err := d.allocate(it, []*resourcev1.ResourceClaim{probe})
			if err != nil {
				return nil, err
			}
			if res != nil {
				return it, nil
			}
		}
		return nil, nil
	}
	if it, err := try(nil, 1); err != nil {
		return err.Error()
	} else if it == nil {
		return fmt.Sprintf("no instance type the NodePools admit has any device DeviceClass %s selects (theirs are of the drivers %s)", alt.DeviceClassName, driversOf(types))
	}
	one, err := try(alt.Selectors, 1)
	if err != nil {
		return err.Error()
	} else if one == nil {
		return fmt.Sprintf("its selectors match no device of DeviceClass %s on any instance type the NodePools admit (%s)", alt.DeviceClassName, selectorsOf(alt.Selectors))
	}
	if alt.AllocationMode == resourcev1.DeviceAllocationModeAll {
		return "" // all devices of any type that has one
	}
	// The most devices a type can give the request: a type that gives n
	// gives fewer, so the search halves the range each time; no type
	// gives more than it has.
	most := int64(0)
	for _, it := range types {
		most = max(most, deviceCount(it))
	}
	best, bestType := int64(1), one.Name
	for hi := min(alt.Count, most); best < hi; {
		mid := (best + hi + 1) / 2
		it, err := try(alt.Selectors, mid)
		if err != nil || it == nil {
			hi = mid - 1 // a selector error on a type counts as not fitting there
			continue
		}
		best, bestType = mid, it.Name
	}
	if best >= alt.Count {
		return ""
	}
	return fmt.Sprintf("it asks for %d devices and the most any instance type the NodePools admit has that match is %d (%s)", alt.Count, best, bestType)
}

// missingClass names a DeviceClass the claims' requests use that does not
// exist; "" when they all do.
func (d *DRA) missingClass(claims []*resourcev1.ResourceClaim) string {
	for _, ask := range choicesOf(claims) {
		if _, err := d.classes.Get(ask.class); err != nil {
			return fmt.Sprintf("%s request %q: DeviceClass %q does not exist; create it (the NVIDIA GPU driver's chart installs gpu.nvidia.com) or name one of %s",
				describeClaim(ask.claim), ask.request, ask.class, d.classNames())
		}
	}
	return ""
}

func (d *DRA) classNames() string {
	names := make([]string, 0, len(d.classes))
	for _, c := range d.classes {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		return "none (no DeviceClass exists)"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func driversOf(types []*scheduling.InstanceType) string {
	var drivers []string
	for _, it := range types {
		for _, set := range it.Devices {
			if !slices.Contains(drivers, set.Driver) {
				drivers = append(drivers, set.Driver)
			}
		}
	}
	slices.Sort(drivers)
	return strings.Join(drivers, ", ")
}

func selectorsOf(sel []resourcev1.DeviceSelector) string {
	var out []string
	for _, s := range sel {
		if s.CEL != nil {
			out = append(out, s.CEL.Expression)
		}
	}
	return strings.Join(out, " && ")
}

func claimNames(claims []*resourcev1.ResourceClaim) string {
	names := make([]string, 0, len(claims))
	for _, c := range claims {
		names = append(names, describeClaim(c))
	}
	return strings.Join(names, ", ")
}

// fromTemplate marks, on a claim not generated yet, the template it will
// be made from.
const fromTemplate = "nodewright.dev/from-template"

// describeClaim names a claim for messages: the template of a claim not
// generated yet (the same for every pod of a workload).
func describeClaim(c *resourcev1.ResourceClaim) string {
	if t, ok := c.Annotations[fromTemplate]; ok {
		return fmt.Sprintf("ResourceClaimTemplate %s/%s", c.Namespace, t)
	}
	return fmt.Sprintf("ResourceClaim %s/%s", c.Namespace, c.Name)
}
