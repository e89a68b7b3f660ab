package disruption_test

import (
	"fmt"
	"maps"
	"slices"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// The second part of the reference's consolidation_test.go (its Delete,
// TTL, Multi-NodeClaim, Node Lifetime, Topology, Parallelization,
// Reserved Capacity, Preferences, MinValuesPolicy, Buffer Pods and Static
// NodePool contexts). The reference's "least expensive instance type" is
// here the cheapest spot type of us-east-1a (the NodePool kept to that
// zone) that holds the case's small pods, so no node is cheaper for them;
// its "most expensive" is an m5.8xlarge (32 vCPUs) holding a small pod
// that far cheaper types hold.

const (
	rcbBig = "m5.8xlarge"
	rcbCtx = "Consolidation > "
	// rcbCPU and rcbMem are the requests of the reference's pods that
	// request nothing in particular.
	rcbCPU, rcbMem = "10m", "16Mi"
)

var _ = restate("consolidation_test.go",
	// Delete.
	refCase{ref: rcbCtx + "Delete > can delete nodes",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Delete > does not delete nodes with pod churn, deletes nodes without pod churn",
		run: func(t *testing.T) {
			c := rcbCheap(t)
			it := rcbCheapest(c)
			c.node("n0", it)
			c.node("n1", it)
			d := rcbDecide(c)
			rcbWant(t, d, "Empty[n0 n1]")
			c.pods("n0", 1, rcbCPU, rcbMem)
			fresh, why := decide.Revalidate(c.snapshot(), d.Commands[0], decide.DefaultOptions())
			if fresh == nil || fresh.NodeNames()[0] != "n1" || len(fresh.Nodes) != 1 {
				t.Errorf("n0 got a pod during the wait: revalidated %v (%s), want the command kept for n1 alone", fresh, why)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes if another nodePool has no node template",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			other := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "no-class"}}
			other.Spec.Disruption = c.pool.Spec.Disruption
			c.objs.NodePools = append(c.objs.NodePools, other)
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes, when non-Karpenter capacity can fit pods",
		run: func(t *testing.T) {
			c := rcbCheap(t)
			c.node("n0", rcbCheapest(c))
			c.pods("n0", 3, rcbCPU, rcbMem)
			own := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "theirs", CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)), Labels: map[string]string{
				corev1.LabelHostname: "theirs", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelTopologyZone: "us-east-1a"}}}
			own.Spec.ProviderID = "aws:///us-east-1a/i-theirs"
			own.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("100")}
			own.Status.Capacity = own.Status.Allocatable
			c.objs.Nodes = append(c.objs.Nodes, own)
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if len(d.Commands) == 1 && (len(d.Commands[0].Moves) != 1 || d.Commands[0].Moves[0].Node != "theirs") {
				t.Errorf("the pods should move onto the node nodewright does not manage: %+v", d.Commands[0].Moves)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes, considers PDB",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			for _, p := range c.objs.Pods {
				p.Labels = nil
				if p.Spec.NodeName == "n1" {
					p.Labels = map[string]string{"app": "test"}
				}
			}
			c.objs.PDBs = []*policyv1.PodDisruptionBudget{pdb(0, "test")}
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if b := blocked(d, "n1"); !strings.Contains(b, "PodDisruptionBudget default/pdb-test allows 0") {
				t.Errorf("n1 stays for its PDB: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes, considers karpenter.sh/do-not-disrupt set to true on nodes",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			for i, n := range c.objs.Nodes {
				if n.Name == "n1" {
					n.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
					c.objs.NodeClaims[i].Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
				}
			}
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if b := blocked(d, "n1"); !strings.Contains(b, "node is annotated karpenter.sh/do-not-disrupt=true") {
				t.Errorf("n1: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes, considers karpenter.sh/do-not-disrupt set to true on pods",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			rcbAnnotate(c, "n1", "true", nil)
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if b := blocked(d, "n1"); !strings.Contains(b, "is annotated karpenter.sh/do-not-disrupt=true") {
				t.Errorf("n1: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Delete > does not consolidate nodes with karpenter.sh/do-not-disrupt set to true on pods when the NodePool's TerminationGracePeriod is not nil",
		run: func(t *testing.T) {
			c := rcbTwo(t, rcbGrace)
			rcbAnnotate(c, "", "true", nil)
			d := rcbDecide(c)
			rcbWant(t, d, "")
			for _, n := range []string{"n0", "n1"} {
				if b := blocked(d, n); !strings.Contains(b, "do-not-disrupt=true") {
					t.Errorf("%s: %q", n, b)
				}
			}
		}},
	refCase{ref: rcbCtx + "Delete > does not consolidate nodes with pods with blocking PDBs when the NodePool's TerminationGracePeriod is not nil",
		run: func(t *testing.T) {
			c := rcbTwo(t, rcbGrace)
			for _, p := range c.objs.Pods {
				p.Labels = map[string]string{"app": "test"}
			}
			c.objs.PDBs = []*policyv1.PodDisruptionBudget{pdb(0, "test")}
			d := rcbDecide(c)
			rcbWant(t, d, "")
			for _, n := range []string{"n0", "n1"} {
				if b := blocked(d, n); !strings.Contains(b, "PodDisruptionBudget default/pdb-test allows 0") {
					t.Errorf("%s: %q", n, b)
				}
			}
		}},
	refCase{ref: rcbCtx + "Delete > does not consolidate nodes with pods that have a duration-based do-not-disrupt annotation that is still active",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			rcbAnnotate(c, "n1", "2m", ptr.To(now))
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if b := blocked(d, "n1"); !strings.Contains(b, "do-not-disrupt=2m, until 2026-11-23T12:02:00Z") {
				t.Errorf("n1: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can consolidate nodes after duration-based do-not-disrupt annotation expires",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			rcbAnnotate(c, "", "2m", ptr.To(now))
			rcbWant(t, rcbDecide(c), "")
			// Three minutes on: the pods started three minutes before now.
			rcbAnnotate(c, "", "2m", ptr.To(now.Add(-3*time.Minute)))
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes, considers invalid do-not-disrupt annotation format as not blocking",
		better: "a karpenter.sh/do-not-disrupt value that is neither \"true\" nor a duration blocks, and the node says what it read (\"pod default/… is annotated karpenter.sh/do-not-disrupt=invalid-format\"): a mistyped protection is kept and shown, not silently dropped; the other node (n0) is consolidated instead",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			rcbAnnotate(c, "n1", "invalid-format", nil)
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if b := blocked(d, "n1"); !strings.Contains(b, "do-not-disrupt=invalid-format") {
				t.Errorf("n1: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes, evicts pods without an ownerRef",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			for _, p := range c.objs.Pods {
				if p.Spec.NodeName == "n0" {
					p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
				}
			}
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Delete > won't delete node if it would require pods to schedule on an uninitialized node",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			c.objs.NodeClaims[0].Status.Conditions = nil // n0 is not initialized
			d := rcbDecide(c)
			rcbWant(t, d, "")
			if b := blocked(d, "n0"); !strings.Contains(b, "not finished initialization") {
				t.Errorf("n0: %q", b)
			}
			if b := blocked(d, "n1"); !strings.Contains(b, "no cheaper placement") && !strings.Contains(b, "would have no place") {
				t.Errorf("n1, whose pod fits only on the uninitialized n0: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Delete > should not consolidate pods onto a destination node that is under its consolidateAfter window",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			c.pool.Spec.Disruption.ConsolidateAfter = "1m"
			for _, nc := range c.objs.NodeClaims {
				nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now)
			}
			d := rcbDecide(c)
			rcbWant(t, d, "")
			if b := blocked(d, "n1"); !strings.Contains(b, "consolidateAfter has not passed") {
				t.Errorf("n1: %q", b)
			}
			// Two minutes on.
			for _, nc := range c.objs.NodeClaims {
				nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-2 * time.Minute))
			}
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Delete > should consolidate pods onto a destination node with consolidateAfter set to Never",
		run: func(t *testing.T) {
			c := rcbCheap(t)
			it := rcbCheapest(c)
			never := c.pool.DeepCopy()
			never.Name, never.Spec.Disruption.ConsolidateAfter = "never", v1.Never
			c.objs.NodePools = append(c.objs.NodePools, never)
			c.node("n0", it)
			c.pods("n0", 1, rcbCPU, rcbMem)
			c.node("dest", it, rcbInPool("never"))
			for _, nc := range c.objs.NodeClaims {
				nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now)
			}
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[n0]")
			if len(d.Commands) == 1 && (len(d.Commands[0].Moves) != 1 || d.Commands[0].Moves[0].Node != "dest") {
				t.Errorf("moves %+v, want the pod onto dest", d.Commands[0].Moves)
			}
		}},
	refCase{ref: rcbCtx + "Delete > should replace a node with a cheaper one even when consolidateAfter has not expired",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.pool.Spec.Disruption.ConsolidateAfter = "1m"
			c.node("big", rcbBig, onDemand, func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-2 * time.Minute))
			})
			c.pods("big", 1, rcbCPU, rcbMem)
			d := rcbDecide(c)
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 || d.Commands[0].ReplacementPrice >= d.Commands[0].PricePerHour {
				t.Errorf("%q, want big replaced by a cheaper node", commands(d))
			}
		}},
	refCase{ref: rcbCtx + "Delete > should consider initialized nodes before uninitialized nodes",
		run: func(t *testing.T) {
			c := rcbCheap(t)
			def := c.cheapestSpot(scheduling.MustParseResources("cpu=3,memory=3Gi,pods=2"))
			// 100 nodes each with a 2-CPU pod and room for one more CPU;
			// one of them is initialized.
			for i := range 100 {
				name := fmt.Sprintf("d%03d", i)
				c.node(name, def, func(_ *corev1.Node, nc *v1.NodeClaim) {
					if i != 42 {
						nc.Status.Conditions = nil
					}
				})
				c.pods(name, 1, "2", "2Gi")
			}
			small := c.cheapestSpot(scheduling.MustParseResources("cpu=1,memory=1Gi,pods=1"))
			c.node("small", small)
			c.pods("small", 1, "1", "1Gi")
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[small]")
			if len(d.Commands) == 1 && (len(d.Commands[0].Moves) != 1 || d.Commands[0].Moves[0].Node != "d042") {
				t.Errorf("moves %+v, want the pod onto the initialized node d042", d.Commands[0].Moves)
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes with a permanently pending pod",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"}}
			p.Spec.NodeSelector = map[string]string{"non-existent": "node-label"}
			p.Spec.Containers = []corev1.Container{{Name: "c"}}
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
			c.objs.Pods = append(c.objs.Pods, p)
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Delete > won't delete nodes if it would make a non-pending pod go pending",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			for _, n := range c.objs.Nodes {
				n.Labels["foo"] = strings.TrimPrefix(n.Name, "n")
			}
			for _, p := range c.objs.Pods {
				p.Spec.NodeSelector = map[string]string{"foo": strings.TrimPrefix(p.Spec.NodeName, "n")}
			}
			d := rcbDecide(c)
			rcbWant(t, d, "")
			for _, n := range []string{"n0", "n1"} {
				if b := blocked(d, n); !strings.Contains(b, "would have no place") {
					t.Errorf("%s: %q", n, b)
				}
			}
		}},
	refCase{ref: rcbCtx + "Delete > can delete nodes while an invalid node pool exists",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			bad := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "bad-nodepool"}}
			bad.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.test.sh", Kind: "TestNodeClass", Name: "non-existent"}
			c.objs.NodePools = append(c.objs.NodePools, bad)
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},

	// Multi-NodeClaim (decided).
	refCase{ref: rcbCtx + "Multi-NodeClaim > can merge 3 nodes into 1 > if the candidate is on-demand node",
		run: func(t *testing.T) {
			rcbMerge3(t, v1.CapacityTypeOnDemand, v1.CapacityTypeOnDemand, v1.CapacityTypeOnDemand)
		}},
	refCase{ref: rcbCtx + "Multi-NodeClaim > can merge 3 nodes into 1 > if the candidate is spot node",
		run: func(t *testing.T) { rcbMerge3(t, v1.CapacityTypeSpot, v1.CapacityTypeSpot, v1.CapacityTypeSpot) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > can merge 3 nodes into 1 if the candidates have both spot and on-demand",
		run: func(t *testing.T) {
			rcbMerge3(t, v1.CapacityTypeOnDemand, v1.CapacityTypeOnDemand, v1.CapacityTypeSpot)
		}},
	refCase{ref: rcbCtx + "Multi-NodeClaim > won't merge 2 nodes into 1 of the same type > if the candidate is on-demand node",
		run: func(t *testing.T) { rcbSameType(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > won't merge 2 nodes into 1 of the same type > if the candidate is spot node",
		run: func(t *testing.T) { rcbSameType(t, v1.CapacityTypeSpot) }},

	// Node Lifetime Consideration.
	refCase{ref: rcbCtx + "Node Lifetime Consideration > should consolidate the node with best savings ratio first",
		run: func(t *testing.T) {
			c := rcbCheap(t)
			c.pool.Spec.Template.Spec.ExpireAfter = "3s"
			it := rcbCheapest(c)
			for i, age := range []time.Duration{2 * time.Second, 0} {
				c.node(fmt.Sprintf("n%d", i), it, func(n *corev1.Node, nc *v1.NodeClaim) {
					nc.Spec.ExpireAfter = "3s"
					n.CreationTimestamp, nc.CreationTimestamp = metav1.NewTime(now.Add(-age)), metav1.NewTime(now.Add(-age))
					nc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-age))
				})
			}
			c.pods("n0", 2, rcbCPU, rcbMem)
			c.pods("n1", 1, rcbCPU, rcbMem)
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},

	// Topology Consideration.
	refCase{ref: rcbCtx + "Topology Consideration > can replace node maintaining zonal topology spread",
		run: func(t *testing.T) {
			c, zones := rcbZoned(t)
			spread := func(p *corev1.Pod) {
				p.Labels = map[string]string{"app": "test-zonal-spread"}
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}
			}
			c.pods("z2", 1, "1", "128Mi", spread)
			c.pods("z1", 1, "1", "128Mi", spread)
			c.pods("z3", 1, "1", "128Mi", spread)
			d := rcbDecide(c)
			rcbWant(t, d, "Underutilized[z2] +"+rcbOnlyType(d))
			if len(d.Commands) == 1 && len(d.Commands[0].Replacements) == 1 {
				r := d.Commands[0].Replacements[0]
				if z, ok := r.Requirements[corev1.LabelTopologyZone].Single(); !ok || z != zones[1] {
					t.Errorf("the replacement's zone %v, want %s (the spread keeps one pod a zone)", r.Requirements[corev1.LabelTopologyZone], zones[1])
				}
				if d.Commands[0].ReplacementPrice >= d.Commands[0].PricePerHour {
					t.Errorf("replacement $%.4f/h not cheaper than $%.4f/h", d.Commands[0].ReplacementPrice, d.Commands[0].PricePerHour)
				}
			}
		}},
	refCase{ref: rcbCtx + "Topology Consideration > won't delete node if it would violate pod anti-affinity",
		run: func(t *testing.T) {
			c, _ := rcbZoned(t)
			// The zone-2 node is of the cheapest type too.
			for _, n := range c.objs.Nodes {
				if n.Name == "z2" {
					rcbRetype(c, n, rcbCheapestOD(c, "us-east-1b"))
				}
			}
			apart := func(p *corev1.Pod) {
				p.Labels = map[string]string{"app": "test"}
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelHostname}}}}
			}
			for _, n := range []string{"z1", "z2", "z3"} {
				c.pods(n, 1, "1", "128Mi", apart)
			}
			d := rcbDecide(c)
			rcbWant(t, d, "")
			for _, n := range []string{"z1", "z2", "z3"} {
				if b := blocked(d, n); b == "" {
					t.Errorf("%s stays without a reason", n)
				}
			}
		}},

	// Parallelization.
	refCase{ref: rcbCtx + "Parallelization > should not schedule an additional node when receiving pending pods while consolidating",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("big", rcbBig, onDemand, func(n *corev1.Node, _ *v1.NodeClaim) {
				n.Spec.Taints = []corev1.Taint{{Key: v1.TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}}
			})
			c.pods("big", 1, rcbCPU, rcbMem)
			d := rcbDecide(c)
			c.node("repl", "m5.large", onDemand) // the consolidation's replacement, ready
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "default"}}
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(rcbCPU), corev1.ResourceMemory: resource.MustParse(rcbMem)}}}}
			c.objs.Pods = append(c.objs.Pods, p)
			plan := scheduling.Solve(c.snapshot().Input(nil))
			on := ""
			for _, e := range plan.Existing {
				for _, q := range e.Pods {
					if q.Name == "new" {
						on = e.Node
					}
				}
			}
			if len(plan.NodeClaims) != 0 || on != "repl" {
				t.Errorf("a pending pod while big is being consolidated (%q): %d new NodeClaims, placed on %q; want it on the replacement", commands(d), len(plan.NodeClaims), on)
			}
		}},
	refCase{ref: rcbCtx + "Parallelization > should not consolidate a node that is launched for pods on a deleting node",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("old", "m5.2xlarge", onDemand, func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
				nc.Finalizers = []string{v1.TerminationFinalizer}
			})
			c.node("new", "m5.2xlarge", onDemand)
			c.pods("new", 2, "1", "128Mi")
			for i := range 3 {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("waiting-%d", i), Namespace: "default"}}
				p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
				p.Status.Phase = corev1.PodPending
				p.Status.NominatedNodeName = "new"
				c.objs.Pods = append(c.objs.Pods, p)
			}
			d := rcbDecide(c)
			for _, cmd := range d.Commands {
				if slices.Contains(cmd.NodeNames(), "new") {
					t.Errorf("the node launched for the deleting node's pods is disrupted: %q", commands(d))
				}
			}
			if b := blocked(d, "new"); b == "" {
				t.Errorf("new stays without a reason")
			}
		}},

	// Reserved Capacity.
	refCase{ref: rcbCtx + "Reserved Capacity > can consolidate from one reserved offering to another",
		better: "moving pods from one reservation to another saves about a millionth of a dollar an hour (reserved offerings are priced at 1e-6 of on-demand), below nodewright's least saving worth a disruption (decide.MinSavings, $0.001/h): the reserved m5.8xlarge stays, saying no cheaper placement",
		run: func(t *testing.T) {
			c := rcbReserved(t, rcbBig, "m5.large")
			c.node("res", rcbBig, rcbReservedNode("r-"+rcbBig))
			c.pods("res", 1, rcbCPU, rcbMem)
			d := rcbDecide(c)
			rcbWant(t, d, "")
			if b := blocked(d, "res"); !strings.Contains(b, "no cheaper placement") {
				t.Errorf("res: %q", b)
			}
		}},
	refCase{ref: rcbCtx + "Reserved Capacity > can consolidate into reserved capacity for the same instance pool > from on-demand",
		run: func(t *testing.T) { rcbIntoReserved(t, onDemand) }},
	refCase{ref: rcbCtx + "Reserved Capacity > can consolidate into reserved capacity for the same instance pool > from spot",
		run: func(t *testing.T) { rcbIntoReserved(t, func(*corev1.Node, *v1.NodeClaim) {}) }},

	// Preferences.
	refCase{ref: rcbCtx + "Preferences > should consolidate a node through deletion when ignoring preferences",
		run: func(t *testing.T) {
			c := rcbTwo(t)
			c.policy.IgnorePreferences = true
			for _, p := range c.objs.Pods {
				p.Labels = map[string]string{"app": "foo"}
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}}}}
			}
			rcbWant(t, rcbDecide(c), "Underutilized[n1]")
		}},
	refCase{ref: rcbCtx + "Preferences > should consolidate a node through replacement when ignoring preferences",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.policy.IgnorePreferences = true
			c.node("big", rcbBig, onDemand)
			c.pods("big", 1, rcbCPU, rcbMem, func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{rcbBig}}}}}}}}
			})
			d := rcbDecide(c)
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
				t.Fatalf("%q (blocked %q), want big replaced", commands(d), blocked(d, "big"))
			}
			if r := d.Commands[0].Replacements[0]; r.Requirements[corev1.LabelInstanceTypeStable].Has(rcbBig) {
				t.Errorf("the replacement may be an %s again: %v", rcbBig, r.Requirements[corev1.LabelInstanceTypeStable])
			}
		}},

	// MinValuesPolicy.
	refCase{ref: rcbCtx + "MinValuesPolicy > should not consolidate a node by relaxing min values when policy is set to BestEffort",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.policy.RelaxMinValues = true
			// On-demand only, as the reference's two types have one
			// offering each: a spot m5.8xlarge is no cheaper replacement.
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
				Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", rcbBig}, MinValues: ptr.To(3)},
				v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
			c.node("big", rcbBig, onDemand)
			c.pods("big", 1, rcbCPU, rcbMem)
			d := rcbDecide(c)
			rcbWant(t, d, "")
			// The replacement opens on both types, its minValues relaxed to
			// 2; only m5.large is cheaper, one type fewer than that.
			if b := blocked(d, "big"); !strings.Contains(b, "are fewer than minValues requires: node.kubernetes.io/instance-type needs 2 values, 1 remain") {
				t.Errorf("big: %q", b)
			}
			c.policy.RelaxMinValues = false
			if b := blocked(rcbDecide(c), "big"); !strings.Contains(b, "fewer instance types than minValues requires: node.kubernetes.io/instance-type needs 3 values, 2 remain") {
				t.Errorf("big, Strict: %q", b)
			}
		}},

	// Buffer Pods.
	refCase{ref: rcbCtx + "Buffer Pods > should not empty-consolidate a node with only buffer pods",
		better: "a node holding only a CapacityBuffer's pods is not emptied (as the reference), and consolidation may replace it by a cheaper node that holds the buffer's pods (the reference never consolidates it): the room the buffer keeps costs less",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("buf", rcbBig, onDemand)
			c.buffer("web", 5, "500m")
			d := rcbDecide(c)
			rcbBufferKept(t, d, "buf", 5)
		}},
	refCase{ref: rcbCtx + "Buffer Pods > should allow consolidation of a node with real pods and buffer pods to a cheaper instance",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("big", rcbBig, onDemand)
			c.pods("big", 1, "1", "128Mi")
			c.buffer("web", 2, "100m")
			d := rcbDecide(c)
			if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 || d.Commands[0].Pods != 3 || d.Commands[0].ReplacementPrice >= d.Commands[0].PricePerHour {
				t.Errorf("%q (blocked %q), want big replaced by a cheaper node for its pod and the 2 buffer pods", commands(d), blocked(d, "big"))
			}
		}},
	refCase{ref: rcbCtx + "Buffer Pods > should skip buffer-only nodes in single-node consolidation but protect via emptiness",
		better: "the node holding only buffer pods is never emptied and never removed without room for its buffer pods; nodewright may consolidate it like any node (moving the buffer's room to a cheaper node), where the reference leaves it out of consolidation",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("buf", rcbBig, onDemand)
			c.node("real", rcbBig, onDemand)
			c.pods("real", 1, "1", "128Mi")
			c.buffer("web", 4, "500m")
			d := rcbDecide(c)
			rcbBufferKept(t, d, "buf", 0)
			found := false
			for _, cmd := range d.Commands {
				found = found || slices.Contains(cmd.NodeNames(), "real")
			}
			if !found {
				t.Errorf("the node with the real pod is not consolidated: %q, blocked %q", commands(d), blocked(d, "real"))
			}
		}},
	refCase{ref: rcbCtx + "Buffer Pods > should consolidate a buffer node once buffer pods are cleared",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.node("buf", rcbBig, onDemand)
			c.buffer("web", 3, "500m")
			if d := rcbDecide(c); strings.Contains(commands(d), "Empty") {
				t.Errorf("a node with buffer pods emptied: %q", commands(d))
			}
			c.objs.CapacityBuffers, c.objs.PodTemplates = nil, nil
			rcbWant(t, rcbDecide(c), "Empty[buf]")
		}},

	// Static NodePool.
	refCase{ref: rcbCtx + "Static NodePool > should not consolidate static NodePool nodes",
		run: func(t *testing.T) {
			c := newCluster(t)
			c.pool.Spec.Replicas = ptr.To(int64(2))
			c.node("s0", "m5.2xlarge")
			c.node("s1", "m5.2xlarge")
			d := rcbDecide(c)
			rcbWant(t, d, "")
			for _, n := range []string{"s0", "s1"} {
				if b := blocked(d, n); !strings.Contains(b, "NodePool is static") {
					t.Errorf("%s: %q", n, b)
				}
			}
		}},
)

