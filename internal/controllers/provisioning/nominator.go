package provisioning

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Nominator makes the plan stick: it remembers which pending pods each
// planned NodeClaim is for and, once the NodeClaim's node exists, sets
// the pods' status.nominatedNodeName to it. kube-scheduler tries a pod's
// nominated node first and counts the pods nominated to a node as taking
// its room, so pods land where the plan put them even when nodes become
// Ready at different times (KEP-1923; KEP-5278 lets other components set
// the field, behind the NominatedNodeNameForExpectation feature gate).
//
// The hint has a price: kube-scheduler evaluates every node that has
// pods nominated to it twice in each scheduling attempt (with and
// without them), so thousands of nominated pods slow every attempt down.
// While more than MaxPods pods wait for a node, a decision's plan is
// remembered (it keeps the pods from being planned twice) but not
// written: kube-scheduler places those pods as the nodes come, and
// consolidation removes a node its placement left surplus.
type Nominator struct {
	Client client.Client
	Clock  clock.PassiveClock
	// TTL is how long a plan is remembered.
	TTL time.Duration
	// MaxPods is the most pods that may wait for a node (pending, or
	// planned onto a node not up yet) for a decision's pods to be
	// nominated (0: no limit).
	MaxPods int

	mu    sync.Mutex
	plans map[string]plan // NodeClaim name → its pods
	// target is each planned pod's NodeClaim: a pod is planned once.
	target map[types.NamespacedName]string
}

type plan struct {
	pods []types.NamespacedName
	at   time.Time
	// quiet are the pods remembered, not written: planned by a decision
	// made while many pods waited, or not tried by kube-scheduler yet.
	quiet sets.Set[types.NamespacedName]
}

// Hints reports whether a decision made while this many pods wait for a
// node has its pods nominated.
func (n *Nominator) Hints(planned int) bool {
	return n != nil && (n.MaxPods == 0 || planned <= n.MaxPods)
}

// Plan remembers that pods are planned onto a NodeClaim; with hint, they
// are nominated to its node once it exists.
func (n *Nominator) Plan(claim string, pods []*corev1.Pod, hint bool) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.plans == nil {
		n.plans, n.target = map[string]plan{}, map[types.NamespacedName]string{}
	}
	p := n.plans[claim]
	p.at = n.Clock.Now()
	if p.quiet == nil {
		p.quiet = sets.New[types.NamespacedName]()
	}
	for _, pod := range pods {
		key := client.ObjectKeyFromObject(pod)
		if old, ok := n.target[key]; ok && old != claim {
			n.unplan(key)
		}
		n.target[key] = claim
		if !slices.Contains(p.pods, key) {
			p.pods = append(p.pods, key)
		}
		if hint {
			p.quiet.Delete(key)
		} else {
			p.quiet.Insert(key)
		}
	}
	n.plans[claim] = p
}

// Nominate nominates pods to an existing node now; their
// nominatedNodeName is their plan from then on.
func (n *Nominator) Nominate(ctx context.Context, node string, pods []*corev1.Pod) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	for _, pod := range pods {
		n.unplan(client.ObjectKeyFromObject(pod))
	}
	n.mu.Unlock()
	for _, pod := range pods {
		if _, err := n.nominate(ctx, client.ObjectKeyFromObject(pod), node, true); err != nil {
			return err
		}
	}
	return nil
}

// SetupWithManager watches NodeClaims: when a planned one has a node,
// its pods are nominated to it.
func (n *Nominator) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("provisioner.nominator").For(&v1.NodeClaim{}).Complete(n)
}

