package state

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Drift reasons, the reason of a NodeClaim's Drifted condition.
const (
	DriftNodePool       = "NodePoolDrifted"
	DriftNodeClass      = "NodeClassDrifted"
	DriftRequirements   = "RequirementsDrifted"
	DriftAMI            = "AMIDrifted"
	DriftSubnet         = "SubnetDrifted"
	DriftSecurityGroups = "SecurityGroupsDrifted"
	DriftPlacementGroup = "PlacementGroupDrifted"
)

// Network is where an instance runs, as the cloud reports it.
type Network struct {
	SubnetID         string
	SecurityGroupIDs []string
}

// Drift says whether a NodeClaim no longer matches what its NodePool and
// EC2NodeClass would launch now, and why: the NodePool's template or the
// EC2NodeClass changed since it was made (the hashes stamped on it), the
// NodePool's requirements no longer admit its labels, or its AMI, subnet
// or security groups are no longer the ones the EC2NodeClass selects.
// net may be nil when the instance's network is not known.
func Drift(nc *v1.NodeClaim, labels map[string]string, np *v1.NodePool, class *awsv1.EC2NodeClass, net *Network) (reason, message string) {
	if np != nil && nc.Annotations[AnnotationNodePoolHashVersion] == HashVersion {
		if h := NodePoolHash(np); nc.Annotations[AnnotationNodePoolHash] != h {
			return DriftNodePool, fmt.Sprintf("NodePool %s's template changed since the NodeClaim was made", np.Name)
		}
	}
	if np != nil {
		reqs := scheduling.NodePoolFromObject(np, nil, nil, nil).Requirements
		for _, key := range reqs.Keys() {
			value, ok := labels[key]
			if ok && !reqs[key].Has(value) {
				return DriftRequirements, fmt.Sprintf("NodePool %s's requirements no longer admit %s=%s (they require %s)", np.Name, key, value, reqs[key])
			}
		}
	}
	if class == nil {
		return "", ""
	}
	if nc.Annotations[AnnotationEC2NodeClassHashVersion] == HashVersion {
		if h := EC2NodeClassHash(class); nc.Annotations[AnnotationEC2NodeClassHash] != h {
			return DriftNodeClass, fmt.Sprintf("EC2NodeClass %s changed since the NodeClaim was made", class.Name)
		}
	}
	if pg := class.Status.PlacementGroup; pg != nil && class.Spec.PlacementGroupSelector != nil && labels[awsv1.LabelPlacementGroupID] != "" && labels[awsv1.LabelPlacementGroupID] != pg.ID {
		return DriftPlacementGroup, fmt.Sprintf("the node is in placement group %s, not %s (%s) that EC2NodeClass %s selects now", labels[awsv1.LabelPlacementGroupID], pg.ID, pg.Name, class.Name)
	}
	if img := nc.Status.ImageID; img != "" && len(class.Status.AMIs) > 0 && !slices.ContainsFunc(class.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == img }) {
		ids := make([]string, 0, len(class.Status.AMIs))
		for _, a := range class.Status.AMIs {
			ids = append(ids, a.ID)
		}
		return DriftAMI, fmt.Sprintf("AMI %s is no longer selected by EC2NodeClass %s (it selects %s)", img, class.Name, strings.Join(ids, ", "))
	}
	if net == nil {
		return "", ""
	}
	if net.SubnetID != "" && len(class.Status.Subnets) > 0 && !slices.ContainsFunc(class.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == net.SubnetID }) {
		return DriftSubnet, fmt.Sprintf("subnet %s is no longer selected by EC2NodeClass %s", net.SubnetID, class.Name)
	}
	if len(net.SecurityGroupIDs) > 0 && len(class.Status.SecurityGroups) > 0 {
		want := make([]string, 0, len(class.Status.SecurityGroups))
		for _, g := range class.Status.SecurityGroups {
			want = append(want, g.ID)
		}
		have := slices.Clone(net.SecurityGroupIDs)
		slices.Sort(want)
		slices.Sort(have)
		if !slices.Equal(want, have) {
			return DriftSecurityGroups, fmt.Sprintf("the instance's security groups %s are not the ones EC2NodeClass %s selects (%s)", strings.Join(have, ", "), class.Name, strings.Join(want, ", "))
		}
	}
	return "", ""
}

// NodeLabels are a node's labels over its NodeClaim's.
func NodeLabels(nc *v1.NodeClaim, node *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range nc.Labels {
		out[k] = v
	}
	if node != nil {
		for k, v := range node.Labels {
			out[k] = v
		}
	}
	return out
}