// rcbDecide decides with the SpotToSpotConsolidation feature gate on,
// as the reference's suite runs.
func rcbDecide(c *cluster) *decide.Decision {
	return c.decide(func(o *decide.Options) { o.SpotToSpot = true })
}

// rcbWant checks the decision's commands, as commands() says them.
func rcbWant(t *testing.T, d *decide.Decision, want string) {
	t.Helper()
	if got := commands(d); got != want {
		var why []string
		for _, b := range d.Blocked {
			why = append(why, b.Node+": "+b.String())
		}
		t.Errorf("commands %q, want %q; blocked: %s", got, want, strings.Join(why, "; "))
	}
}

// rcbCheap is a cluster whose NodePool launches in us-east-1a only.
func rcbCheap(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}})
	return c
}

// rcbCheapest is the cheapest spot type of us-east-1a that holds three
// of the small pods: nothing is cheaper for any of them.
func rcbCheapest(c *cluster) string {
	return c.cheapestSpot(scheduling.MustParseResources("cpu=30m,memory=48Mi,pods=3"))
}

// rcbTwo is the Delete context's cluster: two nodes of the cheapest
// type, two small pods on n0 and one on n1.
func rcbTwo(t *testing.T, mutate ...func(*corev1.Node, *v1.NodeClaim)) *cluster {
	c := rcbCheap(t)
	it := rcbCheapest(c)
	c.node("n0", it, mutate...)
	c.node("n1", it, mutate...)
	c.pods("n0", 2, rcbCPU, rcbMem)
	c.pods("n1", 1, rcbCPU, rcbMem)
	return c
}

