package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/operator/command"
	"github.com/nodewright/nodewright/internal/version"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "nodewright",
		Short: "nodewright launches the cheapest EC2 nodes that fit pending pods",
		Long: `nodewright is a node autoscaler for Kubernetes on AWS. It reads Karpenter's
v1 API (NodePool, NodeClaim, EC2NodeClass) unchanged.

On your manifests, without a cluster: doctor (what keeps nodes from
registering or pods from a place, and the fix), simulate (the nodes it
would launch), plan (what a change does, before you make it), userdata.
On this machine: sim (the whole system, with a simulated AWS account).
In a cluster: controller.

Exit status: 0 when the command ran and found nothing to fail on, 1 when
it could not do its job, 2 when it ran and found a problem (doctor, plan,
simulate --fail-on-unschedulable, userdata, sim).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand(), newSimulateCommand(), newPlanCommand(), newUserDataCommand(), newSimCommand(), command.Controller(runOnSimulatedAccount), newDoctorCommand(), newConvertCommand(), newCompletionCommand())
	setExamples(root)
	return root
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the nodewright version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "text"); err != nil {
				return err
			}
			if output != "text" {
				return writeStructured(cmd.OutOrStdout(), output, version.Get())
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get())
			return err
		},
	}
	outputFlag(cmd, &output, "text")
	return cmd
}
