package al2023_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// The real nodeadm as the module proxy serves it (its February 2024
// version: one config source, no drop-ins, no base64 or gzip). Its command line checks
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
// decoding, merging) and checks it as nodeadm init does, printing what it
// gives: its kubelet section, or its error.
const probeMain = `package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/awslabs/amazon-eks-ami/nodeadm/internal/api"
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
		if err == nil {
			err = api.ValidateNodeConfig(cfg) // as nodeadm init does next
		}
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
func feb2024Probe(t *testing.T) string {
	t.Helper()
	sum := sha256.Sum256([]byte(nodeadmVersion + probeMain))
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "nodewright", "nodeadm-feb2024-probe-"+hex.EncodeToString(sum[:6]))
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

type feb2024Result struct {
	Error   string `json:"error"`
	Kubelet struct {
		Config map[string]any `json:"config"`
		Flags  []string       `json:"flags"`
	} `json:"kubelet"`
}

// nodeadmReads runs the real nodeadm's reader over each user data.
func feb2024Reads(t *testing.T, inputs []string) []feb2024Result {
	t.Helper()
	encoded := make([]string, len(inputs))
	for i, in := range inputs {
		encoded[i] = base64.StdEncoding.EncodeToString([]byte(in))
	}
	stdin, _ := json.Marshal(encoded)
	cmd := exec.Command(feb2024Probe(t))
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodeadm's reader: %v", err)
	}
	var results []feb2024Result
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("nodeadm's reader printed %s (%v)", out, err)
	}
	return results
}

// nodeadmCases are user data shapes as users write them for AL2023, each
// as nodewright merges it for a node (AL2023) and, where nodeadm alone
// reads it, as written (Custom).
func feb2024Cases() []struct{ name, family, userData string } {
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

// TestGeneratedAL2023UserDataAsFeb2024NodeadmReadsIt runs user data
// through the model's config phase (the user data alone) and through the
// nodeadm the module proxy serves, built at test time: the shapes above,
// and generated inputs as launched without what that version does not
// read (base64 and gzip, which current nodeadm's outcomes in testdata
// cover). Both must find a NodeConfig or fail alike, and merge the same
// kubelet flags and configuration.
func TestGeneratedAL2023UserDataAsFeb2024NodeadmReadsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the real nodeadm's reader from its module (a few minutes the first time); run without -short")
	}
	cluster := userdata.Cluster{Name: "payments-prod", Endpoint: "https://ABCDEF0123456789.gr7.eu-west-1.eks.amazonaws.com", CABundle: "Q0E=", CIDR: "10.100.0.0/16", DNS: "10.100.0.10"}
	node := userdata.Node{Labels: map[string]string{"team": "payments"}, MaxPods: 58}
	type item struct{ name, userData string }
	var items []item
	for _, c := range feb2024Cases() {
		data := c.userData
		if c.family == awsv1.AMIFamilyAL2023 {
			out, err := userdata.Generate(c.family, cluster, node, c.userData)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			data = out
		}
		items = append(items, item{c.name, data})
	}
	skipped := 0
	for i := range boottest.Cases(600) {
		in := al2023.Generate(uint64(i))
		if slices.ContainsFunc(in.Constructs, func(c string) bool { return strings.Contains(c, "base64") || strings.Contains(c, "gzip") }) {
			skipped++
			continue
		}
		out, err := userdata.Generate(awsv1.AMIFamilyAL2023, cluster, node, in.UserData)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, item{fmt.Sprintf("generated %d (%s)", i, strings.Join(in.Constructs, ", ")), out})
	}
	inputs := make([]string, len(items))
	for i, it := range items {
		inputs[i] = it.userData
	}
	real := feb2024Reads(t, inputs)
	agree := 0
	for i, it := range items {
		nc, err := al2023.ReadSources(al2023.UserDataSource([]byte(it.userData)))
		theirs := real[i]
		var diff string
		switch {
		case (err == nil) != (theirs.Error == ""):
			diff = fmt.Sprintf("the model reads a NodeConfig: %v (%v); nodeadm: %q", err == nil, err, theirs.Error)
		case err == nil:
			raw, _ := json.Marshal(theirs.Kubelet)
			diff = compareKubelet(nc, raw)
		}
		if diff == "" {
			agree++
			continue
		}
		t.Errorf("%s:\n%s\n%s", it.name, it.userData, diff)
	}
	t.Logf("AL2023 config phase: %d of %d user data agree with nodeadm %s (%d generated inputs with base64 or gzip left to current nodeadm's outcomes)", agree, len(items), nodeadmVersion, skipped)
}
