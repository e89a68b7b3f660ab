package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/tools/doctor"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

func newPlanCommand() *cobra.Command {
	var files, changes []string
	var output, now, cloud, schedulerConfig, region string
	timings := whatif.DefaultTimings()
	cmd := &cobra.Command{
		Use:   "plan -f CLUSTER... --change FILE... [--now RFC3339] [--region R] [--cloud sim]",
		Short: "Plan a change to NodePools or EC2NodeClasses: what drifts, the rollout, and what it costs",
		Long: `plan reads a cluster (a dump: kubectl get nodepools,ec2nodeclasses,nodeclaims,
nodes,pods,pdb,daemonsets -A -o yaml, or manifests) and the NodePools and
EC2NodeClasses you mean to apply (--change, repeatable), and prints what
the change does before you make it: which nodes drift and why (the
reason and the changed field), the rollout in rounds as nodewright's
disruption would carry it out under the NodePools' budgets and their
windows (empty nodes first, then the oldest), each round's replacements
and the pods they take, what holds nodes back (PodDisruptionBudgets,
do-not-disrupt, budgets) and until when, an estimate of how long it takes
with its assumptions, and the price per hour before, during the dearest
round and after.

A change that leaves pods without a place, or brings in an error finding
of nodewright doctor, is reported with the workloads and why, and plan
exits with status 2 (1 when it could not plan).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 || len(changes) == 0 {
				return fmt.Errorf("plan needs the cluster (-f FILE) and the change (--change FILE), each repeatable")
			}
			if err := checkOutput(output, "table"); err != nil {
				return err
			}
			objs, err := loadInput(cmd, files, now, schedulerConfig)
			if err != nil {
				return err
			}
			if objs.Region, err = checkRegion(region, cloud); err != nil {
				return err
			}
			change := &whatif.Change{}
			for _, name := range changes {
				if err := loadChange(change, name); err != nil {
					return err
				}
			}
			resolver, err := simulateResolver(cloud)
			if err != nil {
				return err
			}
			report, err := whatif.Plan(objs, change, resolver, timings)
			if err != nil {
				return err
			}
			introduced, err := introducedFindings(cmd.Context(), objs, change)
			if err != nil {
				return err
			}
			if output != "table" {
				err = writeStructured(cmd.OutOrStdout(), output, planOutput{PlanReport: report, Introduced: introduced})
			} else {
				err = report.WriteTable(cmd.OutOrStdout())
				writeIntroduced(cmd.OutOrStdout(), introduced)
			}
			if err != nil {
				return err
			}
			if n := len(report.Unplaced); n > 0 {
				return found{fmt.Errorf("the change leaves pods of %d workload(s) without a place (listed above); change nothing yet", n)}
			}
			if (&doctor.Report{Findings: introduced}).HasErrors() {
				return found{fmt.Errorf("the change brings in what keeps nodes from registering or pods from a place (listed above); change nothing yet")}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "the cluster: a dump or manifests: a file, a directory or - for standard input (repeatable)")
	cmd.Flags().StringArrayVar(&changes, "change", nil, "NodePools and EC2NodeClasses as you mean to apply them (repeatable)")
	outputFlag(cmd, &output, "table")
	cmd.Flags().StringVar(&now, "now", "", "plan as at this time (RFC 3339; default: now)")
	cmd.Flags().StringVar(&cloud, "cloud", "", "sim: resolve EC2NodeClasses in the simulated account of nodewright sim (default: from the input)")
	cmd.Flags().DurationVar(&timings.Launch, "launch-time", timings.Launch, "how long a replacement takes from launch to an initialized node, for the estimate")
	cmd.Flags().DurationVar(&timings.Termination, "termination-time", timings.Termination, "how long an instance takes to terminate, for the estimate")
	cmd.Flags().StringVar(&schedulerConfig, "scheduler-config", "", "kube-scheduler's configuration file: pods that set no topology spread constraints are planned spread by its default constraints")
	cmd.Flags().StringVar(&region, "region", "", "the AWS region to plan for: its zones where an EC2NodeClass's status names none (default: us-east-1, the built-in prices' region)")
	decisionFlags(cmd)
	completeValues(cmd, "cloud", "sim")
	return cmd
}

func loadChange(change *whatif.Change, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return change.LoadChange(name, f)
}

// planOutput is a plan with what doctor finds that the change brings in.
type planOutput struct {
	*whatif.PlanReport
	Introduced []doctor.Finding `json:"introduced"`
}

// introducedFindings are doctor's findings on the changed objects that it
// does not make on the cluster as it is: a change that brings in one of
// the field reports' failures (user data that drops the registration
// taint, an AMI without the pools' architecture) is named before it is
// made. Checks that could not run are left out: they did not run before
// either.
func introducedFindings(ctx context.Context, objs *whatif.Objects, change *whatif.Change) ([]doctor.Finding, error) {
	now := objs.Now
	if now.IsZero() {
		now = time.Now()
	}
	before, err := doctor.Diagnose(ctx, doctor.Input{Objects: objs, Now: now})
	if err != nil {
		return nil, err
	}
	after, err := doctor.Diagnose(ctx, doctor.Input{Objects: change.Applied(objs), Now: now})
	if err != nil {
		return nil, err
	}
	had := map[string]bool{}
	for _, f := range before.Findings {
		had[f.Code+" "+f.Object] = true
	}
	introduced := []doctor.Finding{}
	for _, f := range after.Findings {
		if f.Severity != doctor.Info && f.Code != doctor.CodeNotChecked && !had[f.Code+" "+f.Object] {
			introduced = append(introduced, f)
		}
	}
	return introduced, nil
}

func writeIntroduced(w io.Writer, introduced []doctor.Finding) {
	if len(introduced) == 0 {
		return
	}
	fmt.Fprintf(w, "\nThe change brings in %d finding(s) of nodewright doctor:\n\n", len(introduced))
	(&doctor.Report{Findings: introduced}).WriteTable(w)
}
