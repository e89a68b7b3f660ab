package referencetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// Oracle is a program built at test time in a temporary module from
// another project's code (the kubelet's, nodeadm's) and a small main of
// ours over it, so that generated inputs can be run through the real
// implementation. Nothing of the other project is kept in this repository.
type Oracle struct {
	// Name names the program in messages and in the cache.
	Name string
	// GoMod is the temporary module's go.mod; Files are its other files
	// (main.go at least), by path.
	GoMod string
	Files map[string]string
	// Toolchain, when set, is the GOTOOLCHAIN the build needs.
	Toolchain string
	// TestDepsMissing: modules only the other project's tests import are
	// not served by the proxy; the module graph is resolved without them
	// (go mod tidy -e), and the build fails if the program needs one.
	TestDepsMissing bool
}

// Build builds the oracle once per source (the binary is kept in the
// user's cache, as the control plane's are) and returns its path.
func (o Oracle) Build(t testing.TB) string {
	t.Helper()
	h := sha256.New()
	h.Write([]byte(o.GoMod))
	names := make([]string, 0, len(o.Files))
	for name := range o.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		h.Write([]byte(name + "\x00" + o.Files[name] + "\x00"))
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "nodewright", "oracle-"+o.Name+"-"+hex.EncodeToString(h.Sum(nil)[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build %s: %v", o.Name, err)
	}
	src := t.TempDir()
	files := map[string]string{"go.mod": o.GoMod}
	for name, body := range o.Files {
		files[name] = body
	}
	for name, body := range files {
		path := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if o.Toolchain != "" {
		env = append(env, "GOTOOLCHAIN="+o.Toolchain)
	}
	tidyArgs := []string{"mod", "tidy"}
	if o.TestDepsMissing {
		tidyArgs = append(tidyArgs, "-e")
	}
	tidy := exec.CommandContext(t.Context(), goTool, tidyArgs...) //nolint:gosec // the go command on a module the test writes
	tidy.Dir, tidy.Env = src, env
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("resolving %s's modules through the Go module proxy (GOPROXY=%s): %v\n%s\nrun this test where the module proxy is reachable", o.Name, os.Getenv("GOPROXY"), err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o750); err != nil {
		t.Fatal(err)
	}
	// Test packages run at once may build the same oracle: each builds
	// to a name of its own and the last rename wins (the builds are the
	// same).
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	build := exec.CommandContext(t.Context(), goTool, "build", "-o", tmp, ".") //nolint:gosec // as above
	build.Dir, build.Env = src, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", o.Name, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// RunLines runs a built oracle on the input (one JSON object a line, as
// the oracles read it) and returns its output lines, failing the test
// with the oracle's own error output when it fails.
func RunLines(t testing.TB, bin string, input []byte) [][]byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oracle %s: %v\n%s", filepath.Base(bin), err, stderr.String())
	}
	return bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
}
