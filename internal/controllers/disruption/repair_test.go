package disruption_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// failing makes a node's condition have the status since the time.
func failing(cond corev1.NodeConditionType, status corev1.ConditionStatus, since time.Time) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: cond, Status: status, Reason: "Failing", LastTransitionTime: metav1.NewTime(since)})
	}
}

// repairing runs node repair with the default tolerations (30 minutes;
// reboots when asked).
func repairing(reboot bool) func(*decide.Options) {
	return func(o *decide.Options) {
		t := nodepoolhealth.DefaultTolerations()
		t.Reboot = reboot
		o.Repair = t.Policies()
	}
}

// Repair is a disruption method, and the first: a node NotReady past its
// toleration is replaced (its pods placed on the other nodes) before
// an expired or drifted node, within the NodePool's budget for
// Unhealthy; one within its toleration, or without repair, stays.
func TestRepairReplacesAnUnhealthyNodeFirst(t *testing.T) {
	c := newCluster(t)
	for i := range 9 {
		c.node(fmt.Sprintf("ok%d", i), "m5.large")
	}
	c.node("sick", "m5.large", failing(corev1.NodeReady, corev1.ConditionFalse, now.Add(-31*time.Minute)))
	c.pods("sick", 2, "500m", "1Gi")
	c.node("old", "m5.large", func(_ *corev1.Node, nc *v1.NodeClaim) {
		nc.CreationTimestamp = metav1.NewTime(now.Add(-800 * time.Hour))
	})
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	var measured []v1.DisruptionReason
	d := c.decide(repairing(false), func(o *decide.Options) {
		o.Measure = func(method v1.DisruptionReason, run func()) {
			measured = append(measured, method)
			run()
		}
	})
	if len(d.Commands) < 1 || d.Commands[0].Reason != v1.DisruptionReasonUnhealthy || d.Commands[0].NodeNames()[0] != "sick" || d.Commands[0].Pods != 2 || len(d.Commands[0].Unplaced) != 0 {
		t.Fatalf("commands %q, want the unhealthy node replaced first, its pods placed", commands(d))
	}
	r := d.Commands[0].Repair
	if r == nil || r.Action != nodepoolhealth.Replace || r.DrainBound == nil || *r.DrainBound != nodepoolhealth.RepairDrain || !strings.Contains(r.Describe(), "Ready=False") {
		t.Errorf("repair %+v: want a replacement whose drain waits up to %s (a NotReady kubelet may still stop its pods in order)", r, nodepoolhealth.RepairDrain)
	}
	if d.Health["default"] == nil || len(d.Health["default"].Unhealthy) != 1 {
		t.Errorf("health %v", d.Health)
	}
	if d.EligibleBy[v1.DisruptionReasonUnhealthy] != 1 || d.EligibleBy[v1.DisruptionReasonExpired] != 1 {
		t.Errorf("eligible by method %v, want one unhealthy and one expired", d.EligibleBy)
	}
	if !slices.Contains(measured, v1.DisruptionReasonUnhealthy) || d.CostPerHour["default"] <= 0 || d.CostPerHour["default"] != d.PricePerHour {
		t.Errorf("methods measured %v, cost %v of %f", measured, d.CostPerHour, d.PricePerHour)
	}
	if got := commands(d); !strings.Contains(got, "Expired[old]") {
		t.Errorf("commands %q: expiration goes on beside repair", got)
	}
	if d := c.decide(); strings.Contains(commands(d), "Unhealthy") {
		t.Errorf("without repair policies: %q", commands(d))
	}
	// Within its toleration it stays.
	c.objs.Nodes[9].Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-29 * time.Minute))
	if d := c.decide(repairing(false)); strings.Contains(commands(d), "Unhealthy") {
		t.Errorf("within the toleration: %q", commands(d))
	}
	// The budget for Unhealthy holds it back, and says so.
	c.objs.Nodes[9].Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Hour))
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnhealthy}}, {Nodes: "100%"}}
	if d := c.decide(repairing(false)); strings.Contains(commands(d), "Unhealthy") || !strings.Contains(blocked(d, "sick"), "allows 0 of 0") {
		t.Errorf("budget 0 for Unhealthy: commands %q, blocked %q", commands(d), blocked(d, "sick"))
	}
}

