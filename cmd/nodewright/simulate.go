package main

import (
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/operator/command"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

func newSimulateCommand() *cobra.Command {
	var files []string
	var output, now, cloud, schedulerConfig, gates, region string
	var disrupt, failUnschedulable bool
	cmd := &cobra.Command{
		Use:   "simulate -f FILE... [--region R] [--cloud sim] [--disruption [--now RFC3339]]",
		Short: "Print the nodes nodewright would launch (or disrupt) for manifests or a dump, without a cluster",
		Long: `simulate reads NodePools, EC2NodeClasses, workloads (Pods, Deployments,
StatefulSets, ReplicaSets, Jobs), DaemonSets and Nodes from multi-document
YAML and prints the plan: the NodeClaims to launch with their cheapest
instance type, capacity type, zone and price, the pods on each, the total
$/hour, and every pod that cannot be scheduled with the reason. Instance
types and prices are the built-in catalog's (us-east-1's on-demand
prices: with --region, the output says so for another region); each
EC2NodeClass's AMIs, subnets' zones and placement group are those its
status names (a cluster's dump), and otherwise every architecture in
three zones of --region (default us-east-1). It runs nothing: to run the
whole system on this machine, see nodewright sim.

Exit status 2 with --fail-on-unschedulable when a pod cannot be
scheduled; 1 when the input cannot be read. --cloud sim resolves EC2NodeClasses in the simulated account
nodewright sim runs (its AMIs, subnets, capacity reservations and
placement groups), as the scenarios assume.

With --disruption it reads the same manifests, or a cluster's dump
(kubectl get nodepools,ec2nodeclasses,nodeclaims,nodes,pods,pdb -A -o yaml),
and prints what nodewright's disruption would do now: which nodes it
removes or replaces and why, what it launches first, what it saves, and
for every other node of a NodePool the one reason it stays.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("no input: pass manifests with -f FILE (repeatable)")
			}
			if err := checkOutput(output, "table"); err != nil {
				return err
			}
			if (now != "" || gates != "") && !disrupt {
				return fmt.Errorf("--now and --feature-gates apply to --disruption only")
			}
			if failUnschedulable && disrupt {
				return fmt.Errorf("--fail-on-unschedulable applies to what would be launched, not to --disruption")
			}
			decisionGates, err := dryRunGates(gates)
			if err != nil {
				return err
			}
			objs, err := loadInput(cmd, files, now, schedulerConfig)
			if err != nil {
				return err
			}
			if objs.Region, err = checkRegion(region, cloud); err != nil {
				return err
			}
			resolver, err := simulateResolver(cloud)
			if err != nil {
				return err
			}
			if disrupt {
				report, err := whatif.Disrupt(objs, resolver, decisionGates)
				if err != nil {
					return err
				}
				if output != "table" {
					return writeStructured(cmd.OutOrStdout(), output, report)
				}
				return report.WriteTable(cmd.OutOrStdout())
			}
			res, err := whatif.RunWith(objs, resolver)
			if err != nil {
				return err
			}
			report := whatif.NewReport(res)
			if output != "table" {
				err = writeStructured(cmd.OutOrStdout(), output, report)
			} else {
				err = report.WriteTable(cmd.OutOrStdout())
			}
			if err == nil && failUnschedulable && len(report.Unschedulable) > 0 {
				return found{fmt.Errorf("%d pod(s) cannot be scheduled (listed above)", len(report.Unschedulable))}
			}
			return err
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, directory (recursively) or - for standard input (repeatable)")
	outputFlag(cmd, &output, "table")
	cmd.Flags().BoolVar(&disrupt, "disruption", false, "print what disruption would do now instead of what would be launched")
	cmd.Flags().StringVar(&now, "now", "", "with --disruption, decide as at this time (RFC 3339; default: now)")
	cmd.Flags().StringVar(&gates, "feature-gates", "", "with --disruption, the controller's --feature-gates (NAME=true|false,...), to decide as it does: SpotToSpotConsolidation=true lets consolidation replace spot nodes with cheaper spot nodes (default false, as in the controller); the other gates change nothing here")
	cmd.Flags().StringVar(&cloud, "cloud", "", "sim: resolve EC2NodeClasses in the simulated account of nodewright sim (default: from the input)")
	cmd.Flags().StringVar(&schedulerConfig, "scheduler-config", "", "kube-scheduler's configuration file: pods that set no topology spread constraints are planned spread by its default constraints")
	cmd.Flags().StringVar(&region, "region", "", "the AWS region to plan for: its zones where an EC2NodeClass's status names none (default: us-east-1, the built-in prices' region)")
	decisionFlags(cmd)
	cmd.Flags().BoolVar(&failUnschedulable, "fail-on-unschedulable", false, "exit with status 2 when a pod cannot be scheduled (for CI)")
	completeValues(cmd, "cloud", "sim")
	return cmd
}

// regionPattern is the shape of an AWS region's name.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)

// checkRegion is --region when it names a region and the input is planned
// from itself (--cloud sim is the simulated account's us-east-1).
func checkRegion(region, cloud string) (string, error) {
	if region == "" {
		return "", nil
	}
	if !regionPattern.MatchString(region) {
		return "", fmt.Errorf("--region %q: write a region such as eu-west-1", region)
	}
	if cloud != "" {
		return "", fmt.Errorf("--region %s: --cloud %s plans in that account's own region; leave one of them out", region, cloud)
	}
	return region, nil
}

// simulateResolver resolves EC2NodeClasses in the account --cloud names;
// nil: from the input alone.
func simulateResolver(cloud string) (*nodeclass.Resolver, error) {
	switch cloud {
	case "":
		return nil, nil
	case "sim":
		a := simaws.NewAccount()
		a.Seed()
		return &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), KubernetesVersion: simaws.KubernetesVersion}, nil
	}
	return nil, fmt.Errorf("--cloud %q: use sim, or leave it out to plan from the input alone", cloud)
}

// loadInput reads the manifests, the scheduler configuration (none when
// empty) and the time decisions are made at (now when empty).
func loadInput(cmd *cobra.Command, files []string, now, schedulerConfig string) (*whatif.Objects, error) {
	objs, err := loadFiles(cmd, files)
	if err != nil {
		return nil, err
	}
	if err := readSettings(cmd, objs); err != nil {
		return nil, err
	}
	if objs.DefaultSpread, err = command.ReadSchedulerConfig(schedulerConfig); err != nil {
		return nil, err
	}
	if now != "" {
		if objs.Now, err = time.Parse(time.RFC3339, now); err != nil {
			return nil, fmt.Errorf("--now %q: write a time such as 2026-11-23T12:00:00Z: %w", now, err)
		}
	}
	return objs, nil
}

// loadFiles reads manifests, warning on w about each document it does not
// read.
func loadFiles(cmd *cobra.Command, files []string) (*whatif.Objects, error) {
	w := cmd.ErrOrStderr()
	objs, err := whatif.LoadPaths(files, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	for _, ignored := range objs.Ignored {
		fmt.Fprintln(w, "warning: skipped", ignored)
	}
	warnSkipped(w, objs.Skipped)
	if len(objs.Skipped) > 0 {
		fmt.Fprintln(w, "warning: nodewright reads", whatif.ReadKinds)
	}
	return objs, nil
}

// warnSkipped names each document not read, or, for a kind with more
// than a few in a file (a dump's Events), counts them.
func warnSkipped(w io.Writer, skipped []whatif.Skipped) {
	type fileKind struct{ file, kind string }
	count := map[fileKind]int{}
	for _, s := range skipped {
		count[fileKind{s.File, s.Kind}]++
	}
	counted := map[fileKind]bool{}
	for _, s := range skipped {
		k := fileKind{s.File, s.Kind}
		switch {
		case count[k] <= 3:
			fmt.Fprintln(w, "warning:", s)
		case !counted[k]:
			counted[k] = true
			fmt.Fprintf(w, "warning: %s: %d %s documents are not read\n", s.File, count[k], s.Kind)
		}
	}
}
