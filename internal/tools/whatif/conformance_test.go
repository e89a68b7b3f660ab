package whatif_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// The conformance suite: cases of the reference's provisioning scheduling
// tests (kubernetes-sigs/karpenter,
// pkg/controllers/provisioning/scheduling: suite_test.go,
// topology_test.go, instance_selection_test.go), each written again as
// simulate input — manifests a user could hand `nodewright simulate` —
// with the outcome the reference expects. Where the reference's fake
// cloud provider has instance types or labels AWS does not, a case uses
// the real instance types of the catalog that play the same part.
//
// A case that nodewright deliberately decides differently says so in
// its ref and checks nodewright's outcome; the list is in the README.

// conformanceCase is one translated case.
type conformanceCase struct {
	// ref names the reference's case: "file: Describe > It".
	ref string
	// objects are YAML documents. Without a NodePool the case runs with
	// anyPool (NodePool default, every instance type of the catalog, spot
	// and on-demand); the EC2NodeClass default is always there.
	objects string
	want    []expectation
	// gap, when set, says how nodewright still decides the case
	// differently from the reference: the case is skipped, and says so.
	gap string
	// better, when set, says why nodewright deliberately decides the case
	// otherwise than the reference; want then checks nodewright's outcome.
	better string
}

// anyPool is the NodePool a case gets when it declares none: as the
// reference's default test NodePool, no requirement beyond the node
// class's.
const anyPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
`

// outcome is where a case's pods went.
type outcome struct {
	objs *whatif.Objects
	res  *whatif.Result
	// at maps each placed pod's name to its node.
	at map[string]*placed
	// unplaced maps each pod the plan cannot place to why.
	unplaced map[string]string
}

// placed is a pod's node: a NodeClaim the plan launches, or an existing
// node (claim nil).
type placed struct {
	name  string
	claim *scheduling.PlannedNodeClaim
	node  *corev1.Node
}

// label is the node's value for key, and whether it has exactly one.
// A planned NodeClaim's is its requirement's single value; its zone and
// capacity type, when its requirements leave a choice, those of the
// offering it launches; its hostname its own name.
func (p *placed) label(key string) (string, bool) {
	if p.node != nil {
		v, ok := p.node.Labels[key]
		if key == corev1.LabelHostname && !ok {
			return p.node.Name, true
		}
		return v, ok
	}
	if key == corev1.LabelHostname {
		return p.name, true
	}
	if r, ok := p.claim.Requirements[key]; ok {
		if v, single := r.Single(); single {
			return v, true
		}
	}
	switch key {
	case corev1.LabelTopologyZone:
		return p.claim.Offering.Zone, true
	case "karpenter.sh/capacity-type":
		return p.claim.Offering.CapacityType, true
	case corev1.LabelInstanceTypeStable:
		return p.claim.InstanceType.Name, true
	}
	if v, ok := p.claim.InstanceType.Requirements[key]; ok {
		if s, single := v.Single(); single {
			return s, true
		}
	}
	return "", false
}

type expectation func(o *outcome) error

func runConformance(t *testing.T, c conformanceCase) *outcome {
	t.Helper()
	doc := defaultNodeClass + "---\n" + c.objects
	if !strings.Contains(c.objects, "kind: NodePool") {
		doc += "\n---\n" + anyPool
	}
	objs := &whatif.Objects{}
	if err := objs.Load(c.ref, strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	res, err := whatif.RunWith(objs, simulated())
	if err != nil {
		t.Fatal(err)
	}
	o := &outcome{objs: objs, res: res, at: map[string]*placed{}, unplaced: map[string]string{}}
	for _, c := range res.Plan.NodeClaims {
		for _, p := range c.Pods {
			o.at[p.Name] = &placed{name: c.Name, claim: c}
		}
	}
	nodes := map[string]*corev1.Node{}
	for _, n := range objs.Nodes {
		nodes[n.Name] = n
	}
	for _, e := range res.Plan.Existing {
		for _, p := range e.Pods {
			o.at[p.Name] = &placed{name: e.Node, node: nodes[e.Node]}
		}
	}
	for _, u := range res.Plan.Unschedulable {
		o.unplaced[u.Pod.Name] = u.Reason
	}
	return o
}

func TestReferenceSchedulingSuite(t *testing.T) {
	for _, c := range slices.Concat(suiteCases, topologyCases, selectionCases) {
		t.Run(c.ref, func(t *testing.T) {
			if c.gap != "" {
				t.Skip("differs from the reference: " + c.gap)
			}
			o := runConformance(t, c)
			for _, w := range c.want {
				if err := w(o); err != nil {
					t.Error(err)
				}
			}
			if t.Failed() {
				t.Log(o.describe())
			}
		})
	}
}

// describe says where every pod went, for a failing case.
func (o *outcome) describe() string {
	var b strings.Builder
	for _, c := range o.res.Plan.NodeClaims {
		fmt.Fprintf(&b, "\n  new %s (%s, %s %s %s):", c.Name, c.NodePool, c.InstanceType.Name, c.Offering.CapacityType, c.Offering.Zone)
		for _, p := range c.Pods {
			b.WriteString(" " + p.Name)
		}
	}
	for _, e := range o.res.Plan.Existing {
		fmt.Fprintf(&b, "\n  existing %s:", e.Node)
		for _, p := range e.Pods {
			b.WriteString(" " + p.Name)
		}
	}
	for _, u := range o.res.Plan.Unschedulable {
		fmt.Fprintf(&b, "\n  unschedulable %s: %s", u.Pod.Name, u.Reason)
	}
	return b.String()
}

// pods names the pods a name stands for: itself, or with a trailing "*"
// every pod of the objects whose name starts with the rest.
func (o *outcome) pods(names []string) []string {
	var out []string
	for _, n := range names {
		prefix, many := strings.CutSuffix(n, "*")
		if !many {
			out = append(out, n)
			continue
		}
		for _, p := range o.objs.Pods {
			if strings.HasPrefix(p.Name, prefix) {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// scheduled: every named pod is placed, on a new or an existing node.
func scheduled(names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			if o.at[n] == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
		}
		return nil
	}
}

// notScheduled: no named pod is placed; with a reason, each says it.
func notScheduled(names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			if at := o.at[n]; at != nil {
				return fmt.Errorf("pod %s is placed on %s, want it unschedulable", n, at.name)
			}
			if _, ok := o.unplaced[n]; !ok {
				return fmt.Errorf("pod %s is neither placed nor said unschedulable", n)
			}
		}
		return nil
	}
}

// because: the named pod's unschedulable reason mentions each fragment.
func because(pod string, fragments ...string) expectation {
	return func(o *outcome) error {
		why, ok := o.unplaced[pod]
		if !ok {
			return fmt.Errorf("pod %s is not unschedulable", pod)
		}
		for _, f := range fragments {
			if !strings.Contains(why, f) {
				return fmt.Errorf("pod %s: %q does not say %q", pod, why, f)
			}
		}
		return nil
	}
}

// newNodes: the plan launches exactly n NodeClaims.
func newNodes(n int) expectation {
	return func(o *outcome) error {
		if got := len(o.res.Plan.NodeClaims); got != n {
			return fmt.Errorf("%d new NodeClaims, want %d", got, n)
		}
		return nil
	}
}

// sameNode: the named pods are placed, all on one node.
func sameNode(names ...string) expectation {
	return func(o *outcome) error {
		var node string
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			if node != "" && at.name != node {
				return fmt.Errorf("pod %s is on %s, want it with the others on %s", n, at.name, node)
			}
			node = at.name
		}
		return nil
	}
}

// apart: the named pods are placed, each on a node of its own.
func apart(names ...string) expectation {
	return func(o *outcome) error {
		seen := map[string]string{}
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			if other, ok := seen[at.name]; ok {
				return fmt.Errorf("pods %s and %s share node %s", other, n, at.name)
			}
			seen[at.name] = n
		}
		return nil
	}
}

// nodeLabel: the named pods are placed on nodes whose key is one of
// values (with no values: nodes without the label, or that leave it open).
func nodeLabel(key string, values []string, names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			v, ok := at.label(key)
			if len(values) == 0 {
				if ok {
					return fmt.Errorf("pod %s is on %s, whose %s is %q; want none", n, at.name, key, v)
				}
				continue
			}
			if !ok || !slices.Contains(values, v) {
				return fmt.Errorf("pod %s is on %s, whose %s is %q (set %v); want one of %v", n, at.name, key, v, ok, values)
			}
		}
		return nil
	}
}

// notNodeLabel: the named pods are placed on nodes whose key is none of
// values.
func notNodeLabel(key string, values []string, names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil {
				return fmt.Errorf("pod %s is not placed: %s", n, o.unplaced[n])
			}
			if v, ok := at.label(key); ok && slices.Contains(values, v) {
				return fmt.Errorf("pod %s is on %s, whose %s is %q; want none of %v", n, at.name, key, v, values)
			}
		}
		return nil
	}
}

// skew: the placed pods whose labels match selector ("app=web"), counted
// by their node's key, are counts in some order, as the reference's
// ExpectSkew(...).To(ConsistOf(counts)). Pods on existing nodes count.
func skew(key, selector string, counts ...int) expectation {
	return func(o *outcome) error {
		sel, err := labels.Parse(selector)
		if err != nil {
			return err
		}
		byDomain := map[string]int{}
		for _, p := range o.objs.Pods {
			if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			node := p.Spec.NodeName
			if at := o.at[p.Name]; at != nil {
				v, ok := at.label(key)
				if !ok {
					return fmt.Errorf("pod %s is on %s, which leaves %s open", p.Name, at.name, key)
				}
				byDomain[v]++
				continue
			}
			if node == "" {
				continue
			}
			for _, n := range o.objs.Nodes {
				if n.Name == node {
					v, ok := n.Labels[key]
					if key == corev1.LabelHostname && !ok {
						v, ok = n.Name, true
					}
					if ok {
						byDomain[v]++
					}
				}
			}
		}
		got := slices.Sorted(maps.Values(byDomain))
		want := slices.Sorted(slices.Values(counts))
		if !slices.Equal(got, want) {
			return fmt.Errorf("pods %s by %s: %v (%v), want %v", selector, key, got, byDomain, want)
		}
		return nil
	}
}

// instanceType: the named pods are placed on NodeClaims whose cheapest
// instance type is one of names.
func instanceType(types []string, names ...string) expectation {
	return nodeLabel(corev1.LabelInstanceTypeStable, types, names...)
}

// listed: the named pods are on new NodeClaims every one of whose
// listed instance types (InstanceTypes: every type the launch may use)
// passes ok; what says what ok checks, for the message.
func listed(what string, ok func(c *scheduling.PlannedNodeClaim, it *scheduling.InstanceType) bool, names ...string) expectation {
	return func(o *outcome) error {
		for _, n := range o.pods(names) {
			at := o.at[n]
			if at == nil || at.claim == nil {
				return fmt.Errorf("pod %s is not on a new NodeClaim", n)
			}
			for _, it := range at.claim.InstanceTypes {
				if !ok(at.claim, it) {
					return fmt.Errorf("pod %s is on %s, which lists %s: want every listed type %s", n, at.name, it.Name, what)
				}
			}
		}
		return nil
	}
}

// listedLabel: every instance type the named pods' NodeClaims list has
// label key set to value.
func listedLabel(key, value string, names ...string) expectation {
	return listed(key+"="+value, func(_ *scheduling.PlannedNodeClaim, it *scheduling.InstanceType) bool {
		r, ok := it.Requirements[key]
		if !ok {
			return false
		}
		v, single := r.Single()
		return single && v == value
	}, names...)
}

// listedOffering: every instance type the named pods' NodeClaims list
// has an available offering of capacityType in zone ("" for either: any).
func listedOffering(capacityType, zone string, names ...string) expectation {
	return listed(fmt.Sprintf("offered as %q in %q", capacityType, zone), func(_ *scheduling.PlannedNodeClaim, it *scheduling.InstanceType) bool {
		return slices.ContainsFunc(it.Offerings, func(of scheduling.Offering) bool {
			return of.Available && (capacityType == "" || of.CapacityType == capacityType) && (zone == "" || of.Zone == zone)
		})
	}, names...)
}

// listedHolds: every instance type the named pods' NodeClaims list has
// the allocatable to hold all the pods of its NodeClaim (their requests
// as the pods state them).
func listedHolds(names ...string) expectation {
	return listed("to hold its pods", func(c *scheduling.PlannedNodeClaim, it *scheduling.InstanceType) bool {
		var total scheduling.Resources
		for _, p := range c.Pods {
			r, _ := scheduling.PodRequests(p)
			total = total.Add(r)
		}
		return total.Fits(it.Allocatable)
	}, names...)
}

// listedAtLeast: the named pods' NodeClaims each list at least n
// instance types.
func listedAtLeast(n int, names ...string) expectation {
	return func(o *outcome) error {
		for _, p := range o.pods(names) {
			at := o.at[p]
			if at == nil || at.claim == nil {
				return fmt.Errorf("pod %s is not on a new NodeClaim", p)
			}
			if got := len(at.claim.InstanceTypes); got < n {
				return fmt.Errorf("pod %s is on %s, which lists %d instance types; want at least %d", p, at.name, got, n)
			}
		}
		return nil
	}
}

// pods writes n pods name-0 … name-(n-1) with the same metadata labels
// (a flow map, "{app: web}", or "") and spec (flow style, without
// containers, which get one container requesting requests, "" for none).
func pods(n int, name, lbls, requests, spec string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(pod(fmt.Sprintf("%s-%d", name, i), lbls, requests, spec))
	}
	return b.String()
}

// pod writes one pending pod in the default namespace; see pods.
func pod(name, lbls, requests, spec string) string {
	if lbls == "" {
		lbls = "{}"
	}
	if requests == "" {
		requests = "{}"
	}
	if spec != "" {
		spec = ", " + strings.TrimSuffix(strings.TrimPrefix(spec, "{"), "}")
	}
	return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: default, labels: %s}\nspec: {containers: [{name: c, image: busybox, resources: {requests: %s}}]%s}\n",
		name, lbls, requests, spec)
}
