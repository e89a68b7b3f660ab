package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/state"
)

// rollback untaints the command's nodes and deletes the replacements it
// launched, saying why.
func (c *Controller) rollback(ctx context.Context, snap *state.Snapshot, cmd *inflight, why string) error {
	if !cmd.rolledBack {
		c.rolledBack(cmd, snap.Now, why)
		cmd.rolledBack = true
	}
	for _, n := range cmd.Nodes {
		for _, cur := range snap.Nodes {
			if cur.Name == n.Name && cur.Node != nil {
				if err := c.setTaint(ctx, cur.Node, false); err != nil {
					return err
				}
				if err := intent.SetDisruptionReason(ctx, c.Client, cur.NodeClaim, "", snap.Now); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range cmd.replacements {
		nc := &v1.NodeClaim{}
		nc.Name = name
		if err := c.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting replacement NodeClaim %s: %w", name, err)
		}
	}
	return nil
}

// rolledBack counts and tells a command's rollback; a drift
// replacement's failure counts towards pausing its NodePool's drift.
func (c *Controller) rolledBack(cmd *inflight, now time.Time, why string) {
	c.Metrics.Disruption(string(cmd.Reason), "rolled_back")
	pools := make([]string, 0, len(cmd.Nodes))
	for _, n := range cmd.Nodes {
		pools = append(pools, n.NodePool)
	}
	c.Metrics.DisruptionFailed(string(cmd.Reason), len(cmd.Replacements) > 0 || cmd.Static, pools)
	c.Log.Info("rolled back a disruption", "reason", cmd.Reason, "nodes", cmd.NodeNames(), "why", why)
	if cmd.Reason == v1.DisruptionReasonDrifted {
		pool, cause := cmd.Nodes[0].NodePool, why
		if reg, ok := c.Registrations.Get(pool); ok && reg.Failures > 0 {
			cause += "; the most likely cause of its last node that did not register: " + reg.Cause
		}
		c.Drifts.Record(pool, now, false, cause)
	}
	for _, n := range cmd.Nodes {
		c.event(n, corev1.EventTypeWarning, v1.ReasonDisruptionRolledBack, fmt.Sprintf("%s disruption rolled back, the node stays: %s", cmd.Reason, why))
	}
}

// untaintOrphans removes karpenter.sh/disrupted from nodes that no
// command owns and that are not being deleted: what a restart or a
// rollback left behind.
func (c *Controller) untaintOrphans(ctx context.Context, snap *state.Snapshot, finished map[string]bool) error {
	owned := c.inFlight(nil)
	for _, n := range snap.Nodes {
		// The nodes of commands that finished this round are being
		// deleted now, though the snapshot predates it: their taint stays.
		if n.Node == nil || n.Deleting() || owned[n.Name] || finished[n.Name] || !n.Managed() {
			continue
		}
		if n.NodeClaim != nil && meta.FindStatusCondition(n.NodeClaim.Status.Conditions, v1.ConditionDisruptionReason) != nil {
			if err := intent.SetDisruptionReason(ctx, c.Client, n.NodeClaim, "", snap.Now); err != nil {
				return err
			}
			c.Log.Info("removed a DisruptionReason condition no command owns", "NodeClaim", n.NodeClaim.Name)
		}
		if !n.Disrupted() {
			continue
		}
		if err := c.setTaint(ctx, n.Node, false); err != nil {
			return err
		}
		c.Log.Info("removed a disruption taint no command owns", "Node", n.Name)
	}
	return nil
}

// setTaint adds or removes karpenter.sh/disrupted:NoSchedule.
func (c *Controller) setTaint(ctx context.Context, node *corev1.Node, on bool) error {
	return intent.SetDisrupted(ctx, c.Client, node, on)
}
