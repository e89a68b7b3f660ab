package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// CloudProvider is the AWS provider as controllers use it: NodeClaims in,
// instances out; it looks up the EC2NodeClass and instance types itself.
type CloudProvider struct {
	Kube     client.Reader
	Launcher *Launcher
	Types    *instancetypes.Cache
	// Metrics times the calls (karpenter_cloudprovider_*) and shows the
	// instance types' offerings (nil: not recorded).
	Metrics *metrics.Metrics
	// VMMemoryOverheadPercent and ReservedENIs are the controller's
	// settings of instance types' memory and pod limits
	// (--vm-memory-overhead-percent, --reserved-enis).
	VMMemoryOverheadPercent *float64
	ReservedENIs            int
	memo                    typesMemo
	// shown is what the offering series last showed: the unavailable
	// offerings' signature, per EC2NodeClass settings.
	shownMu sync.Mutex
	shown   map[string]string
}

// observe records a call's duration and, when it failed, its error kind.
func (c *CloudProvider) observe(method string, start time.Time, err error) {
	c.Metrics.CloudProviderCall(method, time.Since(start), errorKind(err))
}

// errorKind names an error as the reference's error label does.
func errorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case cloudprovider.IsNotFound(err):
		return "NodeClaimNotFoundError"
	case cloudprovider.IsInsufficientCapacity(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNodeClassNotReady(err):
		return "NodeClassNotReadyError"
	}
	return "error"
}

// Create launches the instance of a NodeClaim.
func (c *CloudProvider) Create(ctx context.Context, claim *v1.NodeClaim) (_ *cloudprovider.Instance, err error) {
	defer func(start time.Time) { c.observe("Create", start, err) }(time.Now())
	class, err := c.nodeClass(ctx, claim)
	if err != nil {
		return nil, err
	}
	types, err := c.InstanceTypes(ctx, class)
	if err != nil {
		return nil, err
	}
	return c.Launcher.Create(ctx, claim, class, types)
}

// InstanceTypes are the instance types an EC2NodeClass can launch: offered
// in the zones of its subnets, with allocatable from its kubelet settings
// and prices that leave out offerings recently without capacity.
func (c *CloudProvider) InstanceTypes(ctx context.Context, class *awsv1.EC2NodeClass) (_ []*scheduling.InstanceType, err error) {
	defer func(start time.Time) { c.observe("GetInstanceTypes", start, err) }(time.Now())
	specs, err := c.Types.Specs(ctx)
	if err != nil && specs == nil {
		return nil, fmt.Errorf("reading instance types: %w", err)
	}
	zones := map[string]bool{}
	var zoneList []string
	zoneIDs := map[string]string{}
	for _, s := range class.Status.Subnets {
		if !zones[s.Zone] {
			zones[s.Zone] = true
			zoneList = append(zoneList, s.Zone)
		}
		if s.ZoneID != "" {
			zoneIDs[s.Zone] = s.ZoneID
		}
	}
	reservations, err := c.Launcher.reservations(ctx, class)
	if err != nil {
		return nil, err
	}
	kubelet, err := kubeletconfig.Parse(class.Spec.Kubelet)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
	}
	opts := instancetypes.Options{Zones: zoneList, ZoneIDs: zoneIDs, Kubelet: kubelet, Reservations: reservations, Needs: instancetypes.NeedsOf(class),
		VMMemoryOverheadPercent: c.VMMemoryOverheadPercent, ReservedENIs: c.ReservedENIs}
	unavailable := c.Launcher.unavailable.current()
	built, key := c.memo.get(specs, opts)
	types := withUnavailable(built, unavailable)
	c.show(key, types, unavailable)
	return types, nil
}

