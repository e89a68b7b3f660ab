// Package kubelettest runs the kubelet's own command-line handling, built
// at test time from k8s.io/kubernetes in a temporary module, on inputs the
// tests generate.
package kubelettest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
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
	_, here, _, _ := runtime.Caller(0)
	main, err := os.ReadFile(filepath.Join(filepath.Dir(here), "testdata", "oracle", "main.go"))
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

// Input is one kubelet start: its arguments and, when not empty,
// its configuration file.
type Input struct {
	Args   []string `json:"args"`
	Config string   `json:"config,omitempty"`
}

// Taint and Output are what the oracle prints for a start.
type Taint struct{ Key, Value, Effect string }

// String is the taint as the kubelet writes it: key[=value]:Effect.
func (t Taint) String() string {
	if t.Value != "" {
		return t.Key + "=" + t.Value + ":" + t.Effect
	}
	return t.Key + ":" + t.Effect
}

// Output is what the kubelet starts with, or the error it exits with.
type Output struct {
	Error          string            `json:"error"`
	Labels         map[string]string `json:"labels"`
	Taints         []Taint           `json:"taints"`
	MaxPods        int32             `json:"maxPods"`
	PodsPerCore    int32             `json:"podsPerCore"`
	ClusterDNS     []string          `json:"clusterDNS"`
	KubeReserved   map[string]string `json:"kubeReserved"`
	SystemReserved map[string]string `json:"systemReserved"`
	EvictionHard   map[string]string `json:"evictionHard"`
	CloudProvider  string            `json:"cloudProvider"`
}

// Run starts the real kubelet's flag handling on each input.
func Run(t testing.TB, inputs []Input) []Output {
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
	var results []Output
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("the kubelet oracle printed %d results for %d inputs (%v)", len(results), len(inputs), err)
	}
	return results
}

// Flags are the flags the real kubelet defines.
func Flags(t testing.TB) []kubelet.Flag {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), oracle(t), "flags").Output() //nolint:gosec // built above
	if err != nil {
		t.Fatalf("the kubelet oracle: %v", err)
	}
	var flags []kubelet.Flag
	if err := json.Unmarshal(out, &flags); err != nil {
		t.Fatal(err)
	}
	return flags
}

// ConfigFile is a configuration written as a KubeletConfiguration file.
func ConfigFile(c *kubelet.Config) string {
	if c == nil {
		return ""
	}
	doc := map[string]any{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": c.MaxPods, "clusterDNS": c.ClusterDNS}
	if c.KubeReserved != nil {
		doc["kubeReserved"] = c.KubeReserved
	}
	if c.EvictionHard != nil {
		doc["evictionHard"] = c.EvictionHard
	}
	if c.RegisterWithTaints != nil {
		doc["registerWithTaints"] = c.RegisterWithTaints
	}
	b, _ := json.Marshal(doc)
	return string(b)
}
