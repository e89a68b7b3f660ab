package disruption

import (
	"fmt"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// Revalidate checks a command again against the cluster as it is now
// (opts.InFlight: the other commands' nodes) and returns it with fresh
// replacements, or says why it no longer holds.
func Revalidate(s *state.Snapshot, old *Command, opts Options) (*Command, string) {
	d, _ := newDecider(s, opts)
	byName := map[string]*state.Node{}
	for _, n := range s.Candidates() {
		byName[n.Name] = n
	}
	var cands []candidate
	var nodes []*state.Node
	for _, o := range old.Nodes {
		n := byName[o.Name]
		if n == nil || n.Deleting() {
			return nil, fmt.Sprintf("node %s is gone or being deleted", o.Name)
		}
		if old.Reason != v1.DisruptionReasonExpired {
			forceful := old.Reason == v1.DisruptionReasonDrifted && n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil
			if bs := hardBlockers(n, forceful); len(bs) > 0 {
				return nil, fmt.Sprintf("node %s: %s", n.Name, bs[0])
			}
		}
		switch old.Reason {
		case v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized:
			if ok, why := d.consolidatable(n); !ok {
				return nil, fmt.Sprintf("node %s: %s", n.Name, why)
			}
		case v1.DisruptionReasonDrifted:
			if !n.Drift().Drifted() {
				return nil, fmt.Sprintf("node %s is no longer drifted", n.Name)
			}
		}
		price, _ := d.price(n)
		cands = append(cands, candidate{node: n, price: price, pods: len(n.Reschedulable())})
		nodes = append(nodes, n)
	}
	switch old.Reason {
	case v1.DisruptionReasonEmpty:
		c := &Command{Reason: old.Reason, Nodes: nodes}
		for _, cd := range cands {
			if cd.pods > 0 {
				return nil, fmt.Sprintf("node %s has pods again", cd.node.Name)
			}
			c.PricePerHour += cd.price
		}
		c.Savings = c.PricePerHour
		return c, ""
	case v1.DisruptionReasonUnderutilized:
		c, why := d.evaluate(cands)
		if c == nil {
			return nil, why.String()
		}
		if len(c.Replacements) > len(old.Replacements) || c.ReplacementPrice > old.ReplacementPrice+1e-9 {
			return nil, fmt.Sprintf("the cluster changed: it now needs %d replacement(s) at $%.4f/h where it needed %d at $%.4f/h",
				len(c.Replacements), c.ReplacementPrice, len(old.Replacements), old.ReplacementPrice)
		}
		return c, ""
	}
	if old.Static {
		d.out = &Decision{}
		d.staticCommand(old.Reason, nodes[0])
		return d.out.Commands[0], ""
	}
	plan, pods := d.reschedule(nodes)
	if old.Reason == v1.DisruptionReasonDrifted && len(plan.Unschedulable) > 0 {
		return nil, Blocked{Reason: BlockedPodsDoNotFit, Pod: plan.Unschedulable[0]}.String()
	}
	d.out = &Decision{}
	return d.command(old.Reason, nodes, plan, pods), ""
}
