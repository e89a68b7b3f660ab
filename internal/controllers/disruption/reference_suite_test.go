package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// The reference's suite_test.go: its shared cases (scheduling simulation
// around deleting nodes, disruption taints, the budget mapping, pod
// eviction costs, candidate filtering, metrics).

var _ = restate("suite_test.go",
	// Simulate Scheduling.
	refCase{ref: "Simulate Scheduling > should allow pods on deleting nodes to reschedule to uninitialized nodes", run: rsPodsOfDeletingNodes},
	refCase{ref: "Simulate Scheduling > should allow multiple replace operations to happen successively", run: rsSuccessiveReplacements},
	refCase{ref: "Simulate Scheduling > can replace node with a local PV (ignoring hostname affinity)", run: rsLocalPV},
	refCase{ref: "Simulate Scheduling > should ensure that we do not duplicate capacity for disrupted nodes with provisioning", run: rsNoDuplicateCapacity},

	// Disruption Taints.
	refCase{ref: "Disruption Taints > should remove taints from NodeClaims that were left tainted from a previous disruption action", run: rsLeftover},
	refCase{ref: "Disruption Taints > should add and remove taints from NodeClaims that fail to disrupt", run: rsFailToDisrupt},

	// BuildDisruptionBudgetMapping.
	refCase{ref: "BuildDisruptionBudgetMapping > should not consider nodes that are not managed as part of disruption count", run: rsBudgetUnmanaged},
	refCase{ref: "BuildDisruptionBudgetMapping > should not consider nodes that are not initialized as part of disruption count", run: rsBudgetUninitialized},
	refCase{ref: "BuildDisruptionBudgetMapping > should not consider nodes that have the terminating status condition as part of disruption count", run: rsBudgetTerminating},
	refCase{ref: "BuildDisruptionBudgetMapping > should not return a negative disruption value", run: rsBudgetNotNegative},
	refCase{ref: "BuildDisruptionBudgetMapping > should consider nodes with a deletion timestamp set and MarkedForDeletion to the disruption count", run: rsBudgetDeleting},
	refCase{ref: "BuildDisruptionBudgetMapping > should consider not ready nodes to the disruption count", run: rsBudgetNotReady},
	refCase{ref: "BuildDisruptionBudgetMapping > should not consider not ready nodes for the Unhealthy repair budget", run: rsBudgetNotReadyRepair},
	refCase{ref: "BuildDisruptionBudgetMapping > should still consider marked-for-deletion nodes for the Unhealthy repair budget", run: rsBudgetDeletingRepair},
	refCase{ref: "BuildDisruptionBudgetMapping > should consider rebooting nodes to the disruption count for all reasons, while draining and once issued", run: rsBudgetRebooting},

	// Pod Eviction Cost.
	refCase{ref: "Pod Eviction Cost > should have a standard disruptionCost for a pod with no priority or disruptionCost specified", run: func(t *testing.T) {
		if got := state.EvictionCost(&corev1.Pod{}, true); got != 1 {
			t.Errorf("a plain pod costs %v, want 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should have a higher disruptionCost for a pod with a positive deletion disruptionCost", run: func(t *testing.T) {
		if got := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "100"}, nil), true); got <= 1 {
			t.Errorf("pod deletion cost 100: %v, want more than 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should have a lower disruptionCost for a pod with a positive deletion disruptionCost", run: func(t *testing.T) {
		if got := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "-100"}, nil), true); got >= 1 {
			t.Errorf("pod deletion cost -100: %v, want less than 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should have higher costs for higher deletion costs", run: func(t *testing.T) {
		c101 := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "101"}, nil), true)
		c100 := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "100"}, nil), true)
		c99 := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "99"}, nil), true)
		if c101 <= c100 || c100 <= c99 {
			t.Errorf("deletion costs 101, 100, 99 cost %v, %v, %v; want decreasing", c101, c100, c99)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should have a higher disruptionCost for a pod with a higher priority", run: func(t *testing.T) {
		if got := state.EvictionCost(rsCostPod(nil, ptr.To[int32](1)), true); got <= 1 {
			t.Errorf("priority 1: %v, want more than 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should have a lower disruptionCost for a pod with a lower priority", run: func(t *testing.T) {
		if got := state.EvictionCost(rsCostPod(nil, ptr.To[int32](-1)), true); got >= 1 {
			t.Errorf("priority -1: %v, want less than 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should prefer disruption-cost over pod-deletion-cost", run: func(t *testing.T) {
		both := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "100", v1.AnnotationDisruptionCost: "2000000000"}, nil), true)
		deletion := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "100"}, nil), true)
		if both <= deletion {
			t.Errorf("with a disruption cost of 2e9: %v, with the pod deletion cost alone: %v; want the disruption cost to win", both, deletion)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should prefer disruption-cost over pod-deletion-cost when the gate is on", run: func(t *testing.T) {
		// The gate on: nodewright does not read the pod deletion cost back.
		if got := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "100", v1.AnnotationDisruptionCost: "2000000000"}, nil), false); got <= 1 {
			t.Errorf("disruption cost 2e9 with PodDeletionCostManagement: %v, want more than 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should ignore pod-deletion-cost for consolidation scoring when the gate is on", run: func(t *testing.T) {
		if got := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "2000000000"}, nil), false); got != 1 {
			t.Errorf("pod deletion cost 2e9 with PodDeletionCostManagement: %v, want 1", got)
		}
	}},
	refCase{ref: "Pod Eviction Cost > should fall back to pod-deletion-cost for consolidation scoring when the gate is off", run: func(t *testing.T) {
		if got := state.EvictionCost(rsCostPod(map[string]string{v1.AnnotationPodDeletionCost: "100"}, nil), true); got <= 1 {
			t.Errorf("pod deletion cost 100 without PodDeletionCostManagement: %v, want more than 1", got)
		}
	}},

	// Candidate Filtering: graceful disruption is consolidation, eventual
	// disruption drift (and expiration).
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt pods scheduled and no terminationGracePeriod", run: func(t *testing.T) {
		rsHeld(t, false, nil, rsDoNotDisrupt, "pod default/n-250m-0 is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt mirror pods scheduled", run: func(t *testing.T) {
		rsHeld(t, false, nil, func(p *corev1.Pod) { rsDoNotDisrupt(p); rsMirror(p) }, "pod default/n-250m-0 is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt daemonset pods scheduled", run: func(t *testing.T) {
		rsHeld(t, false, nil, func(p *corev1.Pod) { rsDoNotDisrupt(p); daemon(p) }, "pod default/n-250m-0 is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for eventual disruption", run: func(t *testing.T) {
		rsTaken(t, true, rsGrace, rsDoNotDisrupt, v1.DisruptionReasonDrifted)
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for eventual disruption", run: func(t *testing.T) {
		rsTaken(t, true, rsGrace, nil, v1.DisruptionReasonDrifted, rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for graceful disruption", run: func(t *testing.T) {
		rsHeld(t, false, rsGrace, rsDoNotDisrupt, "pod default/n-250m-0 is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have PDB-blocked pods scheduled with a terminationGracePeriod set for graceful disruption", run: func(t *testing.T) {
		rsHeld(t, false, rsGrace, nil, "PodDisruptionBudget default/pdb-n allows 0 disruptions now (pod default/n-250m-0)", rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt pods scheduled without a terminationGracePeriod set for eventual disruption", run: func(t *testing.T) {
		rsHeld(t, true, nil, rsDoNotDisrupt, "pod default/n-250m-0 is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have PDB-blocked pods scheduled without a terminationGracePeriod set for eventual disruption", run: func(t *testing.T) {
		rsHeld(t, true, nil, nil, "PodDisruptionBudget default/pdb-n allows 0 disruptions now (pod default/n-250m-0)", rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have do-not-disrupt terminating pods", run: func(t *testing.T) {
		rsTaken(t, false, nil, func(p *corev1.Pod) { rsDoNotDisrupt(p); rsTerminating(p) }, v1.DisruptionReasonEmpty)
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have do-not-disrupt terminal pods", run: func(t *testing.T) {
		c := rsOne(t, false, nil)
		c.pods("n", 1, "250m", "256Mi", rsDoNotDisrupt, func(p *corev1.Pod) { p.Name, p.Status.Phase = "succeeded", corev1.PodSucceeded })
		c.pods("n", 1, "250m", "256Mi", rsDoNotDisrupt, func(p *corev1.Pod) { p.Name, p.Status.Phase = "failed", corev1.PodFailed })
		rsExpectTaken(t, c, v1.DisruptionReasonEmpty)
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt on nodes", run: func(t *testing.T) {
		rsHeld(t, false, func(n *corev1.Node, nc *v1.NodeClaim) {
			nc.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
			n.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}, nil, "the node is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have multiple PDBs on the same pod", run: func(t *testing.T) {
		rsHeld(t, false, nil, nil, "pod default/n-250m-0 is covered by several PodDisruptionBudgets (default/pdb1, default/pdb2); the Eviction API refuses to evict it",
			rsPDB("pdb1"), rsPDB("pdb2"))
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have fully blocking PDBs", run: func(t *testing.T) {
		rsHeld(t, false, nil, nil, "PodDisruptionBudget default/pdb-n allows 0 disruptions now (pod default/n-250m-0)", rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have fully blocking PDBs on daemonset pods", run: func(t *testing.T) {
		rsHeld(t, false, nil, daemon, "PodDisruptionBudget default/pdb-n allows 0 disruptions now (pod default/n-250m-0)", rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have fully blocking PDBs on mirror pods", run: func(t *testing.T) {
		// A mirror pod is not evicted: the node goes empty of pods that move.
		rsTaken(t, false, nil, rsMirror, v1.DisruptionReasonEmpty, rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have do-not-disrupt pods without a terminationGracePeriod set for graceful disruption", run: func(t *testing.T) {
		rsHeld(t, false, nil, rsDoNotDisrupt, "pod default/n-250m-0 is annotated karpenter.sh/do-not-disrupt=true")
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that have fully blocking PDBs without a terminationGracePeriod set for graceful disruption", run: func(t *testing.T) {
		rsHeld(t, false, nil, nil, "PodDisruptionBudget default/pdb-n allows 0 disruptions now (pod default/n-250m-0)", rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have fully blocking PDBs on terminal pods", run: func(t *testing.T) {
		c := rsOne(t, false, nil)
		c.pods("n", 1, "250m", "256Mi", func(p *corev1.Pod) { p.Name, p.Status.Phase = "succeeded", corev1.PodSucceeded })
		c.pods("n", 1, "250m", "256Mi", func(p *corev1.Pod) { p.Name, p.Status.Phase = "failed", corev1.PodFailed })
		c.objs.PDBs = []*policyv1.PodDisruptionBudget{rsPDB("pdb-n")}
		rsExpectTaken(t, c, v1.DisruptionReasonEmpty)
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have fully blocking PDBs on terminating pods", run: func(t *testing.T) {
		rsTaken(t, false, nil, rsTerminating, v1.DisruptionReasonEmpty, rsPDB("pdb-n"))
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that has just a Node representation", run: rsNodeWithoutClaim},
	refCase{ref: "Candidate Filtering > should not consider candidate that has just a NodeClaim representation", run: rsClaimWithoutNode},
	refCase{ref: "Candidate Filtering > should not consider candidates that are nominated", run: rsNominated},
	refCase{ref: "Candidate Filtering > should not consider candidates that are deleting", run: func(t *testing.T) {
		rsInProgress(t, func(c *cluster) {
			c.objs.NodeClaims[0].DeletionTimestamp = ptr.To(metav1.NewTime(now))
			c.objs.NodeClaims[0].Finalizers = []string{v1.Group + "/termination"}
		}, nil)
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that are MarkedForDeletion", run: func(t *testing.T) {
		// Marked for deletion: a command being carried out holds the node.
		rsInProgress(t, nil, map[string]bool{"n": true})
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that aren't yet initialized", run: func(t *testing.T) {
		rsNotInitialized(t, false)
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that registered but aren't yet initialized", run: func(t *testing.T) {
		rsNotInitialized(t, true)
	}},
	refCase{ref: "Candidate Filtering > should not consider candidates that are not owned by a NodePool (no karpenter.sh/nodepool label)",
		run: func(t *testing.T) { rsNoNodePool(t, "", "has no karpenter.sh/nodepool label") }},
	refCase{ref: "Candidate Filtering > should not consider candidates that are have a non-existent NodePool",
		run: func(t *testing.T) { rsNoNodePool(t, "gone", "its NodePool gone does not exist") }},
	refCase{ref: "Candidate Filtering > should consider candidates that do not have the karpenter.sh/capacity-type label", run: func(t *testing.T) {
		rsUnlabelled(t, v1.LabelCapacityType)
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that do not have the topology.kubernetes.io/zone label", run: func(t *testing.T) {
		rsUnlabelled(t, corev1.LabelTopologyZone)
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that do not have the node.kubernetes.io/instance-type label", run: func(t *testing.T) {
		rsUnlabelled(t, corev1.LabelInstanceTypeStable)
	}},
	refCase{ref: "Candidate Filtering > should consider candidates that have an instance type that cannot be resolved", run: rsUnresolvedType},
	refCase{ref: "Candidate Filtering > should not consider candidates that are actively being processed in the queue", run: func(t *testing.T) {
		// The queue's command is a drift of the node: one in flight.
		rsInProgress(t, func(c *cluster) { drifted(nil, c.objs.NodeClaims[0]) }, map[string]bool{"n": true})
	}},

	// Metrics.
	refCase{ref: "Metrics > should fire metrics for single node empty disruption", run: func(t *testing.T) {
		rsDecisionMetric(t, []rsNode{{name: "a", itype: "t3a.medium"}}, nil, "delete", "empty", "empty")
	}},
	refCase{ref: "Metrics > should fire metrics for single node delete disruption", run: func(t *testing.T) {
		// Only the drifted node may be disrupted (the other is not
		// consolidatable in the reference): drift alone decides.
		rsDecisionMetric(t, []rsNode{{name: "a", itype: "m5.xlarge", pods: 2, drifted: true}, {name: "b", itype: "m5.xlarge", pods: 2}},
			[]v1.DisruptionReason{v1.DisruptionReasonDrifted}, "delete", "drifted", "")
	}},
	refCase{ref: "Metrics > should fire metrics for single node replace disruption", run: func(t *testing.T) {
		rsDecisionMetric(t, []rsNode{{name: "a", itype: "m5.xlarge", pods: 4, drifted: true}}, nil, "replace", "drifted", "")
	}},
	refCase{ref: "Metrics > should fire metrics for multi-node empty disruption", run: func(t *testing.T) {
		rsDecisionMetric(t, []rsNode{{name: "a", itype: "t3a.medium"}, {name: "b", itype: "t3a.medium"}, {name: "c", itype: "t3a.medium"}},
			nil, "delete", "empty", "empty")
	}},
	refCase{ref: "Metrics > should fire metrics for multi-node delete disruption", run: func(t *testing.T) {
		// Three nodes of the only type, a pod on each; two go, their pods
		// onto the third. (The third's pod is do-not-disrupt: left a
		// candidate, nodewright would replace all three with one node of
		// their own type, which saves as much; the reference never
		// replaces nodes with their own type in a multi-node command.)
		rsDecisionMetric(t, []rsNode{{name: "a", itype: "t3a.medium", pods: 1}, {name: "b", itype: "t3a.medium", pods: 1}, {name: "c", itype: "t3a.medium", pods: 1, held: true}},
			nil, "delete", "underutilized", "multi", rsOnly("t3a.medium"))
	}},
	refCase{ref: "Metrics > should fire metrics for multi-node replace disruption", run: func(t *testing.T) {
		rsDecisionMetric(t, []rsNode{{name: "a", itype: "m5.8xlarge", pods: 1}, {name: "b", itype: "m5.8xlarge", pods: 1}, {name: "c", itype: "m5.8xlarge", pods: 2}},
			nil, "replace", "underutilized", "multi")
	}},
	refCase{ref: "Metrics > should stop multi-node consolidation after context deadline is reached",
		better: "nodewright bounds multi-node consolidation by the number of candidates it weighs (MaxMultiNode, 100, the first in its " +
			"candidate order), not by a deadline: a decision depends on the cluster alone, never on how busy the machine is, so " +
			"nodewright plan and simulate say what the controller will do; the search always ends with the best command among those candidates",
		run: func(t *testing.T) {
			// Eight m5.xlarge with a small pod each, a bound of 5: the
			// command takes at most 5 of them, and the same command every time.
			c := newCluster(t)
			for i := range 8 {
				name := fmt.Sprintf("n%d", i)
				c.node(name, "m5.xlarge", onDemand)
				c.pods(name, 1, "100m", "128Mi")
			}
			bound := func(o *decide.Options) { o.MaxMultiNode = 5 }
			d := c.decide(bound)
			if len(d.Commands) != 1 || len(d.Commands[0].Nodes) < 2 || len(d.Commands[0].Nodes) > 5 {
				t.Fatalf("commands %q, want one multi-node command of 2 to 5 nodes", commands(d))
			}
			if again := c.decide(bound); commands(again) != commands(d) {
				t.Errorf("decided again: %q, first %q", commands(again), commands(d))
			}
		}},
)

// rsCostPod is a pod with annotations and a priority.
func rsCostPod(annotations map[string]string, priority *int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: corev1.PodSpec{Priority: priority}}
}

func rsDoNotDisrupt(p *corev1.Pod) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[v1.AnnotationDoNotDisrupt] = "true"
}

func rsTerminating(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
}

func rsMirror(p *corev1.Pod) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[corev1.MirrorPodAnnotationKey] = "mirror"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: p.Spec.NodeName, Controller: ptr.To(true)}}
}

// rsGrace gives the NodeClaim a terminationGracePeriod of five minutes.
func rsGrace(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 5 * time.Minute}
}

// rsPDB is a budget of maxUnavailable 0 over the pods of node n.
func rsPDB(name string) *policyv1.PodDisruptionBudget {
	p := pdb(0, "n")
	p.Name = name
	p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	return p
}

// rsOne is a cluster of one on-demand m5.4xlarge node "n" (drifted or
// not): with little on it, consolidation replaces it with a cheaper node.
func rsOne(t *testing.T, drift bool, mutate func(*corev1.Node, *v1.NodeClaim)) *cluster {
	c := newCluster(t)
	muts := []func(*corev1.Node, *v1.NodeClaim){onDemand}
	if drift {
		muts = append(muts, drifted)
	}
	if mutate != nil {
		muts = append(muts, mutate)
	}
	c.node("n", "m5.4xlarge", muts...)
	return c
}

// rsBuild builds rsOne with a pod of 250m on the node (shaped by pod) and
// the budgets.
func rsBuild(t *testing.T, drift bool, mutate func(*corev1.Node, *v1.NodeClaim), pod func(*corev1.Pod), pdbs ...*policyv1.PodDisruptionBudget) *cluster {
	c := rsOne(t, drift, mutate)
	var muts []func(*corev1.Pod)
	if pod != nil {
		muts = append(muts, pod)
	}
	c.pods("n", 1, "250m", "256Mi", muts...)
	c.objs.PDBs = pdbs
	return c
}

// rsHeld checks that node n stays, for the reason given, and that it
// would go without the pod's annotations, the budgets and the node's own
// annotations (the case can fail).
func rsHeld(t *testing.T, drift bool, mutate func(*corev1.Node, *v1.NodeClaim), pod func(*corev1.Pod), why string, pdbs ...*policyv1.PodDisruptionBudget) {
	t.Helper()
	c := rsBuild(t, drift, mutate, pod, pdbs...)
	d := c.decide()
	if len(d.Commands) != 0 || !strings.Contains(blocked(d, "n"), why) {
		t.Errorf("commands %q, blocked %q; want node n held: %s", commands(d), blocked(d, "n"), why)
	}
	c.objs.PDBs = nil
	for _, p := range c.objs.Pods {
		delete(p.Annotations, v1.AnnotationDoNotDisrupt)
	}
	delete(c.objs.NodeClaims[0].Annotations, v1.AnnotationDoNotDisrupt)
	delete(c.objs.Nodes[0].Annotations, v1.AnnotationDoNotDisrupt)
	if d := c.decide(); len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "n" {
		t.Errorf("without what holds it, node n is not disrupted either: %q, blocked %q", commands(d), blocked(d, "n"))
	}
}

// rsTaken checks that node n is disrupted for the reason.
func rsTaken(t *testing.T, drift bool, mutate func(*corev1.Node, *v1.NodeClaim), pod func(*corev1.Pod), reason v1.DisruptionReason, pdbs ...*policyv1.PodDisruptionBudget) {
	t.Helper()
	rsExpectTaken(t, rsBuild(t, drift, mutate, pod, pdbs...), reason)
}

func rsExpectTaken(t *testing.T, c *cluster, reason v1.DisruptionReason) {
	t.Helper()
	d := c.decide()
	if len(d.Commands) != 1 || d.Commands[0].Reason != reason || !slices.Equal(d.Commands[0].NodeNames(), []string{"n"}) {
		t.Errorf("commands %q, blocked %q; want node n disrupted (%s)", commands(d), blocked(d, "n"), reason)
	}
}

// rsInProgress checks that node n, being deleted or disrupted already, is
// not chosen again and says so; without that it would be.
func rsInProgress(t *testing.T, mutate func(*cluster), inFlight map[string]bool) {
	t.Helper()
	c := rsOne(t, false, nil)
	c.pods("n", 1, "250m", "256Mi")
	if d := c.decide(); len(d.Commands) != 1 {
		t.Fatalf("node n alone: %q, blocked %q; want it consolidated", commands(d), blocked(d, "n"))
	}
	if mutate != nil {
		mutate(c)
	}
	d := c.decide(func(o *decide.Options) { o.InFlight = inFlight })
	if len(d.Commands) != 0 || blocked(d, "n") != "the node is already being disrupted or deleted" {
		t.Errorf("commands %q, blocked %q; want node n left to what disrupts it already", commands(d), blocked(d, "n"))
	}
}

// rsNotInitialized: a node whose NodeClaim has not initialized (and has
// not registered unless registered) stays.
func rsNotInitialized(t *testing.T, registered bool) {
	t.Helper()
	c := rsOne(t, false, func(n *corev1.Node, nc *v1.NodeClaim) {
		nc.Status.Conditions = nil
		if registered {
			n.Labels[v1.LabelRegistered] = "true"
			nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		}
	})
	d := c.decide()
	if len(d.Commands) != 0 || blocked(d, "n") != "the node has not finished initialization" {
		t.Errorf("commands %q, blocked %q; want the empty node left until it initializes", commands(d), blocked(d, "n"))
	}
}

// rsNodeWithoutClaim: a node of a NodePool without a NodeClaim is not
// disrupted (a live cluster's node no NodeClaim made is not nodewright's).
func rsNodeWithoutClaim(t *testing.T) {
	c := rsOne(t, false, nil)
	c.objs.NodeClaims = nil
	d := c.decide()
	if len(d.Commands) != 0 {
		t.Errorf("an empty node of a NodePool without its NodeClaim: %q, blocked %q; want it left alone", commands(d), blocked(d, "n"))
	}
}

// rsClaimWithoutNode: a NodeClaim whose node has not registered is no
// candidate.
func rsClaimWithoutNode(t *testing.T) {
	c := rsOne(t, false, nil)
	c.objs.Nodes = nil
	d := c.decide()
	if len(d.Commands) != 0 || blocked(d, "nc-n") != "" || blocked(d, "n") != "" {
		t.Errorf("a NodeClaim without its node: %q, blocked %q; want it no candidate", commands(d), blocked(d, "nc-n"))
	}
}

// rsNominated: a pending pod nominated to the node holds it.
func rsNominated(t *testing.T) {
	c := rsOne(t, false, nil)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nominated", Namespace: "default"}}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	p.Status.Phase = corev1.PodPending
	p.Status.NominatedNodeName = "n"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	c.objs.Pods = append(c.objs.Pods, p)
	d := c.decide()
	if len(d.Commands) != 0 || blocked(d, "n") != "1 pending pod(s) are nominated to the node" {
		t.Errorf("commands %q, blocked %q; want the node held for the pod nominated to it", commands(d), blocked(d, "n"))
	}
}

// rsUnlabelled: a node (and NodeClaim) without a label is still a
// candidate: the empty one is deleted, the drifted one replaced.
func rsUnlabelled(t *testing.T, label string) {
	t.Helper()
	drop := func(n *corev1.Node, nc *v1.NodeClaim) {
		delete(n.Labels, label)
		delete(nc.Labels, label)
		madeRecently(n, nc)
	}
	rsExpectTaken(t, rsOne(t, false, drop), v1.DisruptionReasonEmpty)
	c := rsOne(t, true, drop)
	c.pods("n", 1, "250m", "256Mi")
	rsExpectTaken(t, c, v1.DisruptionReasonDrifted)
}

// madeRecently makes a NodeClaim within the hour, as the reference's
// cases make theirs: its instance type is not checked against its
// NodeClass's yet (after an hour, one it no longer offers drifts it).
func madeRecently(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.CreationTimestamp = metav1.NewTime(now.Add(-30 * time.Minute))
}

// rsUnresolvedType: a node whose instance type its NodeClass no longer
// offers is still a candidate.
func rsUnresolvedType(t *testing.T) {
	strip := func(c *cluster) {
		c.all = slices.DeleteFunc(slices.Clone(c.all), func(it *scheduling.InstanceType) bool { return it.Name == "m5.4xlarge" })
	}
	c := rsOne(t, false, madeRecently)
	strip(c)
	rsExpectTaken(t, c, v1.DisruptionReasonEmpty)
	c = rsOne(t, true, madeRecently)
	strip(c)
	c.pods("n", 1, "250m", "256Mi")
	rsExpectTaken(t, c, v1.DisruptionReasonDrifted)
}

// rsPodsOfDeletingNodes: nine of ten nodes are being deleted (or held by
// commands); the pod of the tenth, drifted, still has a place: a new node.
func rsPodsOfDeletingNodes(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	for i := range 10 {
		c.node(fmt.Sprintf("n%d", i), "m5.xlarge", onDemand)
	}
	drifted(nil, c.objs.NodeClaims[0])
	c.pods("n0", 1, "2", "100Mi")
	inFlight := map[string]bool{}
	for i, nc := range c.objs.NodeClaims[1:] {
		if i%2 == 0 {
			nc.DeletionTimestamp, nc.Finalizers = ptr.To(metav1.NewTime(now)), []string{v1.Group + "/termination"}
		} else {
			inFlight[nc.Status.NodeName] = true
		}
	}
	d := c.decide(func(o *decide.Options) { o.InFlight = inFlight })
	if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "n0" || len(d.Commands[0].Unplaced) != 0 ||
		len(d.Commands[0].Replacements) != 1 || len(d.Commands[0].Replacements[0].Pods) != 1 || len(d.Commands[0].Moves) != 0 {
		t.Errorf("commands %q; want n0's pod placed on a new node (the other nodes are going)", commands(d))
	}
}

// rsSuccessiveReplacements: ten drifted nodes, each pod pinned to its
// node's partition; a budget of three: three replacements one after the
// other, each decided while the earlier ones are in flight, then none.
func rsSuccessiveReplacements(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "3"}}
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: "test-partition", Operator: corev1.NodeSelectorOpExists})
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		c.node(name, "m5.xlarge", onDemand, drifted, func(n *corev1.Node, _ *v1.NodeClaim) { n.Labels["test-partition"] = fmt.Sprint(i) })
		c.pods(name, 1, "100m", "100Mi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"test-partition": fmt.Sprint(i)} })
	}
	inFlight, planned := map[string]bool{}, []decide.Room(nil)
	for round := range 4 {
		d := c.decide(func(o *decide.Options) { o.InFlight, o.Planned = inFlight, planned })
		if round == 3 {
			if len(d.Commands) != 0 {
				t.Errorf("round 4: %q; want no fourth replacement (the budget allows 3)", commands(d))
			}
			if b := blocked(d, "n3"); !strings.Contains(b, "allows 0 of 3") {
				t.Errorf("round 4: n3 blocked %q, want by the budget", b)
			}
			break
		}
		if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 || d.Commands[0].Reason != v1.DisruptionReasonDrifted {
			t.Fatalf("round %d: %q; want one drift replacement", round+1, commands(d))
		}
		cmd := d.Commands[0]
		node := cmd.NodeNames()[0]
		if r := cmd.Replacements[0]; r.Requirements["test-partition"] == nil {
			t.Errorf("round %d: the replacement of %s does not carry its pod's partition: %v", round+1, node, r.Requirements)
		}
		if inFlight[node] {
			t.Fatalf("round %d: %s chosen again", round+1, node)
		}
		inFlight[node] = true
		planned = append(planned, decide.RoomOf(cmd))
	}
}

// rsLocalPV: a StatefulSet pod whose volume is a local PV of the node
// (its affinity names the node's hostname) does not hold consolidation:
// the node is replaced with a cheaper one.
func rsLocalPV(t *testing.T) {
	c := newCluster(t)
	c.node("n", "m5.8xlarge", onDemand)
	c.pods("n", 1, "100m", "100Mi", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "ss", Controller: ptr.To(true)}}
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	class := "local-path"
	c.objs.StorageClasses = []*storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName:       class,
		PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/data"}},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}}}}},
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
	}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: &class, VolumeName: pv.Name}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	c.objs.PVs, c.objs.PVCs = []*corev1.PersistentVolume{pv}, []*corev1.PersistentVolumeClaim{pvc}
	d := c.decide()
	if len(d.Commands) != 1 || d.Commands[0].Reason != v1.DisruptionReasonUnderutilized || len(d.Commands[0].Replacements) != 1 ||
		d.Commands[0].ReplacementPrice >= d.Commands[0].PricePerHour {
		t.Errorf("commands %q, blocked %q; want the node replaced with a cheaper one despite the local PV's hostname", commands(d), blocked(d, "n"))
	}
}

// rsNoDuplicateCapacity: while a drift command launches its replacement,
// its node is tainted karpenter.sh/disrupted but not yet deleted: the
// provisioner finds no pod to place (the node's pod is neither pending
// nor leaving), so it launches nothing besides the replacement.
func rsNoDuplicateCapacity(t *testing.T) {
	c := newCluster(t)
	c.node("n", "m5.8xlarge", onDemand, drifted)
	c.pods("n", 1, "100m", "100Mi", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
	})
	if d := c.decide(); len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
		t.Fatalf("the drifted node: %q; want it replaced", commands(d))
	}
	c.objs.Nodes[0].Spec.Taints = append(c.objs.Nodes[0].Spec.Taints, corev1.Taint{Key: v1.TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule})
	s := state.Build(c.objs, state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: c.all,
		AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})}}}}})
	plan := scheduling.Solve(s.Input(nil))
	if len(s.Pending) != 0 || len(s.Leaving) != 0 || len(plan.NodeClaims) != 0 {
		t.Errorf("provisioning beside the command: %d pending, %d leaving, %d NodeClaims planned; want none", len(s.Pending), len(s.Leaving), len(plan.NodeClaims))
	}
}

