package bottlerocket_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/boot/bottlerocket"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelettest"
)

// debianCrates is where Debian's librust-*-dev packages keep their crates.
const debianCrates = "/usr/share/cargo/registry"

// settingsOracle builds testdata/oracle (the settings model's kubernetes
// types stated in Rust over serde and toml_edit, the parser of the toml
// crate Bottlerocket uses) offline from Debian's crates, once per source:
// the binary is kept in the user's cache.
func settingsOracle(t *testing.T) string {
	t.Helper()
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		t.Fatal("cargo is needed to build the Bottlerocket settings oracle: apt-get install cargo librust-toml-edit-dev librust-serde-json-dev librust-serde-derive-dev librust-regex-dev (.ci/run does)")
	}
	for _, crate := range []string{"toml_edit-", "serde_json-", "serde_derive-", "regex-"} {
		matches, _ := filepath.Glob(filepath.Join(debianCrates, crate+"*"))
		if len(matches) == 0 {
			t.Fatalf("Debian's %s crate is not in %s: apt-get install librust-toml-edit-dev librust-serde-json-dev librust-serde-derive-dev librust-regex-dev (.ci/run does)", strings.TrimSuffix(crate, "-"), debianCrates)
		}
	}
	h := sha256.New()
	for _, name := range []string{"Cargo.toml", "src/main.rs"} {
		data, err := os.ReadFile(filepath.Join("testdata", "oracle", name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(data)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "nodewright", "oracle-bottlerocket-settings-"+hex.EncodeToString(h.Sum(nil)[:6]))
	bin := filepath.Join(dir, "target", "release", "bottlerocket-settings-oracle")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	for name, body := range map[string]string{
		".cargo/config.toml": "[source.crates-io]\nreplace-with = \"debian\"\n[source.debian]\ndirectory = \"" + debianCrates + "\"\n[net]\noffline = true\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"Cargo.toml", "src/main.rs"} {
		data, _ := os.ReadFile(filepath.Join("testdata", "oracle", name))
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.CommandContext(t.Context(), cargo, "build", "--release", "--offline", "-q")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Bottlerocket settings oracle: %v\n%s", err, out)
	}
	return bin
}

type oracleOutput struct {
	Kubernetes map[string]any `json:"kubernetes"`
	Error      string         `json:"error"`
}

func runSettingsOracle(t *testing.T, docs []string) []oracleOutput {
	t.Helper()
	in, _ := json.Marshal(docs)
	cmd := exec.CommandContext(t.Context(), settingsOracle(t))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Bottlerocket settings oracle: %v\n%s", err, stderr.String())
	}
	var outs []oracleOutput
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&outs); err != nil || len(outs) != len(docs) {
		t.Fatalf("the Bottlerocket settings oracle answered %d of %d: %v", len(outs), len(docs), err)
	}
	return outs
}

func gunzipped(data string) string {
	if !strings.HasPrefix(data, "\x1f\x8b") {
		return data
	}
	r, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		return data
	}
	out, _ := io.ReadAll(r)
	return string(out)
}

// normal is a decoded value as JSON reads it back (numbers as text), for
// comparing the two readings.
func normal(v any) string {
	b, _ := json.Marshal(v)
	var out any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	_ = dec.Decode(&out)
	b, _ = json.Marshal(out)
	return string(b)
}

// TestGeneratedBottlerocketSettingsAsTheNodeTakesThem runs generated
// Bottlerocket user data through the model and through the settings
// oracle (toml_edit's parsing, serde's typing into the settings model's
// kubernetes types), and the settings taken through the kubelet's own
// flag handling (built from k8s.io/kubernetes): whether the settings are
// taken, what they are, and whether and how the kubelet starts must
// agree.
func TestGeneratedBottlerocketSettingsAsTheNodeTakesThem(t *testing.T) {
	n := boottest.Cases(600)
	inputs := make([]boottest.Input, n)
	docs := make([]string, n)
	for i := range inputs {
		inputs[i] = boottest.BottlerocketSettings(uint64(i + 1))
		docs[i] = gunzipped(inputs[i].UserData)
	}
	oracle := runSettingsOracle(t, docs)
	machine := bottlerocket.Machine{MaxPods: 29}

	var kubeletInputs []kubelettest.Input
	owner := map[int]int{}
	for i, o := range oracle {
		k := o.Kubernetes
		if o.Error != "" || k["cluster-name"] == nil || k["api-server"] == nil || k["cluster-certificate"] == nil {
			continue
		}
		owner[i] = len(kubeletInputs)
		kubeletInputs = append(kubeletInputs, kubeletInputOf(k, machine))
	}
	fromKubelet := kubelettest.Run(t, kubeletInputs)

	agree, listed := 0, map[string]int{}
	for i, in := range inputs {
		k, _, err := bottlerocket.Read([]byte(in.UserData))
		o := oracle[i]
		var notModelled *bottlerocket.NotModelledError
		var diff string
		switch {
		case errorsAs(err, &notModelled):
			listed["a setting of some versions only"]++
			continue
		case (err != nil) != (o.Error != ""):
			diff = fmt.Sprintf("the settings: the model says %v, the oracle %q", err, o.Error)
		case err == nil && normal(k) != normal(o.Kubernetes):
			diff = fmt.Sprintf("settings.kubernetes: the model reads %s, the oracle %s", normal(k), normal(o.Kubernetes))
		default:
			diff = compareBoot(bottlerocket.Boot([]byte(in.UserData), machine), owner, i, fromKubelet)
		}
		if diff != "" {
			t.Errorf("input %d (%s):\n%s\n%s", in.Seed, strings.Join(in.Constructs, ", "), docs[i], diff)
			continue
		}
		agree++
	}
	fmt.Printf("Bottlerocket settings: %d of %d generated user data agree with the settings oracle and the kubelet; listed differences: %v\n", agree, n, listed)
}

