package kubelet

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/referencetest"
)

// KubernetesVersion is the kubelet release the model is checked against;
// its staging modules (k8s.io/component-base, k8s.io/kubelet, ...) are the
// v0 releases of the same minor and patch.
const KubernetesVersion = "v1.34.3"

// oracle builds the kubelet's own command-line handling from
// k8s.io/kubernetes (testdata/oracle/main.go over its options package)
// in a temporary module.
func oracle(t testing.TB) string {
	t.Helper()
	dir := referencetest.ModuleDir(t, "k8s.io/kubernetes", KubernetesVersion)
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(filepath.Join("testdata", "oracle", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	var mod strings.Builder
	mod.WriteString("module kubeletoracle\n\ngo 1.24\n\nrequire k8s.io/kubernetes " + KubernetesVersion + "\n\n")
	// k8s.io/kubernetes requires its staging modules at v0.0.0 and
	// replaces them with its own directories; a module that requires it
	// names their published releases instead.
	for _, m := range regexp.MustCompile(`(?m)^\s*(k8s\.io/[a-z0-9-]+) v0\.0\.0$`).FindAllStringSubmatch(string(goMod), -1) {
		mod.WriteString("replace " + m[1] + " => " + m[1] + " " + staging + "\n")
	}
	return referencetest.Oracle{Name: "kubelet-" + KubernetesVersion, GoMod: mod.String(), Files: map[string]string{"main.go": string(main)}}.Build(t)
}

// oracleInput is one kubelet start: its arguments and, when not empty,
// its configuration file.
type oracleInput struct {
	Args   []string `json:"args"`
	Config string   `json:"config,omitempty"`
}

// oracleTaint and oracleOutput are what the oracle prints for a start.
type oracleTaint struct{ Key, Value, Effect string }

type oracleOutput struct {
	Error          string            `json:"error"`
	Labels         map[string]string `json:"labels"`
	Taints         []oracleTaint     `json:"taints"`
	MaxPods        int32             `json:"maxPods"`
	PodsPerCore    int32             `json:"podsPerCore"`
	ClusterDNS     []string          `json:"clusterDNS"`
	KubeReserved   map[string]string `json:"kubeReserved"`
	SystemReserved map[string]string `json:"systemReserved"`
	EvictionHard   map[string]string `json:"evictionHard"`
	CloudProvider  string            `json:"cloudProvider"`
}

// runOracle starts the real kubelet's flag handling on each input.
func runOracle(t testing.TB, inputs []oracleInput) []oracleOutput {
	t.Helper()
	stdin, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), oracle(t)) //nolint:gosec // built above
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the kubelet oracle: %v", err)
	}
	var results []oracleOutput
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("the kubelet oracle printed %d results for %d inputs (%v)", len(results), len(inputs), err)
	}
	return results
}

// oracleFlags are the flags the real kubelet defines.
func oracleFlags(t testing.TB) []Flag {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), oracle(t), "flags").Output() //nolint:gosec // built above
	if err != nil {
		t.Fatalf("the kubelet oracle: %v", err)
	}
	var flags []Flag
	if err := json.Unmarshal(out, &flags); err != nil {
		t.Fatal(err)
	}
	return flags
}
