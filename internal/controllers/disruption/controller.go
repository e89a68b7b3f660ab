// Package disruption carries out what internal/decide/disruption decides:
// it waits, validates the decision again, taints the nodes
// karpenter.sh/disrupted:NoSchedule, launches the replacements, waits until
// they are initialized and deletes the nodes' NodeClaims (whose termination
// drains them through the Eviction API); a replacement that fails rolls
// its command back.
package disruption

import (
	"context"
	"slices"
	"sync"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/nodewright/nodewright/api/v1"
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
	// IgnoreDRARequests leaves pods with resource claims unplanned.
	IgnoreDRARequests bool
	// Policy is how minValues and pods' preferences are read.
	Policy scheduling.Policy
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
	// unreached are the NodePools single-node consolidation did not
	// reach last round; they come first in the next.
	unreached map[string]bool
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
	snap := state.Build(listed.Objects, state.Options{Now: now, NodeClasses: classes, Backoff: c.Registrations.Backoffs(), DefaultSpread: c.Config.DefaultSpread,
		IgnoreDRARequests: c.Config.IgnoreDRARequests, Policy: c.Config.Policy})
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
	opts.Unreached = c.unreached
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
	c.unreached = dec.Unreached
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
