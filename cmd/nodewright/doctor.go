package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/doctor"
)

// found ends a command that ran and found a problem — exit status 2;
// status 1 is for a command that could not do its job. err, when set, is
// printed; without it the output already said why.
type found struct{ err error }

func (f found) Error() string {
	if f.err == nil {
		return "exit status 2"
	}
	return f.err.Error()
}

func (f found) Unwrap() error { return f.err }

type doctorFlags struct {
	files                     []string
	cloud, output, kubeconfig string
	clusterName, region       string
	accountID, simState       string
	grace                     time.Duration
}

func newDoctorCommand() *cobra.Command {
	var fl doctorFlags
	cmd := &cobra.Command{
		Use:   "doctor [-f FILE...]",
		Short: "Find why nodes will not register, initialize or schedule, and say how to fix it",
		Long: `doctor reads manifests (-f: NodePools, EC2NodeClasses, the aws-auth
ConfigMap, workloads, and optionally Nodes and NodeClaims) or, without -f,
the cluster of the current kubeconfig (NodePools and EC2NodeClasses with
their status, NodeClaims, Nodes, pending pods, warning events, aws-auth),
and reports every finding with its evidence and fix.

With --cloud it also reads the AWS account: AMI architectures, the
instance profile's role, EKS access entries and the console output of
instances that did not register. --cloud sim is the simulated account of
nodewright sim (for a running sim cluster, the account state saved beside
its kubeconfig); --cloud aws is the account of the AWS SDK's configuration.

Exit status 2 when any finding is an error, 1 when doctor could not run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd, fl)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&fl.files, "filename", "f", nil, "manifest file, directory (its .yaml, .yml and .json files, recursively) or - for standard input (repeatable); without it, the cluster of the kubeconfig")
	f.StringVar(&fl.cloud, "cloud", "", "also read an AWS account: sim or aws")
	completeValues(cmd, "cloud", "sim", "aws")
	outputFlag(cmd, &fl.output, "table")
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&fl.clusterName, "cluster-name", "", "the EKS cluster's name, for its access entries (--cloud aws)")
	f.StringVar(&fl.region, "region", "", "AWS region (--cloud aws; default: the SDK's configuration)")
	f.StringVar(&fl.accountID, "account-id", "", "AWS account ID for the ARNs in fixes (default: the EKS cluster's, else aws-auth's)")
	f.StringVar(&fl.simState, "sim-state", "", "the simulated account's saved state (--cloud sim; default: "+simaws.StateFile+" beside the kubeconfig)")
	f.DurationVar(&fl.grace, "grace", doctor.DefaultGrace, "how long a node may keep a taint another component removes before it is reported")
	decisionFlags(cmd)
	return cmd
}

func runDoctor(cmd *cobra.Command, fl doctorFlags) error {
	if err := checkOutput(fl.output, "table"); err != nil {
		return err
	}
	ctx := cmd.Context()
	in := doctor.Input{Grace: fl.grace, Now: time.Now()}
	kubeconfigPath := ""
	if len(fl.files) > 0 {
		objs, err := loadFiles(cmd, fl.files)
		if err != nil {
			if fl.output != "table" {
				// A bot reading the output gets the refusal in its shape.
				if werr := writeStructured(cmd.OutOrStdout(), fl.output, doctor.Refused(err)); werr != nil {
					return werr
				}
			}
			return err
		}
		in.Objects = objs
	} else {
		loading := clientcmd.NewDefaultClientConfigLoadingRules()
		loading.ExplicitPath = fl.kubeconfig
		rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil).ClientConfig()
		if err != nil {
			return fmt.Errorf("reading the kubeconfig (pass -f FILE to read manifests instead): %w", err)
		}
		// The simulated account's state is looked for beside the kubeconfig.
		if files := loading.GetLoadingPrecedence(); len(files) > 0 {
			kubeconfigPath = files[0]
		}
		kube, err := kubeClient(rc)
		if err != nil {
			return err
		}
		if in.Objects, in.Events, err = doctor.ReadCluster(ctx, kube); err != nil {
			return fmt.Errorf("reading the cluster at %s: %w", rc.Host, err)
		}
		in.FromCluster = true
	}
	if err := readSettings(cmd, in.Objects); err != nil {
		return err
	}
	cloud, err := doctorCloud(ctx, fl, kubeconfigPath)
	if err != nil {
		return err
	}
	in.Cloud = cloud
	report, err := doctor.Diagnose(ctx, in)
	if err != nil {
		return err
	}
	if fl.output != "table" {
		if err := writeStructured(cmd.OutOrStdout(), fl.output, report); err != nil {
			return err
		}
	} else {
		report.WriteTable(cmd.OutOrStdout())
	}
	if report.HasErrors() {
		return found{}
	}
	return nil
}

// doctorCloud connects to the account --cloud names.
func doctorCloud(ctx context.Context, fl doctorFlags, kubeconfigPath string) (*doctor.Cloud, error) {
	switch fl.cloud {
	case "":
		return nil, nil
	case "sim":
		a := simaws.NewAccount()
		a.Seed()
		path := fl.simState
		if path == "" && kubeconfigPath != "" {
			if candidate := filepath.Join(filepath.Dir(kubeconfigPath), simaws.StateFile); fileExists(candidate) {
				path = candidate
			}
		}
		if path != "" {
			f, err := os.Open(path)
			if err != nil {
				return nil, fmt.Errorf("--sim-state: %w", err)
			}
			defer f.Close()
			if err := a.LoadState(f); err != nil {
				return nil, fmt.Errorf("--sim-state %s: %w", path, err)
			}
		}
		return &doctor.Cloud{
			Resolver:         &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion},
			InstanceProfiles: a.IAM(), AccessEntries: a.EKS(), Console: a.EC2(),
			ClusterName: account.ClusterName, AccountID: account.AccountID,
		}, nil
	case "aws":
		if fl.clusterName == "" {
			return nil, errors.New("--cloud aws needs --cluster-name, the EKS cluster whose access entries and AMIs to read")
		}
		var opts []func(*awsconfig.LoadOptions) error
		if fl.region != "" {
			opts = append(opts, awsconfig.WithRegion(fl.region))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("loading the AWS configuration: %w", err)
		}
		eksClient := eks.NewFromConfig(cfg)
		ec2Client := ec2.NewFromConfig(cfg)
		cloud := &doctor.Cloud{
			InstanceProfiles: iam.NewFromConfig(cfg), AccessEntries: eksClient, PodIdentities: eksClient, Console: ec2Client,
			ClusterName: fl.clusterName, AccountID: fl.accountID, Partition: doctor.PartitionOfRegion(cfg.Region),
		}
		cluster, err := eksClient.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &fl.clusterName})
		if err != nil {
			// The checks that need the cluster's version (AMI aliases)
			// are skipped; the failure is a finding and the rest run.
			cloud.Unavailable = fmt.Errorf("describing EKS cluster %s: %w", fl.clusterName, err)
			return cloud, nil
		}
		cloud.Resolver = &nodeclass.Resolver{EC2: ec2Client, SSM: ssm.NewFromConfig(cfg), KubernetesVersion: aws.ToString(cluster.Cluster.Version)}
		if cloud.AccountID == "" {
			cloud.AccountID = doctor.AccountOfARN(aws.ToString(cluster.Cluster.Arn))
		}
		if p := doctor.PartitionOfARN(aws.ToString(cluster.Cluster.Arn)); p != "" {
			cloud.Partition = p
		}
		return cloud, nil
	default:
		return nil, fmt.Errorf("--cloud %q: use sim or aws", fl.cloud)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
