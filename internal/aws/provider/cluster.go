package provider

import (
	"context"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/nodewright/nodewright/internal/aws/userdata"
)

type eksAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// ClusterFromEKS reads what nodes need to join a cluster from EKS: its API
// endpoint, CA and Service CIDR; kube-dns is the CIDR's tenth address.
func ClusterFromEKS(ctx context.Context, api eksAPI, name string) (userdata.Cluster, error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		return userdata.Cluster{}, fmt.Errorf("describing EKS cluster %s: %w", name, err)
	}
	c := out.Cluster
	cluster := userdata.Cluster{Name: name, Endpoint: aws.ToString(c.Endpoint)}
	if c.CertificateAuthority != nil {
		cluster.CABundle = aws.ToString(c.CertificateAuthority.Data)
	}
	if c.KubernetesNetworkConfig != nil {
		cluster.CIDR = aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr)
	}
	if _, network, err := net.ParseCIDR(cluster.CIDR); err == nil {
		ip := network.IP.To4()
		if ip != nil {
			cluster.DNS = net.IPv4(ip[0], ip[1], ip[2], ip[3]+10).String()
		}
	}
	if cluster.Endpoint == "" || cluster.CABundle == "" {
		return userdata.Cluster{}, fmt.Errorf("EKS cluster %s has no endpoint or certificate authority yet", name)
	}
	return cluster, nil
}
