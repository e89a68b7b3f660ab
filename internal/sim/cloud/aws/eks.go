package aws

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// EKS is the simulated EKS API: the one cluster of the account.
type EKS struct{ account *Account }

// EKS returns the account's EKS API.
func (a *Account) EKS() *EKS { return &EKS{account: a} }

// DescribeCluster describes the scenarios' cluster.
func (e *EKS) DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	if err := e.account.call(ctx, serviceCall("DescribeCluster")); err != nil {
		return nil, err
	}
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

// AddAccessEntry lets an IAM principal into the cluster: type EC2_LINUX
// makes it a node role, STANDARD a user.
func (a *Account) AddAccessEntry(principalARN, entryType string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.accessEntries[principalARN] = entryType
}

// AccessEntryType is the type of a principal's access entry, if it has one.
func (a *Account) AccessEntryType(principalARN string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.accessEntries[principalARN]
	return t, ok
}

// ListAccessEntries lists the principals with an access entry, sorted.
func (e *EKS) ListAccessEntries(ctx context.Context, in *eks.ListAccessEntriesInput, _ ...func(*eks.Options)) (*eks.ListAccessEntriesOutput, error) {
	if err := e.account.call(ctx, serviceCall("ListAccessEntries")); err != nil {
		return nil, err
	}
	if aws.ToString(in.ClusterName) != account.ClusterName {
		return nil, apiError("ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", aws.ToString(in.ClusterName)))
	}
	e.account.mu.Lock()
	defer e.account.mu.Unlock()
	out := &eks.ListAccessEntriesOutput{AccessEntries: []string{}}
	for arn := range e.account.accessEntries {
		out.AccessEntries = append(out.AccessEntries, arn)
	}
	sort.Strings(out.AccessEntries)
	return out, nil
}

// DescribeAccessEntry describes one principal's access entry.
func (e *EKS) DescribeAccessEntry(ctx context.Context, in *eks.DescribeAccessEntryInput, _ ...func(*eks.Options)) (*eks.DescribeAccessEntryOutput, error) {
	if err := e.account.call(ctx, serviceCall("DescribeAccessEntry")); err != nil {
		return nil, err
	}
	if aws.ToString(in.ClusterName) != account.ClusterName {
		return nil, apiError("ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", aws.ToString(in.ClusterName)))
	}
	arn := aws.ToString(in.PrincipalArn)
	t, ok := e.account.AccessEntryType(arn)
	if !ok {
		return nil, apiError("ResourceNotFoundException", fmt.Sprintf("The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'. (%s)", arn))
	}
	entry := &ekstypes.AccessEntry{ClusterName: aws.String(account.ClusterName), PrincipalArn: aws.String(arn), Type: aws.String(t)}
	if t == "EC2_LINUX" {
		entry.Username = aws.String("system:node:{{EC2PrivateDNSName}}")
	}
	return &eks.DescribeAccessEntryOutput{AccessEntry: entry}, nil
}