// Budget mapping: ten initialized nodes of the NodePool (consolidation
// off, so no command uses the budget), then what the case adds.
func rsTen(t *testing.T, budget string) *cluster {
	c := newCluster(t)
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}}
	for i := range 10 {
		c.node(fmt.Sprintf("n%02d", i), "m5.4xlarge", onDemand)
	}
	return c
}

// rsAllowed is how many more nodes the NodePool's budget for the reason
// allows now.
func rsAllowed(t *testing.T, d *decide.Decision, reason v1.DisruptionReason) int {
	t.Helper()
	for _, a := range d.Allowances {
		if a.NodePool == "default" && a.Reason == reason {
			return a.Allowed
		}
	}
	t.Fatalf("no allowance for %s: %+v", reason, d.Allowances)
	return -1
}

var rsKnownReasons = []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized, v1.DisruptionReasonDrifted}

func rsExpectAllowed(t *testing.T, d *decide.Decision, want int, reasons ...v1.DisruptionReason) {
	t.Helper()
	for _, r := range reasons {
		if got := rsAllowed(t, d, r); got != want {
			t.Errorf("%s: the budget allows %d, want %d", r, got, want)
		}
	}
}

func rsBudgetUnmanaged(t *testing.T) {
	c := rsTen(t, "100%")
	it := c.types["m5.large"]
	labels := it.Requirements.Labels()
	labels[corev1.LabelHostname] = "unmanaged"
	c.objs.Nodes = append(c.objs.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged", Labels: labels},
		Status: corev1.NodeStatus{Allocatable: it.Allocatable.List(), Capacity: it.Capacity.List()}})
	rsExpectAllowed(t, c.decide(), 10, rsKnownReasons...)
}

