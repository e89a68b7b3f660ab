package metrics

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditioned is an object whose status conditions are served as
// Karpenter's operator_status_condition_* series.
type Conditioned struct {
	Group, Kind, Namespace, Name string
	Conditions                   []metav1.Condition
}

// Conditions lists, at each scrape, the objects whose conditions are
// served; false: not known yet (the cache is starting).
type Conditions func() ([]Conditioned, bool)

// conditionLabels are the labels of the condition series, Karpenter's.
var conditionLabels = []string{"namespace", "name", "type", "status", "reason", "group", "kind"}

// conditionFamilies are operator_status_condition_count (1 per object,
// condition type, status and reason) and
// operator_status_condition_current_status_seconds (how long the
// condition has had its status).
func conditionFamilies() (count, seconds family) {
	return newFamily("operator_status_condition_count", "1 for each condition of a NodePool, EC2NodeClass or NodeClaim, labelled with its type, status and reason.", conditionLabels),
		newFamily("operator_status_condition_current_status_seconds", "How long a condition of a NodePool, EC2NodeClass or NodeClaim has had its status, in seconds.", conditionLabels)
}

// WithConditions makes the series also serve the conditions listed.
func (c *ClusterSeries) WithConditions(list Conditions) *ClusterSeries {
	c.conditions = list
	return c
}

func (c *ClusterSeries) writeConditions(out *textWriter) {
	if c.conditions == nil {
		return
	}
	objs, ok := c.conditions()
	if !ok {
		return
	}
	now := c.now()
	for _, o := range objs {
		for _, cond := range o.Conditions {
			out.series(&c.condCount, 1, o.Namespace, o.Name, cond.Type, string(cond.Status), cond.Reason, o.Group, o.Kind)
		}
	}
	for _, o := range objs {
		for _, cond := range o.Conditions {
			since := now.Sub(cond.LastTransitionTime.Time)
			if cond.LastTransitionTime.IsZero() || since < 0 {
				since = 0
			}
			out.series(&c.condSeconds, since.Round(time.Second).Seconds(), o.Namespace, o.Name, cond.Type, string(cond.Status), cond.Reason, o.Group, o.Kind)
		}
	}
}
