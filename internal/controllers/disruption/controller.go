// Package disruption carries out what internal/decide/disruption decides:
// it waits, validates the decision again, taints the nodes
// karpenter.sh/disrupted:NoSchedule, launches the replacements, waits until
// they are initialized and deletes the nodes' NodeClaims (whose termination
// drains them through the Eviction API); a replacement that fails rolls
// its command back.
package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/loop"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// Config tunes the controller.
type Config struct {
	decide.Options
	// Poll is how often the controller decides.
	Poll time.Duration
	// ValidationDelay is how long a decision waits before it is checked
	// again against the cluster and carried out (pods that were just
	// scheduled or deleted settle).
	ValidationDelay time.Duration
	// ReplacementTimeout is how long replacements may take to initialize
	// before the command is rolled back.
	ReplacementTimeout time.Duration
	// DriftFailureLimit is how many replacements of a NodePool's drifted
	// nodes may fail in a row before its drift pauses.
	DriftFailureLimit int
	// DefaultSpread are kube-scheduler's default topology spread
	// constraints (none when not configured).
	DefaultSpread scheduling.SpreadDefaults
}

// DefaultConfig is the reference's timing.
func DefaultConfig() Config {
	cadence := decide.DefaultCadence()
	return Config{Options: decide.DefaultOptions(), Poll: cadence.Poll, ValidationDelay: cadence.ValidationDelay, ReplacementTimeout: 20 * time.Minute,
		DriftFailureLimit: nodepoolhealth.DefaultDriftFailureLimit}
}

// Controller carries disruption out: it decides, waits, validates the
// decision again, taints the nodes karpenter.sh/disrupted:NoSchedule,
// launches the replacements, waits until they are initialized, and
// deletes the nodes' NodeClaims (whose termination drains them through
// the Eviction API). A replacement that fails rolls the command back.
type Controller struct {
	Client client.Client
	// LaunchBatching puts the NodeClaims it makes that would launch
	// identically in launch batches.
	LaunchBatching bool
	// NodeClasses resolves the NodePools' node classes.
	NodeClasses   listing.NodeClassResolver
	Registrations *nodepoolhealth.Registrations
	// Drifts records how replacements of drifted nodes went, for the
	// NodePool controller to pause drift that keeps failing.
	Drifts   *nodepoolhealth.DriftReplacements
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	Metrics  *metrics.Metrics
	Log      logr.Logger
	Config   Config

	mu       sync.Mutex
	commands []*inflight
	// paused are the NodePools whose drift is paused this round, policies
	// their consolidation policies (for metrics).
	paused, policies map[string]string
	// said is the last DisruptionBlocked message per node, so each is
	// reported once; warned the last NodeUnhealthy message per node.
	said, warned map[string]string
	// waiting are the NodePools told that consolidation waits for the
	// scale-up under way.
	waiting sets.Set[string]
}

// phase is how far a command has come.
type phase int

const (
	validating phase = iota
	launching
)

// inflight is a command being carried out.
type inflight struct {
	*decide.Command
	phase     phase
	decidedAt time.Time
	startedAt time.Time
	// claims are the NodeClaims of the command's nodes; replacements the
	// names of the NodeClaims launched for it.
	claims       []string
	replacements []string
	// rolledBack is set once the command's rollback was counted and told:
	// a rollback that failed half-way is taken up again next round, and
	// counted once.
	rolledBack bool
}

// SetupWithManager runs the controller with the manager (when leader).
func (c *Controller) SetupWithManager(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(c.run))
}

// pace bounds the share of time rounds take: after a round longer than
// a pace-th of the poll, the next waits pace times its length.
const pace = 4

func (c *Controller) run(ctx context.Context) error {
	loop.Paced(ctx, c.Clock, c.Config.Poll, pace, func(ctx context.Context) {
		if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
			c.Log.Error(err, "disruption")
		}
	})
	return nil
}