func rsBudgetUninitialized(t *testing.T) {
	c := rsTen(t, "100%")
	c.node("launching", "m5.4xlarge", onDemand, func(_ *corev1.Node, nc *v1.NodeClaim) { nc.Status.Conditions = nil })
	rsExpectAllowed(t, c.decide(), 10, rsKnownReasons...)
}

func rsBudgetTerminating(t *testing.T) {
	c := rsTen(t, "100%")
	c.node("terminating", "m5.4xlarge", onDemand, func(_ *corev1.Node, nc *v1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionInstanceTerminating, Status: metav1.ConditionTrue, Reason: "InstanceTerminating"})
	})
	rsExpectAllowed(t, c.decide(), 10, rsKnownReasons...)
}

func rsDelete(c *cluster, i int) {
	nc := c.objs.NodeClaims[i]
	nc.DeletionTimestamp, nc.Finalizers = ptr.To(metav1.NewTime(now)), []string{v1.Group + "/termination"}
	n := c.objs.Nodes[i]
	n.DeletionTimestamp, n.Finalizers = ptr.To(metav1.NewTime(now)), []string{v1.Group + "/termination"}
}

func rsBudgetNotNegative(t *testing.T) {
	c := rsTen(t, "10%")
	for i := range 10 {
		rsDelete(c, i)
	}
	rsExpectAllowed(t, c.decide(), 0, rsKnownReasons...)
}