func rcbGrace(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 300 * time.Second}
}

func rcbInPool(pool string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, nc *v1.NodeClaim) {
		n.Labels[v1.LabelNodePool], nc.Labels[v1.LabelNodePool] = pool, pool
	}
}

// rcbAnnotate sets karpenter.sh/do-not-disrupt on the pods of a node
// (all nodes: ""), and their start time when given.
func rcbAnnotate(c *cluster, node, value string, started *time.Time) {
	for _, p := range c.objs.Pods {
		if node != "" && p.Spec.NodeName != node {
			continue
		}
		p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: value}
		if started != nil {
			p.Status.StartTime = ptr.To(metav1.NewTime(*started))
		}
	}
}

// rcbMerge3: three m5.8xlarge nodes of the capacity types, a small pod
// each: one command takes all three with one cheaper replacement.
func rcbMerge3(t *testing.T, capacityTypes ...string) {
	c := newCluster(t)
	for i, ct := range capacityTypes {
		name := fmt.Sprintf("n%d", i)
		c.node(name, rcbBig, func(n *corev1.Node, _ *v1.NodeClaim) { n.Labels[v1.LabelCapacityType] = ct })
		c.pods(name, 1, rcbCPU, rcbMem)
	}
	d := rcbDecide(c)
	if len(d.Commands) != 1 || len(d.Commands[0].Nodes) != 3 || len(d.Commands[0].Replacements) != 1 || d.Commands[0].ReplacementPrice >= d.Commands[0].PricePerHour/3 {
		t.Errorf("%q, want the 3 nodes merged into one cheaper node", commands(d))
	}
}

