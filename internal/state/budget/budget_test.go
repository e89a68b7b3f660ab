package budget_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state/budget"
)

// firstAllowed is Next by definition: the first minute of the week whose
// allowance lets one more node go.
func firstAllowed(np *v1.NodePool, reason v1.DisruptionReason, nodes, disrupting int, now time.Time) (time.Time, bool) {
	for t := now.UTC().Truncate(time.Minute).Add(time.Minute); t.Sub(now) <= 7*24*time.Hour; t = t.Add(time.Minute) {
		if a := budget.For(np, reason, nodes, disrupting, t); a.Err == nil && a.Allowed > 0 {
			return t, true
		}
	}
	return time.Time{}, false
}

// Next finds the same minute as looking at every minute of the week with
// For would, for windows that open, close, overlap and wrap past
// midnight, budgets for other reasons, and budgets that never allow.
func TestNextIsTheFirstMinuteForAllows(t *testing.T) {
	window := func(nodes, schedule string, d time.Duration, reasons ...v1.DisruptionReason) v1.Budget {
		return v1.Budget{Nodes: nodes, Schedule: ptr.To(schedule), Duration: &metav1.Duration{Duration: d}, Reasons: reasons}
	}
	cases := map[string][]v1.Budget{
		"closed on weekdays' working hours": {{Nodes: "10%"}, window("0", "0 9 * * mon-fri", 8*time.Hour)},
		"open only at night":                {{Nodes: "0"}, window("2", "0 22 * * *", 4*time.Hour)},
		"every quarter hour, briefly":       {{Nodes: "0"}, window("1", "*/15 * * * *", 5*time.Minute)},
		"overlapping windows":               {{Nodes: "0"}, window("1", "@daily", 3*time.Hour), window("0", "0 1 * * *", time.Hour)},
		"another reason's window":           {{Nodes: "0"}, window("5", "@hourly", 10*time.Minute, v1.DisruptionReasonUnderutilized)},
		"never":                             {{Nodes: "0"}},
		"a day of the month":                {{Nodes: "0"}, window("1", "30 4 1 * *", time.Hour)},
	}
	starts := []time.Time{
		time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 27, 23, 59, 30, 0, time.UTC),
		time.Date(2026, 11, 30, 8, 7, 0, 0, time.UTC), time.Date(2026, 12, 31, 21, 45, 10, 0, time.UTC),
	}
	for name, budgets := range cases {
		np := &v1.NodePool{}
		np.Name = "default"
		np.Spec.Disruption.Budgets = budgets
		for _, now := range starts {
			for _, disrupting := range []int{0, 1} {
				want, wantOK := firstAllowed(np, v1.DisruptionReasonDrifted, 10, disrupting, now)
				got, ok := budget.Next(np, v1.DisruptionReasonDrifted, 10, disrupting, now)
				if ok != wantOK || !got.Equal(want) {
					t.Errorf("%s from %s, %d disrupting: Next %s %v, want %s %v", name, now, disrupting, got, ok, want, wantOK)
				}
			}
		}
	}
}
