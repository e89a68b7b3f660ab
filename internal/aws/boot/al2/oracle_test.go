package al2

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
)

// The real bash runs each generated script, with bootstrap.sh replaced by
// a recorder: a script of the same name that writes the arguments and the
// environment it is started with. Commands the generated scripts run that
// this machine must not run (yum, sysctl) are stubs that succeed.
// It exits with the status the real bootstrap.sh exits with for the same
// arguments and environment (from the statuses file, by parseKey).
const recorder = `#!/bin/bash
args() { if [ $# -gt 0 ]; then printf '%s\0' "$@"; fi; }
{ args "$@"; printf '\1'; env -0; printf '\2'; } >> "$NODEWRIGHT_RECORD"
key=$( { args "$@"; for k in CLUSTER_NAME KUBELET_EXTRA_ARGS USE_MAX_PODS DNS_CLUSTER_IP B64_CLUSTER_CA APISERVER_ENDPOINT; do
  if [ -n "${!k+x}" ]; then printf '\1%s=%s' "$k" "${!k}"; fi; done; } | sha256sum | cut -c1-20)
status=$(grep "^$key " "$NODEWRIGHT_STATUSES" | cut -d' ' -f2)
exit "${status:-0}"
`

// bashCall is one run of bootstrap.sh as bash made it.
type bashCall struct {
	Args []string
	Env  map[string]string
}

