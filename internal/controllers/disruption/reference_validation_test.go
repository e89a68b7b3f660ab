package disruption_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// The reference's validation_test.go (node repair's registration behind
// its feature gate) and queue_test.go (carrying commands out).
//
// nodewright's node repair is a disruption method when the controller is
// given repair policies (Options.Repair): operator.go passes them when
// --node-repair is on (the reference's NodeRepair feature gate), built
// from the tolerations the flags set (nodepoolhealth.Tolerations), which
// it validates at start.

const redRepair = "Repair Method Registration > "

var _ = restate("validation_test.go",
	refCase{ref: redRepair + "registers repair when the feature gate is enabled",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("sick", "m5.large", failing(corev1.NodeReady, corev1.ConditionFalse, now.Add(-31*time.Minute)))
			d := c.decide(repairing(false))
			if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonUnhealthy || d.Commands[0].Repair == nil {
				t.Errorf("repair on, a node NotReady past its toleration: %q, want it repaired", commands(d))
			}
		}},
	refCase{ref: redRepair + "panics when repair is enabled on cluster state built without a matcher",
		moot: "a wiring invariant of the reference's own objects (its cluster state must be built with the repair policy matcher); nodewright's decision takes the policies as an option (Options.Repair) with no object to build them into, so there is nothing to get wrong"},
	refCase{ref: redRepair + "does not register repair when the feature gate is disabled",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
			c.node("sick", "m5.large", failing(corev1.NodeReady, corev1.ConditionFalse, now.Add(-31*time.Minute)))
			d := c.decide()
			if len(d.Commands) != 0 || d.EligibleBy[v1.DisruptionReasonUnhealthy] != 0 || d.Health != nil {
				t.Errorf("repair off, a node NotReady past the toleration: %q, eligible %v; want it left alone", commands(d), d.EligibleBy)
			}
		}},
	refCase{ref: redRepair + "builds no matcher when the feature gate is disabled",
		moot: "the matcher is the reference's object for its cloud provider's repair policies; with --node-repair off nodewright neither builds nor validates policies and passes none to disruption (operator.go), which \"does not register repair when the feature gate is disabled\" checks"},
	refCase{ref: redRepair + "builds a matcher when the feature gate is enabled and policies are valid",
		run: func(t *testing.T) {
			tol := nodepoolhealth.DefaultTolerations()
			if err := tol.Validate(); err != nil {
				t.Fatalf("the default tolerations: %v", err)
			}
			policies := tol.Policies()
			ready := false
			for _, p := range policies {
				ready = ready || (p.Condition == corev1.NodeReady && p.Status == corev1.ConditionFalse && p.Toleration == 30*time.Minute)
			}
			if !ready {
				t.Errorf("policies %+v, want Ready=False tolerated 30m among them", policies)
			}
		}},
	refCase{ref: redRepair + "fails when repair is enabled without any policies",
		run: func(t *testing.T) {
			// nodewright's policies come from its tolerations: none set (all
			// zero) is refused at start.
			err := nodepoolhealth.Tolerations{}.Validate()
			if err == nil || !strings.Contains(err.Error(), "must be a positive duration") {
				t.Errorf("repair without tolerations: %v, want it refused", err)
			}
		}},
	refCase{ref: redRepair + "fails when the complete policy set is invalid",
		run: func(t *testing.T) {
			tol := nodepoolhealth.DefaultTolerations()
			tol.Ready, tol.Drain = -time.Minute, -time.Second
			if err := tol.Validate(); err == nil {
				t.Error("tolerations that are all wrong were accepted")
			}
			tol = nodepoolhealth.DefaultTolerations()
			tol.Drain = -time.Second
			if err := tol.Validate(); err == nil || !strings.Contains(err.Error(), "--node-repair-drain") {
				t.Errorf("a negative drain bound: %v, want it refused", err)
			}
		}},
)

const redQueue = "Queue > Reconcile > "

