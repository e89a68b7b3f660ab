// Package static decides, purely, what keeps a static NodePool
// (spec.replicas set) at its number of nodes: NodeClaims to launch from
// the template when the pool has fewer, whatever the pods need, and the
// surplus to delete when it has more. Nodes disruption is replacing
// (tainted karpenter.sh/disrupted) no longer count, so their replacement
// is launched once.
package static

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// Decision is what a static NodePool needs now.
type Decision struct {
	NodePool string
	// Replicas is the number of nodes the NodePool keeps; Counted how
	// many it has that count (not being deleted, not being replaced).
	Replicas, Counted int
	// Launch are the NodeClaims to create.
	Launch []*scheduling.PlannedNodeClaim
	// Remove are the surplus nodes whose NodeClaims to delete.
	Remove []*state.Node
	// Short is why fewer NodeClaims than missing are launched (a node
	// limit, the node class, no instance type); empty otherwise.
	Short string
}

// Decide compares a static NodePool's nodes with its replicas. It returns
// nil for a NodePool that is not static or is being deleted.
func Decide(s *state.Snapshot, name string) *Decision {
	np := s.Pools[name]
	if np == nil || np.Spec.Replicas == nil || !np.DeletionTimestamp.IsZero() {
		return nil
	}
	d := &Decision{NodePool: name, Replicas: int(*np.Spec.Replicas)}
	var counted []*state.Node
	for _, n := range s.Nodes {
		if n.NodePool == name && n.NodeClaim != nil && !n.Deleting() && !n.Disrupted() {
			counted = append(counted, n)
		}
	}
	d.Counted = len(counted)
	switch {
	case d.Counted > d.Replicas:
		slices.SortStableFunc(counted, removalOrder)
		d.Remove = counted[:d.Counted-d.Replicas]
	case d.Counted < d.Replicas:
		pool := s.Static[name]
		if pool == nil {
			d.Short = skipped(s, name)
			return d
		}
		missing := d.Replicas - d.Counted
		in := s.Input(nil)
		d.Launch, d.Short = scheduling.Static(pool, in.Nodes, s.DaemonSets, missing, in.Policy)
	}
	return d
}

// removalOrder puts first the nodes whose removal costs least: NodeClaims
// without a node yet, then nodes nothing holds (no do-not-disrupt pod, no
// PodDisruptionBudget at its limit), then those with fewer pods to move,
// then the newest.
func removalOrder(a, b *state.Node) int {
	return cmp.Or(
		compareBool(a.Registered(), b.Registered()),
		compareBool(held(a), held(b)),
		cmp.Compare(len(a.Reschedulable()), len(b.Reschedulable())),
		b.NodeClaim.CreationTimestamp.Compare(a.NodeClaim.CreationTimestamp.Time),
		cmp.Compare(a.Name, b.Name),
	)
}

// held reports a node something holds: its drain would wait.
func held(n *state.Node) bool {
	return slices.ContainsFunc(n.Blockers(), func(b state.Blocker) bool { return b.Reason != state.BlockNotInitialized })
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// skipped says why a static NodePool launches nothing now.
func skipped(s *state.Snapshot, name string) string {
	for _, sk := range s.Skipped {
		if sk.NodePool == name {
			return sk.String()
		}
	}
	return fmt.Sprintf("NodePool %s cannot launch", name)
}
