package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

func newUserDataCommand() *cobra.Command {
	var files []string
	var nodePool, instanceType, serviceCIDR string
	var cluster userdata.Cluster
	cmd := &cobra.Command{
		Use:   "userdata -f FILE... --nodepool NAME --cluster-name NAME --cluster-endpoint URL [--cluster-ca BASE64] [--service-cidr CIDR]",
		Short: "Print the user data a NodePool's nodes would launch with, and what is wrong with it",
		Long: `userdata reads NodePools and EC2NodeClasses from manifests and prints the
decoded user data a node of the NodePool would be launched with in your
cluster (--cluster-name, --cluster-endpoint, --cluster-ca: what
aws eks describe-cluster reports): the EC2NodeClass's userData merged with
nodewright's bootstrap for its AMI family. Problems that would keep the node from
registering are printed after it; with an error nothing would be launched,
and the command fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 || nodePool == "" {
				return errors.New("pass manifests with -f FILE and the NodePool with --nodepool NAME")
			}
			if err := clusterOf(&cluster, serviceCIDR); err != nil {
				return err
			}
			if !cmd.Flags().Changed("service-cidr") {
				fmt.Fprintf(cmd.ErrOrStderr(), "no --service-cidr: rendered for %s (kube-dns %s); EKS picks 10.100.0.0/16 or 172.20.0.0/16 by the VPC's range, and aws eks describe-cluster says which (kubernetesNetworkConfig.serviceIpv4Cidr)\n", cluster.CIDR, cluster.DNS)
			}
			if cluster.CABundle == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "no --cluster-ca: the user data carries no cluster CA certificate, and a node launched with it would not trust the API server")
			}
			objs, err := loadFiles(cmd, files)
			if err != nil {
				return err
			}
			if err := readSettings(cmd, objs); err != nil {
				return err
			}
			r, err := whatif.RenderUserData(objs, nodePool, instanceType, cluster)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), r.UserData)
			if instanceType == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "rendered for %s, the cheapest instance type NodePool %s admits (it sets the pod limit); choose another with --instance-type\n", r.InstanceType, r.NodePool)
			}
			failed := false
			for _, f := range r.Findings {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: EC2NodeClass %s: %s: %s\n", f.Severity, r.NodeClass, f.Code, f.Explain())
				failed = failed || f.Severity == userdata.Error
			}
			if failed {
				return found{fmt.Errorf("EC2NodeClass %s: its userData would keep nodes from registering; nothing would be launched", r.NodeClass)}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, directory (recursively) or - for standard input (repeatable)")
	cmd.Flags().StringVar(&nodePool, "nodepool", "", "the NodePool whose nodes' user data to print")
	completeNodePools(cmd, "nodepool")
	cmd.Flags().StringVar(&instanceType, "instance-type", "", "render for this instance type (it sets the pod limit); the cheapest the NodePool admits when unset")
	cmd.Flags().StringVar(&cluster.Name, "cluster-name", "", "the EKS cluster's name (required)")
	cmd.Flags().StringVar(&cluster.Endpoint, "cluster-endpoint", "", "the API server's URL, https://... (required)")
	cmd.Flags().StringVar(&cluster.CABundle, "cluster-ca", "", "the cluster's CA certificate, base64-encoded (aws eks describe-cluster --query cluster.certificateAuthority.data)")
	cmd.Flags().StringVar(&serviceCIDR, "service-cidr", "172.20.0.0/16", "the cluster's Service CIDR (kube-dns is its .10)")
	decisionFlags(cmd)
	return cmd
}

// clusterOf checks the cluster the user data is for and derives its
// kube-dns address from the Service CIDR.
func clusterOf(c *userdata.Cluster, serviceCIDR string) error {
	if c.Name == "" || c.Endpoint == "" {
		return errors.New("pass the cluster the nodes join: --cluster-name NAME --cluster-endpoint https://... (and --cluster-ca), as aws eks describe-cluster reports them")
	}
	if !strings.HasPrefix(c.Endpoint, "https://") {
		return fmt.Errorf("--cluster-endpoint %q: give the API server's URL, such as https://ABC.gr7.us-east-1.eks.amazonaws.com", c.Endpoint)
	}
	prefix, err := netip.ParsePrefix(serviceCIDR)
	if err != nil || !prefix.Addr().Is4() {
		return fmt.Errorf("--service-cidr %q: give the cluster's IPv4 Service CIDR, such as 172.20.0.0/16", serviceCIDR)
	}
	dns := prefix.Masked().Addr().As4()
	dns[3] += 10
	c.CIDR, c.DNS = prefix.Masked().String(), netip.AddrFrom4(dns).String()
	return nil
}
