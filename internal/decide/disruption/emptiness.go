package disruption

import (
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// emptiness deletes, in one command, every consolidatable node without
// pods to move that the budgets allow.
func (d *decider) emptiness(candidates []*state.Node) {
	var empty []*state.Node
	for _, n := range candidates {
		if d.taken[n.Name] || len(n.Reschedulable()) > 0 {
			continue
		}
		if bs := n.Blockers(); len(bs) > 0 {
			d.block(n, Blocked{Reason: BlockedByNode, Blocker: bs[0], Method: v1.DisruptionReasonEmpty})
			continue
		}
		if ok, why := d.consolidatable(n); !ok {
			why.Method = v1.DisruptionReasonEmpty
			d.block(n, why)
			continue
		}
		d.eligible(n, v1.DisruptionReasonEmpty)
		if a := d.allowance(n.NodePool, v1.DisruptionReasonEmpty); a.Allowed < 1 {
			d.block(n, Blocked{Reason: BlockedByBudget, Allowance: a, Method: v1.DisruptionReasonEmpty})
			continue
		}
		d.use(n, v1.DisruptionReasonEmpty)
		empty = append(empty, n)
	}
	if len(empty) == 0 {
		return
	}
	c := &Command{Reason: v1.DisruptionReasonEmpty, Nodes: empty}
	for _, n := range empty {
		p, _ := d.price(n)
		c.PricePerHour += p
	}
	c.Savings = c.PricePerHour
	d.out.Commands = append(d.out.Commands, c)
}
