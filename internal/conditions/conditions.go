// Package conditions is the one way nodewright writes a status condition:
// through meta.SetStatusCondition (the transition time moves only when
// the status does), with the message cut to what the API accepts.
package conditions

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxMessage is the longest message the API accepts on a condition.
const MaxMessage = 32768

// cut marks a message that was cut.
const cut = " ... (cut)"

// Set records c in conds; c.LastTransitionTime is the time of a change
// of status (now). It reports whether the status changed (or the
// condition is new).
func Set(conds *[]metav1.Condition, c metav1.Condition) bool {
	c.Message = Truncate(c.Message)
	old := meta.FindStatusCondition(*conds, c.Type)
	changed := old == nil || old.Status != c.Status
	meta.SetStatusCondition(conds, c)
	return changed
}

// Truncate cuts a message longer than MaxMessage at a character
// boundary, saying so at its end.
func Truncate(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	end := MaxMessage - len(cut)
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return msg[:end] + cut
}