func rsBudgetDeleting(t *testing.T) {
	c := rsTen(t, "100%")
	rsDelete(c, 0)
	d := c.decide(func(o *decide.Options) { o.InFlight = map[string]bool{"n01": true} })
	rsExpectAllowed(t, d, 8, rsKnownReasons...)
}

func rsNotReady(c *cluster, names ...string) {
	for _, n := range c.objs.Nodes {
		if slices.Contains(names, n.Name) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "NotReady",
				LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}}
		}
	}
}

func rsBudgetNotReady(t *testing.T) {
	c := rsTen(t, "100%")
	rsNotReady(c, "n00", "n01")
	rsExpectAllowed(t, c.decide(), 8, rsKnownReasons...)
}

func rsBudgetNotReadyRepair(t *testing.T) {
	c := rsTen(t, "100%")
	rsNotReady(c, "n00", "n01")
	d := c.decide()
	rsExpectAllowed(t, d, 10, v1.DisruptionReasonUnhealthy)
	rsExpectAllowed(t, d, 8, v1.DisruptionReasonDrifted)
}

func rsBudgetDeletingRepair(t *testing.T) {
	c := rsTen(t, "100%")
	rsDelete(c, 0)
	rsDelete(c, 1)
	rsExpectAllowed(t, c.decide(), 8, v1.DisruptionReasonUnhealthy)
}

