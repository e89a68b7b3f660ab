// Package account describes the simulated AWS account every scenario
// assumes: its cluster, region, zones, IAM roles and AMIs.
package account

import (
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
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
