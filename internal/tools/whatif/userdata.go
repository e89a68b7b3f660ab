package whatif

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// RenderedUserData is the user data a NodePool's nodes would launch with.
type RenderedUserData struct {
	NodePool, NodeClass, Family string
	// InstanceType is the type rendered for: it sets the pod limit.
	InstanceType string
	// UserData is decoded (EC2 receives it base64-encoded).
	UserData string
	// Findings are the problems validation finds in the EC2NodeClass's
	// userData; an Error means nothing would be launched.
	Findings []userdata.Finding
}

// RenderUserData renders the user data a node of a NodePool would launch
// with in the cluster given, through the same function the launch
// template uses: for the instance type given, else the cheapest the
// NodePool admits (the type sets the pod limit).
func RenderUserData(o *Objects, nodePool, instanceType string, cluster userdata.Cluster) (*RenderedUserData, error) {
	var np *v1.NodePool
	for _, p := range o.NodePools {
		if p.Name == nodePool {
			np = p
		}
	}
	if np == nil {
		return nil, fmt.Errorf("NodePool %s is not among the inputs (found: %s)", nodePool, names(o.NodePools, func(p *v1.NodePool) string { return p.Name }))
	}
	ref := np.Spec.Template.Spec.NodeClassRef
	var nc *awsv1.EC2NodeClass
	for _, c := range o.EC2NodeClasses {
		if ref != nil && c.Name == ref.Name {
			nc = c
		}
	}
	if nc == nil {
		return nil, fmt.Errorf("NodePool %s: its EC2NodeClass is not among the inputs", np.Name)
	}
	family := nodeclass.Family(nc)
	kubelet, err := kubeletconfig.Parse(nc.Spec.Kubelet)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	needs := instancetypes.Needs{}
	needs.Windows, needs.WindowsBuild = instancetypes.WindowsOf(nc)
	eph := instancetypes.EphemeralStorageOf(nc)
	needs.EphemeralStorage = eph.Value()
	types, err := instancetypes.Load(o.typeOptions(instancetypes.Options{Zones: zonesFor(np, nc), Kubelet: kubelet, Needs: needs}))
	if err != nil {
		return nil, err
	}
	pool := scheduling.NodePoolFromObject(np, types, nil, nil)
	it, err := instanceTypeFor(pool, types, instanceType)
	if err != nil {
		return nil, err
	}
	claim := state.NodeClaimFor(np, nodeclass.Rules(nc), &scheduling.PlannedNodeClaim{NodePool: np.Name, Requirements: pool.Requirements, InstanceType: it})
	if kubelet.HasExpressions() {
		specs, err := instancetypes.Catalog()
		if err != nil {
			return nil, err
		}
		for _, s := range specs {
			if s.Name == it.Name {
				if kubelet, err = kubelet.For(instancetypes.VarsOf(s, needs.Windows)); err != nil {
					return nil, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
				}
			}
		}
	}
	out, err := provider.LaunchUserData(cluster, claim, nc, it.Capacity.Pods(), kubelet)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	return &RenderedUserData{NodePool: np.Name, NodeClass: nc.Name, Family: family, InstanceType: it.Name, UserData: out, Findings: nodeclass.UserDataFindings(nc)}, nil
}

// catalogRegion is the region the built-in catalog's prices are for.
const catalogRegion = "us-east-1"

// zonesFor are the zones the cheapest instance type is looked for in:
// those of the EC2NodeClass's subnets (its status, in a cluster's dump),
// else those the NodePool requires, else one of the region the built-in
// prices are for. Zones change no user data, only which type is
// cheapest.
func zonesFor(np *v1.NodePool, nc *awsv1.EC2NodeClass) []string {
	zones := make([]string, 0, len(nc.Status.Subnets))
	for _, s := range nc.Status.Subnets {
		zones = append(zones, s.Zone)
	}
	if len(zones) > 0 {
		return sortedUnique(zones)
	}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn {
			return sortedUnique(slices.Clone(r.Values))
		}
	}
	return []string{catalogRegion + "a"}
}

// instanceTypeFor is the named instance type, or without a name the
// cheapest the NodePool's requirements admit (the one its first node
// would most likely be). The pod limit in the user data is the type's.
func instanceTypeFor(pool *scheduling.NodePool, types []*scheduling.InstanceType, name string) (*scheduling.InstanceType, error) {
	var best *scheduling.InstanceType
	bestPrice := 0.0
	for _, it := range types {
		if name != "" {
			if it.Name == name {
				return it, nil
			}
			continue
		}
		if !it.Compatible(pool.Requirements) {
			continue
		}
		if o, ok := it.CheapestOffering(pool.Requirements); ok && (best == nil || o.Price < bestPrice) {
			best, bestPrice = it, o.Price
		}
	}
	switch {
	case name != "":
		return nil, fmt.Errorf("instance type %s is not in the catalog", name)
	case best == nil:
		return nil, fmt.Errorf("NodePool %s admits no instance type of the catalog; name one with --instance-type", pool.Name)
	}
	return best, nil
}

func names[T any](items []T, name func(T) string) string {
	out := make([]string, 0, len(items))
	for _, i := range items {
		out = append(out, name(i))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
