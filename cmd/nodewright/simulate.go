package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/simulate"
)

func newSimulateCommand() *cobra.Command {
	var files []string
	var output string
	cmd := &cobra.Command{
		Use:   "simulate -f FILE...",
		Short: "Show the NodeClaims nodewright would launch for the pods in manifests",
		Long: `simulate reads NodePools, EC2NodeClasses, workloads (Pods, Deployments,
StatefulSets, ReplicaSets, Jobs), DaemonSets and Nodes from multi-document
YAML and prints the plan: the NodeClaims to launch with their cheapest
instance type, capacity type, zone and price, the pods on each, the total
$/hour, and every pod that cannot be scheduled with the reason. Instance
types and AMIs are those of the simulated us-east-1 account.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("no input: pass manifests with -f FILE (repeatable)")
			}
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: use table or json", output)
			}
			objs, err := loadFiles(files)
			if err != nil {
				return err
			}
			res, err := simulate.Run(objs)
			if err != nil {
				return err
			}
			report := simulate.NewReport(res)
			if output == "json" {
				return report.WriteJSON(cmd.OutOrStdout())
			}
			return report.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// loadFiles reads manifests.
func loadFiles(files []string) (*simulate.Objects, error) {
	objs := &simulate.Objects{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		err = objs.Load(name, f)
		_ = f.Close()
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}