// What keeps an unhealthy node: do-not-repair (not do-not-disrupt, which
// repair ignores), a NodePool more than a fifth unhealthy, and a pod whose
// eviction is refused when nothing bounds the drain (a failing agent
// condition's policy bounds it; a NodeClaim's terminationGracePeriod
// shorter than the policy's wins).
func TestRepairBlockers(t *testing.T) {
	build := func(mutate ...func(*corev1.Node, *v1.NodeClaim)) *cluster {
		c := newCluster(t)
		for i := range 5 {
			c.node(fmt.Sprintf("ok%d", i), "m5.large")
		}
		c.node("sick", "m5.large", append([]func(*corev1.Node, *v1.NodeClaim){failing("KernelReady", corev1.ConditionFalse, now.Add(-time.Hour))}, mutate...)...)
		c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
		return c
	}
	c := build(func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Annotations = map[string]string{v1.AnnotationDoNotRepair: "true"}
	})
	if d := c.decide(repairing(false)); len(d.Commands) != 0 || !strings.Contains(blocked(d, "sick"), v1.AnnotationDoNotRepair) {
		t.Errorf("do-not-repair: commands %q, blocked %q", commands(d), blocked(d, "sick"))
	}
	c = build(func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
	})
	if d := c.decide(repairing(false)); !strings.HasPrefix(commands(d), "Unhealthy[sick]") {
		t.Errorf("do-not-disrupt does not hold repair: %q", commands(d))
	}
	c = build()
	c.objs.Nodes, c.objs.NodeClaims = c.objs.Nodes[3:], c.objs.NodeClaims[3:]
	c.node("sick2", "m5.large", failing(corev1.NodeReady, corev1.ConditionUnknown, now.Add(-time.Hour)))
	if d := c.decide(repairing(false)); len(d.Commands) != 0 || !strings.Contains(blocked(d, "sick"), "2 of the 4 nodes of NodePool default are unhealthy") {
		t.Errorf("two of four unhealthy (more than a fifth): commands %q, blocked %q", commands(d), blocked(d, "sick"))
	}

	// A pod a PodDisruptionBudget protects: the KernelReady policy bounds
	// the drain (10 minutes), so repair goes ahead.
	c = build()
	c.pods("sick", 1, "500m", "1Gi")
	c.objs.PDBs = append(c.objs.PDBs, pdb(0, "sick"))
	d := c.decide(repairing(false))
	if len(d.Commands) != 1 || d.Commands[0].Repair == nil || *d.Commands[0].Repair.DrainBound != nodepoolhealth.RepairDrain {
		t.Fatalf("commands %q, want the repair with the policy's bound", commands(d))
	}
	// A shorter terminationGracePeriod wins.
	c.objs.NodeClaims[5].Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Minute}
	if d := c.decide(repairing(false)); len(d.Commands) != 1 || *d.Commands[0].Repair.DrainBound != time.Minute {
		t.Errorf("commands %q, want the NodeClaim's shorter bound", commands(d))
	}
	// A policy without a bound and no terminationGracePeriod: the pod
	// holds repair, and the event says how to lift it.
	c.objs.NodeClaims[5].Spec.TerminationGracePeriod = nil
	unbounded := func(o *decide.Options) {
		repairing(false)(o)
		for i := range o.Repair {
			o.Repair[i].DrainBound = nil
		}
	}
	if d := c.decide(unbounded); len(d.Commands) != 0 || !strings.Contains(blocked(d, "sick"), "terminationGracePeriod") || !strings.Contains(blocked(d, "sick"), "pdb-sick") {
		t.Errorf("unbounded drain of a protected pod: commands %q, blocked %q", commands(d), blocked(d, "sick"))
	}
}

