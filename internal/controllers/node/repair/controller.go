// Package repair replaces nodes that have been unhealthy too long (see
// nodepoolhealth for when a node is): its pods are not running anyway, so
// the NodeClaim is deleted with a termination deadline that has passed,
// and the drain deletes the pods at once instead of waiting for
// PodDisruptionBudgets. Repair is held while too much of a NodePool is
// unhealthy at once.
package repair

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/loop"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/state/budget"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Controller replaces nodes unhealthy past their toleration, every
// Interval.
type Controller struct {
	Client      client.Client
	Recorder    record.EventRecorder
	Clock       clock.WithTicker
	Metrics     *metrics.Metrics
	Log         logr.Logger
	Interval    time.Duration
	Tolerations nodepoolhealth.Tolerations
	// said remembers the last event per node, so each is said once.
	said map[string]string
}

// Start repairs every Interval until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	loop.Every(ctx, c.Clock, c.Interval, false, func(ctx context.Context) {
		if err := c.Repair(ctx); err != nil && ctx.Err() == nil {
			c.Log.Error(err, "node repair")
		}
	})
	return nil
}

// NeedLeaderElection is true: only the leader repairs.
func (c *Controller) NeedLeaderElection() bool { return true }

// Repair makes one pass: every unhealthy node past its toleration is
// replaced, unless its NodePool has too many unhealthy nodes.
func (c *Controller) Repair(ctx context.Context) error {
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims); err != nil {
		return err
	}
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes); err != nil {
		return err
	}
	pools := &v1.NodePoolList{}
	if err := c.Client.List(ctx, pools); err != nil {
		return err
	}
	byName := map[string]*v1.NodePool{}
	for i := range pools.Items {
		byName[pools.Items[i].Name] = &pools.Items[i]
	}
	if c.said == nil {
		c.said = map[string]string{}
	}
	now := c.Clock.Now()
	seen := map[string]bool{}
	for _, p := range nodepoolhealth.Assess(listing.Pointers(claims.Items), listing.Pointers(nodes.Items), c.Tolerations.Policies(), now) {
		c.Metrics.NodePoolHealth(p.Name, len(p.Unhealthy), p.Held())
		allowed := repairBudget(byName[p.Name], p, now)
		for _, u := range p.Unhealthy {
			seen[u.Node.Name] = true
			switch {
			case now.Before(u.Due) && !meta.IsStatusConditionTrue(u.NodeClaim.Status.Conditions, v1.ConditionInitialized):
				// Still starting: a kubelet not Ready yet is the lifecycle's
				// to report (its Initialized condition).
			case now.Before(u.Due):
				c.say(u, v1.ReasonNodeUnhealthy, fmt.Sprintf("%s; it is replaced at %s unless it recovers",
					u.Describe(), u.Due.UTC().Format(time.RFC3339)))
			case u.DoNotRepair:
				c.say(u, v1.ReasonNodeRepairBlocked, u.Describe()+"; it is annotated "+v1.AnnotationDoNotRepair+"=true, so it is not replaced")
			case p.Held():
				c.say(u, v1.ReasonNodeRepairBlocked, u.Describe()+"; "+p.HeldReason())
			case allowed.Allowed < 1:
				c.say(u, v1.ReasonNodeRepairBlocked, u.Describe()+"; the budgets for Unhealthy hold it back: "+allowed.String())
			default:
				if err := c.replace(ctx, p.Name, u); err != nil {
					return err
				}
				allowed.Allowed--
			}
		}
	}
	for name := range c.said {
		if !seen[name] {
			delete(c.said, name) // recovered or gone: a new failure is said again
		}
	}
	return nil
}

// replace deletes the unhealthy node's NodeClaim with a termination
// deadline already past: its pods are deleted without waiting for their
// budgets (they do not run on the node anyway), and the provisioner
// launches for them.
func (c *Controller) replace(ctx context.Context, pool string, u nodepoolhealth.Unhealthy) error {
	nc := u.NodeClaim
	before := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.AnnotationTerminationTimestamp] = u.Due.UTC().Format(time.RFC3339)
	if err := c.Client.Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := c.Client.Delete(ctx, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	msg := u.Describe() + "; replacing it"
	c.Recorder.Event(nc, corev1.EventTypeWarning, v1.ReasonNodeRepair, msg)
	c.Recorder.Event(u.Node, corev1.EventTypeWarning, v1.ReasonNodeRepair, msg)
	c.Metrics.NodeRepaired(pool, string(u.Condition.Type))
	c.Log.Info("repairing an unhealthy node", "Node", u.Node.Name, "NodeClaim", nc.Name, "condition", u.Condition.Type,
		"status", u.Condition.Status, "since", u.Condition.LastTransitionTime.Time)
	return nil
}

// say records a warning on the node and its NodeClaim once per message.
func (c *Controller) say(u nodepoolhealth.Unhealthy, reason, msg string) {
	key := reason + msg
	if c.said[u.Node.Name] == key {
		return
	}
	c.said[u.Node.Name] = key
	c.Recorder.Event(u.Node, corev1.EventTypeWarning, reason, msg)
	c.Recorder.Event(u.NodeClaim, corev1.EventTypeWarning, reason, msg)
}

// repairBudget is what the NodePool's disruption budgets allow repair
// (reason Unhealthy) now; unlimited when the NodePool is not known.
func repairBudget(np *v1.NodePool, p *nodepoolhealth.Pool, now time.Time) budget.Allowance {
	if np == nil {
		return budget.Allowance{NodePool: p.Name, Allowed: math.MaxInt, Budget: "unlimited"}
	}
	return budget.For(np, v1.DisruptionReasonUnhealthy, p.Nodes, p.Disrupting, now)
}
