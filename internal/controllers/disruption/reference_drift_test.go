package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// The reference's drift_test.go and staticdrift_test.go. Its drifted
// node is of the most expensive type with 32 vCPUs: an m5.8xlarge here.
// Its NodePool waits an hour (consolidateAfter) before consolidating, so
// a node initialized ten minutes ago is not consolidated meanwhile.

const (
	redDriftCtx = "Drift > "
	redBig      = "m5.8xlarge"
)

var _ = restate("drift_test.go",
	refCase{ref: redDriftCtx + "Metrics > should correctly report eligible drifted nodes",
		run: func(t *testing.T) {
			// karpenter_voluntary_disruption_eligible_nodes{reason="drifted"}
			// is set from the decision's EligibleBy.
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung)
			c.pods("n", 1, "100m", "64Mi", redAnnotated(v1.AnnotationDoNotDisrupt, "true"))
			if d := c.decide(); d.EligibleBy[v1.DisruptionReasonDrifted] != 0 {
				t.Errorf("eligible for drift %d, want 0", d.EligibleBy[v1.DisruptionReasonDrifted])
			}
			c.objs.Pods[0].Annotations = nil
			drifted(nil, c.objs.NodeClaims[0])
			if d := c.decide(); d.EligibleBy[v1.DisruptionReasonDrifted] != 1 || len(d.Commands) != 1 {
				t.Errorf("drifted, the annotation gone: eligible for drift %d (%q), want 1", d.EligibleBy[v1.DisruptionReasonDrifted], commands(d))
			}
		}},

	refCase{ref: redDriftCtx + "Budgets > should only consider 3 nodes allowed to be disrupted because of budgets",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%"}}
			for i := range 10 {
				c.node(fmt.Sprintf("n%d", i), redBig, onDemand, redYoung, drifted)
			}
			d := c.decide()
			if got, _ := redAllowed(d, "default", v1.DisruptionReasonDrifted); got != 3 {
				t.Errorf("the budget for drift allows %d, want 3", got)
			}
			for _, a := range d.Allowances {
				if a.Reason == v1.DisruptionReasonDrifted && a.Disrupting != 0 {
					t.Errorf("nodes consuming the budget %d, want 0", a.Disrupting)
				}
			}
		}},
	refCase{ref: redDriftCtx + "Budgets > should disrupt 3 nodes, taking into account commands in progress",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "30%"}}
			for i := range 10 {
				mut := []func(*corev1.Node, *v1.NodeClaim){onDemand, redYoung}
				if i < 5 {
					mut = append(mut, drifted)
				}
				c.node(fmt.Sprintf("n%d", i), redBig, mut...)
				if i < 5 {
					c.pods(fmt.Sprintf("n%d", i), 1, "1", "256Mi", redOwned("ReplicaSet"))
				}
			}
			cmds := redRounds(c, 5)
			if len(cmds) != 3 {
				t.Errorf("%d drift commands in 5 rounds, want 3 (30%% of 10)", len(cmds))
			}
		}},
	refCase{ref: redDriftCtx + "Budgets > should respect budgets for multiple nodepools",
		run: func(t *testing.T) {
			c := redDrift(t)
			for i := range 10 {
				name := fmt.Sprintf("np-%d", i)
				redPool(c, name, func(np *v1.NodePool) {
					np.Spec.Disruption.ConsolidateAfter = v1.Never
					np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
					np.Spec.Template.Spec.ExpireAfter = v1.Never
				})
				for j := range 3 {
					node := fmt.Sprintf("n-%d-%d", i, j)
					c.node(node, redBig, onDemand, redIn(name), drifted)
					if j < 2 {
						c.pods(node, 1, "1", "256Mi", redOwned("ReplicaSet"))
					}
				}
			}
			d := c.decide()
			for i := range 10 {
				if got, _ := redAllowed(d, fmt.Sprintf("np-%d", i), v1.DisruptionReasonDrifted); got != 1 {
					t.Errorf("np-%d: the budget for drift allows %d, want 1", i, got)
				}
			}
			per := map[string]int{}
			cmds := redRounds(c, 30)
			for _, cmd := range cmds {
				per[cmd.Nodes[0].NodePool]++
			}
			if len(cmds) != 10 {
				t.Errorf("%d drift commands in 30 rounds, want 10", len(cmds))
			}
			for i := range 10 {
				if n := per[fmt.Sprintf("np-%d", i)]; n != 1 {
					t.Errorf("np-%d: %d drift commands, want 1", i, n)
				}
			}
		}},

	refCase{ref: redDriftCtx + "Drift > should continue to the next drifted node if the first cannot reschedule all pods",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("a", redBig, onDemand, redYoung, drifted)
			c.pods("a", 1, "1000", "1Gi") // no instance type holds it
			c.node("b", redBig, onDemand, redYoung, drifted)
			c.pods("b", 1, "1", "256Mi")
			d := c.decide()
			if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "b" || len(d.Commands[0].Replacements) != 1 {
				t.Errorf("commands %q, want b replaced", commands(d))
			}
			if !strings.Contains(blocked(d, "a"), "would have no place") {
				t.Errorf("a: %q", blocked(d, "a"))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should ignore nodes without the drifted status condition",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung)
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("a node not drifted: %q", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should ignore nodes with the drifted status condition set to false",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, redDrifted(metav1.ConditionFalse, now))
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("Drifted=False: %q", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should ignore nodes with the karpenter.sh/do-not-disrupt annotation set to true",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted, redNodeAnnotated(v1.AnnotationDoNotDisrupt, "true"))
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "the node is annotated karpenter.sh/do-not-disrupt=true") {
				t.Errorf("a drifted node annotated do-not-disrupt: %q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should delete drifted nodes with the karpenter.sh/do-not-disrupt annotation set to false",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted, redNodeAnnotated(v1.AnnotationDoNotDisrupt, "false"))
			c.pods("n", 1, "100m", "64Mi", redOwned("ReplicaSet"))
			c.node("other", redBig, onDemand, redYoung)
			d := c.decide()
			if commands(d) != "Drifted[n]" || len(d.Commands[0].Replacements) != 0 {
				t.Errorf("do-not-disrupt=false: %q, want n deleted, its pod moved to the other node", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should not create replacements for drifted nodes that have pods with the karpenter.sh/do-not-disrupt annotation set to true",
		run: func(t *testing.T) { redDriftHeldByPod(t, nil) }},
	refCase{ref: redDriftCtx + "Drift > should not create replacements for drifted nodes that have pods with the karpenter.sh/do-not-disrupt annotation set to true when the NodePool's TerminationGracePeriod is not nil",
		// The reference's case sets no terminationGracePeriod (only its
		// title names one): its facts are the case above's.
		run: func(t *testing.T) { redDriftHeldByPod(t, nil) }},
	refCase{ref: redDriftCtx + "Drift > should not create replacements for drifted nodes that have pods with the blocking PDBs when the NodePool's TerminationGracePeriod is not nil",
		better: "the NodeClaim's terminationGracePeriod bounds the drain, so the drift goes ahead as in the reference, but nodewright launches a replacement for the pod its PodDisruptionBudget (maxUnavailable 0) holds: when the grace period ends the pod is evicted anyway and has room to go; the reference launches none for it, leaving it pending then",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted, func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 300 * time.Second}
			})
			c.pods("n", 1, "100m", "64Mi")
			zero := intstr.FromInt32(0)
			budget := pdb(0, "n")
			budget.Spec.MaxUnavailable = &zero
			c.objs.PDBs = []*policyv1.PodDisruptionBudget{budget}
			d := c.decide()
			if commands(d) == "" || d.Commands[0].Reason != v1.DisruptionReasonDrifted || len(d.Commands[0].Replacements) != 1 || d.Commands[0].Pods != 1 {
				t.Errorf("a drifted node with a terminationGracePeriod and a pod its PDB holds: %q, blocked %q; want it replaced, the pod given room", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should not drift nodes with pods that have a duration-based do-not-disrupt annotation that is still active",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted)
			c.pods("n", 1, "100m", "64Mi", redAnnotated(v1.AnnotationDoNotDisrupt, "2m"), redStarted(now))
			if d := c.decide(); len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "until") {
				t.Errorf("do-not-disrupt 2m, started now: %q, blocked %q", commands(d), blocked(d, "n"))
			}
			d := redDecideAt(c, now.Add(3*time.Minute))
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
				t.Errorf("3 minutes on: %q, blocked %q; want the node replaced", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should drift nodes with pods that have an invalid do-not-disrupt annotation format",
		better: "a do-not-disrupt value nodewright cannot read (\"invalid-format\") holds the pod as \"true\" would, and the node says what it read (\"pod default/... is annotated karpenter.sh/do-not-disrupt=invalid-format\"): the user meant to protect the pod, and a typo should not get it evicted; the reference ignores the annotation and drifts the node",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted)
			c.pods("n", 1, "100m", "64Mi", redOwned("ReplicaSet"), redAnnotated(v1.AnnotationDoNotDisrupt, "invalid-format"))
			c.node("other", redBig, onDemand, redYoung)
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "karpenter.sh/do-not-disrupt=invalid-format") {
				t.Errorf("an unreadable do-not-disrupt value: %q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should not drift nodes until the longest duration-based do-not-disrupt grace period expires across multiple pods",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted)
			c.pods("n", 1, "100m", "64Mi", redAnnotated(v1.AnnotationDoNotDisrupt, "1m"), redStarted(now))
			c.objs.Pods[0].Name = "short"
			c.pods("n", 1, "100m", "64Mi", redAnnotated(v1.AnnotationDoNotDisrupt, "3m"), redStarted(now))
			for _, step := range []struct {
				after time.Duration
				want  int
			}{{0, 0}, {2 * time.Minute, 0}, {4 * time.Minute, 1}} {
				if d := redDecideAt(c, now.Add(step.after)); len(d.Commands) != step.want {
					t.Errorf("%s on: %q (blocked %q), want %d commands", step.after, commands(d), blocked(d, "n"), step.want)
				}
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should replace drifted nodes",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted)
			c.pods("n", 1, "100m", "64Mi", redOwned("ReplicaSet"))
			d := c.decide()
			if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonDrifted || len(d.Commands[0].Replacements) != 1 {
				t.Errorf("a drifted node with a pod, alone: %q, want it replaced", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should delete drifted nodes",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, redYoung, drifted)
			c.pods("n", 1, "100m", "64Mi", redOwned("ReplicaSet"))
			c.node("other", redBig, onDemand, redYoung)
			d := c.decide()
			if commands(d) != "Drifted[n]" || len(d.Commands[0].Replacements) != 0 || len(d.Commands[0].Moves) != 1 || d.Commands[0].Moves[0].Node != "other" {
				t.Errorf("a drifted node whose pod fits on another: %q, want it deleted, the pod moved to other", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should delete drifted nodes when they are empty and consolidation is disabled",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
			c.node("n", redBig, onDemand, drifted)
			d := c.decide()
			if commands(d) != "Drifted[n]" || len(d.Commands[0].Replacements) != 0 || d.EligibleBy[v1.DisruptionReasonDrifted] != 1 {
				t.Errorf("an empty drifted node, consolidation off: %q, eligible %v", commands(d), d.EligibleBy)
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should drift empty nodes before non-empty nodes",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
			c.node("a", redBig, onDemand, drifted)
			c.pods("a", 1, "100m", "64Mi", redOwned("ReplicaSet"))
			c.node("b", redBig, onDemand, drifted)
			d := c.decide()
			if commands(d) != "Drifted[b]" || d.EligibleBy[v1.DisruptionReasonDrifted] != 2 {
				t.Errorf("two drifted nodes, b empty: %q, eligible %v; want b first", commands(d), d.EligibleBy)
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should delete drifted nodes when they are empty and consolidatable",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("n", redBig, onDemand, drifted) // initialized an hour ago: consolidatable
			d := c.decide()
			if commands(d) != "Drifted[n]" || len(d.Commands[0].Replacements) != 0 || d.EligibleBy[v1.DisruptionReasonDrifted] != 1 {
				t.Errorf("an empty drifted consolidatable node: %q, eligible %v; want it deleted by drift", commands(d), d.EligibleBy)
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should untaint nodes when drift replacement fails",
		run: func(t *testing.T) {
			e := startController(t)
			redCtrlNode(t, e, "old", redBig, func(nc *v1.NodeClaim) { redDrifted(metav1.ConditionTrue, e.clock.Now())(nil, nc) })
			redCtrlPod(t, e, "p", "old", "100m")
			e.reconcile(t) // decides
			e.clock.Step(16 * time.Second)
			e.reconcile(t) // taints, launches the replacement
			repl := redReplacements(t, e)
			if len(repl) != 1 || !tainted(t, e.kube, "old") {
				t.Fatalf("replacements %d, tainted %v; events %v", len(repl), tainted(t, e.kube, "old"), e.events())
			}
			if err := e.kube.Delete(context.Background(), &repl[0]); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			if tainted(t, e.kube, "old") {
				t.Error("the drifted node stays tainted after its replacement failed")
			}
			if !redClaimExists(t, e, "nc-old") {
				t.Error("the drifted node's NodeClaim was deleted")
			}
		}},
	refCase{ref: redDriftCtx + "Drift > can replace drifted nodes with multiple nodes",
		run: func(t *testing.T) {
			// The NodePool now launches only c5.large (2 vCPUs): three pods
			// of 1.5 CPU need three of them.
			c := redDrift(t)
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large"}})
			c.node("n", "c5.2xlarge", onDemand, redYoung, drifted)
			c.pods("n", 3, "1500m", "512Mi", redOwned("ReplicaSet"))
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 3 {
				t.Fatalf("three 1.5-CPU pods, replacements of 2 vCPUs: %q, want 3 replacements", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Drift > should drift one non-empty node at a time, starting with the earliest drift",
		run: func(t *testing.T) {
			c := redDrift(t)
			c.node("a", redBig, onDemand, redYoung, redDrifted(metav1.ConditionTrue, now.Add(-time.Minute)))
			c.pods("a", 1, "30", "1Gi", redOwned("ReplicaSet"))
			c.node("b", redBig, onDemand, redYoung, redDrifted(metav1.ConditionTrue, now.Add(-time.Hour)))
			c.pods("b", 1, "30", "1Gi", redOwned("ReplicaSet"))
			d := c.decide()
			if commands(d) == "" || len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "b" {
				t.Errorf("two drifted nodes with pods: %q, want b (drifted earliest) alone", commands(d))
			}
		}},
	refCase{ref: redDriftCtx + "Static NodePool > should not consider static nodepool for drift",
		run: func(t *testing.T) {
			// The reference's drift method leaves a static NodePool's nodes to
			// its static drift; nodewright replaces them through the pool.
			c := redDrift(t)
			c.pool.Spec.Replicas = ptr.To(int64(2))
			c.pool.Spec.Disruption = v1.Disruption{}
			c.node("a", "m5.large", drifted)
			c.node("b", "m5.large", drifted)
			for _, cmd := range redRounds(c, 2) {
				if !cmd.Static || len(cmd.Replacements) != 0 {
					t.Errorf("a static NodePool's drifted node: static %v, %d planned replacements; want it left to the pool", cmd.Static, len(cmd.Replacements))
				}
			}
		}},
)

var _ = restate("staticdrift_test.go",
	refCase{ref: "StaticDrift > Budgets > should respect disruption budgets (Nodes Count) for static drift",
		run: func(t *testing.T) { redStaticBudget(t, "2", 2) }},
	refCase{ref: "StaticDrift > Budgets > should respect disruption budgets (Nodes Percentage) for static drift",
		run: func(t *testing.T) { redStaticBudget(t, "20%", 1) }},
	refCase{ref: "StaticDrift > Budgets > should respect budgets for multiple static nodepools",
		run: func(t *testing.T) {
			c := redStatic(t, 0)
			c.objs.NodePools = nil
			for _, p := range []struct {
				name     string
				replicas int64
				budget   string
			}{{"static-nodepool-1", 4, "1"}, {"static-nodepool-2", 3, "2"}, {"static-nodepool-3", 2, "100%"}} {
				redPool(c, p.name, func(np *v1.NodePool) {
					np.Spec.Replicas = ptr.To(p.replicas)
					np.Spec.Disruption.Budgets = []v1.Budget{{Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}, Nodes: p.budget}}
				})
				for i := range 2 {
					c.node(fmt.Sprintf("%s-%d", p.name, i), "m5.large", redIn(p.name), drifted)
				}
			}
			d := c.decide()
			for pool, want := range map[string]int{"static-nodepool-1": 1, "static-nodepool-2": 2, "static-nodepool-3": 2} {
				if got, _ := redAllowed(d, pool, v1.DisruptionReasonDrifted); got != want {
					t.Errorf("%s: the budget for drift allows %d, want %d", pool, got, want)
				}
			}
			per := map[string]int{}
			cmds := redRounds(c, 6)
			for _, cmd := range cmds {
				per[cmd.Nodes[0].NodePool]++
			}
			if len(cmds) != 5 || per["static-nodepool-1"] != 1 || per["static-nodepool-2"] != 2 || per["static-nodepool-3"] != 2 {
				t.Errorf("drift commands per NodePool %v, want 1, 2 and 2", per)
			}
		}},
	refCase{ref: "StaticDrift > Limits and Scaling > should not drift nodes when we cannot acquire limits",
		better: "a static NodePool at its node limit still rolls its drifted nodes out within its budget: with no room for a replacement beside the node, the command deletes the node first and the pool relaunches it from its template (controller.go staticRoom); the reference blocks the drift for as long as the pool is at its limit, so such a pool never leaves a drifted AMI",
		run: func(t *testing.T) {
			c := redStatic(t, 5)
			c.pool.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("5")}
			for i := range 5 {
				c.node(fmt.Sprintf("n%d", i), "m5.large", drifted)
			}
			if cmds := redRounds(c, 1); len(cmds) != 1 || !cmds[0].Static {
				t.Errorf("drifted nodes of a static NodePool at its limit: %d commands, want one through the pool", len(cmds))
			}
		}},
	refCase{ref: "StaticDrift > Limits and Scaling > should drift nodes when we can acquire limits",
		better: "both drifted nodes are replaced through the pool (one a round) with the budget for drift allowing 2, as in the reference; besides, each node of a static NodePool is told once (DisruptionBlocked) that consolidation leaves static NodePools' nodes alone and replaces them when drifted or expired, where the reference tells nothing: the user learns why an idle static node stays",
		run: func(t *testing.T) {
			c := redStatic(t, 5)
			c.pool.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("5")}
			c.node("a", "m5.large", drifted)
			c.node("b", "m5.large", drifted)
			d := c.decide()
			if got, _ := redAllowed(d, "default", v1.DisruptionReasonDrifted); got != 2 {
				t.Errorf("the budget for drift allows %d, want 2", got)
			}
			cmds := redRounds(c, 3)
			if len(cmds) != 2 {
				t.Errorf("%d drift commands, want 2", len(cmds))
			}
			for _, b := range d.Blocked {
				if b.Reason != decide.BlockedStatic {
					t.Errorf("node %s blocked: %s", b.Node, b)
				}
			}
		}},
	refCase{ref: "StaticDrift > Limits and Scaling > should drift partially when we can acquire some limits",
		better: "all five drifted nodes of the static NodePool (limit 7, budget 100%) are rolled out: the two its limit has room for are replaced beside the node, the other three deleted first and relaunched by the pool; the reference drifts two now and the rest only as room appears",
		run: func(t *testing.T) {
			c := redStatic(t, 5)
			c.pool.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("7")}
			for i := range 5 {
				c.node(fmt.Sprintf("n%d", i), "m5.large", drifted)
			}
			if got, _ := redAllowed(c.decide(), "default", v1.DisruptionReasonDrifted); got != 5 {
				t.Errorf("the budget for drift allows %d, want 5", got)
			}
			if cmds := redRounds(c, 6); len(cmds) != 5 {
				t.Errorf("%d drift commands, want 5", len(cmds))
			}
		}},
	refCase{ref: "StaticDrift > Limits and Scaling > should keep drifting partially when we can acquire some limits for each reconcile",
		better: "with room for one replacement (limit 6, 5 nodes, budget 100%), nodewright does not hold the other drifted nodes until each replacement is done: it replaces one beside its node and deletes the others first, within the budget, for the pool to relaunch; the rollout ends in one pass instead of five",
		run: func(t *testing.T) {
			c := redStatic(t, 5)
			c.pool.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("6")}
			for i := range 5 {
				c.node(fmt.Sprintf("n%d", i), "m5.large", drifted)
			}
			cmds := redRounds(c, 5)
			if len(cmds) != 5 {
				t.Errorf("%d drift commands in 5 rounds, want 5", len(cmds))
			}
			for _, cmd := range cmds {
				if !cmd.Static || len(cmd.Nodes) != 1 {
					t.Errorf("command %s: want one node through the pool", cmd.NodeNames())
				}
			}
		}},
	refCase{ref: "StaticDrift > Limits and Scaling > should wait until nodes are deprovisioned when we are overscaled",
		better: "nodewright does not wait for the pool's scale-down: the drift takes the empty drifted node first, launches nothing for it (the static command launches none, and the pool already has its one replica without it) and deletes it as soon as it starts — the scale-down done by the drift, no replacement wasted; the reference replaces nothing until the pool has removed a node",
		run: func(t *testing.T) {
			c := redStatic(t, 1)
			c.node("a", "m5.large", drifted)
			c.pods("a", 1, "1", "256Mi")
			c.node("b", "m5.large", drifted)
			if d := c.decide(); commands(d) != "Drifted[b]" || !d.Commands[0].Static || len(d.Commands[0].Replacements) != 0 {
				t.Errorf("two drifted nodes of a static NodePool of 1: %q, want the empty one taken through the pool", commands(d))
			}
			c.objs.Nodes, c.objs.NodeClaims = c.objs.Nodes[:1], c.objs.NodeClaims[:1]
			if d := c.decide(); commands(d) != "Drifted[a]" || !d.Commands[0].Static {
				t.Errorf("scaled down to one drifted node: %q, want it replaced through the pool", commands(d))
			}
		}},
	refCase{ref: "StaticDrift > Multiple NodePools > should handle drift for multiple static NodePools independently",
		better: "on purpose, the NodePool at its node limit (2 of 2) rolls its two drifted nodes out too, each deleted first for the pool to relaunch (6 commands, not the reference's 4): a static pool at its limit is not stuck on an old AMI",
		run: func(t *testing.T) {
			c := redStatic(t, 0)
			c.objs.NodePools = nil
			for _, p := range []struct {
				name     string
				replicas int64
				limit    string
			}{{"nodepool-1", 3, ""}, {"nodepool-2", 2, "2"}, {"nodepool-3", 2, ""}} {
				redPool(c, p.name, func(np *v1.NodePool) {
					np.Spec.Replicas = ptr.To(p.replicas)
					if p.limit != "" {
						np.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse(p.limit)}
					}
				})
				for i := range 2 {
					c.node(fmt.Sprintf("%s-%d", p.name, i), "m5.large", redIn(p.name), drifted)
				}
			}
			d := c.decide()
			for _, pool := range []string{"nodepool-1", "nodepool-2", "nodepool-3"} {
				if got, _ := redAllowed(d, pool, v1.DisruptionReasonDrifted); got != 2 {
					t.Errorf("%s: the budget for drift allows %d, want 2", pool, got)
				}
			}
			per := map[string]int{}
			for _, cmd := range redRounds(c, 7) {
				per[cmd.Nodes[0].NodePool]++
			}
			if per["nodepool-1"] != 2 || per["nodepool-2"] != 2 || per["nodepool-3"] != 2 {
				t.Errorf("drift commands per NodePool %v, want 2 each", per)
			}
		}},
	refCase{ref: "StaticDrift > Edge Cases > should handle zero replicas",
		better: "the drifted node of a static NodePool of 0 replicas is taken by a static drift command that launches nothing and deletes it once started (the pool has its 0 replicas without it): the node goes, as the pool's scale-down would remove it, and nothing is replaced; the reference decides nothing and leaves it to the scale-down",
		run: func(t *testing.T) {
			c := redStatic(t, 0)
			c.node("n", redBig, drifted)
			if d := c.decide(); commands(d) != "Drifted[n]" || !d.Commands[0].Static || len(d.Commands[0].Replacements) != 0 {
				t.Errorf("a drifted node of a static NodePool of 0 replicas: %q, want it taken through the pool, nothing launched", commands(d))
			}
		}},
	refCase{ref: "StaticDrift > Edge Cases > should handle missing node limits gracefully",
		run: func(t *testing.T) {
			c := redStatic(t, 5)
			for i := range 5 {
				c.node(fmt.Sprintf("n%d", i), "m5.large", drifted)
			}
			if cmds := redRounds(c, 6); len(cmds) != 5 {
				t.Errorf("%d drift commands, want 5", len(cmds))
			}
		}},
	refCase{ref: "StaticDrift > Edge Cases > should ignore nodes without the drifted status condition",
		run: func(t *testing.T) {
			c := redStatic(t, 1)
			c.node("n", redBig)
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("%q", commands(d))
			}
		}},
	refCase{ref: "StaticDrift > Edge Cases > should ignore nodes with the drifted status condition set to false",
		run: func(t *testing.T) {
			c := redStatic(t, 1)
			c.node("n", redBig, redDrifted(metav1.ConditionFalse, now))
			if d := c.decide(); len(d.Commands) != 0 {
				t.Errorf("%q", commands(d))
			}
		}},
	refCase{ref: "StaticDrift > Edge Cases > should ignore nodes with the karpenter.sh/do-not-disrupt annotation",
		run: func(t *testing.T) {
			c := redStatic(t, 1)
			c.node("n", redBig, drifted, redNodeAnnotated(v1.AnnotationDoNotDisrupt, "true"))
			d := c.decide()
			if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "do-not-disrupt") {
				t.Errorf("%q, blocked %q", commands(d), blocked(d, "n"))
			}
		}},
)

// redDrift is the reference's drift cluster: consolidateAfter 1h, a
// budget of 100%.
func redDrift(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool.Spec.Disruption = v1.Disruption{ConsolidateAfter: "1h", ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, Budgets: []v1.Budget{{Nodes: "100%"}}}
	return c
}

// redYoung: initialized ten minutes ago, not yet consolidatable.
var redYoung = redInitialized(now.Add(-10 * time.Minute))

func redStarted(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.StartTime = ptr.To(metav1.NewTime(at)) }
}

// redDriftHeldByPod: a drifted node with a do-not-disrupt pod (and the
// NodeClaim changed by mutate) is not replaced, and says why.
func redDriftHeldByPod(t *testing.T, mutate func(*corev1.Node, *v1.NodeClaim)) {
	c := redDrift(t)
	mut := []func(*corev1.Node, *v1.NodeClaim){onDemand, redYoung, drifted}
	if mutate != nil {
		mut = append(mut, mutate)
	}
	c.node("n", redBig, mut...)
	c.pods("n", 1, "100m", "64Mi", redAnnotated(v1.AnnotationDoNotDisrupt, "true"))
	d := c.decide()
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), "is annotated karpenter.sh/do-not-disrupt=true") {
		t.Errorf("a drifted node with a do-not-disrupt pod: %q, blocked %q", commands(d), blocked(d, "n"))
	}
}

// redStatic is a static NodePool of the replicas, with a budget of 100%.
func redStatic(t *testing.T, replicas int64) *cluster {
	c := newCluster(t)
	c.pool.Spec.Replicas = ptr.To(replicas)
	c.pool.Spec.Disruption = v1.Disruption{Budgets: []v1.Budget{{Nodes: "100%"}}}
	return c
}

// redStaticBudget: five drifted nodes of a static NodePool of five,
// under a budget for drift: it allows allowed, and that many are
// replaced through the pool however many rounds pass.
func redStaticBudget(t *testing.T, nodes string, allowed int) {
	c := redStatic(t, 5)
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}, Nodes: nodes}}
	for i := range 5 {
		c.node(fmt.Sprintf("n%d", i), redBig, drifted)
	}
	if got, _ := redAllowed(c.decide(), "default", v1.DisruptionReasonDrifted); got != allowed {
		t.Errorf("the budget for drift allows %d, want %d", got, allowed)
	}
	cmds := redRounds(c, 5)
	if len(cmds) != allowed {
		t.Errorf("%d drift commands in 5 rounds, want %d", len(cmds), allowed)
	}
	for _, cmd := range cmds {
		if !cmd.Static || len(cmd.Replacements) != 0 {
			t.Errorf("command %v: want it replaced through the pool", cmd.NodeNames())
		}
	}
}
