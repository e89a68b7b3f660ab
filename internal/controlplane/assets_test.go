package controlplane_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/controlplane"
)

// fakeTools puts a go that records its arguments and writes the -o file,
// and an etcd, on an otherwise empty PATH.
func fakeTools(t *testing.T, withGo, withEtcd bool) (bin, record string) {
	t.Helper()
	bin = t.TempDir()
	record = filepath.Join(t.TempDir(), "go-calls")
	if withGo {
		script := "#!/bin/sh\necho \"$PWD $*\" >> " + record + "\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then echo built > \"$2\"; fi; shift; done\n"
		if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if withEtcd {
		if err := os.WriteFile(filepath.Join(bin, "etcd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	return bin, record
}

// Without Go or etcd, installing says exactly what is needed and where to
// get it.
func TestInstallSaysWhatItNeeds(t *testing.T) {
	fakeTools(t, false, false)
	err := controlplane.Install(context.Background(), t.TempDir(), &bytes.Buffer{})
	for _, want := range []string{"the Go toolchain (go 1.25 or newer on PATH", "https://go.dev/dl/", "etcd on PATH", "apt-get install etcd-server", controlplane.Version()} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Install without go or etcd: %v; want it to say %q", err, want)
		}
	}
	fakeTools(t, true, false)
	err = controlplane.Install(context.Background(), t.TempDir(), &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "Go toolchain") || !strings.Contains(err.Error(), "etcd") {
		t.Errorf("Install without etcd: %v; want it to name etcd only", err)
	}
}

// Install builds each missing binary from the pinned module with progress,
// links etcd, and builds nothing the second time.
func TestInstallBuildsWhatIsMissing(t *testing.T) {
	bin, record := fakeTools(t, true, true)
	dir := controlplane.AssetsIn(t.TempDir())
	var progress bytes.Buffer
	if err := controlplane.Install(context.Background(), dir, &progress); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(record)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != len(controlplane.Binaries) {
		t.Fatalf("go was called %d times, want %d: %s", len(lines), len(controlplane.Binaries), calls)
	}
	for i, b := range controlplane.Binaries {
		if !strings.Contains(lines[i], "build -trimpath") || !strings.HasSuffix(lines[i], "k8s.io/kubernetes/cmd/"+b) {
			t.Errorf("call %d: %s", i, lines[i])
		}
		if !strings.Contains(progress.String(), "building "+b+" "+controlplane.Version()) {
			t.Errorf("no progress for %s in %q", b, progress.String())
		}
	}
	src := strings.Fields(lines[0])[0]
	for _, f := range []string{"go.mod", "go.sum", "tools.go"} {
		if _, err := os.Stat(filepath.Join(src, f)); err != nil {
			t.Errorf("the module's %s was not written where go ran: %v", f, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "etcd")); err != nil || target != filepath.Join(bin, "etcd") {
		t.Errorf("etcd link %q (%v)", target, err)
	}
	if !controlplane.HasAssets(dir) {
		t.Error("the installed directory is not complete")
	}
	if err := controlplane.Install(context.Background(), dir, &progress); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(record); len(again) != len(calls) {
		t.Errorf("a second install built again: %s", again)
	}
}

// Outside a checkout, the binaries are looked for in the user's cache.
func TestFindAssetsOutsideACheckout(t *testing.T) {
	t.Setenv(controlplane.AssetsEnv, "")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Chdir(t.TempDir())
	dir, err := controlplane.FindAssets()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "nodewright", "k8s-"+controlplane.Version()); dir != want {
		t.Errorf("FindAssets() = %s, want %s", dir, want)
	}
}
