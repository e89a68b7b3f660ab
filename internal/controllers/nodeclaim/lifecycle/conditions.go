package lifecycle

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/conditions"
)

// set records a condition, keeping its transition time when the status
// does not change.
func set(conds *[]metav1.Condition, now metav1.Time, generation int64, condType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(conds, metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: generation, LastTransitionTime: now})
}

func isTrue(conds []metav1.Condition, condType string) bool {
	return meta.IsStatusConditionTrue(conds, condType)
}

// readyCondition derives Ready from Launched, Registered and Initialized:
// True when all are, else False with the reason of the first that is not.
func readyCondition(conds []metav1.Condition) (metav1.ConditionStatus, string, string) {
	// Each condition, and Ready's reason while it is not determined.
	for _, part := range []struct{ condType, notYet string }{
		{v1.ConditionLaunched, v1.ReasonNotLaunched},
		{v1.ConditionRegistered, v1.ReasonNotRegistered},
		{v1.ConditionInitialized, v1.ReasonNotInitialized},
	} {
		c := meta.FindStatusCondition(conds, part.condType)
		if c == nil {
			return metav1.ConditionFalse, part.notYet, part.condType + " has not been determined yet"
		}
		if c.Status != metav1.ConditionTrue {
			return metav1.ConditionFalse, c.Reason, c.Message
		}
	}
	return metav1.ConditionTrue, v1.ReasonReady, ""
}
