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

	"github.com/nodewright/nodewright/internal/scheduling"
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

// A VM memory share outside [0, 1), a negative count of reserved
// interfaces or a policy Karpenter does not name is refused, naming the
// flag, whether given as a flag or in the environment.
func TestDecisionSettingsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		flag string
	}{
		{[]string{"--vm-memory-overhead-percent=7.5"}, nil, "--vm-memory-overhead-percent"},
		{nil, map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "-0.1"}, "--vm-memory-overhead-percent"},
		{[]string{"--reserved-enis", "-1"}, nil, "--reserved-enis"},
		{[]string{"--min-values-policy=Lenient"}, nil, "--min-values-policy"},
		{nil, map[string]string{"PREFERENCE_POLICY": "ignore"}, "--preference-policy"},
	} {
		if _, err := ControllerDecisions(tc.args, tc.env, false); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%q %v: %v; want a refusal naming %s", tc.args, tc.env, err, tc.flag)
		}
	}
}

// The settings are read as the controller reads them: a flag wins over
// its environment variable, which wins over the default; other flags are
// passed over; Karpenter's controller ignores DRA requests unless told
// otherwise, nodewright's plans for them.
func TestControllerDecisionsAreReadAsTheControllerReadsThem(t *testing.T) {
	d, err := ControllerDecisions([]string{"--cluster-name=prod-eu", "--min-values-policy", "BestEffort", "--reserved-enis=2", "--log-level=debug"},
		map[string]string{"MIN_VALUES_POLICY": "Strict", "PREFERENCE_POLICY": "Ignore", "VM_MEMORY_OVERHEAD_PERCENT": "0.05"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (scheduling.Policy{RelaxMinValues: true, IgnorePreferences: true}); d.Policy != want {
		t.Errorf("policy %+v, want %+v", d.Policy, want)
	}
	if d.ReservedENIs != 2 || d.VMMemoryOverheadPercent != 0.05 || d.IgnoreDRARequests {
		t.Errorf("read %+v", d)
	}
	defaults, err := ControllerDecisions(nil, nil, false)
	if err != nil || defaults.Policy != (scheduling.Policy{}) || defaults.VMMemoryOverheadPercent != 0.075 || defaults.ReservedENIs != 0 || defaults.IgnoreDRARequests {
		t.Errorf("nodewright's defaults %+v (%v)", defaults, err)
	}
	karpenter, err := ControllerDecisions(nil, map[string]string{"CLUSTER_NAME": "prod-eu"}, true)
	if err != nil || !karpenter.IgnoreDRARequests {
		t.Errorf("Karpenter's defaults %+v (%v): it ignores DRA requests", karpenter, err)
	}
	if k, _ := ControllerDecisions(nil, map[string]string{"IGNORE_DRA_REQUESTS": "false"}, true); k.IgnoreDRARequests {
		t.Error("Karpenter with IGNORE_DRA_REQUESTS=false plans for resource claims")
	}
}

// Karpenter's settings left in the environment (a Deployment moved over
// as it is) are named with what to use instead, not silently ignored;
// those nodewright reads, and other variables, are not.
func TestKarpenterSettingsInTheEnvironmentAreNamed(t *testing.T) {
	got := unreadKarpenterSettings([]string{"MIN_VALUES_POLICY=BestEffort", "CLUSTER_NAME=prod-eu", "RESERVED_ENIS=1", "HOME=/root", "LOG_OUTPUT_PATHS=stdout", "PREFERENCE_POLICY=Ignore", "EKS_CONTROL_PLANE=true"})
	if len(got) != 3 {
		t.Fatalf("warnings %q; want three", got)
	}
	for i, want := range []string{"CLUSTER_NAME is one of Karpenter's settings, which nodewright does not read; use --cluster-name",
		"EKS_CONTROL_PLANE is one of Karpenter's settings, which nodewright does not read; its counterpart: nothing yet", "LOG_OUTPUT_PATHS"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("warning %q lacks %q", got[i], want)
		}
	}
}
