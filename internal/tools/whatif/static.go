package whatif

import (
	"fmt"
	"maps"
	"slices"

	decidestatic "github.com/nodewright/nodewright/internal/decide/static"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// solveWithStatic plans as the controllers would act: the static
// NodePools launch the NodeClaims they miss (as their controller does,
// whatever the pods need), which pods then use like any NodeClaim in
// flight; the plan lists them first. It returns why a static NodePool
// launches fewer than it misses, as warnings.
func solveWithStatic(snap *state.Snapshot) (*scheduling.Plan, []string) {
	var warnings []string
	var launched []*scheduling.PlannedNodeClaim
	in := snap.Input(nil)
	for _, name := range slices.Sorted(maps.Keys(snap.Pools)) {
		d := decidestatic.Decide(snap, name)
		if d == nil {
			continue
		}
		if d.Short != "" {
			warnings = append(warnings, fmt.Sprintf("static NodePool %s launches %d of the %d NodeClaims it misses: %s", name, len(d.Launch), d.Replicas-d.Counted, d.Short))
		}
		for _, c := range d.Launch {
			in.Nodes = append(in.Nodes, c.InFlight(snap.Pools[name].Spec.Template.Spec.Taints))
		}
		launched = append(launched, d.Launch...)
	}
	plan := scheduling.Solve(in)
	if len(launched) == 0 {
		return plan, warnings
	}
	byName := map[string]*scheduling.PlannedNodeClaim{}
	for _, c := range launched {
		byName[c.Name] = c
	}
	plan.Existing = slices.DeleteFunc(plan.Existing, func(e *scheduling.ExistingPlacement) bool {
		if c := byName[e.Node]; c != nil {
			c.Pods = e.Pods
			return true
		}
		return false
	})
	plan.NodeClaims = append(launched, plan.NodeClaims...)
	return plan, warnings
}
