package disruption

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// reschedule plans where the nodes' pods go if the nodes go. The nodes
// other commands take (in this decision or in flight) go too; their pods
// are not placed again when those commands planned room for them: that
// room — their replacements with those pods on them, the pods they move
// onto nodes that stay — is in the plan's input, and the rest of it can
// take these nodes' pods. Without it, the replacements of one command
// would be planned again by each later one.
func (d *decider) reschedule(nodes []*state.Node) (*scheduling.Plan, int) {
	in, pods := d.rescheduleInput(nodes)
	if pods == 0 {
		return &scheduling.Plan{}, 0
	}
	return scheduling.Solve(in), pods
}

// rescheduleOnto plans the nodes' pods onto one new node: the pods the
// cheapest plan put on new nodes (several small ones, where single-node
// consolidation replaces a node by one) on an instance type that holds
// them all. Each NodePool offers only such types and at most one more
// node.
func (d *decider) rescheduleOnto(nodes []*state.Node, cheapest *scheduling.Plan) *scheduling.Plan {
	var demand scheduling.Resources
	for _, c := range cheapest.NodeClaims {
		for _, p := range c.Pods {
			r, _ := scheduling.PodRequests(p)
			demand = demand.Add(r)
		}
	}
	in, _ := d.rescheduleInput(nodes)
	pools := make([]*scheduling.NodePool, 0, len(in.NodePools))
	for _, np := range in.NodePools {
		cp := *np
		cp.InstanceTypes = slices.DeleteFunc(slices.Clone(np.InstanceTypes), func(it *scheduling.InstanceType) bool { return !demand.Fits(it.Allocatable) })
		one := cp.Usage[corev1.ResourceName("nodes")]
		one.Add(resource.MustParse("1"))
		if limit, ok := cp.Limits["nodes"]; !ok || one.Cmp(limit) < 0 {
			cp.Limits = maps.Clone(cp.Limits)
			if cp.Limits == nil {
				cp.Limits = corev1.ResourceList{}
			}
			cp.Limits["nodes"] = one
		}
		pools = append(pools, &cp)
	}
	in.NodePools = pools
	return scheduling.Solve(in)
}

// rescheduleInput is the plan's input for the nodes' pods, and how many
// pods move.
func (d *decider) rescheduleInput(nodes []*state.Node) (scheduling.Input, int) {
	without := map[string]bool{}
	pods := 0
	for _, n := range nodes {
		without[n.Name] = true
		pods += len(n.Reschedulable())
	}
	if pods == 0 {
		return scheduling.Input{}, 0
	}
	for name := range d.taken {
		without[name] = true
	}
	for name := range d.opts.InFlight {
		without[name] = true
	}
	rooms := slices.Clone(d.opts.Planned)
	for _, c := range d.out.Commands {
		if !c.Static {
			rooms = append(rooms, RoomOf(c))
		}
	}
	in := d.s.Reschedule(without)
	d.keepRoom(&in, rooms)
	// A node drift or expiration replaces takes no pods: they would be
	// evicted again when it goes.
	in.Nodes = slices.DeleteFunc(in.Nodes, func(n *scheduling.Node) bool { return d.doomed[n.Name] })
	return in, pods
}

// keepRoom puts the room commands planned into a plan's input: their
// nodes' pods leave the pods to place, their replacements join the nodes
// with those pods on them, and the pods they move sit on the nodes that
// stay (a move onto a node that goes too, or that drift or expiration
// replaces, is to be placed again).
func (d *decider) keepRoom(in *scheduling.Input, rooms []Room) {
	if len(rooms) == 0 {
		return
	}
	planned := map[string]bool{}
	moved := map[string][]*corev1.Pod{}
	for _, r := range rooms {
		for _, name := range r.Nodes {
			planned[name] = true
		}
		for _, c := range r.Replacements {
			var taints []corev1.Taint
			if np := d.s.Pools[c.NodePool]; np != nil {
				taints = np.Spec.Template.Spec.Taints
			}
			node := c.InFlight(taints)
			node.Pods = slices.Clone(c.Pods)
			in.Nodes = append(in.Nodes, node)
		}
		for _, m := range r.Moves {
			moved[m.Node] = append(moved[m.Node], m.Pods...)
		}
	}
	in.Pods = slices.DeleteFunc(slices.Clone(in.Pods), func(p *corev1.Pod) bool { return planned[p.Spec.NodeName] })
	for i, n := range in.Nodes {
		if extra := moved[n.Name]; len(extra) > 0 && !d.doomed[n.Name] {
			cp := *n
			cp.Pods = append(slices.Clone(n.Pods), extra...)
			in.Nodes[i] = &cp
			delete(moved, n.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(moved)) {
		in.Pods = append(in.Pods, moved[name]...) // their node goes as well
	}
}
