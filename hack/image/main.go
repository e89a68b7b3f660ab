// Command image builds nodewright's OCI image without a container daemon
// or a base image: static binaries for each platform, an OCI image layout
// holding their multi-platform index, and a tarball per platform for
// `docker load` or `crane push`.
//
//	go run ./hack/image -out bin/image -version v0.1.0 -arch amd64,arm64
//
// The creation time is SOURCE_DATE_EPOCH, or the last commit's time, so
// the same commit and Go toolchain build the same digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nodewright/nodewright/internal/image"
)

func main() {
	out := flag.String("out", "bin/image", "directory of the OCI image layout; the tarballs go beside it")
	version := flag.String("version", "devel", "the version stamped into the binary and the image")
	flag.StringVar(&commit, "commit", "", "the commit stamped into the binary (nodewright version, karpenter_build_info)")
	archs := flag.String("arch", "amd64,arm64", "platforms (linux/ARCH), comma-separated")
	repo := flag.String("repository", "ghcr.io/nodewright/nodewright", "the repository the tarballs are tagged with")
	flag.Parse()
	if err := run(*out, *version, strings.Split(*archs, ","), *repo); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run builds the image of every platform, then the index that holds them.
func run(out, version string, archs []string, repo string) error {
	created, err := creationTime()
	if err != nil {
		return err
	}
	images := map[string]v1.Image{}
	for _, arch := range archs {
		img, err := buildPlatform(out, version, arch, repo, created)
		if err != nil {
			return err
		}
		images[arch] = img
	}
	return writeIndex(out, images)
}

// buildPlatform builds the binary and image of one platform and writes the
// image's tarball beside out.
func buildPlatform(out, version, arch, repo string, created time.Time) (v1.Image, error) {
	bin := filepath.Join(filepath.Dir(out), "nodewright-linux-"+arch)
	fmt.Fprintf(os.Stderr, "building %s\n", bin)
	if err := buildBinary(bin, arch, version); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	img, err := image.Build(image.Binary{Arch: arch, Data: data}, version, created)
	if err != nil {
		return nil, err
	}
	tarPath := filepath.Join(filepath.Dir(out), "nodewright-image-"+arch+".tar")
	if err := image.WriteTarball(tarPath, repo+":"+version+"-"+arch, img); err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	fmt.Printf("linux/%s %s %s\n", arch, digest, tarPath)
	return img, nil
}

// writeIndex writes the OCI image layout of the multi-platform index into
// out.
func writeIndex(out string, images map[string]v1.Image) error {
	idx, err := image.Index(images)
	if err != nil {
		return err
	}
	if err := image.WriteLayout(out, idx); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("index %s %s\n", digest, out)
	return nil
}

// buildBinary builds a static, reproducible binary: no cgo, no paths of
// this machine, no build ID.
// commit is the commit stamped into the binary; empty: none.
var commit string

func buildBinary(path, arch, version string) error {
	//nolint:gosec // builds this repository's own binary, with the version it is given
	cmd := exec.CommandContext(context.Background(), "go", "build", "-trimpath", "-o", path,
		"-ldflags", "-s -w -buildid= -X github.com/nodewright/nodewright/internal/version.version="+version+
			" -X github.com/nodewright/nodewright/internal/version.commit="+commit, "./cmd/nodewright-controller")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func creationTime() (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		out, err := exec.CommandContext(context.Background(), "git", "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Unix(0, 0), nil //nolint:nilerr // outside a checkout: the epoch
		}
		epoch = strings.TrimSpace(string(out))
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: seconds since 1970", epoch)
	}
	return time.Unix(sec, 0).UTC(), nil
}
