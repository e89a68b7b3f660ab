// Package account describes the simulated AWS account every scenario
// assumes: its cluster, region, zones, IAM roles and AMIs.
package account

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Facts of the simulated account.
const (
	ClusterName = "nodewright-sim"
	Region      = "us-east-1"
	AccountID   = "111122223333"
	NodeRole    = "KarpenterNodeRole-nodewright-sim"
	// ControllerRole is the controller's role, which nodes must not use.
	ControllerRole = "KarpenterControllerRole-nodewright-sim"
	ServiceCIDR    = "172.20.0.0/16"
	KubeDNSIP      = "172.20.0.10"
	// Endpoint and CABundle (base64) are the cluster's API server as the
	// account's EKS DescribeCluster reports it.
	Endpoint = "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com"
	CABundle = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"
)

// Zones of the simulated region.
func Zones() []string { return []string{"us-east-1a", "us-east-1b", "us-east-1c"} }

// Image is an AMI of the simulated account.
type Image struct {
	ID, Name, Family, Arch string
}

// Images are the custom AMIs of the account (aliases resolve separately).
func Images() []Image {
	return []Image{
		{ID: "ami-0a1b2c3d4e5f60001", Name: "custom-al2-x86_64", Family: awsv1.AMIFamilyAL2, Arch: "amd64"},
		{ID: "ami-0a1b2c3d4e5f60002", Name: "custom-al2023-arm64", Family: awsv1.AMIFamilyAL2023, Arch: "arm64"},
	}
}

// ResolveAMIs returns the AMIs an EC2NodeClass selects in the simulated
// account, each with the architecture it boots, or why it selects none.
func ResolveAMIs(nc *awsv1.EC2NodeClass) ([]scheduling.AMI, error) {
	var out []scheduling.AMI
	for _, term := range nc.Spec.AMISelectorTerms {
		switch {
		case term.Alias != "":
			family, _, _ := strings.Cut(term.Alias, "@")
			archs := []string{"amd64", "arm64"}
			if strings.HasPrefix(family, "windows") {
				archs = []string{"amd64"}
			}
			for _, arch := range archs {
				out = append(out, ami(fmt.Sprintf("%s-%s", term.Alias, arch), arch))
			}
		case term.ID != "":
			for _, img := range Images() {
				if img.ID == term.ID {
					out = append(out, ami(img.ID, img.Arch))
				}
			}
		default:
			for _, img := range Images() {
				if term.Name != "" && term.Name == img.Name {
					out = append(out, ami(img.ID, img.Arch))
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("EC2NodeClass %s: amiSelectorTerms select no AMI in account %s", nc.Name, AccountID)
	}
	return out, nil
}

func ami(id, arch string) scheduling.AMI {
	return scheduling.AMI{ID: id, Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{
		Key: scheduling.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch},
	})}
}