var _ = restate("queue_test.go",
	refCase{ref: redQueue + "should keep nodes tainted when replacements haven't finished initialization",
		run: func(t *testing.T) {
			e, repl := redStartDrift(t)
			redLaunch(t, e, &repl[0], false)
			e.reconcile(t)
			if !tainted(t, e.kube, "old") || len(redClaims(t, e)) != 2 {
				t.Errorf("the replacement registered, not initialized: tainted %v, %d NodeClaims; want the node tainted beside its replacement", tainted(t, e.kube, "old"), len(redClaims(t, e)))
			}
		}},
	refCase{ref: redQueue + "should not return an error when handling commands before the timeout",
		run: func(t *testing.T) {
			e, _ := redStartDrift(t)
			for range 3 {
				e.clock.Step(2 * time.Minute)
				e.reconcile(t) // fails the test on an error
			}
			if !tainted(t, e.kube, "old") || len(redReplacements(t, e)) != 1 || !redClaimExists(t, e, "nc-old") {
				t.Errorf("6 minutes in (timeout 10): tainted %v, replacements %d; want the command still in flight", tainted(t, e.kube, "old"), len(redReplacements(t, e)))
			}
		}},
	refCase{ref: redQueue + "should not return an error when the NodeClaim doesn't exist but the NodeCliam is in cluster state",
		run: func(t *testing.T) {
			// nodewright keeps no cluster state beside the API server's: the
			// nearest is a replacement launched (registered) that its
			// command has not yet seen initialized.
			e, repl := redStartDrift(t)
			redLaunch(t, e, &repl[0], false)
			e.reconcile(t)
			e.reconcile(t)
			if !tainted(t, e.kube, "old") || !redClaimExists(t, e, repl[0].Name) || !redClaimExists(t, e, "nc-old") {
				t.Errorf("a registered replacement not initialized: want the command still in flight; events %v", e.events())
			}
		}},
	refCase{ref: redQueue + "should untaint nodes when a command times out",
		run: func(t *testing.T) {
			e, repl := redStartDrift(t)
			e.clock.Step(11 * time.Minute)
			e.reconcile(t)
			if tainted(t, e.kube, "old") {
				t.Error("the node stays tainted after its replacement timed out")
			}
			if redClaimExists(t, e, repl[0].Name) {
				t.Error("the timed-out replacement stays")
			}
			if evs := e.events(); !has(evs, "DisruptionRolledBack", "were not initialized within 10m0s") {
				t.Errorf("events %v", evs)
			}
		}},
	refCase{ref: redQueue + "should emit the consolidation type in the failures metric when a command fails",
		run: func(t *testing.T) {
			e := startController(t)
			reg := rcaMetrics(t, e)
			redCtrlNode(t, e, "big", "m5.8xlarge", nil)
			redCtrlPod(t, e, "p", "big", "100m")
			e.reconcile(t)
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			if len(redReplacements(t, e)) != 1 {
				t.Fatalf("no replacement launched; events %v", e.events())
			}
			e.clock.Step(11 * time.Minute)
			e.reconcile(t)
			if v := rcaGauge(t, reg, "karpenter_voluntary_disruption_queue_failures_total", map[string]string{"consolidation_type": "single"}); v != 1 {
				t.Errorf("queue failures {consolidation_type=single}: %v, want 1", v)
			}
		}},
	refCase{ref: redQueue + "should fully handle a command when replacements are initialized",
		better: "the same course — replacement launched and told (DisruptionReplacement on it, DisruptionLaunching naming it on the node), the node deleted once it is initialized (DisruptionTerminating on the Node and its NodeClaim) — but the wait is told once, by the DisruptionLaunching event naming the replacements it waits for, not by a \"waiting on readiness\" event every round",
		run: func(t *testing.T) {
			e, repl := redStartDrift(t)
			evs := e.events()
			if !has(evs, "DisruptionLaunching", repl[0].Name) || !has(evs, "DisruptionReplacement", "replaces old (Drifted)") {
				t.Errorf("launch events %v", evs)
			}
			redLaunch(t, e, &repl[0], false)
			e.reconcile(t)
			if !redClaimExists(t, e, "nc-old") {
				t.Fatal("the node went before its replacement was initialized")
			}
			if evs := e.events(); has(evs, "DisruptionLaunching") || has(evs, "DisruptionTerminating") {
				t.Errorf("events while waiting %v, want none", evs)
			}
			redLaunch(t, e, &repl[0], true)
			e.reconcile(t)
			if redClaimExists(t, e, "nc-old") {
				t.Error("the node stays after its replacement was initialized")
			}
			if evs := e.events(); !redToldBoth(evs, "DisruptionTerminating") {
				t.Errorf("terminating events %v, want one on the Node and one on its NodeClaim", evs)
			}
		}},
	refCase{ref: redQueue + "should only finish a command when all replacements are initialized",
		run: func(t *testing.T) {
			e := startController(t)
			redUpdatePool(t, e, func(np *v1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
					v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}})
			})
			redCtrlNode(t, e, "old", "c5.2xlarge", redCtrlDrifted(e))
			redCtrlPod(t, e, "p1", "old", "1500m")
			redCtrlPod(t, e, "p2", "old", "1500m")
			e.reconcile(t)
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			repl := redReplacements(t, e)
			if len(repl) != 2 {
				t.Fatalf("%d replacements, want 2 c5.large; events %v", len(repl), e.events())
			}
			redLaunch(t, e, &repl[0], true)
			redLaunch(t, e, &repl[1], false)
			e.reconcile(t)
			if !redClaimExists(t, e, "nc-old") || !tainted(t, e.kube, "old") {
				t.Fatal("the node went with one of its two replacements initialized")
			}
			redLaunch(t, e, &repl[1], true)
			e.reconcile(t)
			if redClaimExists(t, e, "nc-old") {
				t.Errorf("the node stays with both replacements initialized; events %v", e.events())
			}
		}},
	refCase{ref: redQueue + "should not wait for replacements when none are needed",
		run: func(t *testing.T) {
			e := startController(t)
			redCtrlNode(t, e, "old", "m5.large", redCtrlDrifted(e))
			e.reconcile(t)
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			if redClaimExists(t, e, "nc-old") || len(redReplacements(t, e)) != 0 {
				t.Errorf("an empty drifted node: want it deleted at once, nothing launched; events %v", e.events())
			}
			if evs := e.events(); !redToldBoth(evs, "DisruptionTerminating") {
				t.Errorf("events %v, want DisruptionTerminating on the Node and on its NodeClaim", evs)
			}
		}},
	refCase{ref: redQueue + "should finish two commands in order as replacements are initialized",
		run: func(t *testing.T) {
			e := startController(t)
			redUpdatePool(t, e, func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.Never })
			for _, n := range []string{"a", "b"} {
				redCtrlNode(t, e, n, "m5.large", redCtrlDrifted(e))
				redCtrlPod(t, e, "p-"+n, n, "1500m")
			}
			e.reconcile(t) // decides a
			e.clock.Step(10 * time.Second)
			e.reconcile(t) // decides b
			e.clock.Step(6 * time.Second)
			e.reconcile(t) // starts a
			first := redReplacements(t, e)
			if len(first) != 1 {
				t.Fatalf("%d replacements after the first command started, want 1; events %v", len(first), e.events())
			}
			e.clock.Step(10 * time.Second)
			e.reconcile(t) // starts b
			var second *v1.NodeClaim
			for _, r := range redReplacements(t, e) {
				if r.Name != first[0].Name {
					second = &r
				}
			}
			if second == nil {
				t.Fatalf("no second replacement; events %v", e.events())
			}
			redLaunch(t, e, &first[0], false)
			redLaunch(t, e, second, false)
			e.reconcile(t)
			if !redClaimExists(t, e, "nc-a") || !redClaimExists(t, e, "nc-b") {
				t.Fatal("a node went before its replacement was initialized")
			}
			redLaunch(t, e, &first[0], true)
			e.reconcile(t)
			if redClaimExists(t, e, "nc-a") || !redClaimExists(t, e, "nc-b") || !tainted(t, e.kube, "b") {
				t.Fatalf("a's replacement initialized: a stays %v, b stays %v; want a gone, b waiting", redClaimExists(t, e, "nc-a"), redClaimExists(t, e, "nc-b"))
			}
			redLaunch(t, e, second, true)
			e.reconcile(t)
			if redClaimExists(t, e, "nc-b") {
				t.Error("b stays after its replacement was initialized")
			}
		}},
	refCase{ref: redQueue + "CalculateRetryDuration > should calculate correct timeout based on queue length > very small queue - 100 commands",
		moot: redRetryMoot},
	refCase{ref: redQueue + "CalculateRetryDuration > should calculate correct timeout based on queue length > small queue - 4000 commands",
		moot: redRetryMoot},
	refCase{ref: redQueue + "CalculateRetryDuration > should calculate correct timeout based on queue length > medium queue - 10000 commands",
		moot: redRetryMoot},
	refCase{ref: redQueue + "CalculateRetryDuration > should calculate correct timeout based on queue length > large queue - 40000 commands",
		moot: redRetryMoot},
	refCase{ref: redQueue + "CalculateRetryDuration > should calculate correct timeout based on queue length > very large queue - 80000 commands (capped)",
		moot: redRetryMoot},
	refCase{ref: redQueue + "CalculateRetryDuration > should calculate correct timeout based on queue length > extremely large queue - 100000 commands (capped)",
		moot: redRetryMoot},
)

