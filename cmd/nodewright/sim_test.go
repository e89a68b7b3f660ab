package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
)

// `nodewright sim` on a scenario whose nodes never register (S4), run as
// a user runs it — from a directory outside any checkout, the control
// plane in the user's cache — exits with status 2 once its timeout
// passes, saying what is pending and why, after the summary and the
// figures.
func TestSimFailsWhenTheWorkloadDoesNotConverge(t *testing.T) {
	dir, err := controlplane.FindAssets()
	if err != nil || !controlplane.HasAssets(dir) {
		t.Skip("the control-plane binaries are not built (hack/controlplane.sh)")
	}
	bin := filepath.Join(t.TempDir(), "nodewright")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, "nodewright"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, controlplane.AssetsIn(filepath.Join(cache, "nodewright"))); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "sim", "--scenario", "s4", "--timeout", "25s", "--stall", "20s")
	cmd.Dir = t.TempDir()
	cmd.Env = append(withoutAssets(os.Environ()), "XDG_CACHE_HOME="+cache)
	var out, progress bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &progress
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("sim on s4: %v, want exit status 2\n%s\n%s", err, out.String(), progress.String())
	}
	for _, want := range []string{"error: s4-aws-auth-controller-role did not converge", "of 2 pods Running", "pending:", "Registering", "problems listed under Why"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, tail(progress.String()))
		}
	}
	for _, want := range []string{"Why:", "is not mapped in the cluster's aws-auth ConfigMap", "Figures: first node Ready after never", "API requests by nodewright"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, out.String())
		}
	}
}

// withoutAssets is env without KUBEBUILDER_ASSETS.
func withoutAssets(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, controlplane.AssetsEnv+"=") })
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
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

// --kubelet-failure becomes a KubeletFailure step; a malformed value is
// refused with the form to use.
func TestKubeletFailureFlag(t *testing.T) {
	step, err := kubeletFailureStep("gpu:2:KernelReady=False")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: KubeletFailure", `nodePool: "gpu"`, "nodes: 2", `"KernelReady": "False"`} {
		if !strings.Contains(string(step.Manifest), want) {
			t.Errorf("step %s does not say %s", step.Manifest, want)
		}
	}
	if step, err := kubeletFailureStep("default:Ready=Unknown"); err != nil || !strings.Contains(string(step.Manifest), "nodes: 1") {
		t.Errorf("default:Ready=Unknown: %v %s", err, step.Manifest)
	}
	for _, bad := range []string{"default", "default:0:Ready=False", ":Ready=False", "default:Ready", "a:b:c:d"} {
		if _, err := kubeletFailureStep(bad); err == nil || !strings.Contains(err.Error(), "NODEPOOL[:NODES]:CONDITION=STATUS") {
			t.Errorf("%q: %v, want the form to use", bad, err)
		}
	}
}

// `nodewright sim` on a machine with neither the control plane built nor
// Go to build it says exactly what it needs, and fails.
func TestSimSaysWhatItNeeds(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nodewright")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "sim", "--scenario", "healthy")
	cmd.Dir = t.TempDir()
	cmd.Env = append(withoutAssets(os.Environ()), "XDG_CACHE_HOME="+t.TempDir(), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("sim without a control plane: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"installing the control plane into", "the Go toolchain", "https://go.dev/dl/", "to build etcd v3.6"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sim does not say %q:\n%s", want, out)
		}
	}
}