// bashRuns runs each user data script in bash with bootstrap.sh in
// eksDir recorded, and returns the calls of each.
func bashRuns(t *testing.T, scripts []string, eksDir string, golden map[string]bootstrapParse) [][]bashCall {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to check the AL2 model: %v", err)
	}
	envTool, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"bash", "env", "sha256sum", "cut", "grep", "cat", "chmod"} {
		target, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s is needed to check the AL2 model: %v", name, err)
		}
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	var statuses strings.Builder
	for key, p := range golden {
		fmt.Fprintf(&statuses, "%s %d\n", key, p.status())
	}
	statusFile := filepath.Join(bin, "statuses")
	if err := os.WriteFile(statusFile, []byte(statuses.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, stub := range []string{"yum", "sysctl"} {
		if err := os.WriteFile(filepath.Join(bin, stub), []byte("#!"+bash+"\nexit 0\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(eksDir, "bootstrap.sh"), []byte(strings.Replace(recorder, "#!/bin/bash", "#!"+bash, 1)), 0o700); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	out := make([][]bashCall, len(scripts))
	for i, script := range scripts {
		path := filepath.Join(work, fmt.Sprintf("part-%03d", i))
		// The kernel reads the #! line, as it does for cloud-init's scripts;
		// /usr/bin/env finds bash on the PATH.
		script = strings.Replace(script, "#!/usr/bin/env bash", "#!"+envTool+" bash", 1)
		script = strings.Replace(script, "#!/bin/bash", "#!"+bash, 1)
		if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		record := filepath.Join(work, fmt.Sprintf("record-%03d", i))
		cmd := exec.CommandContext(t.Context(), path)
		cmd.Env = []string{"PATH=" + bin, "HOME=" + work, "NODEWRIGHT_RECORD=" + record, "NODEWRIGHT_STATUSES=" + statusFile}
		cmd.Dir = work
		_ = cmd.Run() // a script's failure is part of what it does
		data, err := os.ReadFile(record)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, rec := range strings.Split(strings.TrimSuffix(string(data), "\x02"), "\x02") {
			if rec == "" {
				continue
			}
			args, env, _ := strings.Cut(rec, "\x01")
			c := bashCall{Args: strings.Split(strings.TrimSuffix(args, "\x00"), "\x00"), Env: map[string]string{}}
			if args == "" {
				c.Args = nil
			}
			for _, kv := range strings.Split(env, "\x00") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					c.Env[k] = v
				}
			}
			out[i] = append(out[i], c)
		}
	}
	return out
}

// bootstrapVars are the settings of bootstrap.sh the outcome depends on.
var bootstrapVars = []string{"CLUSTER_NAME", "KUBELET_EXTRA_ARGS", "USE_MAX_PODS", "DNS_CLUSTER_IP", "B64_CLUSTER_CA", "APISERVER_ENDPOINT"}

// parseKey names a bootstrap.sh run by its arguments and the environment
// variables it reads.
func parseKey(args []string, env map[string]string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(a + "\x00")
	}
	for _, k := range bootstrapVars {
		if v, ok := env[k]; ok {
			b.WriteString("\x01" + k + "=" + v)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:10])
}

// bootstrapParse is what the real bootstrap.sh made of a run's arguments
// and environment: its exit status after reading them, and its settings.
type bootstrapParse struct {
	Exit int               `json:"exit"`
	Vars map[string]string `json:"vars,omitempty"`
}

// status is the real script's exit status: its argument handling's, and
// 1 when it is left without a cluster name (bootstrap.sh checks that just
// after the part the outcomes are taken from).
func (p bootstrapParse) status() int {
	if p.Exit == 0 && p.Vars["CLUSTER_NAME"] == "" {
		return 1
	}
	return p.Exit
}

const goldenPath = "testdata/bootstrap-parse.json"

// bootstrapGolden is what the real bootstrap.sh made of each run the
// generated inputs make. It is written by the test with
// NODEWRIGHT_BOOTSTRAP_SH naming the script (amazon-eks-ami's
// templates/al2/runtime/bootstrap.sh, its last version before AL2 was
// removed, commit 41298160): its argument handling, up to where it has
// its settings, runs in bash with the commands it calls on the way stubbed.
func loadGolden(t *testing.T) map[string]bootstrapParse {
	t.Helper()
	if os.Getenv("NODEWRIGHT_BOOTSTRAP_SH") != "" {
		return map[string]bootstrapParse{}
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("the outcomes of the real bootstrap.sh: %v (write them with `make boot-golden`)", err)
	}
	golden := map[string]bootstrapParse{}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	return golden
}

// runRealBootstrap runs the real script's argument handling for each run.
func runRealBootstrap(t *testing.T, src string, calls []bashCall, golden map[string]bootstrapParse) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	cut := strings.Index(text, "##allow --reserved-cpus")
	if cut < 0 || !strings.Contains(text, "POSITIONAL=()") {
		t.Fatalf("%s is not the AL2 bootstrap.sh this test reads (its argument handling ends before '##allow --reserved-cpus')", src)
	}
	var print strings.Builder
	print.WriteString("\n{ ")
	for _, v := range bootstrapVars {
		fmt.Fprintf(&print, "printf '%%s\\0' \"%s=${%s:-}\"; ", v, v)
	}
	print.WriteString("} > \"$NODEWRIGHT_PARSE\"\nexit 0\n")
	dir := t.TempDir()
	script := filepath.Join(dir, "bootstrap-parse.sh")
	if err := os.WriteFile(script, []byte(text[:cut]+print.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	stubs := filepath.Join(dir, "bin")
	if err := os.MkdirAll(stubs, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"imds":    "echo token",
		"kubelet": "echo 'Kubernetes v1.29.3-eks-ae9a62a'",
		"vercmp":  "exit 0",
	} {
		if err := os.WriteFile(filepath.Join(stubs, name), []byte("#!/bin/bash\n"+body+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range calls {
		key := parseKey(c.Args, c.Env)
		if _, done := golden[key]; done {
			continue
		}
		out := filepath.Join(dir, "parse")
		_ = os.Remove(out)
		cmd := exec.CommandContext(t.Context(), "bash", append([]string{script}, c.Args...)...)
		cmd.Env = []string{"PATH=" + stubs + ":/usr/bin:/bin", "NODEWRIGHT_PARSE=" + out}
		for _, k := range bootstrapVars {
			if v, ok := c.Env[k]; ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		err := cmd.Run()
		p := bootstrapParse{}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			p.Exit = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if raw, err := os.ReadFile(out); err == nil {
			p.Vars = map[string]string{}
			for _, kv := range strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00") {
				k, v, _ := strings.Cut(kv, "=")
				p.Vars[k] = v
			}
		}
		golden[key] = p
	}
}

// bashRunsWithGolden runs the scripts in bash, bootstrap.sh exiting as
// the real one does; with NODEWRIGHT_BOOTSTRAP_SH set it runs the real
// script's argument handling for every run not yet known, as often as
// new runs appear, and writes the outcomes.
func bashRunsWithGolden(t *testing.T, scripts []string, eksDir string) ([][]bashCall, map[string]bootstrapParse) {
	t.Helper()
	golden := loadGolden(t)
	src := os.Getenv("NODEWRIGHT_BOOTSTRAP_SH")
	for range 5 {
		runs := bashRuns(t, scripts, eksDir, golden)
		var missing []bashCall
		for i, calls := range runs {
			for _, c := range calls {
				if _, ok := golden[parseKey(c.Args, c.Env)]; !ok {
					if src == "" {
						t.Fatalf("input %d: the outcomes of the real bootstrap.sh lack the run %q; write them again with `make boot-golden`", i, c.Args)
					}
					missing = append(missing, c)
				}
			}
		}
		if len(missing) == 0 {
			if src != "" {
				if err := boottest.WriteGolden(goldenPath, golden); err != nil {
					t.Fatal(err)
				}
			}
			return runs, golden
		}
		runRealBootstrap(t, src, missing, golden)
	}
	t.Fatal("the bootstrap.sh runs did not settle")
	return nil, nil
}
