package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command a user can run shows examples in its help, and every
// example command line parses: its command exists, its flags exist and
// take the values written, and it takes the arguments given.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRootCommand()
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		if c != root && !c.IsAvailableCommand() {
			return
		}
		if c.Runnable() && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no examples", c.CommandPath())
		}
		for _, line := range exampleLines(c.Example) {
			checked++
			args := strings.Fields(line)[1:]
			cmd, rest, err := newRootCommand().Find(args)
			if err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
				continue
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if checked < 15 {
		t.Errorf("only %d example command lines were checked", checked)
	}
}

// exampleLines are the nodewright command lines of an Example, joined
// over trailing backslashes, without what follows a redirection or pipe.
func exampleLines(example string) []string {
	var out []string
	joined := strings.ReplaceAll(example, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "nodewright ") {
			continue
		}
		for _, sep := range []string{" > ", " | "} {
			line, _, _ = strings.Cut(line, sep)
		}
		out = append(out, line)
	}
	return out
}

// complete asks the command line for completions as a shell does.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := runStdout(append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if err != nil {
		t.Fatalf("completing %v: %v", args, err)
	}
	var values []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			values = append(values, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return values
}

func TestFlagValuesComplete(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"sim", "--scenario", "s"}, []string{"s1-userdata-register-taints", "s5-arm64-pool"}},
		{[]string{"doctor", "-o", ""}, []string{"table", "json", "yaml"}},
		{[]string{"version", "-o", ""}, []string{"text", "json", "yaml"}},
		{[]string{"doctor", "--cloud", ""}, []string{"sim", "aws"}},
		{[]string{"controller", "--log-format", ""}, []string{"json", "console"}},
		{[]string{"userdata", "-f", "../../scenarios/s5-arm64-pool.yaml", "--nodepool", ""}, []string{"cicd-armapps"}},
	} {
		got := complete(t, c.args...)
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("completing %v: %v, want %s among them", c.args, got, w)
			}
		}
	}
}

// --region plans in the region's zones and says whose prices it uses; a
// name that is no region is refused.
func TestSimulateInARegion(t *testing.T) {
	out, err := runStdout("simulate", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--region", "eu-west-1", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		NodeClaims []struct{ Zone string } `json:"nodeClaims"`
		Warnings   []string                `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.NodeClaims) == 0 {
		t.Fatalf("no NodeClaims planned: %s", out)
	}
	for _, nc := range report.NodeClaims {
		if !strings.HasPrefix(nc.Zone, "eu-west-1") {
			t.Errorf("a NodeClaim planned in %s, not in eu-west-1", nc.Zone)
		}
	}
	if !strings.Contains(strings.Join(report.Warnings, "\n"), "no prices for eu-west-1; these are us-east-1's") {
		t.Errorf("the plan does not say whose prices it uses: %v", report.Warnings)
	}
	for _, bad := range [][]string{{"--region", "eu-west"}, {"--region", "eu-west-1", "--cloud", "sim"}} {
		if _, err := run(append([]string{"simulate", "-f", "../../scenarios/healthy-mixed-arch.yaml"}, bad...)...); err == nil || errors.As(err, new(found)) {
			t.Errorf("simulate %v: %v, want a usage error", bad, err)
		}
	}
}

// --fail-on-unschedulable: status 2 when a pod gets no node, 0 when all
// do; without it, 0 either way.
func TestSimulateFailsOnUnschedulable(t *testing.T) {
	if _, err := run("simulate", "-f", "../../scenarios/s5-arm64-pool.yaml", "--fail-on-unschedulable"); !errors.As(err, new(found)) {
		t.Errorf("a pod without a node: %v, want status 2", err)
	}
	if _, err := run("simulate", "-f", "../../scenarios/s5-arm64-pool.yaml"); err != nil {
		t.Errorf("without --fail-on-unschedulable: %v", err)
	}
	if _, err := run("simulate", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--fail-on-unschedulable"); err != nil {
		t.Errorf("every pod placed: %v", err)
	}
}
