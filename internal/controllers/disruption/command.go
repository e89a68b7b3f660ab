package disruption

import (
	"context"
	"fmt"
	"strings"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// advance moves each command in flight along: validate and start those
// decided long enough ago, finish those whose replacements are ready,
// roll back those whose replacements failed.
// It returns the nodes of the commands that finished.
func (c *Controller) advance(ctx context.Context, snap *state.Snapshot) (map[string]bool, error) {
	var keep []*inflight
	finished := map[string]bool{}
	for i, cmd := range c.commands {
		done, err := c.step(ctx, snap, cmd)
		if err != nil {
			c.commands = append(keep, c.commands[i:]...)
			return nil, err
		}
		if !done {
			keep = append(keep, cmd)
			continue
		}
		for _, n := range cmd.Nodes {
			finished[n.Name] = true
		}
	}
	c.commands = keep
	return finished, nil
}

func (c *Controller) step(ctx context.Context, snap *state.Snapshot, cmd *inflight) (bool, error) {
	switch cmd.phase {
	case validating:
		if snap.Now.Sub(cmd.decidedAt) < c.Config.ValidationDelay && cmd.Reason != v1.DisruptionReasonExpired {
			return false, nil
		}
		opts := c.Config.Options
		opts.InFlight, opts.Planned, opts.DriftPaused = c.inFlight(cmd), c.planned(snap, cmd), c.paused
		fresh, why := decide.Revalidate(snap, cmd.Command, opts)
		if fresh == nil {
			c.Metrics.Disruption(string(cmd.Reason), "cancelled")
			c.Metrics.ValidationFailed(string(cmd.Reason), len(cmd.Nodes))
			c.Log.Info("cancelled a disruption", "reason", cmd.Reason, "nodes", cmd.NodeNames(), "why", why)
			for _, n := range cmd.Nodes {
				c.event(n, corev1.EventTypeNormal, v1.ReasonDisruptionCancelled, fmt.Sprintf("%s disruption cancelled: %s", cmd.Reason, why))
			}
			return true, nil
		}
		c.leftOut(cmd, fresh, why)
		cmd.Command = fresh
		return c.start(ctx, snap, cmd)
	case launching:
		return c.await(ctx, snap, cmd)
	}
	return true, nil
}

// leftOut tells, on each node of a command its validation left out (an
// emptiness command's nodes that are no longer empty), that its
// disruption is cancelled and why.
func (c *Controller) leftOut(cmd *inflight, fresh *decide.Command, why string) {
	kept := map[string]bool{}
	for _, n := range fresh.Nodes {
		kept[n.Name] = true
	}
	var out []*state.Node
	for _, n := range cmd.Nodes {
		if !kept[n.Name] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return
	}
	c.Metrics.ValidationFailed(string(cmd.Reason), len(out))
	for _, n := range out {
		c.event(n, corev1.EventTypeNormal, v1.ReasonDisruptionCancelled, fmt.Sprintf("%s disruption cancelled for this node: %s", cmd.Reason, why))
	}
	c.Log.Info("left nodes out of a disruption", "reason", cmd.Reason, "nodes", len(out), "kept", fresh.NodeNames(), "why", why)
}

// start taints the nodes and launches the replacements; a command
// without replacements deletes its nodes at once.
func (c *Controller) start(ctx context.Context, snap *state.Snapshot, cmd *inflight) (bool, error) {
	if cmd.Repair != nil && cmd.Repair.Action == nodepoolhealth.Reboot {
		return true, c.reboot(ctx, cmd)
	}
	for _, n := range cmd.Nodes {
		if err := c.setTaint(ctx, n.Node, true); err != nil {
			return false, err
		}
		if err := intent.SetDisruptionReason(ctx, c.Client, n.NodeClaim, cmd.Reason, snap.Now); err != nil {
			return false, err
		}
	}
	c.Metrics.Disruption(string(cmd.Reason), "started")
	pools := make([]string, 0, len(cmd.Nodes))
	for _, n := range cmd.Nodes {
		pools = append(pools, n.NodePool)
	}
	c.Metrics.DisruptionCarriedOut(string(cmd.Reason), len(cmd.Replacements) > 0 || cmd.Static, pools)
	for _, sc := range cmd.Scores {
		if len(cmd.Nodes) == 1 {
			c.event(cmd.Nodes[0], corev1.EventTypeNormal, v1.ReasonConsolidationApproved, sc.Describe())
		} else if np := snap.Pools[sc.NodePool]; np != nil {
			c.Recorder.Event(np, corev1.EventTypeNormal, v1.ReasonConsolidationApproved, sc.Describe())
		}
	}
	what := describe(cmd.Command)
	writer := &intent.NodeClaims{Client: c.Client, Metrics: c.Metrics, Reason: string(cmd.Reason), Batch: c.LaunchBatching}
	created, err := writer.Create(ctx, snap, cmd.Replacements, func(nc *v1.NodeClaim, _ *scheduling.PlannedNodeClaim) {
		c.Recorder.Eventf(nc, corev1.EventTypeNormal, v1.ReasonDisruptionReplacement, "replaces %s (%s)", strings.Join(cmd.NodeNames(), ", "), cmd.Reason)
	})
	cmd.replacements = append(cmd.replacements, created...)
	if err != nil {
		// The command ends here; a new decision may try again.
		return true, c.rollback(ctx, snap, cmd, fmt.Sprintf("creating a replacement failed: %v", err))
	}
	cmd.phase, cmd.startedAt = launching, snap.Now
	if cmd.Static && staticRoom(snap, cmd) && !cmd.TerminateFirst {
		for _, n := range cmd.Nodes {
			c.event(n, corev1.EventTypeNormal, v1.ReasonDisruptionLaunching, fmt.Sprintf("%s: tainted %s:NoSchedule; %s",
				cmd.Reason, v1.TaintKeyDisrupted, what))
		}
		return false, nil
	}
	if len(cmd.replacements) > 0 {
		for _, n := range cmd.Nodes {
			c.event(n, corev1.EventTypeNormal, v1.ReasonDisruptionLaunching, fmt.Sprintf("%s: tainted %s:NoSchedule; launching replacement(s) %s; %s",
				cmd.Reason, v1.TaintKeyDisrupted, strings.Join(cmd.replacements, ", "), what))
		}
		c.Log.Info("launching replacements", "reason", cmd.Reason, "nodes", cmd.NodeNames(), "replacements", cmd.replacements)
		return false, nil
	}
	return c.terminate(ctx, cmd)
}

// await finishes a command once every replacement is initialized, and
// rolls it back when a replacement is gone (it failed to launch or to
// register in time).
func (c *Controller) await(ctx context.Context, snap *state.Snapshot, cmd *inflight) (bool, error) {
	if cmd.Static {
		return c.awaitStatic(ctx, snap, cmd)
	}
	ready := 0
	for _, name := range cmd.replacements {
		var found *state.Node
		for _, n := range snap.Nodes {
			if n.NodeClaim != nil && n.NodeClaim.Name == name {
				found = n
			}
		}
		switch {
		case found == nil || found.Deleting():
			return true, c.rollback(ctx, snap, cmd, fmt.Sprintf("replacement NodeClaim %s failed to launch or register (see its events)", name))
		case found.Initialized():
			ready++
		}
	}
	if ready < len(cmd.replacements) {
		if c.Config.ReplacementTimeout > 0 && snap.Now.Sub(cmd.startedAt) > c.Config.ReplacementTimeout {
			return true, c.rollback(ctx, snap, cmd, fmt.Sprintf("the replacements were not initialized within %s", c.Config.ReplacementTimeout))
		}
		return false, nil
	}
	return c.terminate(ctx, cmd)
}

// awaitStatic finishes a command on a static NodePool's node once the
// pool has its replicas initialized without the node (its controller
// launched the replacement). (When the pool's node limit left no room for
// a replacement, start deleted the node at once.)
func (c *Controller) awaitStatic(ctx context.Context, snap *state.Snapshot, cmd *inflight) (bool, error) {
	np := snap.Pools[cmd.Nodes[0].NodePool]
	if np == nil || np.Spec.Replicas == nil {
		return c.terminate(ctx, cmd)
	}
	ready := 0
	for _, n := range snap.Nodes {
		if n.NodePool == np.Name && n.NodeClaim != nil && !n.Deleting() && !n.Disrupted() && n.Initialized() {
			ready++
		}
	}
	if int64(ready) >= *np.Spec.Replicas {
		return c.terminate(ctx, cmd)
	}
	if c.Config.ReplacementTimeout > 0 && snap.Now.Sub(cmd.startedAt) > c.Config.ReplacementTimeout {
		return true, c.rollback(ctx, snap, cmd, fmt.Sprintf("static NodePool %s did not have %d initialized nodes besides this one within %s",
			np.Name, *np.Spec.Replicas, c.Config.ReplacementTimeout))
	}
	return false, nil
}

// staticRoom reports whether a static NodePool's node limit leaves room
// for the replacement of a command's node while the node is still there.
func staticRoom(snap *state.Snapshot, cmd *inflight) bool {
	pool := cmd.Nodes[0].NodePool
	np := snap.Pools[pool]
	if np == nil {
		return false
	}
	limit, ok := np.Spec.Limits["nodes"]
	if !ok {
		return true
	}
	used := snap.Usage[pool]["nodes"]
	return used.Value() < limit.Value()
}

// terminate deletes the command's NodeClaims; their termination drains
// the nodes.
func (c *Controller) terminate(ctx context.Context, cmd *inflight) (bool, error) {
	if cmd.Reason == v1.DisruptionReasonDrifted && len(cmd.replacements) > 0 {
		c.Drifts.Record(cmd.Nodes[0].NodePool, c.Clock.Now(), true, "")
	}
	what := describe(cmd.Command)
	if err := c.repairing(ctx, cmd); err != nil {
		return false, err
	}
	for _, n := range cmd.Nodes {
		c.event(n, corev1.EventTypeNormal, v1.ReasonDisruptionTerminating, fmt.Sprintf("%s: terminating; %s", cmd.Reason, what))
		c.Metrics.NodeClaimDisrupted(string(cmd.Reason), n.NodePool, n.Label(v1.LabelCapacityType), c.policies[n.NodePool],
			n.NodeClaim != nil && n.NodeClaim.Spec.TerminationGracePeriod != nil)
		var obj client.Object = n.Node
		if n.NodeClaim != nil {
			obj = n.NodeClaim
		}
		if err := c.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting %s for a %s disruption: %w", n.Name, cmd.Reason, err)
		}
	}
	c.Metrics.Disruption(string(cmd.Reason), "completed")
	c.Log.Info("disrupted", "reason", cmd.Reason, "nodes", cmd.NodeNames(), "replacements", cmd.replacements, "savingsPerHour", cmd.Savings)
	return true, nil
}