// Reconcile makes one round: advance the commands in flight, clear
// taints nothing owns, decide, and report what stays and why.
func (c *Controller) Reconcile(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed, err := listing.List(ctx, c.Client)
	if err != nil {
		return err
	}
	classes, err := c.NodeClasses.ResolveNodeClasses(ctx, listed.NodePools)
	if err != nil {
		return err
	}
	now := c.Clock.Now()
	snap := state.Build(listed.Objects, state.Options{Now: now, NodeClasses: classes, Backoff: c.Registrations.Backoffs(), DefaultSpread: c.Config.DefaultSpread})
	c.paused = nodepoolhealth.PausedDrift(snap.Pools, c.Drifts, c.Config.DriftFailureLimit)
	c.policies = map[string]string{}
	for name, np := range snap.Pools {
		c.policies[name] = string(np.Spec.Disruption.ConsolidationPolicy)
	}
	finished, err := c.advance(ctx, snap)
	if err != nil {
		return err
	}
	if err := c.untaintOrphans(ctx, snap, finished); err != nil {
		return err
	}
	opts := c.Config.Options
	// This round's rollbacks may have paused drift.
	c.paused = nodepoolhealth.PausedDrift(snap.Pools, c.Drifts, c.Config.DriftFailureLimit)
	opts.DriftPaused = c.paused
	// The snapshot predates this round's steps: the nodes of commands
	// that finished in it are being deleted now.
	opts.InFlight, opts.Planned = c.inFlight(nil), c.planned(snap, nil)
	for name := range finished {
		opts.InFlight[name] = true
	}
	for _, cmd := range c.commands {
		opts.ConsolidationInFlight = opts.ConsolidationInFlight || cmd.Reason == v1.DisruptionReasonUnderutilized
	}
	took := map[string]time.Duration{}
	opts.Measure = func(method v1.DisruptionReason, run func()) {
		start := c.Clock.Now()
		run()
		took[string(method)] += c.Clock.Since(start)
	}
	started := c.Clock.Now()
	dec := decide.Decide(snap, opts)
	for _, cmd := range dec.Commands {
		c.commands = append(c.commands, &inflight{Command: cmd, decidedAt: now, claims: claimNames(cmd.Nodes)})
		c.Metrics.Disruption(string(cmd.Reason), "decided")
		c.Log.Info("decided to disrupt", "reason", cmd.Reason, "nodes", cmd.NodeNames(), "replacements", len(cmd.Replacements),
			"savingsPerHour", cmd.Savings, "pods", cmd.Pods)
	}
	c.report(snap, dec)
	c.record(c.Clock.Since(started), took, snap, dec)
	return nil
}

// inFlight are the nodes of the commands in flight, but skip's.
func (c *Controller) inFlight(skip *inflight) map[string]bool {
	out := map[string]bool{}
	for _, cmd := range c.commands {
		if cmd == skip {
			continue
		}
		for _, n := range cmd.Nodes {
			out[n.Name] = true
		}
	}
	return out
}

// planned is the room the commands in flight (but skip) planned for the
// pods of their nodes: replacements not launched or not initialized yet,
// as planned; an initialized one is a node of the snapshot, and its
// planned pods are placed on it; the pods moved onto nodes that stay.
func (c *Controller) planned(snap *state.Snapshot, skip *inflight) []decide.Room {
	var out []decide.Room
	for _, cmd := range c.commands {
		if cmd == skip || cmd.Static {
			continue
		}
		room := decide.Room{Nodes: cmd.NodeNames(), Moves: cmd.Moves}
		for i, r := range cmd.Replacements {
			if i < len(cmd.replacements) {
				if n := initializedClaim(snap, cmd.replacements[i]); n != nil {
					room.Moves = append(slices.Clone(room.Moves), &scheduling.ExistingPlacement{Node: n.Name, Pods: r.Pods})
					continue
				}
			}
			room.Replacements = append(room.Replacements, r)
		}
		out = append(out, room)
	}
	return out
}

// initializedClaim is the initialized node of a NodeClaim, nil when it
// has none yet.
func initializedClaim(snap *state.Snapshot, claim string) *state.Node {
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil && n.NodeClaim.Name == claim && n.Initialized() {
			return n
		}
	}
	return nil
}

