package state

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// BlockReason says why a node may not be disrupted now.
type BlockReason string

const (
	// BlockNotInitialized means the node has not finished initialization.
	BlockNotInitialized BlockReason = "NotInitialized"
	// BlockDeleting means the node is already being deleted.
	BlockDeleting BlockReason = "Deleting"
	// BlockNodeDoNotDisrupt means the Node or NodeClaim is annotated
	// karpenter.sh/do-not-disrupt: "true".
	BlockNodeDoNotDisrupt BlockReason = "NodeDoNotDisrupt"
	// BlockPodDoNotDisrupt means a pod on the node is annotated
	// karpenter.sh/do-not-disrupt ("true", or a duration not yet over).
	BlockPodDoNotDisrupt BlockReason = "PodDoNotDisrupt"
	// BlockPDB means a PodDisruptionBudget allows no eviction of a pod on the
	// node now (or several budgets cover one pod, which the Eviction API
	// refuses).
	BlockPDB BlockReason = "PodDisruptionBudget"
	// BlockNominated means pending pods are nominated to the node.
	BlockNominated BlockReason = "Nominated"
)

// Blocker is one reason a node stays.
type Blocker struct {
	Reason BlockReason
	// Pod is namespace/name of the pod concerned.
	Pod string
	// PDB is namespace/name of the budget concerned; Allowed how many
	// disruptions it allows now; PDBs lists several budgets covering Pod.
	PDB     string
	Allowed int32
	PDBs    []string
	// Value is the do-not-disrupt annotation's value; Until when a
	// duration runs out.
	Value string
	Until time.Time
	// Pods counts the pods nominated to the node.
	Pods int
}

// Graceful reports a blocker that only holds graceful disruption: pods
// that may not be evicted now. Drift and expiration of a NodeClaim with a
// terminationGracePeriod go ahead, and the drain waits for these pods up
// to its deadline.
func (b Blocker) Graceful() bool { return b.Reason == BlockPodDoNotDisrupt || b.Reason == BlockPDB }