// reboot asks for the node of a repair command to be rebooted: the
// reboot controller fences, drains and reboots it.
func (c *Controller) reboot(ctx context.Context, cmd *inflight) error {
	n, r := cmd.Nodes[0], cmd.Repair
	if err := intent.RequestReboot(ctx, c.Client, n.NodeClaim, r.DrainBound, "rebooting for "+string(r.Condition.Type)+"="+string(r.Condition.Status), c.Clock.Now()); err != nil {
		return fmt.Errorf("requesting a reboot of node %s: %w", n.Name, err)
	}
	c.event(n, corev1.EventTypeWarning, v1.ReasonNodeRepair, r.Describe())
	c.Metrics.Disruption(string(cmd.Reason), "started")
	c.Metrics.NodeRepaired(n.NodePool, string(r.Condition.Type))
	c.Metrics.Disruption(string(cmd.Reason), "completed")
	c.Log.Info("rebooting an unhealthy node", "Node", n.Name, "NodeClaim", n.NodeClaim.Name, "condition", r.Condition.Type, "status", r.Condition.Status)
	return nil
}

// repairing says why a repair command's node goes, and bounds its drain
// as the repair policy says.
func (c *Controller) repairing(ctx context.Context, cmd *inflight) error {
	r := cmd.Repair
	if r == nil {
		return nil
	}
	n := cmd.Nodes[0]
	if r.DrainBound != nil && n.NodeClaim != nil {
		if err := intent.TerminateBy(ctx, c.Client, n.NodeClaim, c.Clock.Now().Add(*r.DrainBound)); err != nil {
			return fmt.Errorf("bounding the drain of node %s: %w", n.Name, err)
		}
	}
	c.event(n, corev1.EventTypeWarning, v1.ReasonNodeRepair, r.Describe())
	c.Metrics.NodeRepaired(n.NodePool, string(r.Condition.Type))
	c.Log.Info("repairing an unhealthy node", "Node", n.Name, "condition", r.Condition.Type, "status", r.Condition.Status,
		"since", r.Condition.LastTransitionTime.Time)
	return nil
}
