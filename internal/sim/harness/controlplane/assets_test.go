package controlplane_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
)

// fakeGo puts a go that records its arguments and writes the -o file on
// an otherwise empty PATH (none when withGo is false).
func fakeGo(t *testing.T, withGo bool) (record string) {
	t.Helper()
	bin := t.TempDir()
	record = filepath.Join(t.TempDir(), "go-calls")
	if withGo {
		script := "#!/bin/sh\necho \"$PWD $*\" >> " + record + "\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then echo built > \"$2\"; fi; shift; done\n"
		if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	return record
}

// Without Go, installing says exactly what is needed, where to get it and
// what it builds.
func TestInstallSaysWhatItNeeds(t *testing.T) {
	fakeGo(t, false)
	err := controlplane.Install(context.Background(), t.TempDir(), &bytes.Buffer{})
	for _, want := range []string{"the Go toolchain (go 1.26 or newer on PATH", "https://go.dev/dl/", "etcd " + controlplane.EtcdVersion(), controlplane.Version()} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Install without go: %v; want it to say %q", err, want)
		}
	}
}

// Install builds each missing binary from its pinned module with progress
// (etcd from etcd's own module, replacing a link to a system etcd that an
// earlier version left), and builds nothing the second time.
func TestInstallBuildsWhatIsMissing(t *testing.T) {
	record := fakeGo(t, true)
	dir := controlplane.AssetsIn(t.TempDir())
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/etcd", filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
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
		pkg, version, files := "k8s.io/kubernetes/cmd/"+b, controlplane.Version(), []string{"go.mod", "go.sum", "tools.go"}
		if b == "etcd" {
			pkg, version, files = ".", controlplane.EtcdVersion(), []string{"go.mod", "go.sum", "main.go"}
		}
		if !strings.Contains(lines[i], "build -trimpath") || !strings.HasSuffix(lines[i], " "+pkg) {
			t.Errorf("call %d: %s", i, lines[i])
		}
		if !strings.Contains(progress.String(), "building "+b+" "+version) {
			t.Errorf("no progress for %s in %q", b, progress.String())
		}
		src := strings.Fields(lines[i])[0]
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(src, f)); err != nil {
				t.Errorf("%s: the module's %s was not written where go ran: %v", b, f, err)
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "etcd")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("etcd is not a built file: %v %v", fi, err)
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
