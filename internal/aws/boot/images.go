package boot

import (
	"regexp"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// imageNames are the names (and SSM parameter paths) of the EKS-optimized
// images and the family whose boot each runs.
var imageNames = []struct {
	pattern *regexp.Regexp
	family  string
}{
	// amazon-eks-node-al2023-x86_64-standard-1.31-v20250123,
	// /aws/service/eks/optimized-ami/1.31/amazon-linux-2023/...
	{regexp.MustCompile(`(?i)^amazon-eks-node-al2023-|/amazon-linux-2023/`), awsv1.AMIFamilyAL2023},
	// amazon-eks-node-1.31-v20250123, amazon-eks-gpu-node-1.31-...,
	// amazon-eks-arm64-node-1.31-..., /aws/service/eks/optimized-ami/1.31/amazon-linux-2/...
	{regexp.MustCompile(`(?i)^amazon-eks-(gpu-|arm64-)?node-[0-9]|/amazon-linux-2(-gpu|-arm64)?/`), awsv1.AMIFamilyAL2},
	// bottlerocket-aws-k8s-1.31-x86_64-v1.30.0-..., /aws/service/bottlerocket/aws-k8s-1.31/...
	{regexp.MustCompile(`(?i)^bottlerocket-aws-k8s-|/bottlerocket/aws-k8s-`), awsv1.AMIFamilyBottlerocket},
	// Canonical's EKS images (ubuntu-eks/k8s_1.31/images/..., ubuntu-eks-pro/...)
	// boot as AL2's do: cloud-init runs the script, which calls
	// /etc/eks/bootstrap.sh.
	{regexp.MustCompile(`(?i)^ubuntu-eks(-pro)?/|/canonical/ubuntu/eks`), awsv1.AMIFamilyAL2},
	{regexp.MustCompile(`(?i)Windows_Server-2019-.*EKS_Optimized`), awsv1.AMIFamilyWindows2019},
	{regexp.MustCompile(`(?i)Windows_Server-2022-.*EKS_Optimized`), awsv1.AMIFamilyWindows2022},
	{regexp.MustCompile(`(?i)Windows_Server-2025-.*EKS_Optimized`), awsv1.AMIFamilyWindows2025},
}

// ImageFamily is the family whose boot an image runs, from its name or
// SSM parameter path as the EKS-optimized images are named; "" when the
// name does not say (an image of one's own).
func ImageFamily(name string) string {
	for _, n := range imageNames {
		if n.pattern.MatchString(name) {
			return n.family
		}
	}
	return ""
}

// ImagesFamily is the family the images' names agree on; "" when one
// does not say or they differ.
func ImagesFamily(names []string) string {
	family := ""
	for _, name := range names {
		f := ImageFamily(name)
		if f == "" || family != "" && f != family {
			return ""
		}
		family = f
	}
	return family
}
