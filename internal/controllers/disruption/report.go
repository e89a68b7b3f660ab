package disruption

import (
	"fmt"
	"strings"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

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
