package disruption

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// drift replaces one drifted NodeClaim: empty ones first, then the one
// that drifted first, then the oldest.
func (d *decider) drift(candidates []*state.Node) {
	var found []*state.Node
	for _, n := range candidates {
		if d.taken[n.Name] || !n.Drift().Drifted() {
			continue
		}
		if why, paused := d.opts.DriftPaused[n.NodePool]; paused {
			d.block(n, Blocked{Reason: BlockedDriftPaused, Method: v1.DisruptionReasonDrifted, Message: why})
			continue
		}
		if bs := hardBlockers(n, n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil); len(bs) > 0 {
			d.block(n, Blocked{Reason: BlockedByNode, Blocker: bs[0], Method: v1.DisruptionReasonDrifted})
			continue
		}
		d.eligible(n, v1.DisruptionReasonDrifted)
		found = append(found, n)
	}
	slices.SortFunc(found, func(a, b *state.Node) int {
		return cmp.Or(cmp.Compare(len(a.Reschedulable()), len(b.Reschedulable())), driftedAt(a, d.s.Now).Compare(driftedAt(b, d.s.Now)), oldestFirst(a, b))
	})
	for _, n := range found {
		if a := d.allowance(n.NodePool, v1.DisruptionReasonDrifted); a.Allowed < 1 {
			d.block(n, Blocked{Reason: BlockedByBudget, Allowance: a, Method: v1.DisruptionReasonDrifted})
			continue
		}
		if d.static(n) {
			if why, cannot := d.staticCannotLaunch(n, v1.DisruptionReasonDrifted); cannot {
				d.block(n, why)
				continue
			}
			d.staticCommand(v1.DisruptionReasonDrifted, n)
			d.leaveNext(found, v1.DisruptionReasonDrifted)
			return
		}
		plan, pods := d.reschedule([]*state.Node{n})
		if len(plan.Unschedulable) > 0 {
			d.block(n, Blocked{Reason: BlockedPodsDoNotFit, Pod: plan.Unschedulable[0], Method: v1.DisruptionReasonDrifted})
			continue
		}
		d.command(v1.DisruptionReasonDrifted, []*state.Node{n}, plan, pods)
		d.leaveNext(found, v1.DisruptionReasonDrifted)
		return
	}
}

// driftedAt is when the NodeClaim's Drifted condition turned True; now
// for drift not written on it yet.
func driftedAt(n *state.Node, now time.Time) time.Time {
	if n.NodeClaim != nil {
		if c := meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionDrifted); c != nil && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return now
}
