package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The controller image's binary links neither the simulated AWS and the
// sim's harness nor Helm (the chart's renderer): the image runs in users'
// clusters with their AWS credentials. The nodewright CLI links both.
func TestTheImageBinaryLinksNoSimulatorAndNoHelm(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	forbidden := func(p string) bool {
		return strings.HasPrefix(p, "github.com/nodewright/nodewright/internal/sim/") ||
			strings.HasPrefix(p, "helm.sh/") || p == "github.com/nodewright/nodewright/charts"
	}
	image := deps("github.com/nodewright/nodewright/cmd/nodewright-controller")
	for _, p := range image {
		if forbidden(p) {
			t.Errorf("the controller image's binary links %s", p)
		}
	}
	cli := deps("github.com/nodewright/nodewright/cmd/nodewright")
	var simulator, helm bool
	for _, p := range cli {
		simulator = simulator || strings.HasPrefix(p, "github.com/nodewright/nodewright/internal/sim/")
		helm = helm || strings.HasPrefix(p, "helm.sh/")
	}
	if !simulator || !helm {
		t.Errorf("the CLI links the simulator %v, Helm %v: want both (sim, --cloud sim; the check above would pass on nothing)", simulator, helm)
	}
	t.Logf("packages linked: controller image %d, CLI %d", len(image), len(cli))
}

// The controller's binary runs the controller and tells its version; it
// refuses --cloud sim, naming the CLI.
func TestTheImageBinaryCommands(t *testing.T) {
	root := newRootCommand()
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	if !strings.Contains(strings.Join(names, " "), "controller") || !strings.Contains(strings.Join(names, " "), "version") {
		t.Errorf("commands %v, want controller and version", names)
	}
	root.SetArgs([]string{"controller", "--cluster-name", "c", "--cloud", "sim"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "nodewright CLI") {
		t.Errorf("--cloud sim: %v, want a refusal naming the CLI", err)
	}
}
