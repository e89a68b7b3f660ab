package disruption

import (
	"slices"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// expiration replaces one NodeClaim older than its expireAfter. It waits
// for no budget and no do-not-disrupt pod or PodDisruptionBudget (the
// drain honours those until the terminationGracePeriod); replacements are
// launched first for pods that would otherwise stay pending.
func (d *decider) expiration(candidates []*state.Node) {
	var expired []*state.Node
	for _, n := range candidates {
		if at, ok := n.ExpiresAt(); d.taken[n.Name] || !ok || d.now.Before(at) {
			continue
		}
		d.eligible(n, v1.DisruptionReasonExpired)
		expired = append(expired, n)
	}
	slices.SortFunc(expired, oldestFirst)
	if len(expired) == 0 {
		return
	}
	n := expired[0]
	for _, later := range expired[1:] {
		d.next[later.Name] = v1.DisruptionReasonExpired
	}
	if d.static(n) {
		d.staticCommand(v1.DisruptionReasonExpired, n)
		return
	}
	plan, pods := d.reschedule([]*state.Node{n})
	d.command(v1.DisruptionReasonExpired, []*state.Node{n}, plan, pods)
}
