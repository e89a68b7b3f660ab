package nodepool

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// driftHealth shows what disruption recorded of the replacements of the
// NodePool's drifted nodes: once DriftFailureLimit of them failed in a
// row, drift pauses (DriftAllowed=False with the last cause and the fix,
// status.driftBackoff, an event) until the NodePool's spec or its node
// class changes, or nodewright.dev/resume-drift gets a new value.
func (c *Controller) driftHealth(np *v1.NodePool, class *cloudprovider.NodeClass, now metav1.Time) {
	if _, known := c.Drifts.Get(np.Name); !known {
		c.Drifts.RestoreFrom(np)
	}
	classGen := int64(0)
	if class != nil {
		classGen = class.Generation
	}
	if b := np.Status.DriftBackoff; b != nil && b.Paused {
		if np.Generation == b.NodePoolGeneration && classGen == b.NodeClassGeneration && np.Annotations[v1.AnnotationResumeDrift] == b.ResumeAnnotation {
			return // paused, as the status says
		}
		c.Drifts.Reset(np.Name)
		np.Status.DriftBackoff = nil
		c.Recorder.Event(np, corev1.EventTypeNormal, v1.ReasonDriftResumed,
			"drift resumes: the NodePool, its node class or its nodewright.dev/resume-drift annotation changed since it paused")
	}
	rec, _ := c.Drifts.Get(np.Name)
	if rec.Failures == 0 {
		np.Status.DriftBackoff = nil
		setCondition(np, now, v1.ConditionDriftAllowed, true, "", "")
		return
	}
	b := &v1.DriftBackoff{Failures: int32(min(rec.Failures, 1<<30)), LastFailure: metav1.NewTime(rec.Last), Cause: rec.Cause, //nolint:gosec // bounded above
		NodePoolGeneration: np.Generation, NodeClassGeneration: classGen, ResumeAnnotation: np.Annotations[v1.AnnotationResumeDrift]}
	np.Status.DriftBackoff = b
	if rec.Failures < c.driftFailureLimit() {
		setCondition(np, now, v1.ConditionDriftAllowed, true, "", "")
		return
	}
	b.Paused = true
	msg := fmt.Sprintf("%d replacements of drifted nodes failed in a row, the last at %s: %s. Drifted nodes are no longer replaced and keep serving. "+
		"Fix the cause, then change the NodePool or its node class, or give the NodePool's %s annotation a new value, to try again",
		rec.Failures, rec.Last.UTC().Format(time.RFC3339), rec.Cause, v1.AnnotationResumeDrift)
	if was := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionDriftAllowed); was == nil || was.Status != metav1.ConditionFalse {
		c.Recorder.Event(np, corev1.EventTypeWarning, v1.ReasonReplacementsFailing, msg)
	}
	setCondition(np, now, v1.ConditionDriftAllowed, false, v1.ReasonReplacementsFailing, msg)
}

func (c *Controller) driftFailureLimit() int {
	if c.DriftFailureLimit > 0 {
		return c.DriftFailureLimit
	}
	return nodepoolhealth.DefaultDriftFailureLimit
}
