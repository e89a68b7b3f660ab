package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/state"
)

// instanceFacts caches what the cloud says of each instance that does
// not change for its life: its subnet, security groups and capacity
// reservation (a reservation that ends leaves it as on-demand, and its
// NodeClaim then drifts only on reading it again), and whether
// nodewright launched it. The cloud is asked once per instance (not at
// all for one this process launched: Create answered it), and the
// instance is forgotten when its NodeClaim is released.
type instanceFacts struct {
	mu   sync.Mutex
	byID map[string]*cloudprovider.Instance
	// confirmed are the instances read again since a drift was first
	// seen on their facts.
	confirmed map[string]bool
}

// stale reports whether an instance's facts were not read again since
// a drift was seen on them.
func (n *instanceFacts) stale(providerID string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.confirmed[providerID]
}

// confirm marks an instance's facts as read again.
func (n *instanceFacts) confirm(providerID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.confirmed == nil {
		n.confirmed = map[string]bool{}
	}
	n.confirmed[providerID] = true
}

// get is the instance's facts; nil when the instance is gone.
func (n *instanceFacts) get(ctx context.Context, cloud CloudProvider, providerID string) (*cloudprovider.Instance, error) {
	n.mu.Lock()
	inst, ok := n.byID[providerID]
	n.mu.Unlock()
	if ok {
		return inst, nil
	}
	// Asked outside the lock: many NodeClaims are read at once after a
	// start.
	inst, err := cloud.Get(ctx, providerID)
	if err != nil {
		if cloudprovider.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return n.remember(inst), nil
}

// remember keeps an instance's facts as the cloud answered them and
// returns them.
func (n *instanceFacts) remember(inst *cloudprovider.Instance) *cloudprovider.Instance {
	facts := &cloudprovider.Instance{ProviderID: inst.ProviderID, InstanceID: inst.InstanceID, SubnetID: inst.SubnetID,
		SecurityGroupIDs: inst.SecurityGroupIDs, CapacityReservationID: inst.CapacityReservationID, Foreign: inst.Foreign}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byID == nil {
		n.byID = map[string]*cloudprovider.Instance{}
	}
	n.byID[inst.ProviderID] = facts
	return facts
}

// forget drops an instance's facts (it is gone, or to be read again).
func (n *instanceFacts) forget(providerID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.byID, providerID)
	delete(n.confirmed, providerID)
}

// drift sets the Drifted condition of a launched NodeClaim, as the
// reference does (True with the reason while it no longer matches its
// NodePool or node class, absent otherwise) from state.Drift, the rule
// every decision and tool applies; disruption replaces drifted
// NodeClaims once they are initialized.
func (c *Controller) drift(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node, now metav1.Time) error {
	if !isTrue(nc.Status.Conditions, v1.ConditionLaunched) {
		return nil
	}
	np, err := c.poolOf(ctx, nc)
	if err != nil {
		return err
	}
	class, err := c.classOf(ctx, nc, now.Time)
	if err != nil {
		return err
	}
	inst, err := c.networkOf(ctx, nc, class)
	if err != nil {
		return err
	}
	ownByPool(nc, np)
	if state.ForeignHashes(nc, class) && isTrue(nc.Status.Conditions, v1.ConditionDrifted) {
		// Drifted by another hashing's measure: it stays drifted until it
		// is replaced (this hashing cannot say otherwise).
		return nil
	}
	if state.Restamp(nc, np, class) {
		logf.FromContext(ctx).Info("restamped the NodeClaim's drift hashes, made by another hashing (adopted)", "NodeClaim", nc.Name)
	}
	d := state.Drift(nc, state.NodeLabels(nc, node), np, class, inst, now.Time)
	if d.Drifted() && inst != nil && !state.Drift(nc, state.NodeLabels(nc, node), np, class, nil, now.Time).Drifted() && c.instances.stale(nc.Status.ProviderID) {
		// Drifted by what the instance was when first read (a capacity
		// reservation may have ended since, leaving it on-demand): read
		// it again, once, before saying so.
		c.instances.forget(nc.Status.ProviderID)
		if inst, err = c.networkOf(ctx, nc, class); err != nil {
			return err
		}
		c.instances.confirm(nc.Status.ProviderID)
		d = state.Drift(nc, state.NodeLabels(nc, node), np, class, inst, now.Time)
	}
	if !d.Drifted() {
		meta.RemoveStatusCondition(&nc.Status.Conditions, v1.ConditionDrifted)
		return nil
	}
	set(&nc.Status.Conditions, now, nc.Generation, v1.ConditionDrifted, metav1.ConditionTrue, d.Reason, d.Message)
	return nil
}

// poolOf is the NodeClaim's NodePool; nil when it has none or the
// NodePool is gone.
func (c *Controller) poolOf(ctx context.Context, nc *v1.NodeClaim) (*v1.NodePool, error) {
	name := nc.Labels[v1.LabelNodePool]
	if name == "" {
		return nil, nil
	}
	np := &v1.NodePool{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading NodePool %s of NodeClaim %s: %w", name, nc.Name, err)
		}
		return nil, nil
	}
	return np, nil
}

// classOf is the NodeClaim's node class; nil when it names none or the
// class does not exist. Its instance types are read only for a NodeClaim
// old enough to be checked against them.
func (c *Controller) classOf(ctx context.Context, nc *v1.NodeClaim, now time.Time) (*cloudprovider.NodeClass, error) {
	ref := nc.Spec.NodeClassRef
	if ref == nil {
		return nil, nil
	}
	get := c.Cloud.NodeClass
	if now.Sub(nc.CreationTimestamp.Time) > state.InstanceTypeNotFoundAfter {
		get = c.Cloud.NodeClassWithTypes
	}
	class, err := get(ctx, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("node class of NodeClaim %s: %w", nc.Name, err)
	}
	return class, nil
}

// networkOf is the subnet and security groups of the NodeClaim's
// instance, read only when the node class has drift rules that need them.
func (c *Controller) networkOf(ctx context.Context, nc *v1.NodeClaim, class *cloudprovider.NodeClass) (*cloudprovider.Instance, error) {
	if class == nil || class.Drift == nil {
		return nil, nil
	}
	inst, err := c.instances.get(ctx, c.Cloud, nc.Status.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("reading the network of NodeClaim %s's instance: %w", nc.Name, err)
	}
	return inst, nil
}

// ownByPool makes the NodePool an owner of a NodeClaim made before
// NodeClaims were owned by their NodePool: deleting the NodePool deletes
// it too from now on.
func ownByPool(nc *v1.NodeClaim, np *v1.NodePool) {
	if np != nil && !slices.ContainsFunc(nc.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == np.UID }) {
		nc.OwnerReferences = append(nc.OwnerReferences, state.NodePoolOwner(np)...)
	}
}

// claimsOfPool wakes the NodeClaims of a changed NodePool (drift).
func (c *Controller) claimsOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims, client.MatchingLabels{v1.LabelNodePool: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return requests(claims.Items, func(*v1.NodeClaim) bool { return true })
}

// claimsOfClass wakes the NodeClaims of a changed EC2NodeClass (drift).
func (c *Controller) claimsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	claims := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return requests(claims.Items, func(nc *v1.NodeClaim) bool {
		return nc.Spec.NodeClassRef != nil && nc.Spec.NodeClassRef.Name == o.GetName()
	})
}

func requests(claims []v1.NodeClaim, keep func(*v1.NodeClaim) bool) []reconcile.Request {
	var out []reconcile.Request
	for i := range claims {
		if keep(&claims[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims[i])})
		}
	}
	return out
}
