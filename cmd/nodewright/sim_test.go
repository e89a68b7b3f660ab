package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/controlplane"
	"github.com/nodewright/nodewright/internal/sim/runner"
)

// `nodewright sim` on a scenario whose nodes never register (S4) fails
// once its timeout passes, saying what is pending and why, after the
// summary and the figures.
func TestSimFailsWhenTheWorkloadDoesNotConverge(t *testing.T) {
	dir, err := controlplane.FindAssets()
	if err != nil || !controlplane.HasAssets(dir) {
		t.Skip("the control-plane binaries are not built (hack/controlplane.sh)")
	}
	cmd := newRootCommand()
	var out, progress bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&progress)
	cmd.SetArgs([]string{"sim", "--scenario", "s4", "--timeout", "25s", "--stall", "20s"})
	err = cmd.Execute()
	var notConverged *runner.NotConvergedError
	if !errors.As(err, &notConverged) {
		t.Fatalf("sim on s4: %v, want the workload reported as not converged\n%s", err, out.String())
	}
	msg := err.Error()
	for _, want := range []string{"s4-aws-auth-controller-role did not converge", "of 2 pods Running", "pending:", "Registering", "problems listed under Why"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	for _, want := range []string{"Why:", "is not mapped in the cluster's aws-auth ConfigMap", "Figures: first node Ready after never", "API requests by nodewright"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, out.String())
		}
	}
}

func TestNotConvergedSaysWhatIsPending(t *testing.T) {
	err := &runner.NotConvergedError{Step: "scale", Snapshot: &runner.Snapshot{
		Pods: 10, RunningPods: 4, Waiting: map[string]int{"nominated": 5, "unplaceable": 1},
		NodeClaims: []runner.NodeClaim{{Phase: "Ready"}, {Phase: "Launching"}, {Phase: "Launching"}}, Problems: []string{"pod x: no NodePool"},
	}}
	want := "scale did not converge after 0s: 4 of 10 pods Running; pending: 1 unplaceable, 5 nominated; NodeClaims not Ready: 2 Launching; 1 problems listed under Why"
	if err.Error() != want {
		t.Errorf("got  %q\nwant %q", err.Error(), want)
	}
}
