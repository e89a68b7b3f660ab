// Package budget reads NodePools' disruption budgets: how many of a
// NodePool's nodes a disruption reason may disrupt at a time, with their
// cron windows. Disruption decides within them; the NodePool's status
// and offline plans say what they allow.
package budget

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Allowance is how many of a NodePool's nodes a disruption reason may
// disrupt now, and the budget that sets it.
type Allowance struct {
	NodePool string
	Reason   v1.DisruptionReason
	// Nodes the NodePool has, and Disrupting of them being disrupted now.
	Nodes, Disrupting int
	// Allowed more may start now (never below zero).
	Allowed int
	// Budget is the tightest active budget's nodes value ("10%", "2");
	// Limit what it comes to for this NodePool.
	Budget string
	Limit  int
	// Err is a budget that could not be read; nothing is disrupted then.
	Err error
}

func (a Allowance) String() string {
	if a.Err != nil {
		return fmt.Sprintf("NodePool %s: %v", a.NodePool, a.Err)
	}
	return fmt.Sprintf("NodePool %s allows %d of %s now (%d of its %d nodes are being disrupted)", a.NodePool, a.Allowed, a.Budget, a.Disrupting, a.Nodes)
}

// For applies a NodePool's budgets to a reason: the least any
// active budget for the reason allows (a percentage of the NodePool's
// nodes, rounded up), less the nodes already being disrupted.
func For(np *v1.NodePool, reason v1.DisruptionReason, nodes, disrupting int, now time.Time) Allowance {
	a := Allowance{NodePool: np.Name, Reason: reason, Nodes: nodes, Disrupting: disrupting, Limit: math.MaxInt, Budget: "unlimited"}
	budgets := np.Spec.Disruption.Budgets
	if len(budgets) == 0 {
		budgets = []v1.Budget{{Nodes: "10%"}}
	}
	for i, b := range budgets {
		if len(b.Reasons) > 0 && !contains(b.Reasons, reason) {
			continue
		}
		if b.Schedule != nil {
			sched, err := parseSchedule(*b.Schedule)
			if err != nil {
				a.Err = fmt.Errorf("spec.disruption.budgets[%d].schedule: %w", i, err)
				return a
			}
			if b.Duration == nil || !sched.activeAt(now, b.Duration.Duration) {
				continue
			}
		}
		limit, err := budgetNodes(b.Nodes, nodes)
		if err != nil {
			a.Err = fmt.Errorf("spec.disruption.budgets[%d].nodes: %w", i, err)
			return a
		}
		if limit < a.Limit {
			a.Limit, a.Budget = limit, b.Nodes
		}
	}
	if a.Limit == math.MaxInt {
		a.Allowed = math.MaxInt
		return a
	}
	a.Allowed = max(a.Limit-disrupting, 0)
	return a
}

func contains(reasons []v1.DisruptionReason, r v1.DisruptionReason) bool {
	for _, x := range reasons {
		if x == r {
			return true
		}
	}
	return false
}

// budgetNodes reads a budget's nodes: a count, or a percentage of the
// NodePool's nodes rounded up.
func budgetNodes(value string, nodes int) (int, error) {
	if value == "" {
		value = "10%"
	}
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("%q is not a percentage from 0%% to 100%%", value)
		}
		return (nodes*p + 99) / 100, nil
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number of nodes", value)
	}
	return n, nil
}

// Next is the first minute after now, within a week, at which a
// NodePool's budgets allow a reason to disrupt one more of its nodes
// (nodes of them, disrupting being disrupted): when a window that holds
// it back closes, or one that allows it opens. False when no minute of
// the week does, or a budget cannot be read. Each schedule is read once
// and its windows swept over the week once.
func Next(np *v1.NodePool, reason v1.DisruptionReason, nodes, disrupting int, now time.Time) (time.Time, bool) {
	const week = 7 * 24 * time.Hour
	start := now.UTC().Truncate(time.Minute).Add(time.Minute)
	minutes := int(now.Add(week).Sub(start)/time.Minute) + 1
	budgets := np.Spec.Disruption.Budgets
	if len(budgets) == 0 {
		budgets = []v1.Budget{{Nodes: "10%"}}
	}
	always := math.MaxInt
	type scheduled struct {
		limit  int
		active []bool
	}
	var windows []scheduled
	for _, b := range budgets {
		if len(b.Reasons) > 0 && !contains(b.Reasons, reason) {
			continue
		}
		limit, err := budgetNodes(b.Nodes, nodes)
		if err != nil {
			return time.Time{}, false
		}
		if b.Schedule == nil {
			always = min(always, limit)
			continue
		}
		sched, err := parseSchedule(*b.Schedule)
		if err != nil {
			return time.Time{}, false
		}
		if b.Duration == nil {
			continue
		}
		windows = append(windows, scheduled{limit: limit, active: sched.activeOver(start, minutes, b.Duration.Duration)})
	}
	for i := range minutes {
		limit := always
		for _, w := range windows {
			if w.active[i] {
				limit = min(limit, w.limit)
			}
		}
		if limit == math.MaxInt || limit-disrupting > 0 {
			return start.Add(time.Duration(i) * time.Minute), true
		}
	}
	return time.Time{}, false
}
