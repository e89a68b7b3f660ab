package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go/logging"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/scenarios"
)

// `nodewright controller --cloud sim` against a control plane: it serves
// /healthz and places the healthy scenario's pods.
func TestControllerWithSimulatedCloud(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{Scheduler: true, ControllerManager: true})
	t.Setenv("KUBECONFIG", cp.KubeconfigPath)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthAddr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"controller", "--cloud", "sim", "--cluster-name", "nodewright-sim", "--metrics-addr", "0",
			"--health-addr", healthAddr, "--leader-elect=false", "--batch-idle", "300ms"})
		done <- cmd.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/healthz", healthAddr), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("/healthz never answered: %v", err)
	}
	scheme, _ := operator.Scheme()
	kube, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	name, manifest, err := scenarios.Load("healthy")
	if err != nil {
		t.Fatal(err)
	}
	if err := (&runner.Sim{Kube: kube}).Apply(ctx, name, manifest); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := kube.List(ctx, pods, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return len(pods.Items) == 26, nil
	}); err != nil {
		t.Fatalf("the scenario's pods did not all run: %v", err)
	}
}

// The controller logs one JSON object per line with the keys given, and
// debug lines only at --log-level debug.
func TestControllerLogs(t *testing.T) {
	var buf bytes.Buffer
	log, err := controllerLogger(&buf, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	log.WithName("lifecycle").Info("launched NodeClaim", "NodeClaim", "general-abcde", "instanceType", "m5.large")
	log.V(1).Info("pod cannot be scheduled")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line at info level, got %q", buf.String())
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatalf("not JSON: %q", lines[0])
	}
	if entry["msg"] != "launched NodeClaim" || entry["NodeClaim"] != "general-abcde" || entry["instanceType"] != "m5.large" || entry["logger"] != "lifecycle" || entry["level"] != "info" {
		t.Errorf("log entry %v", entry)
	}
	buf.Reset()
	if log, err = controllerLogger(&buf, "json", "debug"); err != nil {
		t.Fatal(err)
	}
	log.V(1).Info("pod cannot be scheduled")
	if !strings.Contains(buf.String(), "pod cannot be scheduled") {
		t.Errorf("debug line missing at --log-level debug: %q", buf.String())
	}
	for _, bad := range [][2]string{{"yaml", "info"}, {"json", "trace"}} {
		if _, err := controllerLogger(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("controllerLogger(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// --cluster-endpoint takes the API server's URL, and says so otherwise.
func TestClusterEndpointFlag(t *testing.T) {
	_, err := run("controller", "--cluster-name", "c", "--cluster-endpoint", "api.internal:443")
	if err == nil || !strings.Contains(err.Error(), "--cluster-endpoint") || !strings.Contains(err.Error(), "https://") {
		t.Errorf("a host:port endpoint: %v, want an error asking for https://...", err)
	}
}

// A scheduler configuration kube-scheduler would refuse stops the
// controller before it starts, naming the file and the field; simulate
// reads the same file.
func TestSchedulerConfigFlag(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(bad, []byte("podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"controller", "--cluster-name", "c", "--scheduler-config", bad},
		{"simulate", "-f", "../../scenarios/healthy-mixed-arch.yaml", "--scheduler-config", bad},
	} {
		if _, err := run(args...); err == nil || !strings.Contains(err.Error(), bad+": defaultConstraints[0].maxSkew") {
			t.Errorf("%s with a bad scheduler configuration: %v", args[0], err)
		}
	}
	if _, err := run("controller", "--cluster-name", "c", "--scheduler-config", bad+".missing"); err == nil || !strings.Contains(err.Error(), "--scheduler-config") {
		t.Errorf("a missing file: %v", err)
	}
}

// controller-runtime's and client-go's own lines go through the
// controller's logger: every line written is one JSON object, nothing is
// printed about a logger never set, and their messages are kept.
// controller-runtime keeps the first logger a process installs, so this
// runs in a process of its own.
func TestOneLoggerForEverything(t *testing.T) {
	if os.Getenv("NODEWRIGHT_LOGGER_CHILD") == "1" {
		log, err := controllerLogger(os.Stdout, "json", "info")
		if err != nil {
			t.Fatal(err)
		}
		installLogger(log)
		ctrllog.Log.WithName("controller-runtime.manager").Info("starting manager")
		ctrllog.Log.Error(errors.New("boom"), "reconciler error", "controller", "nodeclaim")
		klog.InfoS("attempting to acquire leader lease", "lease", "nodewright/nodewright")
		klog.Errorf("watch of %s ended with: %s", "*v1.Pod", "too old resource version")
		klog.Background().WithName("reflector").Info("caches populated")
		awsLogger(log.WithName("aws")).Logf(logging.Warn, "Response has no supported checksum. Not validating response payload.")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOneLoggerForEverything$")
	cmd.Env = append(os.Environ(), "NODEWRIGHT_LOGGER_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the logging process: %v\n%s", err, stderr.String())
	}
	want := []string{"starting manager", "reconciler error", "attempting to acquire leader lease", "watch of *v1.Pod ended with: too old resource version", "caches populated", "Response has no supported checksum"}
	var logged []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "PASS" || strings.HasPrefix(line, "ok ") || line == "" {
			continue // the test binary's own verdict
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("not one JSON object: %q", line)
			continue
		}
		if strings.Contains(line, "SetLogger") {
			t.Errorf("a logger was never set: %q", line)
		}
		logged = append(logged, fmt.Sprint(entry["msg"]))
	}
	for _, w := range want {
		if !slices.ContainsFunc(logged, func(m string) bool { return strings.Contains(m, w) }) {
			t.Errorf("lost %q; logged %q", w, logged)
		}
	}
	if strings.Contains(stderr.String(), "SetLogger") {
		t.Errorf("a logger was never set: %s", stderr.String())
	}
}