// show sets the instance type series when the types of a node class's
// settings, or the offerings out of capacity, changed since they were
// last shown.
func (c *CloudProvider) show(key string, types []*scheduling.InstanceType, unavailable map[string]bool) {
	if c.Metrics == nil {
		return
	}
	sig := strings.Join(slices.Sorted(maps.Keys(unavailable)), ",")
	c.shownMu.Lock()
	if c.shown == nil {
		c.shown = map[string]string{}
	}
	old, seen := c.shown[key]
	c.shown[key] = sig
	c.shownMu.Unlock()
	if seen && old == sig {
		return
	}
	c.Metrics.InstanceTypes(types)
}

// withUnavailable marks the offerings recently without capacity
// unavailable, on copies of the instance types that have any.
func withUnavailable(types []*scheduling.InstanceType, unavailable map[string]bool) []*scheduling.InstanceType {
	out := slices.Clone(types)
	if len(unavailable) == 0 {
		return out
	}
	for i, it := range out {
		for j, o := range it.Offerings {
			if !unavailable[offeringKey(o.CapacityType, it.Name, o.Zone)] {
				continue
			}
			if out[i] == types[i] {
				cp := *it
				cp.Offerings = slices.Clone(it.Offerings)
				out[i] = &cp
			}
			out[i].Offerings[j].Available = false
		}
	}
	return out
}

// typesMemo keeps the instance types built from a catalog for an
// EC2NodeClass's settings: every launch asks for them, and building them
// (hundreds of types, each with its allocatable and offerings) costs more
// than the launch. The types it returns are shared: read, never changed.
type typesMemo struct {
	mu    sync.Mutex
	specs *instancetypes.Spec
	built map[string][]*scheduling.InstanceType
}

func (m *typesMemo) get(specs []instancetypes.Spec, opts instancetypes.Options) ([]*scheduling.InstanceType, string) {
	if len(specs) == 0 {
		return nil, ""
	}
	settings, err := json.Marshal(opts)
	if err != nil {
		return instancetypes.InstanceTypes(specs, opts), ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.specs != &specs[0] || len(m.built) > 64 { // a new catalog, or settings pile up
		m.specs, m.built = &specs[0], map[string][]*scheduling.InstanceType{}
	}
	key := fmt.Sprintf("%p/%s", &specs[0], settings)
	if types, ok := m.built[key]; ok {
		return types, key
	}
	types := instancetypes.InstanceTypes(specs, opts)
	m.built[key] = types
	return types, key
}

// NodeClassObject is the kind NodePools name: EC2NodeClass.
func (c *CloudProvider) NodeClassObject() client.Object { return &awsv1.EC2NodeClass{} }

// ResolveNodeClasses resolves the EC2NodeClasses the NodePools use from
// their status: instance types and AMIs, or why they are not ready.
func (c *CloudProvider) ResolveNodeClasses(ctx context.Context, pools []*v1.NodePool) (map[string]*cloudprovider.NodeClass, error) {
	used := state.NodeClassesUsed(pools)
	list := &awsv1.EC2NodeClassList{}
	if err := c.Kube.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing EC2NodeClasses: %w", err)
	}
	out := map[string]*cloudprovider.NodeClass{}
	for i := range list.Items {
		class := &list.Items[i]
		if !used[class.Name] {
			continue
		}
		var types []*scheduling.InstanceType
		if nodeclass.NotReady(class) == nil {
			var err error
			if types, err = c.InstanceTypes(ctx, class); err != nil {
				return nil, fmt.Errorf("instance types of EC2NodeClass %s: %w", class.Name, err)
			}
		}
		out[class.Name] = nodeclass.Resolved(class, types)
	}
	return out, nil
}

// NodeClass is one EC2NodeClass's stamp, readiness and drift rules,
// without its instance types; nil when it does not exist.
func (c *CloudProvider) NodeClass(ctx context.Context, name string) (*cloudprovider.NodeClass, error) {
	class := &awsv1.EC2NodeClass{}
	if err := c.Kube.Get(ctx, client.ObjectKey{Name: name}, class); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("reading EC2NodeClass %s: %w", name, err)
	}
	return nodeclass.Resolved(class, nil), nil
}

