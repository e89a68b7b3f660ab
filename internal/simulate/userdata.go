package simulate

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/account"
)

// RenderedUserData is the user data a NodePool's nodes would launch with.
type RenderedUserData struct {
	NodePool, NodeClass, Family string
	// UserData is decoded (EC2 receives it base64-encoded).
	UserData string
	// Findings are the problems validation finds in the EC2NodeClass's
	// userData; an Error means nothing would be launched.
	Findings []userdata.Finding
}

// RenderUserData renders the user data of a node of a NodePool in the
// simulated account, for an instance type when one is given (it decides
// the labels and the pod limit).
func RenderUserData(o *Objects, nodePool, instanceType string) (*RenderedUserData, error) {
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
	labels := map[string]string{v1.LabelNodePool: np.Name}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		labels[k] = v
	}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	maxPods := int32(110)
	if nc.Spec.Kubelet != nil && nc.Spec.Kubelet.MaxPods != nil {
		maxPods = *nc.Spec.Kubelet.MaxPods
	}
	if instanceType != "" {
		types, err := instancetypes.Load(instancetypes.Options{Zones: account.Zones(), Kubelet: nc.Spec.Kubelet})
		if err != nil {
			return nil, err
		}
		var it *scheduling.InstanceType
		for _, t := range types {
			if t.Name == instanceType {
				it = t
			}
		}
		if it == nil {
			return nil, fmt.Errorf("instance type %s is not in the catalog", instanceType)
		}
		for k, v := range it.Requirements.Labels() {
			labels[k] = v
		}
		maxPods = int32(it.Capacity.Pods()) //nolint:gosec // pod limits are small
	}
	user := ""
	if nc.Spec.UserData != nil {
		user = *nc.Spec.UserData
	}
	cluster := userdata.Cluster{Name: account.ClusterName, Endpoint: account.Endpoint, CABundle: account.CABundle, CIDR: account.ServiceCIDR, DNS: account.KubeDNSIP}
	node := userdata.Node{
		Labels:  labels,
		Taints:  append(append([]corev1.Taint(nil), np.Spec.Template.Spec.Taints...), np.Spec.Template.Spec.StartupTaints...),
		MaxPods: maxPods,
		Kubelet: nc.Spec.Kubelet,
	}
	out, err := userdata.Generate(family, cluster, node, user)
	if err != nil {
		return nil, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
	}
	return &RenderedUserData{NodePool: np.Name, NodeClass: nc.Name, Family: family, UserData: out, Findings: userdata.Validate(family, user)}, nil
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
