package image_test

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nodewright/nodewright/internal/image"
)

// The image built from a static binary reads back from its OCI layout
// with the entrypoint and non-root user the chart relies on, and its
// binary runs; the same binary and time give the same digest.
func TestImageReadsBackAndRuns(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodewright")
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-s -w -buildid= -X github.com/nodewright/nodewright/internal/version.version=v9.8.7", "../../cmd/nodewright-controller")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nodewright: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	img, err := image.Build(image.Binary{Arch: runtime.GOARCH, Data: data}, "v9.8.7", created)
	if err != nil {
		t.Fatal(err)
	}
	again, err := image.Build(image.Binary{Arch: runtime.GOARCH, Data: data}, "v9.8.7", created)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one binary: %s and %s", d1, d2)
	}
	idx, err := image.Index(map[string]v1.Image{runtime.GOARCH: img})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "layout")
	if err := image.WriteLayout(out, idx); err != nil {
		t.Fatal(err)
	}

	// Read it back as a consumer would.
	read, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := read.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("layout index %+v, %v", m, err)
	}
	if p := m.Manifests[0].Platform; p == nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
		t.Errorf("platform %+v, want linux/%s", p, runtime.GOARCH)
	}
	back, err := read.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := back.Digest(); d != d1 {
		t.Errorf("digest read back %s, built %s", d, d1)
	}
	cfg, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/nodewright" {
		t.Errorf("entrypoint %v, want [/nodewright]", got)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (not root)", cfg.Config.User)
	}
	if !cfg.Created.Equal(created) {
		t.Errorf("created %v, want %v", cfg.Created.Time, created)
	}

	// The one file is the binary, and it runs.
	layers, err := back.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	extracted := filepath.Join(dir, "extracted")
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, hdr.Name)
		if hdr.Mode&0o6000 != 0 {
			t.Errorf("%s is setuid or setgid", hdr.Name)
		}
		f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	if len(files) != 1 || files[0] != "nodewright" {
		t.Fatalf("files %v, want [nodewright]", files)
	}
	got, err := exec.Command(extracted, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(got), "nodewright v9.8.7") {
		t.Errorf("the image's binary says %q (%v), want nodewright v9.8.7", got, err)
	}
	// It runs on AWS only: the simulated account is not in it.
	got, err = exec.Command(extracted, "controller", "--cluster-name", "c", "--cloud", "sim").CombinedOutput()
	if err == nil || !strings.Contains(string(got), "runs on AWS only") {
		t.Errorf("the image's binary with --cloud sim says %q (%v), want a refusal: it has no simulated account", got, err)
	}

	// The tarball carries the same image under its tag.
	tarPath := filepath.Join(dir, "image.tar")
	if err := image.WriteTarball(tarPath, "registry.example.com/nodewright:v9.8.7", img); err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (docker load's format has its own manifest: compare the config.)
	c1, _ := img.ConfigName()
	if c, _ := fromTar.ConfigName(); c != c1 {
		t.Errorf("tarball image config %s, built %s", c, c1)
	}
}