func (b Blocker) String() string {
	switch b.Reason {
	case BlockNotInitialized:
		return "the node has not finished initialization"
	case BlockDeleting:
		return "the node is being deleted"
	case BlockNodeDoNotDisrupt:
		return fmt.Sprintf("the node is annotated %s=true", v1.AnnotationDoNotDisrupt)
	case BlockPodDoNotDisrupt:
		if !b.Until.IsZero() {
			return fmt.Sprintf("pod %s is annotated %s=%s, until %s", b.Pod, v1.AnnotationDoNotDisrupt, b.Value, b.Until.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("pod %s is annotated %s=%s", b.Pod, v1.AnnotationDoNotDisrupt, b.Value)
	case BlockPDB:
		if len(b.PDBs) > 1 {
			return fmt.Sprintf("pod %s is covered by several PodDisruptionBudgets (%s); the Eviction API refuses to evict it", b.Pod, strings.Join(b.PDBs, ", "))
		}
		return fmt.Sprintf("PodDisruptionBudget %s allows %d disruptions now (pod %s)", b.PDB, b.Allowed, b.Pod)
	case BlockNominated:
		return fmt.Sprintf("%d pending pod(s) are nominated to the node", b.Pods)
	}
	return string(b.Reason)
}

// Blockers are the reasons the node may not be disrupted now, most
// fundamental first; none for a node that may go.
func (n *Node) Blockers() []Blocker { return n.blockers }

// Candidates are the registered nodes of existing NodePools: what
// disruption considers, blocked or not.
func (s *Snapshot) Candidates() []*Node {
	var out []*Node
	for _, n := range s.Nodes {
		// A live node without a NodeClaim is not nodewright's (its
		// NodeClaim is gone, or someone else made it): nothing disrupts
		// it. In a dump a node stands for the NodeClaim left out.
		if n.Managed() && n.Registered() && !n.AwaitingItsNodeClaim() && s.Pools[n.NodePool] != nil && (n.NodeClaim != nil || s.dump) {
			out = append(out, n)
		}
	}
	return out
}

func (s *Snapshot) blockers(n *Node) []Blocker {
	if !n.Managed() || !n.Registered() {
		return nil
	}
	var out []Blocker
	switch {
	case n.Deleting():
		return []Blocker{{Reason: BlockDeleting}}
	case !n.Initialized():
		out = append(out, Blocker{Reason: BlockNotInitialized})
	}
	if n.Node.Annotations[v1.AnnotationDoNotDisrupt] == "true" || (n.NodeClaim != nil && n.NodeClaim.Annotations[v1.AnnotationDoNotDisrupt] == "true") {
		out = append(out, Blocker{Reason: BlockNodeDoNotDisrupt})
	}
	waiting := map[*corev1.Pod]bool{}
	for _, p := range append(slices.Clone(s.nominated[n.Name]), n.Expected...) {
		if !Virtual(p) {
			waiting[p] = true
		}
	}
	if len(waiting) > 0 {
		out = append(out, Blocker{Reason: BlockNominated, Pods: len(waiting)})
	}
	for _, p := range n.Pods {
		if Virtual(p) {
			continue
		}
		// A static pod's mirror asks to keep its node as any pod does; it
		// is never evicted, so no budget of its guards it.
		if b, ok := doNotDisrupt(p, s.Now); ok {
			out = append(out, b)
		}
		if mirror(p) {
			continue
		}
		if b, ok := s.pdbBlocks(p); ok {
			out = append(out, b)
		}
	}
	return out
}

// doNotDisrupt reads a pod's karpenter.sh/do-not-disrupt annotation:
// "true" blocks, a duration blocks until that long after the pod
// started, anything else blocks (and says what it reads).
func doNotDisrupt(p *corev1.Pod, now time.Time) (Blocker, bool) {
	value, ok := p.Annotations[v1.AnnotationDoNotDisrupt]
	if !ok || value == "false" {
		return Blocker{}, false
	}
	b := Blocker{Reason: BlockPodDoNotDisrupt, Pod: p.Namespace + "/" + p.Name, Value: value}
	if value == "true" {
		return b, true
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return b, true
	}
	started := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		started = p.Status.StartTime.Time
	}
	b.Until = started.Add(d)
	return b, now.Before(b.Until)
}

// budget is a PodDisruptionBudget with its parsed selector.
type budget struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

// budgetsByNamespace parses the budgets' selectors once. In policy/v1 an
// empty selector selects every pod of the namespace; a missing or invalid
// one selects none.
func budgetsByNamespace(pdbs []*policyv1.PodDisruptionBudget) map[string][]budget {
	out := map[string][]budget{}
	for _, pdb := range pdbs {
		if pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		out[pdb.Namespace] = append(out[pdb.Namespace], budget{pdb: pdb, selector: sel})
	}
	return out
}

// covering are the budgets that select the pod.
func (s *Snapshot) covering(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, b := range s.pdbs[p.Namespace] {
		if b.selector.Matches(labels.Set(p.Labels)) {
			out = append(out, b.pdb)
		}
	}
	return out
}

// pdbBlocks reports a budget that allows no eviction of the pod now.
func (s *Snapshot) pdbBlocks(p *corev1.Pod) (Blocker, bool) {
	covering := s.covering(p)
	name := p.Namespace + "/" + p.Name
	switch {
	case len(covering) > 1:
		b := Blocker{Reason: BlockPDB, Pod: name}
		for _, pdb := range covering {
			b.PDBs = append(b.PDBs, pdb.Namespace+"/"+pdb.Name)
		}
		return b, true
	case len(covering) == 1 && covering[0].Status.DisruptionsAllowed < 1 && !evictableUnready(covering[0], p):
		return Blocker{Reason: BlockPDB, Pod: name, PDB: covering[0].Namespace + "/" + covering[0].Name, Allowed: covering[0].Status.DisruptionsAllowed}, true
	}
	return Blocker{}, false
}

// evictableUnready says whether the Eviction API lets a pod go whatever
// its budget allows: the budget's unhealthyPodEvictionPolicy is
// AlwaysAllow and the pod says it is not Ready.
func evictableUnready(pdb *policyv1.PodDisruptionBudget, p *corev1.Pod) bool {
	if pdb.Spec.UnhealthyPodEvictionPolicy == nil || *pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}