func rsBudgetRebooting(t *testing.T) {
	c := rsTen(t, "10")
	rebooting := func(nc *v1.NodeClaim, reason string) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionRebooting, Status: metav1.ConditionTrue, Reason: reason, Message: "rebooting"})
	}
	rebooting(c.objs.NodeClaims[0], "Requested")
	rebooting(c.objs.NodeClaims[1], "Issued")
	delete(c.objs.Nodes[1].Labels, v1.LabelInitialized)
	rsNotReady(c, "n01")
	rsExpectAllowed(t, c.decide(), 8, rsKnownReasons...)
}

// Metrics, with the controller: the decision counters once the command
// starts (after the validation delay).

type rsNode struct {
	name, itype string
	pods        int
	drifted     bool
	// held: its pods are annotated do-not-disrupt.
	held bool
}

func rsDecisionMetric(t *testing.T, nodes []rsNode, methods []v1.DisruptionReason, decision, reason, consolidation string, pool ...func(*v1.NodePool)) {
	t.Helper()
	e := startController(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e.ctrl.Metrics = m
	e.ctrl.Config.Methods = methods
	np := &v1.NodePool{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	for _, m := range pool {
		m(np)
	}
	if err := e.kube.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		rsCtrlNode(t, e, n)
	}
	e.reconcile(t) // decides
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates and starts
	labels := map[string]string{"decision": decision, "reason": reason, "consolidation_type": consolidation}
	if got := rsCounter(t, reg, "karpenter_voluntary_disruption_decisions_total", labels); got != 1 {
		t.Errorf("decisions %v: %v, want 1; events %v", labels, got, e.events())
	}
	labels["nodepool"] = "default"
	if got := rsCounter(t, reg, "karpenter_voluntary_disruption_decisions_by_nodepool_total", labels); got != 1 {
		t.Errorf("decisions by NodePool %v: %v, want 1", labels, got)
	}
}

// rsOnly keeps the NodePool to on-demand nodes of one instance type (the
// reference's least expensive: nothing cheaper replaces it).
func rsOnly(instanceType string) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
			v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	}
}

