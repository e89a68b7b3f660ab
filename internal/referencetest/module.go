// Package referencetest fetches, for tests, the modules whose artifacts
// are checked against: the reference autoscaler's CRDs, examples and test
// cases, through the Go module proxy into the module cache. Nothing of
// them is kept in this repository.
package referencetest

import (
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// Toolchain is the Go release the go command switches to for modules that
// need a newer Go than the machine's (the AWS provider v1.15 needs
// 1.26.10): the proxy serves it like a module.
const Toolchain = "go1.27.3"

// AWSProvider is the reference's AWS provider module, and the versions
// checked against: the newest release and the long-term support line.
const (
	AWSProvider    = "github.com/aws/karpenter-provider-aws"
	AWSProviderLTS = "v1.14.3"
)

// AWSProviderNew is the newest release checked against: v1.15.2, or the
// release NODEWRIGHT_REFERENCE names (make reference-newest checks the
// newest the module proxy serves).
var AWSProviderNew = cmp.Or(os.Getenv("NODEWRIGHT_REFERENCE"), "v1.15.2")

// ModuleDir downloads module@version through the module proxy (once: the
// module cache keeps it) and returns its directory.
func ModuleDir(t testing.TB, module, version string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to download %s@%s: %v", module, version, err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "mod", "download", "-json", module+"@"+version) //nolint:gosec // the go command, on a module the tests name
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN="+Toolchain)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	_ = json.Unmarshal(out, &mod)
	if err != nil || mod.Dir == "" {
		t.Fatalf("downloading %s@%s through the Go module proxy (GOPROXY=%s) failed: %v %s\n"+
			"this test compares nodewright with the reference's own files; run it where the module proxy is reachable",
			module, version, os.Getenv("GOPROXY"), err, mod.Error)
	}
	return mod.Dir
}
