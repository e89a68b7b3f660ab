package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodewright/nodewright/internal/operator/command"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// decisionFlags adds the controller's settings that change its
// decisions, to decide as a controller started with them does; a
// controller Deployment in the input gives them otherwise.
func decisionFlags(cmd *cobra.Command) {
	command.AddDecisionFlags(cmd.Flags())
}

// readSettings sets the settings decisions are made with: those of the
// controller Deployment in the input (nodewright's or Karpenter's, its
// arguments and environment read as it reads them), then the flags given,
// which win. It says on standard error where they came from.
func readSettings(cmd *cobra.Command, objs *whatif.Objects) error {
	var args []string
	env := map[string]string{}
	karpenter := false
	from := ""
	if len(objs.Controllers) > 0 {
		c := objs.Controllers[0]
		args, env, karpenter, from = c.Args, c.Env, c.Karpenter, c.String()
		w := cmd.ErrOrStderr()
		if len(objs.Controllers) > 1 {
			names := make([]string, len(objs.Controllers))
			for i, o := range objs.Controllers {
				names[i] = o.String()
			}
			fmt.Fprintf(w, "warning: %d controller Deployments (%s); deciding with the settings of the first\n", len(objs.Controllers), strings.Join(names, ", "))
		}
		if unread := c.Unread(); len(unread) > 0 {
			fmt.Fprintf(w, "warning: %s sets %s from a ConfigMap, Secret or field, which is not among the inputs: the default is used (give the flag of the same name to decide otherwise)\n",
				c, strings.Join(unread, ", "))
		}
	}
	if objs.ControllersNotRead != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the controller's Deployment could not be read (%s): deciding with the defaults and the flags given\n", objs.ControllersNotRead)
	}
	given := 0
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if command.IsDecisionFlag(f.Name) {
			args = append(args, "--"+f.Name+"="+f.Value.String())
			given++
		}
	})
	d, err := command.ControllerDecisions(args, env, karpenter)
	if err != nil {
		if from != "" {
			return fmt.Errorf("%s: %w", from, err)
		}
		return err
	}
	objs.Settings = whatif.Settings{IgnoreDRARequests: d.IgnoreDRARequests, Policy: d.Policy, ReservedENIs: d.ReservedENIs}
	if share := d.VMMemoryOverheadPercent; share != command.DefaultVMMemoryOverheadPercent {
		objs.Settings.VMMemoryOverheadPercent = &share
	}
	if from != "" {
		also := ""
		if given > 0 {
			also = ", with the flags given"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "deciding as %s does%s: %s\n", from, also, objs.Settings.Describe())
	}
	return nil
}
