package main

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodewright/nodewright/internal/tools/whatif"
	"github.com/nodewright/nodewright/scenarios"
)

// completeValues completes a flag's value with a fixed list.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeScenarios completes --scenario with the built-in scenarios'
// names, and files (a scenario may be a manifest).
func completeScenarios(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("scenario", func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, n := range scenarios.Names() {
			if strings.HasPrefix(n, prefix) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveDefault
	})
}

// completeNodePools completes a flag with the NodePools of the manifests
// -f names on the command line so far.
func completeNodePools(cmd *cobra.Command, flag string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		files, err := c.Flags().GetStringArray("filename")
		if err != nil || len(files) == 0 || slices.Contains(files, "-") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		// Completion parses the flags twice: an array flag holds each file twice.
		slices.Sort(files)
		objs, err := whatif.LoadPaths(slices.Compact(files), nil)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, np := range objs.NodePools {
			if strings.HasPrefix(np.Name, prefix) {
				out = append(out, np.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// newCompletionCommand prints the shell completion scripts (cobra's,
// written where the command's output goes).
func newCompletionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or PowerShell",
		Long: `completion prints a script that completes nodewright's commands, flags
and flag values (scenario names, output formats, the NodePools of the
manifests given with -f) in your shell.`,
		Args: cobra.NoArgs,
	}
	for _, shell := range []struct {
		name string
		gen  func(root *cobra.Command, out io.Writer) error
	}{
		{"bash", func(root *cobra.Command, out io.Writer) error { return root.GenBashCompletionV2(out, true) }},
		{"zsh", func(root *cobra.Command, out io.Writer) error { return root.GenZshCompletion(out) }},
		{"fish", func(root *cobra.Command, out io.Writer) error { return root.GenFishCompletion(out, true) }},
		{"powershell", func(root *cobra.Command, out io.Writer) error { return root.GenPowerShellCompletionWithDesc(out) }},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   shell.name,
			Short: "Print the completion script for " + shell.name,
			Args:  cobra.NoArgs,
			RunE:  func(c *cobra.Command, _ []string) error { return shell.gen(c.Root(), c.OutOrStdout()) },
		})
	}
	return cmd
}