// rcbSameType: two nodes of the cheapest type of the capacity type, one
// pod on n0 and two on n1: n0 is deleted, not both replaced by one node
// of the same type.
func rcbSameType(t *testing.T, capacityType string) {
	c := rcbCheap(t)
	it := rcbCheapest(c)
	if capacityType == v1.CapacityTypeOnDemand {
		c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
		it = rcbCheapestOD(c, "us-east-1a")
	}
	for _, n := range []string{"n0", "n1"} {
		c.node(n, it, func(n *corev1.Node, _ *v1.NodeClaim) { n.Labels[v1.LabelCapacityType] = capacityType })
	}
	c.pods("n0", 1, rcbCPU, rcbMem)
	c.pods("n1", 2, rcbCPU, rcbMem)
	rcbWant(t, rcbDecide(c), "Underutilized[n0]")
}

// rcbCheapestOD is the cheapest amd64 on-demand type of the zone that
// holds three small pods (or, with the larger pods of rcbZoned, one of
// 1 CPU).
func rcbCheapestOD(c *cluster, zone string) string {
	return rcbCheapestODIn(c.all, zone, scheduling.MustParseResources("cpu=1,memory=128Mi,pods=1"))
}

func rcbCheapestODIn(types []*scheduling.InstanceType, zone string, need scheduling.Resources) string {
	best, price := "", 0.0
	for _, it := range types {
		if arch, _ := it.Requirements[corev1.LabelArchStable].Single(); arch != "amd64" || !need.Fits(it.Allocatable) {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == v1.CapacityTypeOnDemand && o.Available && (best == "" || o.Price < price || o.Price == price && it.Name < best) {
				best, price = it.Name, o.Price
			}
		}
	}
	return best
}

