package provider

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
)

// TagNodeClaim is the instance tag naming the NodeClaim it was launched for.
const TagNodeClaim = "karpenter.sh/nodeclaim"

// ownershipTagKeys are the tags every instance nodewright launches carries
// besides the cluster's: its NodePool, NodeClaim and EC2NodeClass (the
// reference tags its instances the same way, so instances it launched
// before a takeover are nodewright's too). An instance of the cluster
// without them — a managed node group's (kubernetes.io/cluster/NAME=owned
// and eks:nodegroup-name), a self-managed group's, one launched by hand —
// is not nodewright's, and nodewright never lists, collects or terminates
// it.
var ownershipTagKeys = []string{v1.LabelNodePool, TagNodeClaim, awsv1.LabelEC2NodeClass}

// InstanceOwnershipTagKeys are the tags besides the cluster's that make an
// instance nodewright's.
func InstanceOwnershipTagKeys() []string { return append([]string(nil), ownershipTagKeys...) }

// clusterTag is the tag key that marks the cluster's resources; nodewright
// gives it the value owned.
func (p *Launcher) clusterTag() string { return "kubernetes.io/cluster/" + p.cluster.Name }

// ownedFilters select, in an EC2 Describe call, only what nodewright
// launched in this cluster.
func (p *Launcher) ownedFilters() []ec2types.Filter {
	out := make([]ec2types.Filter, 0, 1+len(ownershipTagKeys))
	out = append(out, ec2types.Filter{Name: aws.String("tag:" + p.clusterTag()), Values: []string{"owned"}})
	for _, k := range ownershipTagKeys {
		out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
	}
	return out
}

// owns reports tags of an instance nodewright launched in this cluster.
func (p *Launcher) owns(tags []ec2types.Tag) bool { return Owns(p.cluster.Name, tags) }

// Owns reports tags of an instance nodewright launched in the cluster.
func Owns(cluster string, tags []ec2types.Tag) bool { return len(missingTags(cluster, tags)) == 0 }

// missingTags are the ownership tags an instance lacks, as KEY or KEY=VALUE.
func (p *Launcher) missingTags(tags []ec2types.Tag) []string {
	return missingTags(p.cluster.Name, tags)
}

func missingTags(cluster string, tags []ec2types.Tag) []string {
	have := map[string]string{}
	for _, t := range tags {
		have[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	var missing []string
	if key := "kubernetes.io/cluster/" + cluster; have[key] != "owned" {
		missing = append(missing, key+"=owned")
	}
	for _, k := range ownershipTagKeys {
		v, ok := have[k]
		// A standalone NodeClaim (no NodePool) is launched with an empty
		// NodePool tag, as the reference launches it: the key is what
		// counts.
		if !ok || (v == "" && k != v1.LabelNodePool) {
			missing = append(missing, k)
		}
	}
	return missing
}

// tagValue is the value of a tag, empty when absent.
func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}
