package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

// nodewright is the binary under test, built once by TestMain.
var nodewright string

func TestMain(m *testing.M) {
	harness.Quiet() // the operator's logs are not the tests' output
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "nodewright-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		nodewright = filepath.Join(dir, "nodewright")
		build := exec.Command("go", "build", "-o", nodewright, "../../cmd/nodewright")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building nodewright:", err)
			return 1
		}
		return m.Run()
	}())
}

type finding struct {
	Code, Severity, Object, Message, Evidence, Fix string
}

// doctor runs `nodewright doctor` against the simulation's cluster as a
// user would, with its kubeconfig, and returns the findings and the exit
// status.
func doctor(t *testing.T, sim *runner.Sim, args ...string) ([]finding, int) {
	t.Helper()
	cmd := exec.Command(nodewright, append([]string{"doctor", "-o", "json", "--kubeconfig", sim.Plane.KubeconfigPath}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	status := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		status = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var report struct{ Findings []finding }
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("doctor %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
	}
	t.Logf("doctor %v (exit %d): %+v", args, status, report.Findings)
	return report.Findings, status
}

// expectFinding asserts a finding with the code on the object (a prefix
// such as "NodeClaim/" matches any) whose text contains the fragments.
func expectFinding(t *testing.T, findings []finding, code, object string, fragments ...string) {
	t.Helper()
	for _, f := range findings {
		if f.Code != code || !strings.HasPrefix(f.Object, object) {
			continue
		}
		all, complete := f.Message+"\n"+f.Evidence+"\n"+f.Fix, true
		for _, frag := range fragments {
			complete = complete && strings.Contains(all, frag)
		}
		if complete {
			return
		}
	}
	t.Errorf("no %s finding on %s mentioning %q: %+v", code, object, fragments, findings)
}

func expectHealthy(t *testing.T, findings []finding, status int) {
	t.Helper()
	if status != 0 {
		t.Errorf("doctor exited %d on a healthy cluster", status)
	}
	for _, f := range findings {
		if f.Severity != "info" {
			t.Errorf("finding on a healthy cluster: %+v", f)
		}
	}
}
