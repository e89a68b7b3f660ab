package nodepool

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/conditions"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/budget"
)

// Rollout is how the replacement of a NodePool's drifted NodeClaims goes.
type Rollout struct {
	// Nodes are the NodePool's NodeClaims; UpToDate those not drifted,
	// Replacing the drifted ones being disrupted or deleted, Waiting the
	// drifted ones not yet.
	Nodes, UpToDate, Replacing, Waiting int
	// Allowance is what the budgets allow drift now; Next when they next
	// allow it, while they allow nothing and nodes wait (zero: not known
	// within a week, or not needed).
	Allowance budget.Allowance
	Next      time.Time
}

// RolloutOf counts a NodePool's NodeClaims by where the replacement of
// the drifted ones stands, from their Drifted conditions, their deletion
// and their nodes' karpenter.sh/disrupted taint, and reads its budgets
// (unready nodes count as disrupted ones do).
func RolloutOf(np *v1.NodePool, claims []*v1.NodeClaim, nodes []*corev1.Node, now time.Time) Rollout {
	tainted, unready := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyDisrupted }) {
			tainted[n.Name] = true
		}
		unready[n.Name] = state.NodeUnready(n)
	}
	r := Rollout{Nodes: len(claims)}
	// The budget counts initialized nodes, and of them those going or
	// unready, as the disruption controller counts them.
	counted, disrupting := 0, 0
	for _, nc := range claims {
		going := !nc.DeletionTimestamp.IsZero() || tainted[nc.Status.NodeName]
		if initialized := meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionInitialized); initialized {
			counted++
			if going || unready[nc.Status.NodeName] {
				disrupting++
			}
		}
		switch {
		case !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionDrifted):
			r.UpToDate++
		case going:
			r.Replacing++
		default:
			r.Waiting++
		}
	}
	r.Allowance = budget.For(np, v1.DisruptionReasonDrifted, counted, disrupting, now)
	if r.Waiting > 0 && r.Allowance.Err == nil && r.Allowance.Allowed == 0 && r.Replacing == 0 {
		r.Next, _ = budget.Next(np, v1.DisruptionReasonDrifted, counted, disrupting, now)
	}
	return r
}

// InProgress reports drifted NodeClaims not yet replaced.
func (r Rollout) InProgress() bool { return r.Replacing+r.Waiting > 0 }

// Message says where the rollout stands, for the RolloutInProgress
// condition.
func (r Rollout) Message() string {
	msg := fmt.Sprintf("%d of %d nodes up to date, %d being replaced, %d waiting", r.UpToDate, r.Nodes, r.Replacing, r.Waiting)
	a := r.Allowance
	switch {
	case a.Err != nil:
		return msg + ": the budgets cannot be read: " + a.Err.Error()
	case a.Budget == "unlimited":
		return msg + ": no budget limits drift"
	}
	msg += fmt.Sprintf(": budget %s allows %d at once", a.Budget, a.Limit)
	if !r.Next.IsZero() {
		msg += "; next window " + r.Next.UTC().Format(time.RFC3339)
	}
	return msg
}

// rollout shows the replacement of the NodePool's drifted NodeClaims:
// RolloutInProgress True with the counts while any is drifted, absent
// otherwise, and the counts in metrics. It reports whether the rollout
// goes on (the counts and windows change with time).
func (c *Controller) rollout(np *v1.NodePool, claims []*v1.NodeClaim, nodes []*corev1.Node, now metav1.Time) bool {
	r := RolloutOf(np, claims, nodes, now.Time)
	c.Metrics.DriftRollout(np.Name, r.UpToDate, r.Replacing, r.Waiting)
	if !r.InProgress() {
		meta.RemoveStatusCondition(&np.Status.Conditions, v1.ConditionRolloutInProgress)
		return false
	}
	conditions.Set(&np.Status.Conditions, metav1.Condition{Type: v1.ConditionRolloutInProgress, Status: metav1.ConditionTrue, Reason: v1.ReasonDriftedNodes,
		Message: r.Message(), ObservedGeneration: np.Generation, LastTransitionTime: now})
	return true
}
