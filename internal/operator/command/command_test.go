package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodewright/nodewright/internal/operator"
)

// The controller logs one JSON object per line with the keys given, and
// debug lines only at --log-level debug.
func TestControllerLogs(t *testing.T) {
	var buf bytes.Buffer
	log, err := Logger(&buf, "json", "info")
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
	if log, err = Logger(&buf, "json", "debug"); err != nil {
		t.Fatal(err)
	}
	log.V(1).Info("pod cannot be scheduled")
	if !strings.Contains(buf.String(), "pod cannot be scheduled") {
		t.Errorf("debug line missing at --log-level debug: %q", buf.String())
	}
	for _, bad := range [][2]string{{"yaml", "info"}, {"json", "trace"}} {
		if _, err := Logger(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("Logger(%q, %q) accepted", bad[0], bad[1])
		}
	}
}

// controller-runtime's and client-go's own lines go through the
// controller's logger: every line written is one JSON object, nothing is
// printed about a logger never set, and their messages are kept.
// controller-runtime keeps the first logger a process installs, so this
// runs in a process of its own.
func TestOneLoggerForEverything(t *testing.T) {
	if os.Getenv("NODEWRIGHT_LOGGER_CHILD") == "1" {
		log, err := Logger(os.Stdout, "json", "info")
		if err != nil {
			t.Fatal(err)
		}
		InstallLogger(log)
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

// A VM memory share outside [0, 1) or a negative count of reserved
// interfaces is refused, naming the flag.
func TestInstanceTypeSettingsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		flag  string
		share float64
		enis  int
	}{{"--vm-memory-overhead-percent", 7.5, 0}, {"--vm-memory-overhead-percent", -0.1, 0}, {"--reserved-enis", 0.075, -1}} {
		cfg := operator.DefaultConfig()
		cfg.ClusterName, cfg.VMMemoryOverheadPercent, cfg.ReservedENIs = "prod-eu", tc.share, tc.enis
		if err := checkFlags("aws", false, &cfg); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s with %g and %d: %v; want a refusal naming it", tc.flag, tc.share, tc.enis, err)
		}
	}
	cfg := operator.DefaultConfig()
	cfg.ClusterName, cfg.VMMemoryOverheadPercent = "prod-eu", 0.075
	if err := checkFlags("aws", false, &cfg); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// Karpenter's settings left in the environment (a Deployment moved over
// as it is) are named with what to use instead, not silently ignored;
// those nodewright reads, and other variables, are not.
func TestKarpenterSettingsInTheEnvironmentAreNamed(t *testing.T) {
	got := unreadKarpenterSettings([]string{"MIN_VALUES_POLICY=BestEffort", "CLUSTER_NAME=prod-eu", "RESERVED_ENIS=1", "HOME=/root", "LOG_OUTPUT_PATHS=stdout", "PREFERENCE_POLICY="})
	if len(got) != 3 {
		t.Fatalf("warnings %q; want three", got)
	}
	for i, want := range []string{"CLUSTER_NAME is one of Karpenter's settings, which nodewright does not read; use --cluster-name",
		"LOG_OUTPUT_PATHS", "MIN_VALUES_POLICY is one of Karpenter's settings, which nodewright does not read; its counterpart: nothing yet"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("warning %q lacks %q", got[i], want)
		}
	}
}