// rcbZoned is the Topology context's cluster: three zones, on-demand
// nodes z1 and z3 of the cheapest type holding a 1-CPU pod, and z2 in the
// second zone an m5.8xlarge.
func rcbZoned(t *testing.T) (*cluster, []string) {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	c := rcbLoad(t, instancetypes.Options{Zones: zones})
	c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	for i, z := range zones {
		it := rcbCheapestOD(c, z)
		if i == 1 {
			it = rcbBig
		}
		c.node(fmt.Sprintf("z%d", i+1), it, onDemand, rcbZone(z))
	}
	return c, zones
}

func rcbZone(zone string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, nc *v1.NodeClaim) {
		n.Labels[corev1.LabelTopologyZone] = zone
		n.Spec.ProviderID = "aws:///" + zone + "/i-" + n.Name
		nc.Status.ProviderID = n.Spec.ProviderID
	}
}

// rcbRetype makes a node of another instance type.
func rcbRetype(c *cluster, n *corev1.Node, instanceType string) {
	it := c.types[instanceType]
	for k, v := range it.Requirements.Labels() {
		if k != corev1.LabelTopologyZone && k != v1.LabelCapacityType {
			n.Labels[k] = v
		}
	}
	n.Status.Allocatable, n.Status.Capacity = it.Allocatable.List(), it.Capacity.List()
	for _, nc := range c.objs.NodeClaims {
		if nc.Status.NodeName == n.Name {
			nc.Status.Allocatable, nc.Status.Capacity = n.Status.Allocatable, n.Status.Capacity
		}
	}
}

// rcbOnlyType is the instance type of the decision's one replacement.
func rcbOnlyType(d *decide.Decision) string {
	if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
		return "?"
	}
	return d.Commands[0].Replacements[0].InstanceType.Name
}

// rcbLoad is a cluster of the catalog loaded with the options.
func rcbLoad(t *testing.T, opts instancetypes.Options) *cluster {
	c := newCluster(t)
	types, err := instancetypes.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.all, c.types = types, map[string]*scheduling.InstanceType{}
	for _, it := range types {
		c.types[it.Name] = it
	}
	return c
}

