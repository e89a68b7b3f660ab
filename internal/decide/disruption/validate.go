package disruption

import (
	"fmt"
	"strings"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// Revalidate checks a command again against the cluster as it is now
// (opts.InFlight: the other commands' nodes) and returns it with fresh
// replacements, or says why it no longer holds. An emptiness command
// keeps the nodes that are still empty and may still go: it is returned
// without the others, and why they were left out.
func Revalidate(s *state.Snapshot, old *Command, opts Options) (*Command, string) {
	d, _ := newDecider(s, opts)
	if old.Reason == v1.DisruptionReasonEmpty {
		return d.stillEmpty(s, old)
	}
	cands, why := d.stillCandidates(s, old)
	if why != "" {
		return nil, why
	}
	switch {
	case old.Reason == v1.DisruptionReasonUnderutilized:
		return d.stillConsolidates(old, cands)
	case old.Reason == v1.DisruptionReasonUnhealthy:
		return d.stillUnhealthy(cands[0].node)
	case old.Static:
		d.out = &Decision{}
		d.staticCommand(old.Reason, cands[0].node)
		return d.out.Commands[0], ""
	}
	nodes := make([]*state.Node, 0, len(cands))
	for _, cd := range cands {
		nodes = append(nodes, cd.node)
	}
	plan, pods := d.reschedule(nodes)
	if old.Reason == v1.DisruptionReasonDrifted && len(plan.Unschedulable) > 0 {
		return nil, Blocked{Reason: BlockedPodsDoNotFit, Pod: plan.Unschedulable[0]}.String()
	}
	d.out = &Decision{}
	return d.command(old.Reason, nodes, plan, pods), ""
}

// stillCandidates are the command's nodes as they are now, or why one of
// them can no longer be disrupted for the command's reason.
func (d *decider) stillCandidates(s *state.Snapshot, old *Command) ([]candidate, string) {
	byName := candidatesByName(s)
	cands := make([]candidate, 0, len(old.Nodes))
	for _, o := range old.Nodes {
		n := byName[o.Name]
		if n == nil || n.Deleting() {
			return nil, fmt.Sprintf("node %s is gone or being deleted", o.Name)
		}
		if why := d.stillDisruptable(n, old.Reason); why != "" {
			return nil, why
		}
		price, _ := d.price(n)
		cands = append(cands, candidate{node: n, price: price, pods: len(n.Reschedulable())})
	}
	if old.Reason == v1.DisruptionReasonEmpty || old.Reason == v1.DisruptionReasonUnderutilized {
		for _, cd := range cands {
			// The budget as it is now: it may have closed (a schedule, an
			// edit) or been taken by others during the wait.
			if a := d.allowance(cd.node.NodePool, old.Reason); a.Allowed < 1 {
				return nil, Blocked{Reason: BlockedByBudget, Allowance: a, Node: cd.node.Name}.String()
			}
			d.use(cd.node, old.Reason)
		}
	}
	return cands, ""
}

// stillDisruptable says why a node can no longer be disrupted for the
// reason: what blocks it, or what the reason no longer finds.
func (d *decider) stillDisruptable(n *state.Node, reason v1.DisruptionReason) string {
	if n.Rebooting() {
		return fmt.Sprintf("node %s is being rebooted", n.Name)
	}
	if reason != v1.DisruptionReasonExpired && reason != v1.DisruptionReasonUnhealthy {
		forceful := reason == v1.DisruptionReasonDrifted && n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil
		if bs := hardBlockers(n, forceful); len(bs) > 0 {
			return fmt.Sprintf("node %s: %s", n.Name, bs[0])
		}
	}
	switch reason {
	case v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized:
		if ok, why := d.consolidatable(n); !ok {
			return fmt.Sprintf("node %s: %s", n.Name, why)
		}
	case v1.DisruptionReasonDrifted:
		if !n.Drift().Drifted() {
			return fmt.Sprintf("node %s is no longer drifted", n.Name)
		}
		if why, paused := d.opts.DriftPaused[n.NodePool]; paused {
			return Blocked{Reason: BlockedDriftPaused, Message: why}.String()
		}
	}
	return ""
}

// stillEmpty is an emptiness command again with the nodes that are
// still empty and may still go (within the budget as it is now), and
// why the others were left out; nil when none is left.
func (d *decider) stillEmpty(s *state.Snapshot, old *Command) (*Command, string) {
	byName := candidatesByName(s)
	c := &Command{Reason: old.Reason}
	var left []string
	for _, o := range old.Nodes {
		n := byName[o.Name]
		why := ""
		switch {
		case n == nil || n.Deleting():
			why = fmt.Sprintf("node %s is gone or being deleted", o.Name)
		case len(n.Reschedulable()) > 0:
			why = fmt.Sprintf("node %s has pods again", n.Name)
		default:
			why = d.stillDisruptable(n, old.Reason)
		}
		if why == "" {
			if a := d.allowance(n.NodePool, old.Reason); a.Allowed < 1 {
				why = Blocked{Reason: BlockedByBudget, Allowance: a, Node: n.Name}.String()
			}
		}
		if why != "" {
			left = append(left, why)
			continue
		}
		d.use(n, old.Reason)
		price, _ := d.price(n)
		c.Nodes = append(c.Nodes, n)
		c.PricePerHour += price
	}
	c.Savings = c.PricePerHour
	if len(c.Nodes) == 0 {
		return nil, strings.Join(left, "; ")
	}
	return c, strings.Join(left, "; ")
}

// stillConsolidates evaluates a consolidation again: it holds unless it
// now needs more replacements or costs more.
func (d *decider) stillConsolidates(old *Command, cands []candidate) (*Command, string) {
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

// candidatesByName are the snapshot's disruption candidates by node name.
func candidatesByName(s *state.Snapshot) map[string]*state.Node {
	byName := map[string]*state.Node{}
	for _, n := range s.Candidates() {
		byName[n.Name] = n
	}
	return byName
}
