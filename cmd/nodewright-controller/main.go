// Command nodewright-controller is the binary of nodewright's controller
// image: the controller command (`nodewright-controller controller ...`, as
// the chart runs it) on AWS and nothing else. It links neither the
// simulated AWS nor Helm; the nodewright CLI has the other commands and
// --cloud sim.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	// The image has no CA files: TLS to AWS and the API server trusts the
	// Mozilla roots built in when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/nodewright/nodewright/internal/operator/command"
	"github.com/nodewright/nodewright/internal/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "nodewright-controller",
		Short:         "nodewright's controller, as its image runs it",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(command.Controller(nil), &cobra.Command{
		Use:   "version",
		Short: "Print the nodewright version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get())
			return err
		},
	})
	return root
}