// rcbReserved is a cluster with a capacity reservation of ten instances
// in us-east-1a for each of the types.
func rcbReserved(t *testing.T, types ...string) *cluster {
	opts := instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"}}
	for _, it := range types {
		opts.Reservations = append(opts.Reservations, instancetypes.Reservation{ID: "r-" + it, InstanceType: it, Zone: "us-east-1a", Available: 10})
	}
	return rcbLoad(t, opts)
}

func rcbReservedNode(id string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, nc *v1.NodeClaim) {
		n.Labels[v1.LabelCapacityType] = v1.CapacityTypeReserved
		n.Labels[awsv1.LabelCapacityReservationID] = id
		nc.Labels[awsv1.LabelCapacityReservationID] = id
	}
}

// rcbIntoReserved: an m5.8xlarge of the capacity type with a small pod,
// and a reservation of m5.8xlarge: the node is replaced by an instance of
// the reservation.
func rcbIntoReserved(t *testing.T, capacityType func(*corev1.Node, *v1.NodeClaim)) {
	c := rcbReserved(t, rcbBig)
	c.node("big", rcbBig, capacityType)
	c.pods("big", 1, rcbCPU, rcbMem)
	d := rcbDecide(c)
	if len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
		t.Fatalf("%q (blocked %q), want big replaced", commands(d), blocked(d, "big"))
	}
	r := d.Commands[0].Replacements[0]
	if ct, _ := r.Requirements[v1.LabelCapacityType].Single(); ct != v1.CapacityTypeReserved || r.InstanceType.Name != rcbBig || r.Offering.ReservationID != "r-"+rcbBig {
		t.Errorf("replacement %s %v %+v, want the reserved %s of r-%s", r.InstanceType.Name, r.Requirements[v1.LabelCapacityType], r.Offering, rcbBig, rcbBig)
	}
}

// rcbBufferKept checks that no command removes the node without room
// for the buffer pods it holds (want of them when want > 0), and that it
// is not emptied.
func rcbBufferKept(t *testing.T, d *decide.Decision, node string, want int) {
	t.Helper()
	for _, cmd := range d.Commands {
		if !slices.Contains(cmd.NodeNames(), node) {
			continue
		}
		if cmd.Reason == v1.DisruptionReasonEmpty {
			t.Errorf("the node holding buffer pods is emptied: %q", commands(d))
		}
		placed := 0
		for _, r := range cmd.Replacements {
			for _, p := range r.Pods {
				if state.Virtual(p) {
					placed++
				}
			}
		}
		for _, m := range cmd.Moves {
			for _, p := range m.Pods {
				if state.Virtual(p) {
					placed++
				}
			}
		}
		if placed == 0 || want > 0 && placed != want || cmd.Savings <= 0 {
			t.Errorf("%q places %d buffer pods (want %d) and saves $%.4f/h", commands(d), placed, want, cmd.Savings)
		}
	}
}

