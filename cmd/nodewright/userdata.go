package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/whatif"
)

func newUserDataCommand() *cobra.Command {
	var files []string
	var nodePool, instanceType string
	cmd := &cobra.Command{
		Use:   "userdata -f FILE... --nodepool NAME",
		Short: "Print the user data a NodePool's nodes would launch with, and what is wrong with it",
		Long: `userdata reads NodePools and EC2NodeClasses from manifests and prints the
decoded user data a node of the NodePool would be launched with in the
simulated account: the EC2NodeClass's userData merged with nodewright's
bootstrap for its AMI family. Problems that would keep the node from
registering are printed after it; with an error nothing would be launched,
and the command fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 || nodePool == "" {
				return errors.New("pass manifests with -f FILE and the NodePool with --nodepool NAME")
			}
			objs, err := loadFiles(cmd.ErrOrStderr(), files)
			if err != nil {
				return err
			}
			r, err := whatif.RenderUserData(objs, nodePool, instanceType)
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
				return fmt.Errorf("EC2NodeClass %s: its userData would keep nodes from registering; nothing would be launched", r.NodeClass)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file (repeatable)")
	cmd.Flags().StringVar(&nodePool, "nodepool", "", "the NodePool whose nodes' user data to print")
	cmd.Flags().StringVar(&instanceType, "instance-type", "", "render for this instance type (it sets the pod limit); the cheapest the NodePool admits when unset")
	return cmd
}