// With reboots on, a GPU fault a reboot clears (XID 63) is repaired by
// a reboot (no replacement); a node rebooted twice within the last day is
// replaced this time; a fatal XID, another accelerator fault, a failing
// kernel and a NotReady node are always replaced. A node being rebooted
// is left to the reboot by every method.
func TestRepairReboots(t *testing.T) {
	c := newCluster(t)
	for i := range 5 {
		c.node(fmt.Sprintf("ok%d", i), "m5.large")
	}
	c.node("kernel", "m5.large", failing(nodepoolhealth.ConditionAcceleratedHardwareReady, corev1.ConditionFalse, now.Add(-time.Hour)), func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Status.Conditions[0].Reason = "NvidiaXID63Error"
	})
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	d := c.decide(repairing(true))
	if len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Reboot || len(d.Commands[0].Replacements) != 0 {
		t.Fatalf("commands %q, want a reboot", commands(d))
	}
	if d := c.decide(repairing(false)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Replace {
		t.Errorf("without reboots: %q", commands(d))
	}
	nc := c.objs.NodeClaims[5]
	nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse,
		Reason: v1.ReasonRebootSucceeded, LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Hour))})
	history := func(ago ...time.Duration) {
		delete(nc.Annotations, v1.AnnotationReboots)
		for _, a := range ago {
			metav1.SetMetaDataAnnotation(&nc.ObjectMeta, v1.AnnotationReboots, nodepoolhealth.RecordReboot(nc, now.Add(-a)))
		}
	}
	history(2 * time.Hour)
	if d := c.decide(repairing(true)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Reboot {
		t.Errorf("rebooted once two hours ago: %q, want a reboot", commands(d))
	}
	history(5*time.Hour, 2*time.Hour)
	if d := c.decide(repairing(true)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Replace || !strings.Contains(d.Commands[0].Repair.Describe(), "rebooted 2 times") {
		t.Errorf("rebooted twice today: %q, want a replacement that says why", commands(d))
	}
	history(26*time.Hour, 25*time.Hour)
	if d := c.decide(repairing(true)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Reboot {
		t.Errorf("rebooted twice a day ago: %q, want a reboot again", commands(d))
	}
	for _, reason := range []string{"NvidiaXID79Error", "NvidiaXID13Error"} {
		history()
		c.objs.Nodes[5].Status.Conditions[0].Reason = reason
		if d := c.decide(repairing(true)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Replace {
			t.Errorf("%s: %q, want a replacement", reason, commands(d))
		}
	}
	c.objs.Nodes[5].Status.Conditions[0] = corev1.NodeCondition{Type: nodepoolhealth.ConditionKernelReady, Status: corev1.ConditionFalse, Reason: "KernelBug", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
	if d := c.decide(repairing(true)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Replace {
		t.Errorf("a failing kernel: %q, want a replacement", commands(d))
	}
	nc.Status.Conditions[1] = metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionTrue, Reason: v1.ReasonRebootIssued, LastTransitionTime: metav1.NewTime(now)}
	c.pool.Spec.Disruption.ConsolidateAfter = "0s"
	if d := c.decide(repairing(true)); strings.Contains(commands(d), "kernel") || !strings.Contains(blocked(d, "kernel"), "already being disrupted") {
		t.Errorf("a node being rebooted: commands %q, blocked %q", commands(d), blocked(d, "kernel"))
	}

	c = newCluster(t)
	for i := range 5 {
		c.node(fmt.Sprintf("ok%d", i), "m5.large")
	}
	c.node("down", "m5.large", failing(corev1.NodeReady, corev1.ConditionUnknown, now.Add(-time.Hour)))
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	if d := c.decide(repairing(true)); len(d.Commands) != 1 || d.Commands[0].Repair.Action != nodepoolhealth.Replace {
		t.Errorf("a NotReady node: %q, want a replacement", commands(d))
	}
}
