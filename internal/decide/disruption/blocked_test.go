package disruption

import (
	"errors"
	"testing"
	"time"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/budget"
)

// A node is told again when why it stays changes, not when only a count
// or a deadline in the message moves.
func TestBlockedReportsMoveOnlyWithTheirReason(t *testing.T) {
	now := time.Now()
	nominated := func(pods int) Blocked {
		return Blocked{Reason: BlockedByNode, Blocker: state.Blocker{Reason: state.BlockNominated, Pods: pods}}
	}
	pdb := func(name string, allowed int32) Blocked {
		return Blocked{Reason: BlockedByNode, Blocker: state.Blocker{Reason: state.BlockPDB, PDB: name, Allowed: allowed, Pod: "default/web"}}
	}
	budgetOf := func(method v1.DisruptionReason, disrupting int) Blocked {
		return Blocked{Reason: BlockedByBudget, Method: method, Allowance: budget.Allowance{NodePool: "default", Reason: method, Nodes: 10, Disrupting: disrupting, Budget: "1", Limit: 1}}
	}
	same := [][2]Blocked{
		{{Reason: BlockedScaleUp, Pods: 10}, {Reason: BlockedScaleUp, Pods: 900}},
		{{Reason: BlockedConsolidateAfter, Until: now}, {Reason: BlockedConsolidateAfter, Until: now.Add(time.Minute)}},
		{nominated(1), nominated(7)},
		{pdb("default/web", 0), pdb("default/web", 1)},
		{budgetOf(v1.DisruptionReasonDrifted, 1), budgetOf(v1.DisruptionReasonDrifted, 2)},
	}
	for _, c := range same {
		if a, b := c[0].SameAs(c[0].String()), c[1].SameAs(c[1].String()); a != b {
			t.Errorf("%q and %q are told apart (%q, %q): only a count or a time moved", c[0], c[1], a, b)
		}
	}
	different := [][2]Blocked{
		{{Reason: BlockedConsolidateAfter, Until: now}, {Reason: BlockedConsolidateAfter, Never: true}},
		{{Reason: BlockedConsolidateAfter, Until: now}, {Reason: BlockedConsolidateAfter, Err: errors.New("unreadable")}},
		{pdb("default/web", 0), pdb("default/db", 0)},
		{budgetOf(v1.DisruptionReasonDrifted, 1), budgetOf(v1.DisruptionReasonUnderutilized, 1)},
		{{Reason: BlockedScaleUp, Pods: 10}, nominated(10)},
		{{Reason: BlockedByNode, Blocker: state.Blocker{Reason: state.BlockPodDoNotDisrupt, Pod: "default/a", Value: "true"}},
			{Reason: BlockedByNode, Blocker: state.Blocker{Reason: state.BlockPodDoNotDisrupt, Pod: "default/b", Value: "true"}}},
	}
	for _, c := range different {
		if a, b := c[0].SameAs(c[0].String()), c[1].SameAs(c[1].String()); a == b {
			t.Errorf("%q and %q are not told apart (%q)", c[0], c[1], a)
		}
	}
}
