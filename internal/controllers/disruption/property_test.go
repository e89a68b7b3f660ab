package disruption_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// Over random clusters: no command disrupts a node that a
// PodDisruptionBudget or do-not-disrupt holds (expiration aside), none
// goes beyond a budget, every moved pod has a place on the nodes that
// stay and the replacements, and the same cluster gives the same decision.
func TestRandomClusters(t *testing.T) {
	types := []string{"t3a.medium", "t3a.large", "m5.large", "m5.xlarge", "c5.xlarge", "r5.large", "m5.2xlarge"}
	sizes := [][2]string{{"100m", "128Mi"}, {"250m", "512Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}}
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		c := newCluster(t)
		c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: []string{"1", "2", "20%", "50%", "100%"}[r.IntN(5)]}}
		nodes := 3 + r.IntN(10)
		for i := range nodes {
			name := fmt.Sprintf("n%d", i)
			mutate := []func(*corev1.Node, *v1.NodeClaim){}
			if r.IntN(3) == 0 {
				mutate = append(mutate, onDemand)
			}
			if r.IntN(6) == 0 {
				mutate = append(mutate, drifted)
			}
			if r.IntN(8) == 0 {
				mutate = append(mutate, func(_ *corev1.Node, nc *v1.NodeClaim) { nc.Spec.ExpireAfter = "1h" })
			}
			c.node(name, types[r.IntN(len(types))], mutate...)
			for range r.IntN(4) {
				size := sizes[r.IntN(len(sizes))]
				var extra []func(*corev1.Pod)
				if r.IntN(10) == 0 {
					extra = append(extra, func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
				}
				c.pods(name, 1+r.IntN(3), size[0], size[1], extra...)
			}
			if r.IntN(5) == 0 {
				c.objs.PDBs = append(c.objs.PDBs, pdb(0, name))
			}
		}
		s := state.Build(c.objs, state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: c.all,
			AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})}}}}})
		d := decide.Decide(s, decide.DefaultOptions())
		if again := decide.Decide(s, decide.DefaultOptions()); commands(again) != commands(d) {
			t.Errorf("seed %d: %q then %q", seed, commands(d), commands(again))
		}
		limit, _ := budgetLimit(c.pool.Spec.Disruption.Budgets[0].Nodes, nodes)
		graceful := 0
		for _, cmd := range d.Commands {
			for _, n := range cmd.Nodes {
				if cmd.Reason != v1.DisruptionReasonExpired {
					graceful++
					for _, b := range n.Blockers() {
						t.Errorf("seed %d: %s disrupts %s although %s", seed, cmd.Reason, n.Name, b)
					}
					if held := heldByPDB(n, c.objs.PDBs); held != "" {
						t.Errorf("seed %d: %s disrupts %s against %s", seed, cmd.Reason, n.Name, held)
					}
				}
			}
			if cmd.Reason != v1.DisruptionReasonExpired {
				placesEveryPod(t, seed, s, cmd)
			}
		}
		if graceful > limit {
			t.Errorf("seed %d: %d nodes disrupted at once, the budget %s of %d nodes allows %d: %q", seed, graceful, c.pool.Spec.Disruption.Budgets[0].Nodes, nodes, limit, commands(d))
		}
	}
}

func budgetLimit(v string, nodes int) (int, error) {
	var n int
	if _, err := fmt.Sscanf(v, "%d%%", &n); err == nil && v[len(v)-1] == '%' {
		return (nodes*n + 99) / 100, nil
	}
	_, err := fmt.Sscanf(v, "%d", &n)
	return n, err
}

// heldByPDB names a budget that allows no disruption of a pod on the node.
func heldByPDB(n *state.Node, pdbs []*policyv1.PodDisruptionBudget) string {
	for _, p := range n.Pods {
		for _, b := range pdbs {
			sel, _ := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if b.Namespace == p.Namespace && sel.Matches(labelSet(p.Labels)) && b.Status.DisruptionsAllowed < 1 {
				return b.Name
			}
		}
	}
	return ""
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool              { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string            { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }

// placesEveryPod checks, with a fresh solve, that the command's pods fit
// on the nodes that stay and its replacements (each as small as the
// smallest instance type it may launch as), with no new node.
func placesEveryPod(t *testing.T, seed int, s *state.Snapshot, cmd *decide.Command) {
	t.Helper()
	without := map[string]bool{}
	for _, n := range cmd.Nodes {
		without[n.Name] = true
	}
	in := s.Reschedule(without)
	for i, r := range cmd.Replacements {
		alloc := r.InstanceTypes[0].Allocatable
		for _, it := range r.InstanceTypes {
			for k := range alloc {
				alloc[k] = min(alloc[k], it.Allocatable[k])
			}
		}
		in.Nodes = append(in.Nodes, &scheduling.Node{Name: fmt.Sprintf("replacement-%d", i), Requirements: r.Requirements, Allocatable: alloc})
	}
	in.NodePools = nil // nothing new may be launched
	plan := scheduling.Solve(in)
	for _, u := range plan.Unschedulable {
		t.Errorf("seed %d: %s%v leaves pod %s without a place: %s", seed, cmd.Reason, cmd.NodeNames(), u.Pod.Name, u.Reason)
	}
}
