package simulate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/account"
	simaws "github.com/nodewright/nodewright/internal/sim/aws"
)

// Result is a plan with the problems found while preparing it.
type Result struct {
	Plan *scheduling.Plan
	// Warnings are problems that do not stop the simulation, such as a
	// NodePool whose EC2NodeClass does not exist.
	Warnings []string
}

// Run plans the objects' pending pods against the simulated account.
func Run(o *Objects) (*Result, error) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	cloud := simaws.NewAccount()
	cloud.Seed()
	resolver := &nodeclass.Resolver{EC2: cloud.EC2(), SSM: cloud.SSM(), KubernetesVersion: simaws.KubernetesVersion}
	classes := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range o.EC2NodeClasses {
		classes[nc.Name] = nc
	}
	usage := nodePoolUsage(o.Nodes)
	in := scheduling.Input{DaemonSets: o.DaemonSets}
	for _, np := range o.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("NodePool %s has no nodeClassRef; it launches nothing", np.Name))
			continue
		}
		nc, ok := classes[ref.Name]
		if !ok || ref.Kind != "EC2NodeClass" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("NodePool %s: %s %s is not among the inputs; it launches nothing", np.Name, ref.Kind, ref.Name))
			continue
		}
		amis, zones, warning, err := resolve(resolver, nc)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("NodePool %s: %s", np.Name, warning))
		}
		types := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: zones, Kubelet: nc.Spec.Kubelet})
		in.NodePools = append(in.NodePools, scheduling.NodePoolFromObject(np, types, amis, usage[np.Name]))
	}
	bound := map[string][]*corev1.Pod{}
	for _, p := range o.Pods {
		if p.Spec.NodeName != "" {
			bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
			continue
		}
		in.Pods = append(in.Pods, p)
	}
	for _, n := range o.Nodes {
		in.Nodes = append(in.Nodes, scheduling.NodeFromObject(n, bound[n.Name]))
	}
	catalog := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: account.Zones()})
	for _, nc := range o.NodeClaims {
		n, err := inFlight(nc, catalog)
		if err != nil {
			res.Warnings = append(res.Warnings, err.Error())
			continue
		}
		in.Nodes = append(in.Nodes, n)
	}
	res.Plan = scheduling.Solve(in)
	return res, nil
}

// resolve finds the AMIs of an EC2NodeClass and the zones its subnets are
// in, in the simulated account, and says what is missing.
func resolve(r *nodeclass.Resolver, nc *awsv1.EC2NodeClass) ([]scheduling.AMI, []string, string, error) {
	ctx := context.Background()
	amis, err := r.AMIs(ctx, nc)
	if err != nil {
		return nil, nil, "", fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	subnets, err := r.Subnets(ctx, nc)
	if err != nil {
		return nil, nil, "", fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	var warnings []string
	if len(amis) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: amiSelectorTerms select no AMI in account %s", nc.Name, account.AccountID))
	}
	if len(subnets) == 0 {
		warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: subnetSelectorTerms select no subnet in account %s", nc.Name, account.AccountID))
	}
	out := make([]scheduling.AMI, 0, len(amis))
	for _, a := range amis {
		out = append(out, scheduling.AMI{ID: a.ID, Requirements: scheduling.NewRequirements(a.Requirements...)})
	}
	zoneSet := map[string]bool{}
	var zones []string
	for _, s := range subnets {
		if !zoneSet[s.Zone] {
			zoneSet[s.Zone] = true
			zones = append(zones, s.Zone)
		}
	}
	sort.Strings(zones)
	return out, zones, strings.Join(warnings, "; "), nil
}

// inFlight turns a NodeClaim without a node into capacity pods can be
// planned onto: its requirements and labels, and its allocatable from the
// status or, before launch, the least that any instance type it lists
// offers (whichever launches, the pods must fit).
func inFlight(nc *v1.NodeClaim, catalog []*scheduling.InstanceType) (*scheduling.Node, error) {
	reqs := scheduling.LabelRequirements(nc.Labels)
	for _, r := range nc.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	alloc, _ := scheduling.ParseResources(nc.Status.Allocatable)
	if alloc.IsZero() {
		if names, ok := reqs[scheduling.LabelInstanceType]; ok {
			found := false
			for _, it := range catalog {
				if !names.Has(it.Name) {
					continue
				}
				if !found {
					alloc, found = it.Allocatable, true
				}
				for i := range alloc {
					alloc[i] = min(alloc[i], it.Allocatable[i])
				}
			}
		}
	}
	if alloc.IsZero() {
		return nil, fmt.Errorf("NodeClaim %s: no allocatable in its status and no known instance type in its requirements; ignored", nc.Name)
	}
	return &scheduling.Node{Name: nc.Name, Requirements: reqs, Taints: nc.Spec.Taints, Allocatable: alloc}, nil
}

// nodePoolUsage sums the capacity of existing nodes per NodePool.
func nodePoolUsage(nodes []*corev1.Node) map[string]corev1.ResourceList {
	out := map[string]corev1.ResourceList{}
	names := make([]string, 0, len(nodes))
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		names = append(names, n.Name)
		byName[n.Name] = n
	}
	sort.Strings(names)
	for _, name := range names {
		n := byName[name]
		pool := n.Labels[v1.LabelNodePool]
		if pool == "" {
			continue
		}
		list := out[pool]
		if list == nil {
			list = corev1.ResourceList{}
			out[pool] = list
		}
		for k, q := range n.Status.Capacity {
			sum := list[k]
			sum.Add(q)
			list[k] = sum
		}
		count := list["nodes"]
		count.Add(resource.MustParse("1"))
		list["nodes"] = count
	}
	return out
}
