package nodeclass

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// KnownArchitectures are the architectures of an EC2NodeClass's AMIs as
// far as the object itself says, without asking the account, and how
// that is known. Known is false when some selector term can only be
// resolved by the account (an id, a tag, a name that names no
// architecture) and the status, written by a controller, lists none.
type KnownArchitectures struct {
	Archs []string
	// Known: every term's architecture is known.
	Known bool
	// Source says where they were read: "status.amis", "the alias's
	// EKS-optimized AMIs", "the AMI names".
	Source string
	// Unknown are the terms whose architecture only the account knows.
	Unknown []string
}

// ArchitecturesOf reads the architectures of an EC2NodeClass's AMIs from
// the object: its status (a controller resolved them), else each term's
// alias (every EKS-optimized family but Windows has both) or name (the
// EKS-optimized and Bottlerocket names carry it). Ids and tags are known
// only to the account.
func ArchitecturesOf(nc *awsv1.EC2NodeClass) KnownArchitectures {
	if len(nc.Status.AMIs) > 0 {
		var archs []string
		for _, a := range nc.Status.AMIs {
			for _, req := range a.Requirements {
				if req.Key == corev1.LabelArchStable && req.Operator == corev1.NodeSelectorOpIn {
					archs = append(archs, req.Values...)
				}
			}
		}
		return KnownArchitectures{Archs: sortedSet(archs), Known: true, Source: "status.amis"}
	}
	out := KnownArchitectures{Known: true}
	var sources, archs []string
	for _, t := range nc.Spec.AMISelectorTerms {
		switch {
		case t.Alias != "":
			family, _, _ := strings.Cut(t.Alias, "@")
			archs = append(archs, "amd64")
			if !strings.HasPrefix(family, "windows") {
				archs = append(archs, "arm64")
			}
			sources = append(sources, "the alias's EKS-optimized AMIs")
		case t.ID == "" && len(t.Tags) == 0 && nameArch(t.Name+" "+t.SSMParameter) != "":
			archs = append(archs, nameArch(t.Name+" "+t.SSMParameter))
			sources = append(sources, "the AMI names")
		default:
			out.Known = false
			out.Unknown = append(out.Unknown, strings.Trim(DescribeAMITerms([]awsv1.AMISelectorTerm{t}), "[]"))
		}
	}
	out.Archs, out.Source = sortedSet(archs), strings.Join(sortedSet(sources), " and ")
	return out
}

// nameArch is the architecture an AMI name says it is for: the
// EKS-optimized names (amazon-eks-node-al2023-arm64-standard-1.31-*,
// amazon-eks-arm64-node-1.31-*), Bottlerocket's
// (bottlerocket-aws-k8s-1.31-aarch64-*) and most others name it; "" when
// the name does not, or names both.
func nameArch(name string) string {
	lower := strings.ToLower(name)
	arm := strings.Contains(lower, "arm64") || strings.Contains(lower, "aarch64")
	x86 := strings.Contains(lower, "x86_64") || strings.Contains(lower, "amd64") || strings.Contains(lower, "x86-64")
	switch {
	case arm && !x86:
		return "arm64"
	case x86 && !arm:
		return "amd64"
	}
	return ""
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