// NodeClassWithTypes is NodeClass with the class's instance types now
// (none while it is not ready).
func (c *CloudProvider) NodeClassWithTypes(ctx context.Context, name string) (*cloudprovider.NodeClass, error) {
	class := &awsv1.EC2NodeClass{}
	if err := c.Kube.Get(ctx, client.ObjectKey{Name: name}, class); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("reading EC2NodeClass %s: %w", name, err)
	}
	if nodeclass.NotReady(class) != nil {
		return nodeclass.Resolved(class, nil), nil
	}
	types, err := c.InstanceTypes(ctx, class)
	if err != nil {
		return nil, fmt.Errorf("instance types of EC2NodeClass %s: %w", class.Name, err)
	}
	return nodeclass.Resolved(class, types), nil
}

// Get returns a NodeClaim's instance.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (_ *cloudprovider.Instance, err error) {
	defer func(start time.Time) { c.observe("Get", start, err) }(time.Now())
	return c.Launcher.Get(ctx, providerID)
}

// Delete terminates an instance for its holder (NotFound once it is
// gone).
func (c *CloudProvider) Delete(ctx context.Context, providerID string, holder cloudprovider.Holder) (err error) {
	defer func(start time.Time) { c.observe("Delete", start, err) }(time.Now())
	return c.Launcher.Delete(ctx, providerID, holder)
}

// Reboot reboots the instance of a provider ID nodewright launched.
func (c *CloudProvider) Reboot(ctx context.Context, providerID string) (err error) {
	defer func(start time.Time) { c.observe("Reboot", start, err) }(time.Now())
	return c.Launcher.Reboot(ctx, providerID)
}

// List returns the cluster's instances.
func (c *CloudProvider) List(ctx context.Context) (_ []*cloudprovider.Instance, err error) {
	defer func(start time.Time) { c.observe("List", start, err) }(time.Now())
	return c.Launcher.List(ctx)
}

// TagHolder tags an instance of a launch batch with the NodeClaim that
// recorded it.
func (c *CloudProvider) TagHolder(ctx context.Context, inst *cloudprovider.Instance, claim string) (err error) {
	defer func(start time.Time) { c.observe("TagHolder", start, err) }(time.Now())
	return c.Launcher.TagHolder(ctx, inst, claim)
}

// RecordedInBatch are the instances of a launch batch its NodeClaims
// recorded (status.providerID), by instance ID: read from the NodeClaims
// as the client sees them (the manager's cache, synced before a leader
// acts).
func (c *CloudProvider) RecordedInBatch(ctx context.Context, batch string) (map[string]string, error) {
	claims := &v1.NodeClaimList{}
	if err := c.Kube.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, nc := range claims.Items {
		if nc.Status.ProviderID == "" {
			continue
		}
		if b, ok, _ := cloudprovider.LaunchBatchOf(nc.Name, nc.Annotations); !ok || b.ID != batch {
			continue
		}
		if _, id, err := ParseProviderID(nc.Status.ProviderID); err == nil {
			out[id] = nc.Name
		}
	}
	return out, nil
}

func (c *CloudProvider) nodeClass(ctx context.Context, claim *v1.NodeClaim) (*awsv1.EC2NodeClass, error) {
	ref := claim.Spec.NodeClassRef
	if ref == nil || ref.Kind != "EC2NodeClass" || ref.Group != awsv1.Group {
		return nil, &cloudprovider.NodeClassNotReadyError{Message: fmt.Sprintf("NodeClaim %s does not reference an EC2NodeClass", claim.Name)}
	}
	class := &awsv1.EC2NodeClass{}
	if err := c.Kube.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, &cloudprovider.NodeClassNotReadyError{Message: fmt.Sprintf("EC2NodeClass %s does not exist", ref.Name)}
		}
		return nil, err
	}
	return class, nil
}