// rsCtrlNode creates an initialized on-demand node with its NodeClaim and
// pods of 250m.
func rsCtrlNode(t *testing.T, e *env, s rsNode) {
	t.Helper()
	ctx := context.Background()
	var spec *scheduling.InstanceType
	for _, x := range e.ctrl.NodeClasses.(classes).types {
		if x.Name == s.itype {
			spec = x
		}
	}
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = s.name, "us-east-1a", v1.CapacityTypeOnDemand, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + s.name}}
	e.create(t, n)
	// The API server taints a new node not-ready; the kubelet's Ready
	// status has the node lifecycle controller lift it.
	n.Spec.Taints = nil
	if err := e.kube.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity, n.Status.Allocatable = spec.Capacity.List(), spec.Allocatable.List()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(e.clock.Now()), LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + s.name, Labels: launchLabels(n)}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{s.itype}}}
	e.create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, s.name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}
	if s.drifted {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: v1.ReasonNodePoolDrifted,
			LastTransitionTime: metav1.NewTime(e.clock.Now())})
	}
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	for i := range s.pods {
		var annotations map[string]string
		if s.held {
			annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
		}
		e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", s.name, i), Namespace: "default", Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: s.name, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}})
	}
}

// rsCounter is the value of the series of name with the labels (among
// others); -1 when there is none.
func rsCounter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// An unready node already counts against the budget; drifting it takes
// no second place: with a budget of 4 and two of ten nodes unready (and
// drifted first), the round drifts one of them and the budget still
// allows two more (the reference counts that node twice within the
// round, and allows one).
func TestAnUnreadyNodeDisruptedCountsOnce(t *testing.T) {
	c := newCluster(t)
	c.pool.Spec.Disruption.ConsolidateAfter = v1.Never
	c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "4"}}
	for i := range 10 {
		since := now.Add(-time.Hour)
		if i < 2 {
			since = now.Add(-2 * time.Hour)
		}
		c.node(fmt.Sprintf("n%02d", i), "m5.4xlarge", onDemand, redDrifted(metav1.ConditionTrue, since))
	}
	rsNotReady(c, "n00", "n01")
	d := c.decide()
	if got := commands(d); got != "Drifted[n00]" && got != "Drifted[n01]" {
		t.Errorf("drifted %q, want an unready node first", got)
	}
	rsExpectAllowed(t, d, 2, v1.DisruptionReasonDrifted)
}

