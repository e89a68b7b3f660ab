package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