func errorsAs(err error, target **bottlerocket.NotModelledError) bool {
	e, ok := err.(*bottlerocket.NotModelledError) //nolint:errorlint // Read returns it as it is
	if ok {
		*target = e
	}
	return ok
}

// compareBoot compares the model's outcome with the kubelet's start on
// the settings the oracle took.
func compareBoot(got boot.Outcome, owner map[int]int, i int, fromKubelet []kubelettest.Output) string {
	j, started := owner[i]
	switch {
	case !started:
		if got.Verdict != boot.NeverJoins {
			return "the settings are refused or name no cluster; the model says " + got.Summary()
		}
		return ""
	case fromKubelet[j].Error != "":
		if got.Verdict != boot.NeverJoins {
			return "the kubelet exits (" + fromKubelet[j].Error + "); the model says " + got.Summary()
		}
		return ""
	case got.Verdict != boot.Joins:
		return "the node joins; the model says " + got.Summary()
	}
	real := fromKubelet[j]
	var taints, realTaints []string
	for _, t := range got.Kubelet.RegisterWithTaints {
		taints = append(taints, t.ToString())
	}
	for _, t := range real.Taints {
		realTaints = append(realTaints, t.String())
	}
	slices.Sort(taints)
	slices.Sort(realTaints)
	if !slices.Equal(taints, realTaints) || !maps.Equal(got.Kubelet.Labels, real.Labels) || got.Kubelet.MaxPods != real.MaxPods {
		return fmt.Sprintf("the kubelet registers taints %v labels %v maxPods %d; the model says taints %v labels %v maxPods %d",
			realTaints, real.Labels, real.MaxPods, taints, got.Kubelet.Labels, got.Kubelet.MaxPods)
	}
	return ""
}

// kubeletInputOf is the kubelet's command line and file on a node whose
// settings.kubernetes the oracle took: the node labels as --node-labels,
// the rest in its configuration file.
func kubeletInputOf(k map[string]any, m bottlerocket.Machine) kubelettest.Input {
	file := map[string]any{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": m.MaxPods, "clusterDNS": []string{"10.100.0.10"}}
	if v, ok := k["max-pods"]; ok {
		file["maxPods"] = v
	}
	switch dns := k["cluster-dns-ip"].(type) {
	case string:
		file["clusterDNS"] = []string{dns}
	case []any:
		file["clusterDNS"] = dns
	}
	for key, field := range map[string]string{"kube-reserved": "kubeReserved", "system-reserved": "systemReserved", "eviction-hard": "evictionHard"} {
		if v, ok := k[key]; ok {
			file[field] = v
		}
	}
	if taints, ok := k["node-taints"].(map[string]any); ok {
		var list []map[string]string
		for key, v := range taints {
			values, isList := v.([]any)
			if !isList {
				values = []any{v}
			}
			for _, x := range values {
				value, effect, _ := strings.Cut(x.(string), ":")
				list = append(list, map[string]string{"key": key, "value": value, "effect": effect})
			}
		}
		file["registerWithTaints"] = list
	}
	raw, _ := json.Marshal(file)
	// The oracle gives the kubelet the file itself.
	args := slices.DeleteFunc(slices.Clone(bottlerocket.KubeletArgs), func(a string) bool { return strings.HasPrefix(a, "--config=") })
	if labels, ok := k["node-labels"].(map[string]any); ok && len(labels) > 0 {
		var kv []string
		for key, v := range labels {
			kv = append(kv, key+"="+v.(string))
		}
		slices.Sort(kv)
		args = append(args, "--node-labels="+strings.Join(kv, ","))
	}
	return kubelettest.Input{Args: args, Config: string(raw)}
}