// rsDisruptionReason is the NodeClaim's DisruptionReason condition, nil
// when it has none.
func rsDisruptionReason(t *testing.T, e *env, name string) *metav1.Condition {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionDisruptionReason)
}

// rsLeftover: a node left tainted karpenter.sh/disrupted, its NodeClaim's
// DisruptionReason condition left True, by a command no one carries out
// any more (a restart): the next round removes both.
func rsLeftover(t *testing.T) {
	ctx := context.Background()
	e := startController(t)
	e.node(t, "left", "m5.large", map[string]string{v1.AnnotationDoNotDisrupt: "true"})
	n := &corev1.Node{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "left"}, n); err != nil {
		t.Fatal(err)
	}
	if err := intent.SetDisrupted(ctx, e.kube, n, true); err != nil {
		t.Fatal(err)
	}
	if err := intent.SetDisruptionReason(ctx, e.kube, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-left"}}, v1.DisruptionReasonDrifted, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if c := rsDisruptionReason(t, e, "nc-left"); c == nil || c.Reason != string(v1.DisruptionReasonDrifted) {
		t.Fatalf("DisruptionReason %+v, want it set before the round", c)
	}
	e.reconcile(t)
	if tainted(t, e.kube, "left") {
		t.Error("the leftover taint stayed")
	}
	if c := rsDisruptionReason(t, e, "nc-left"); c != nil {
		t.Errorf("the leftover DisruptionReason condition stayed: %+v", c)
	}
}