// Reconcile nominates the pods planned onto a NodeClaim to its node (the
// lifecycle nominates them when it registers the node, through
// NominateTo; this catches the NodeClaims registered before this process
// planned onto them).
func (n *Nominator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	n.mu.Lock()
	_, ok := n.plans[req.Name]
	n.forgetOld()
	n.mu.Unlock()
	if !ok {
		return reconcile.Result{}, nil
	}
	nc := &v1.NodeClaim{}
	if err := n.Client.Get(ctx, req.NamespacedName, nc); err != nil || !nc.DeletionTimestamp.IsZero() {
		n.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.Status.NodeName == "" {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, n.NominateTo(ctx, req.Name, nc.Status.NodeName)
}

// NominateTo nominates the pods planned onto a NodeClaim to its node. The
// lifecycle calls it when it registers the node, before the node can take
// pods: kube-scheduler then counts the planned pods as taking their room
// from the first moment, and pods planned onto nodes not up yet cannot
// take it. A pod planned quietly is nominated too once no more than
// MaxPods planned pods wait: the last nodes of a large scale-up keep the
// room planned for their pods. The plan is remembered until its pods are
// bound: a cache that does not show the nomination yet does not make them
// pending again.
func (n *Nominator) NominateTo(ctx context.Context, claim, node string) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	pods, quiet := slices.Clone(n.plans[claim].pods), n.plans[claim].quiet.Clone()
	few := n.Hints(len(n.target))
	n.mu.Unlock()
	var placed []types.NamespacedName
	for _, key := range pods {
		done, err := n.nominate(ctx, key, node, few || !quiet.Has(key))
		if err != nil {
			return err
		}
		if done {
			placed = append(placed, key)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, key := range placed {
		if n.target[key] == claim {
			n.unplan(key)
		}
	}
	if p, ok := n.plans[claim]; ok && len(p.pods) == 0 {
		delete(n.plans, claim)
	}
	return nil
}

// nominate sets a pending pod's status.nominatedNodeName (unless not
// write: a quiet plan only learns whether its pod was placed); done when
// the pod is bound or gone and needs no plan any more.
func (n *Nominator) nominate(ctx context.Context, key types.NamespacedName, node string, write bool) (bool, error) {
	pod := &corev1.Pod{}
	if err := n.Client.Get(ctx, key, pod); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	if pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() {
		return true, nil
	}
	if !write || pod.Status.NominatedNodeName == node {
		return false, nil
	}
	before := pod.DeepCopy()
	pod.Status.NominatedNodeName = node
	if err := n.Client.Status().Patch(ctx, pod, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("nominating node %s for pod %s: %w", node, key, err)
	}
	logf.FromContext(ctx).V(1).Info("nominated node for pod", "pod", key, "Node", node)
	return false, nil
}

// Planned are the pods planned onto NodeClaims and not bound yet as far
// as the plans know, with their NodeClaim.
func (n *Nominator) Planned() map[types.NamespacedName]string {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[types.NamespacedName]string, len(n.target))
	for k, v := range n.target {
		out[k] = v
	}
	return out
}

// PlannedAt is when each NodeClaim with planned pods was created.
func (n *Nominator) PlannedAt() map[string]time.Time {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]time.Time, len(n.plans))
	for name, p := range n.plans {
		out[name] = p.at
	}
	return out
}

func (n *Nominator) forget(claim string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop(claim)
}

// unplan forgets a pod's plan; the caller holds the lock.
func (n *Nominator) unplan(key types.NamespacedName) {
	claim, ok := n.target[key]
	if !ok {
		return
	}
	delete(n.target, key)
	p := n.plans[claim]
	p.pods = slices.DeleteFunc(p.pods, func(k types.NamespacedName) bool { return k == key })
	p.quiet.Delete(key)
	n.plans[claim] = p
}

// drop forgets a plan; the caller holds the lock.
func (n *Nominator) drop(claim string) {
	for _, key := range n.plans[claim].pods {
		if n.target[key] == claim {
			delete(n.target, key)
		}
	}
	delete(n.plans, claim)
}

// forgetOld drops plans older than the TTL (their NodeClaim never got a
// node); the caller holds the lock.
func (n *Nominator) forgetOld() {
	now := n.Clock.Now()
	for name, p := range n.plans {
		if now.Sub(p.at) > n.TTL {
			n.drop(name)
		}
	}
}