func claimNames(nodes []*state.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.NodeClaim != nil {
			out = append(out, n.NodeClaim.Name)
		}
	}
	return out
}

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
	}
	c.Metrics.Disruption(string(cmd.Reason), "started")
	pools := make([]string, 0, len(cmd.Nodes))
	for _, n := range cmd.Nodes {
		pools = append(pools, n.NodePool)
	}
	c.Metrics.DisruptionCarriedOut(string(cmd.Reason), len(cmd.Replacements) > 0 || cmd.Static, pools)
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
	if cmd.Static && staticRoom(snap, cmd) {
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
		if n.Node == nil || n.Deleting() || owned[n.Name] || finished[n.Name] || !n.Managed() || !n.Disrupted() {
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

// event records on the node's NodeClaim and on the node.
func (c *Controller) event(n *state.Node, kind, reason, msg string) {
	if n.NodeClaim != nil {
		c.Recorder.Event(n.NodeClaim, kind, reason, msg)
	}
	if n.Node != nil {
		c.Recorder.Event(n.Node, kind, reason, msg)
	}
}

// describe says what a command saves.
func describe(cmd *decide.Command) string {
	nodes := fmt.Sprintf("the %d node(s) of this command cost $%.4f/h", len(cmd.Nodes), cmd.PricePerHour)
	if cmd.Static {
		return nodes + "; their static NodePool launches their replacements from its template"
	}
	if len(cmd.Replacements) == 0 {
		return fmt.Sprintf("%s; no replacement needed; saves $%.4f/h", nodes, cmd.Savings)
	}
	types := make([]string, 0, len(cmd.Replacements))
	for _, r := range cmd.Replacements {
		types = append(types, fmt.Sprintf("%s %s $%.4f/h", r.InstanceType.Name, r.Offering.CapacityType, r.Offering.Price))
	}
	if cmd.Reason == v1.DisruptionReasonDrifted || cmd.Reason == v1.DisruptionReasonExpired {
		return fmt.Sprintf("%s; replacement(s) %s", nodes, strings.Join(types, ", "))
	}
	return fmt.Sprintf("%s; replacement(s) %s; saves $%.4f/h", nodes, strings.Join(types, ", "), cmd.Savings)
}

// report says once, on the NodeClaim, why each candidate stays
// (DisruptionBlocked), and again only when the reason changes.
func (c *Controller) report(snap *state.Snapshot, dec *decide.Decision) {
	if c.said == nil {
		c.said = map[string]string{}
	}
	byName := map[string]*state.Node{}
	for _, n := range snap.Nodes {
		byName[n.Name] = n
	}
	if c.warned == nil {
		c.warned = map[string]string{}
	}
	for name := range c.said {
		if byName[name] == nil {
			delete(c.said, name)
		}
	}
	for name := range c.warned {
		if byName[name] == nil {
			delete(c.warned, name)
		}
	}
	scaleUp := map[string]decide.Blocked{}
	for _, b := range dec.Blocked {
		if b.Passing() {
			continue
		}
		if b.Reason == decide.BlockedScaleUp {
			if n := byName[b.Node]; n != nil && snap.Pools[n.NodePool] != nil {
				scaleUp[n.NodePool] = b
			}
			continue
		}
		msg := b.String()
		key := b.SameAs(msg)
		if c.said[b.Node] == key {
			continue
		}
		c.said[b.Node] = key
		n := byName[b.Node]
		switch {
		case n == nil:
		case b.Method == v1.DisruptionReasonUnhealthy:
			// An unhealthy node that stays: a warning, on the node too.
			c.event(n, corev1.EventTypeWarning, v1.ReasonNodeRepairBlocked, msg)
		case n.NodeClaim != nil:
			c.Recorder.Event(n.NodeClaim, corev1.EventTypeNormal, v1.ReasonDisruptionBlocked, msg)
		}
	}
	c.reportScaleUp(snap, scaleUp)
	c.reportHealth(byName, dec)
}

// reportScaleUp tells each NodePool once per scale-up, rather than each
// of its nodes, that consolidation waits for the pending pods being
// placed: every node waits alike.
func (c *Controller) reportScaleUp(snap *state.Snapshot, scaleUp map[string]decide.Blocked) {
	if c.waiting == nil {
		c.waiting = sets.New[string]()
	}
	for name := range c.waiting {
		if _, ok := scaleUp[name]; !ok {
			c.waiting.Delete(name)
		}
	}
	for name, b := range scaleUp {
		if c.waiting.Has(name) {
			continue
		}
		c.waiting.Insert(name)
		c.Recorder.Event(snap.Pools[name], corev1.EventTypeNormal, v1.ReasonDisruptionBlocked, "consolidation of this NodePool's nodes waits: "+b.String())
	}
}

// reportHealth says once of each node failing within its repair
// toleration when it is repaired unless it recovers, and records each
// NodePool's unhealthy nodes.
func (c *Controller) reportHealth(byName map[string]*state.Node, dec *decide.Decision) {
	for _, p := range dec.Health {
		c.Metrics.NodePoolHealth(p.Name, len(p.Unhealthy), p.Held())
		for _, u := range p.Unhealthy {
			n := byName[u.Node.Name]
			if n == nil || !n.Initialized() || !c.Clock.Now().Before(u.Due) {
				continue
			}
			msg := fmt.Sprintf("%s; it is repaired at %s unless it recovers", u.Describe(), u.Due.UTC().Format(time.RFC3339))
			if c.warned[n.Name] != msg {
				c.warned[n.Name] = msg
				c.event(n, corev1.EventTypeWarning, v1.ReasonNodeUnhealthy, msg)
			}
		}
	}
}

func (c *Controller) record(took time.Duration, methods map[string]time.Duration, snap *state.Snapshot, dec *decide.Decision) {
	pools := map[string]string{}
	for _, n := range snap.Nodes {
		pools[n.Name] = n.NodePool
	}
	blocked := map[[3]string]int{}
	for _, b := range dec.Blocked {
		blocked[[3]string{pools[b.Node], string(b.Method), string(b.Reason)}]++
	}
	allowed, consuming := map[[2]string]int{}, map[[2]string]int{}
	for _, a := range dec.Allowances {
		allowed[[2]string{a.NodePool, string(a.Reason)}] = min(a.Allowed, 1<<30)
		consuming[[2]string{a.NodePool, string(a.Reason)}] = a.Disrupting
	}
	c.Metrics.BudgetsConsumed(consuming)
	savings := map[string]float64{}
	for _, cmd := range c.commands {
		for _, n := range cmd.Nodes {
			savings[n.NodePool] += cmd.Savings / float64(len(cmd.Nodes))
		}
	}
	eligibleBy := map[string]int{}
	for reason, n := range dec.EligibleBy {
		eligibleBy[string(reason)] = n
	}
	c.Metrics.DisruptionDecision(took, dec.Eligible, allowed, blocked, savings)
	c.Metrics.EligibleByReason(eligibleBy)
	c.Metrics.MethodsTook(methods)
	c.Metrics.NodePoolCosts(dec.CostPerHour)
	for _, s := range dec.Scores {
		c.Metrics.ConsolidationScored(s.NodePool, s.Score, s.Approved)
	}
}