// rsFailToDisrupt: the command's start taints the node and marks its
// NodeClaim DisruptionReason=True (Underutilized); its replacement failing
// rolls both back.
func rsFailToDisrupt(t *testing.T) {
	ctx := context.Background()
	e := startController(t)
	e.node(t, "big", "m5.4xlarge", nil)
	e.node(t, "held", "m5.4xlarge", map[string]string{v1.AnnotationDoNotDisrupt: "true"})
	e.reconcile(t)
	if c := rsDisruptionReason(t, e, "nc-big"); c != nil {
		t.Fatalf("DisruptionReason %+v before the command started", c)
	}
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	if !tainted(t, e.kube, "big") {
		t.Fatal("the node was not tainted when the command started")
	}
	if c := rsDisruptionReason(t, e, "nc-big"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(v1.DisruptionReasonUnderutilized) {
		t.Fatalf("DisruptionReason %+v, want True Underutilized while the command runs", c)
	}
	claims := &v1.NodeClaimList{}
	if err := e.kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		if !strings.HasPrefix(claims.Items[i].Name, "nc-") {
			if err := e.kube.Delete(ctx, &claims.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.reconcile(t)
	if tainted(t, e.kube, "big") {
		t.Error("the taint stayed after the rollback")
	}
	if c := rsDisruptionReason(t, e, "nc-big"); c != nil {
		t.Errorf("DisruptionReason %+v stayed after the rollback", c)
	}
}

// rsNoNodePool: an m5.4xlarge with a small pod whose Node and NodeClaim
// name the NodePool (none when empty) is left alone, and the decision
// says why; through the controller, the NodeClaim is told once.
func rsNoNodePool(t *testing.T, pool, why string) {
	label := func(n *corev1.Node, nc *v1.NodeClaim) {
		for _, labels := range []map[string]string{n.Labels, nc.Labels} {
			delete(labels, v1.LabelNodePool)
			if pool != "" {
				labels[v1.LabelNodePool] = pool
			}
		}
	}
	c := newCluster(t)
	c.node("orphan", "m5.4xlarge", label)
	c.pods("orphan", 1, "100m", "128Mi")
	d := c.decide()
	if len(d.Commands) != 0 {
		t.Fatalf("commands %q, want none", commands(d))
	}
	if got := blocked(d, "orphan"); !strings.Contains(got, why) {
		t.Errorf("blocked %q, want it to say %q", got, why)
	}
	e := startController(t)
	e.node(t, "orphan", "m5.4xlarge", nil)
	ctx := context.Background()
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "nc-orphan"}, nc); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "orphan"}, n); err != nil {
		t.Fatal(err)
	}
	label(n, nc)
	if err := e.kube.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := e.kube.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if events := e.events(); !has(events, "DisruptionBlocked", why, "kind=NodeClaim") {
		t.Errorf("events %v, want DisruptionBlocked saying %q", events, why)
	}
	e.reconcile(t)
	if again := e.events(); has(again, "DisruptionBlocked", why) {
		t.Errorf("told again: %v", again)
	}
}
