package userdata_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// The real nodeadm as the module proxy serves it. Its command line checks
// only a plain NodeConfig file; its MIME reading and merging are internal
// packages, so the test copies the module into a temporary directory,
// adds probeMain there and builds it (nothing of nodeadm is kept here).
const (
	nodeadmModule  = "github.com/awslabs/amazon-eks-ami/nodeadm"
	nodeadmVersion = "v0.0.0-20240229193347-cfab22a10647"
)

// probeMain reads a JSON list of base64 user data on standard input and,
// for each, serves it from a fake instance metadata service and asks
// nodeadm's own user data provider for the NodeConfig (MIME parts,
// decoding, merging), printing what it gives: its kubelet section, or its
// error.
const probeMain = `package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/awslabs/amazon-eks-ami/nodeadm/internal/configprovider"
)

type result struct {
	Error   string          ` + "`json:\"error,omitempty\"`" + `
	Kubelet json.RawMessage ` + "`json:\"kubelet,omitempty\"`" + `
}

func main() {
	var inputs []string
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		panic(err)
	}
	var out []result
	for _, in := range inputs {
		data, err := base64.StdEncoding.DecodeString(in)
		if err != nil {
			panic(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/latest/api/token", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "token") })
		mux.HandleFunc("/latest/user-data", func(w http.ResponseWriter, _ *http.Request) { w.Write(data) })
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln)
		os.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://"+ln.Addr().String())
		cfg, err := configprovider.NewUserDataConfigProvider().Provide()
		srv.Close()
		if err != nil {
			out = append(out, result{Error: err.Error()})
			continue
		}
		k, _ := json.Marshal(cfg.Spec.Kubelet)
		out = append(out, result{Kubelet: k})
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// nodeadmProbe builds the probe once per version and probe source, in the
// user's cache.
func nodeadmProbe(t *testing.T) string {
	t.Helper()
	sum := sha256.Sum256([]byte(nodeadmVersion + probeMain))
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "nodewright", "nodeadm-probe-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build nodeadm's reader: %v", err)
	}
	dl := exec.Command(goTool, "mod", "download", "-json", nodeadmModule+"@"+nodeadmVersion)
	dl.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := dl.Output()
	if err != nil {
		t.Fatalf("downloading %s@%s through the module proxy: %v\n%s", nodeadmModule, nodeadmVersion, err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download said %s", out)
	}
	src := t.TempDir()
	if err := copyTree(mod.Dir, src); err != nil {
		t.Fatal(err)
	}
	// The module zip lists vendored modules it does not hold.
	if err := os.RemoveAll(filepath.Join(src, "vendor")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "cmd", "nwprobe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "cmd", "nwprobe", "main.go"), []byte(probeMain), 0o600); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/nwprobe")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nodeadm's reader: %v\n%s", err, out)
	}
	return bin
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

type nodeadmResult struct {
	Error   string `json:"error"`
	Kubelet struct {
		Config map[string]any `json:"config"`
		Flags  []string       `json:"flags"`
	} `json:"kubelet"`
}

// nodeadmReads runs the real nodeadm's reader over each user data.
func nodeadmReads(t *testing.T, inputs []string) []nodeadmResult {
	t.Helper()
	encoded := make([]string, len(inputs))
	for i, in := range inputs {
		encoded[i] = base64.StdEncoding.EncodeToString([]byte(in))
	}
	stdin, _ := json.Marshal(encoded)
	cmd := exec.Command(nodeadmProbe(t))
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodeadm's reader: %v", err)
	}
	var results []nodeadmResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("nodeadm's reader printed %s (%v)", out, err)
	}
	return results
}

// nodeadmCases are user data shapes as users write them for AL2023, each
// as nodewright merges it for a node (AL2023) and, where nodeadm alone
// reads it, as written (Custom).
func nodeadmCases() []struct{ name, family, userData string } {
	const nc = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n"
	mime := func(parts ...string) string {
		var b strings.Builder
		b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n")
		for _, p := range parts {
			b.WriteString("--//\n" + p)
			if !strings.HasSuffix(p, "\n") {
				b.WriteString("\n")
			}
		}
		b.WriteString("--//--\n")
		return b.String()
	}
	ncPart := func(body string) string { return "Content-Type: application/node.eks.aws\n\n" + body }
	shell := "Content-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho hello\n"
	return []struct{ name, family, userData string }{
		{"empty", awsv1.AMIFamilyAL2023, ""},
		{"a script", awsv1.AMIFamilyAL2023, "#!/bin/bash\necho tuned > /etc/motd\n"},
		{"plain NodeConfig with flags", awsv1.AMIFamilyAL2023, nc + "    flags: [\"--node-labels=team=payments\"]\n"},
		{"flag replacing the taints", awsv1.AMIFamilyAL2023, nc + "    flags: [\"--register-with-taints=dedicated=payments:NoSchedule\"]\n"},
		{"flag keeping the unregistered taint", awsv1.AMIFamilyAL2023, nc + "    flags: [\"--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=payments:NoSchedule\"]\n"},
		{"flag with quotes", awsv1.AMIFamilyAL2023, nc + "    flags:\n      - '--register-with-taints=\"karpenter.sh/unregistered:NoExecute\"'\n"},
		{"two flags in one string", awsv1.AMIFamilyAL2023, nc + "    flags: [\"--node-labels=a=b --max-pods=110\"]\n"},
		{"config registerWithTaints and maxPods", awsv1.AMIFamilyAL2023, nc + "    config:\n      maxPods: 110\n      registerWithTaints: [{key: node.cilium.io/agent-not-ready, value: \"true\", effect: NoExecute}]\n"},
		{"config evictionHard deep-merged", awsv1.AMIFamilyAL2023, nc + "    config:\n      evictionHard: {memory.available: 5%}\n      clusterDNS: [10.100.0.10]\n"},
		{"MIME with a script and a NodeConfig", awsv1.AMIFamilyAL2023, mime(shell, ncPart(nc+"    flags: [\"--node-labels=team=payments\"]\n"))},
		{"two NodeConfig parts", awsv1.AMIFamilyAL2023, mime(ncPart(nc+"    config: {maxPods: 50}\n    flags: [--v=2]\n"), ncPart(nc+"    config: {maxPods: 60}\n    flags: [--node-labels=x=y]\n"))},
		{"two YAML documents in a part", awsv1.AMIFamilyCustom, mime(ncPart(nc + "    flags: [\"--register-with-taints=karpenter.sh/unregistered:NoExecute\"]\n---\n" + nc + "    flags: [\"--register-with-taints=dedicated=x:NoSchedule\"]\n"))},
		{"a nested multipart", awsv1.AMIFamilyCustom, mime("Content-Type: multipart/mixed; boundary=\"inner\"\n\n--inner\n" + ncPart(nc+"    flags: [--v=2]\n") + "--inner--\n")},
		{"Custom MIME with the taint flag", awsv1.AMIFamilyCustom, mime(shell, ncPart(nc+"    flags:\n      - --register-with-taints=karpenter.sh/unregistered:NoExecute\n"))},
		{"Custom plain NodeConfig", awsv1.AMIFamilyCustom, nc + "    config:\n      registerWithTaints: [{key: karpenter.sh/unregistered, effect: NoExecute}]\n"},
	}
}

// TestNodeadmReadsAsTheRealOne: for every shape, nodewright's reader
// (validation's, doctor's and the simulated kubelet's) finds a NodeConfig
// exactly when the real nodeadm does, merges the same kubelet
// configuration, and gives the kubelet the same flags (the real one's as
// systemd splits them).
func TestNodeadmReadsAsTheRealOne(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real nodeadm's reader from its module (a few minutes the first time); run without -short")
	}
	cluster := userdata.Cluster{Name: "payments-prod", Endpoint: "https://ABCDEF0123456789.gr7.eu-west-1.eks.amazonaws.com", CABundle: "Q0E=", CIDR: "10.100.0.0/16", DNS: "10.100.0.10"}
	node := userdata.Node{Labels: map[string]string{"team": "payments"}, MaxPods: 58}
	cases := nodeadmCases()
	inputs := make([]string, len(cases))
	for i, c := range cases {
		inputs[i] = c.userData
		if c.family == awsv1.AMIFamilyAL2023 {
			out, err := userdata.Generate(c.family, cluster, node, c.userData)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			inputs[i] = out
		}
	}
	real := nodeadmReads(t, inputs)
	agree := 0
	for i, c := range cases {
		ours, err := userdata.ReadNodeadm([]byte(inputs[i]))
		oursFound := err == nil && ours.Found
		theirs := real[i]
		ok := true
		if oursFound != (theirs.Error == "") {
			t.Errorf("%s: nodewright finds a NodeConfig: %v (%v); nodeadm: %q", c.name, oursFound, err, theirs.Error)
			ok = false
		}
		if oursFound && theirs.Error == "" {
			var words []string
			for _, f := range theirs.Kubelet.Flags {
				words = append(words, userdata.SystemdWords(f)...)
			}
			if !reflect.DeepEqual(ours.Flags, words) && (len(ours.Flags) != 0 || len(words) != 0) {
				t.Errorf("%s: kubelet flags\n  nodewright: %q\n  nodeadm:    %q", c.name, ours.Flags, words)
				ok = false
			}
			if !sameJSON(ours.Config, theirs.Kubelet.Config) {
				t.Errorf("%s: kubelet configuration\n  nodewright: %v\n  nodeadm:    %v", c.name, ours.Config, theirs.Kubelet.Config)
				ok = false
			}
		}
		if ok {
			agree++
		}
	}
	t.Logf("nodewright's reader and nodeadm %s agree on %d of %d user data shapes", nodeadmVersion, agree, len(cases))
}

func sameJSON(a, b map[string]any) bool {
	norm := func(m map[string]any) string {
		if len(m) == 0 {
			return "{}"
		}
		data, _ := json.Marshal(m)
		var v any
		_ = json.Unmarshal(data, &v)
		out, _ := json.Marshal(v)
		return string(out)
	}
	return norm(a) == norm(b)
}