// The TTL and Multi-NodeClaim contexts' cases about the validation wait
// run nodewright's controller: it decides, waits ValidationDelay (15s),
// checks the command again against the cluster as it is then, and
// carries it out.
var _ = restate("consolidation_test.go",
	// TTL.
	refCase{ref: rcbCtx + "TTL > should wait for the node TTL for non-empty nodes before consolidating",
		run: func(t *testing.T) {
			e := rcbStart(t, true)
			it := rcbCheapestODIn(rcbTypes(e), "us-east-1a", scheduling.MustParseResources("cpu=30m,memory=48Mi,pods=3"))
			rcbCtrlNode(t, e, "n0", it, v1.CapacityTypeOnDemand, rcbSmall(2, nil, nil)...)
			rcbCtrlNode(t, e, "n1", it, v1.CapacityTypeOnDemand, rcbSmall(1, nil, nil)...)
			e.reconcile(t)
			if gone := rcbGone(t, e); len(gone) != 0 || tainted(t, e.kube, "n1") {
				t.Fatalf("before the wait: NodeClaims gone %v", gone)
			}
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			if gone := rcbGone(t, e); !slices.Equal(gone, []string{"nc-n1"}) || len(rcbNew(t, e)) != 0 {
				t.Errorf("after the wait: NodeClaims gone %v, new %v; want nc-n1 deleted, none new; events %v", gone, rcbNew(t, e), e.events())
			}
		}},
	refCase{ref: rcbCtx + "TTL > should not consolidate if the action picks different instance types after the node TTL wait",
		run: func(t *testing.T) {
			e := rcbStart(t, true)
			rcbCtrlNode(t, e, "big", rcbBig, v1.CapacityTypeOnDemand, rcbPod{name: "p1", cpu: "1"})
			e.reconcile(t)
			rcbBind(t, e, "big", rcbPod{name: "p2", cpu: "1"})
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			rcbStays(t, e, "big")
			if evs := e.events(); !has(evs, "DisruptionCancelled") {
				t.Errorf("no DisruptionCancelled: %v", evs)
			}
		}},
	refCase{ref: rcbCtx + "TTL > should not consolidate if the action becomes invalid during the node TTL wait",
		run: func(t *testing.T) {
			e := rcbStart(t, false)
			rcbCtrlNode(t, e, "big", rcbBig, v1.CapacityTypeOnDemand)
			e.reconcile(t)
			rcbBind(t, e, "big", rcbPod{name: "held", cpu: rcbCPU, annotations: map[string]string{v1.AnnotationDoNotDisrupt: "true"}})
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			rcbStays(t, e, "big")
			if evs := e.events(); !has(evs, "DisruptionCancelled") {
				t.Errorf("no DisruptionCancelled: %v", evs)
			}
		}},
	refCase{ref: rcbCtx + "TTL > should not replace node if a pod schedules with karpenter.sh/do-not-disrupt set to true during the TTL wait",
		run: func(t *testing.T) {
			rcbHeldDuringWait(t, 1, rcbPod{cpu: rcbCPU, annotations: map[string]string{v1.AnnotationDoNotDisrupt: "true"}}, false, "do-not-disrupt=true")
		}},
	refCase{ref: rcbCtx + "TTL > should not replace node if a pod schedules with a blocking PDB during the TTL wait",
		run: func(t *testing.T) {
			rcbHeldDuringWait(t, 1, rcbPod{cpu: rcbCPU, labels: map[string]string{"app": "test"}}, true, "PodDisruptionBudget default/pdb-test")
		}},
	refCase{ref: rcbCtx + "TTL > should not delete node if pods schedule with karpenter.sh/do-not-disrupt set to true during the TTL wait",
		run: func(t *testing.T) {
			rcbHeldDuringWait(t, 2, rcbPod{cpu: rcbCPU, annotations: map[string]string{v1.AnnotationDoNotDisrupt: "true"}}, false, "do-not-disrupt=true")
		}},
	refCase{ref: rcbCtx + "TTL > should not delete node if pods schedule with a blocking PDB during the TTL wait",
		run: func(t *testing.T) {
			rcbHeldDuringWait(t, 2, rcbPod{cpu: rcbCPU, labels: map[string]string{"app": "test"}}, true, "PodDisruptionBudget default/pdb-test")
		}},

	// Multi-NodeClaim (carried out).
	refCase{ref: rcbCtx + "Multi-NodeClaim > should wait for the node TTL for non-empty nodes before consolidating (multi-node) > if the candidate is on-demand node",
		gap: rcbMultiWaitGap,
		run: func(t *testing.T) { rcbMultiWait(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > should wait for the node TTL for non-empty nodes before consolidating (multi-node) > if the candidate is spot node",
		gap: rcbMultiWaitGap,
		run: func(t *testing.T) { rcbMultiWait(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > should consolidate multiple empty nodes via multi-nodeclaim consolidation > if the candidate is on-demand node",
		run: func(t *testing.T) { rcbEmptyThree(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > should consolidate multiple empty nodes via multi-nodeclaim consolidation > if the candidate is spot node",
		run: func(t *testing.T) { rcbEmptyThree(t, v1.CapacityTypeSpot) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > should continue to single nodeclaim consolidation when multi-nodeclaim consolidation fails validation after the node ttl > if the candidate is on-demand node",
		better: rcbMultiInvalidatedBetter,
		run:    func(t *testing.T) { rcbMultiInvalidated(t, v1.CapacityTypeOnDemand) }},
	refCase{ref: rcbCtx + "Multi-NodeClaim > should continue to single nodeclaim consolidation when multi-nodeclaim consolidation fails validation after the node ttl > if the candidate is spot node",
		better: rcbMultiInvalidatedBetter,
		run:    func(t *testing.T) { rcbMultiInvalidated(t, v1.CapacityTypeSpot) }},
)

const rcbMultiWaitGap = "two m5.8xlarge, two small pods on n0 and one on n1: after the wait nodewright deletes n1 alone, its pod moving onto n0 (its choice of the best savings per moved pod), and replaces n0 by a later command; the reference replaces both by one cheaper node in one command, so nodewright takes two commands and moves n1's pod twice"

const rcbMultiInvalidatedBetter = "the merge cancelled (it would now need more than one new node), nodewright decides again on the cluster as it is: two of the three m5.8xlarge go (n2 and n0) with their pods onto the third, where the reference's single-node consolidation removes n2 alone and keeps two m5.8xlarge; one more node saved by the same evictions of n2's pod plus n0's two"

// rcbPod is a pod the controller cases bind to a node.
type rcbPod struct {
	name, cpu           string
	annotations, labels map[string]string
}

func rcbSmall(n int, annotations, labels map[string]string) []rcbPod {
	out := make([]rcbPod, n)
	for i := range out {
		out[i] = rcbPod{cpu: rcbCPU, annotations: annotations, labels: labels}
	}
	return out
}

// rcbStart starts the controller; cheap keeps its NodePool to on-demand
// capacity (so a node of the cheapest on-demand type has nothing cheaper).
func rcbStart(t *testing.T, onDemandOnly bool) *env {
	t.Helper()
	e := startController(t)
	e.ctrl.Config.SpotToSpot = true
	np := &v1.NodePool{}
	if err := e.kube.Get(t.Context(), client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	if onDemandOnly {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}})
	}
	if err := e.kube.Update(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	return e
}

func rcbTypes(e *env) []*scheduling.InstanceType { return e.ctrl.NodeClasses.(classes).types }

// rcbCtrlNode creates an initialized node of the instance type and
// capacity type in us-east-1a, its NodeClaim, and pods bound to it.
func rcbCtrlNode(t *testing.T, e *env, name, instanceType, capacityType string, pods ...rcbPod) {
	t.Helper()
	var spec *scheduling.InstanceType
	for _, it := range rcbTypes(e) {
		if it.Name == instanceType {
			spec = it
		}
	}
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", capacityType, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	rcbReadyNode(t, e, n, spec)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name, Labels: launchLabels(n)}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}}
	e.create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}
	if err := e.kube.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		if p.name == "" {
			p.name = fmt.Sprintf("%s-%d", name, i)
		}
		rcbBind(t, e, name, p)
	}
}

// rcbReadyNode creates a ready node of the instance type: the API
// server taints a new node not-ready (TaintNodesByCondition) and no
// kubelet lifts it here, so the test does.
func rcbReadyNode(t *testing.T, e *env, n *corev1.Node, spec *scheduling.InstanceType) {
	t.Helper()
	e.create(t, n)
	n.Spec.Taints = nil
	if err := e.kube.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	n.Status.Capacity, n.Status.Allocatable = spec.Capacity.List(), spec.Allocatable.List()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if err := e.kube.Status().Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
}

// rcbBind creates a pod bound to the node.
func rcbBind(t *testing.T, e *env, node string, p rcbPod) {
	t.Helper()
	e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default", Annotations: p.annotations, Labels: p.labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(p.cpu), corev1.ResourceMemory: resource.MustParse(rcbMem)}}}}}})
}

// rcbClaims are the NodeClaims there (not being deleted), by name.
func rcbClaims(t *testing.T, e *env) []string {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.kube.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, nc := range list.Items {
		if nc.DeletionTimestamp.IsZero() {
			out = append(out, nc.Name)
		}
	}
	slices.Sort(out)
	return out
}

// rcbGone are the test's NodeClaims (nc-*) no longer there.
func rcbGone(t *testing.T, e *env) []string {
	t.Helper()
	there := rcbClaims(t, e)
	nodes := &corev1.NodeList{}
	if err := e.kube.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range nodes.Items {
		if !strings.HasPrefix(n.Name, "node-") && !slices.Contains(there, "nc-"+n.Name) {
			out = append(out, "nc-"+n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// rcbNew are the NodeClaims the controller created.
func rcbNew(t *testing.T, e *env) []string {
	return slices.DeleteFunc(rcbClaims(t, e), func(n string) bool { return strings.HasPrefix(n, "nc-") })
}

// rcbStays checks that the node is neither tainted nor replaced, and its
// NodeClaim is there.
func rcbStays(t *testing.T, e *env, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		if tainted(t, e.kube, n) {
			t.Errorf("%s is tainted", n)
		}
	}
	if gone, made := rcbGone(t, e), rcbNew(t, e); len(gone) != 0 || len(made) != 0 {
		t.Errorf("NodeClaims gone %v, created %v; want none", gone, made)
	}
}

// rcbHeldDuringWait: m5.8xlarge nodes with a small pod each, whose
// consolidation is decided; during the validation wait a pod that may
// not be disrupted (a do-not-disrupt annotation, or a PDB allowing no
// disruption) is bound to each: nothing is disrupted, and the nodes say
// why.
func rcbHeldDuringWait(t *testing.T, nodes int, held rcbPod, withPDB bool, why string) {
	e := rcbStart(t, false)
	var names []string
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		names = append(names, name)
		rcbCtrlNode(t, e, name, rcbBig, v1.CapacityTypeOnDemand, rcbSmall(1, nil, nil)...)
	}
	e.reconcile(t)
	if withPDB {
		b := pdb(0, "test")
		b.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		status := b.Status
		b.Status = policyv1.PodDisruptionBudgetStatus{}
		e.create(t, b)
		b.Status = status
		b.Status.ObservedGeneration = b.Generation
		if err := e.kube.Status().Update(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		p := held
		p.name = "held-" + n
		rcbBind(t, e, n, p)
	}
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	rcbStays(t, e, names...)
	if evs := e.events(); !has(evs, "DisruptionCancelled", why) {
		t.Errorf("no DisruptionCancelled saying %q: %v", why, evs)
	}
}

// rcbMultiWait: two m5.8xlarge nodes of the capacity type, two small
// pods on n0 and one on n1: after the validation wait both go, for one
// cheaper replacement.
func rcbMultiWait(t *testing.T, capacityType string) {
	e := rcbStart(t, false)
	rcbCtrlNode(t, e, "n0", rcbBig, capacityType, rcbSmall(2, nil, nil)...)
	rcbCtrlNode(t, e, "n1", rcbBig, capacityType, rcbSmall(1, nil, nil)...)
	e.reconcile(t)
	if tainted(t, e.kube, "n0") || tainted(t, e.kube, "n1") || len(rcbNew(t, e)) != 0 {
		t.Fatal("disrupted before the wait")
	}
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	made := rcbNew(t, e)
	if len(made) != 1 || !tainted(t, e.kube, "n0") || !tainted(t, e.kube, "n1") {
		t.Errorf("after the wait: created %v, n0 tainted %v, n1 tainted %v, gone %v; want both tainted for one replacement; events %v",
			made, tainted(t, e.kube, "n0"), tainted(t, e.kube, "n1"), rcbGone(t, e), e.events())
		return
	}
	rcbReady(t, e, made[0])
	e.reconcile(t)
	if gone := rcbGone(t, e); !slices.Equal(gone, []string{"nc-n0", "nc-n1"}) {
		t.Errorf("the replacement ready: NodeClaims gone %v, want nc-n0 and nc-n1", gone)
	}
}

// rcbReady registers and initializes a replacement NodeClaim's node.
func rcbReady(t *testing.T, e *env, claim string) {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(t.Context(), client.ObjectKey{Name: claim}, nc); err != nil {
		t.Fatal(err)
	}
	it := ""
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && len(r.Values) > 0 {
			it = r.Values[0]
		}
	}
	var spec *scheduling.InstanceType
	for _, x := range rcbTypes(e) {
		if x.Name == it {
			spec = x
		}
	}
	if spec == nil {
		t.Fatalf("replacement %s of no known type: %v", claim, nc.Spec.Requirements)
	}
	name := "node-" + claim
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	rcbReadyNode(t, e, n, spec)
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	maps.Copy(nc.Labels, launchLabels(n)) // as launched
	if err := e.kube.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now())}}
	if err := e.kube.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
}

// rcbEmptyThree: three empty m5.8xlarge nodes of the capacity type go in
// one command after the validation wait.
func rcbEmptyThree(t *testing.T, capacityType string) {
	e := rcbStart(t, false)
	for _, n := range []string{"n0", "n1", "n2"} {
		rcbCtrlNode(t, e, n, rcbBig, capacityType)
	}
	e.reconcile(t)
	if gone := rcbGone(t, e); len(gone) != 0 {
		t.Fatalf("deleted before the wait: %v", gone)
	}
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	if there := rcbClaims(t, e); len(there) != 0 {
		t.Errorf("after the wait, NodeClaims %v remain; events %v", there, e.events())
	}
}

// rcbMultiInvalidated: three m5.8xlarge nodes of the capacity type with a
// small pod each are merged; during the wait a 1-CPU pod is bound to n0
// and to n1: the merge is cancelled, and the next decision deletes two
// of the nodes, whose pods fit on the third.
func rcbMultiInvalidated(t *testing.T, capacityType string) {
	e := rcbStart(t, false)
	for _, n := range []string{"n0", "n1", "n2"} {
		rcbCtrlNode(t, e, n, rcbBig, capacityType, rcbSmall(1, nil, nil)...)
	}
	e.reconcile(t)
	rcbBind(t, e, "n0", rcbPod{name: "extra-0", cpu: "1"})
	rcbBind(t, e, "n1", rcbPod{name: "extra-1", cpu: "1"})
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	if evs := e.events(); !has(evs, "DisruptionCancelled") || len(rcbGone(t, e)) != 0 || len(rcbNew(t, e)) != 0 {
		t.Fatalf("the merge after the wait: gone %v, created %v, events %v; want it cancelled", rcbGone(t, e), rcbNew(t, e), evs)
	}
	e.reconcile(t) // decides again on the cluster as it is
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	if gone := rcbGone(t, e); len(gone) != 2 || !slices.Contains(gone, "nc-n2") || len(rcbNew(t, e)) != 0 {
		t.Errorf("gone %v, created %v; want n2 and one other deleted, their pods on the third, no replacement; events %v", gone, rcbNew(t, e), e.events())
	}
}