// redRetryMoot: the reference's queue reconciles its commands one at a
// time (80ms each), so it stretches each command's retry window with
// their number.
const redRetryMoot = "a helper of the reference's queue (GetMaxRetryDuration) that stretches its retry window with the number of commands, as its queue visits them one at a time; nodewright moves every command in flight along in each round, and rolls one back when its replacements are not initialized within Config.ReplacementTimeout of its start whatever their number (queue_test.go's \"should untaint nodes when a command times out\" restates that here)"

// redStartDrift starts the controller with a drifted m5.large node with
// a pod, and carries its command to the launch of its replacement.
func redStartDrift(t *testing.T) (*env, []v1.NodeClaim) {
	t.Helper()
	e := startController(t)
	redCtrlNode(t, e, "old", "m5.large", redCtrlDrifted(e))
	redCtrlPod(t, e, "p", "old", "1")
	e.reconcile(t) // decides
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // taints, launches the replacement
	repl := redReplacements(t, e)
	if len(repl) != 1 || !tainted(t, e.kube, "old") {
		t.Fatalf("replacements %d, tainted %v; events %v", len(repl), tainted(t, e.kube, "old"), e.events())
	}
	return e, repl
}

// redToldBoth reports the reason told twice: on a NodeClaim and on
// another object (the Node; the fake recorder does not name its kind).
func redToldBoth(events []string, reason string) bool {
	claim, other := 0, 0
	for _, ev := range events {
		switch {
		case !strings.Contains(ev, reason):
		case strings.Contains(ev, "kind=NodeClaim"):
			claim++
		default:
			other++
		}
	}
	return claim == 1 && other == 1
}

func redCtrlDrifted(e *env) func(*v1.NodeClaim) {
	return func(nc *v1.NodeClaim) { redDrifted("True", e.clock.Now())(nil, nc) }
}
