package conditions_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/internal/conditions"
)

// A status that stays keeps its transition time while the reason and
// message change; a new status moves it; a message longer than the API
// accepts is cut at a character boundary and says so.
func TestSet(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	var conds []metav1.Condition
	if !conditions.Set(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "A", Message: "a", LastTransitionTime: t0}) {
		t.Error("a new condition is a change")
	}
	if conditions.Set(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "B", Message: "b", LastTransitionTime: t1}) {
		t.Error("the same status is no change")
	}
	c := meta.FindStatusCondition(conds, "Ready")
	if c.Reason != "B" || c.Message != "b" || !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("same status: %+v, want reason B, message b, transition %s", c, t0)
	}
	long := strings.Repeat("é", conditions.MaxMessage)
	if !conditions.Set(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "C", Message: long, LastTransitionTime: t1}) {
		t.Error("a new status is a change")
	}
	c = meta.FindStatusCondition(conds, "Ready")
	if !c.LastTransitionTime.Equal(&t1) || len(c.Message) > conditions.MaxMessage || !utf8.ValidString(c.Message) || !strings.HasSuffix(c.Message, "(cut)") {
		t.Errorf("new status with a long message: transition %s, message of %d bytes, valid UTF-8 %v", c.LastTransitionTime, len(c.Message), utf8.ValidString(c.Message))
	}
}
