package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodewright/nodewright/internal/sim/account"
)

// EKS is the simulated EKS API: the one cluster of the account.
type EKS struct{ account *Account }

// EKS returns the account's EKS API.
func (a *Account) EKS() *EKS { return &EKS{account: a} }

// DescribeCluster describes the scenarios' cluster.
func (e *EKS) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	if aws.ToString(in.Name) != account.ClusterName {
		return nil, apiError("ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", aws.ToString(in.Name)))
	}
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
		Name: aws.String(account.ClusterName), Endpoint: aws.String(account.Endpoint), Version: aws.String(KubernetesVersion),
		CertificateAuthority:    &ekstypes.Certificate{Data: aws.String(account.CABundle)},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigResponse{ServiceIpv4Cidr: aws.String(account.ServiceCIDR)},
		Arn:                     aws.String(fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", account.Region, account.AccountID, account.ClusterName)),
		Status:                  ekstypes.ClusterStatusActive,
	}}, nil
}
