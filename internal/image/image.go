// Package image builds nodewright's OCI image without a container daemon
// or a base image: one layer holding the static binary, run as a non-root
// user. The same binary and creation time give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's contract, which the chart relies on.
const (
	// Entrypoint is where the binary is.
	Entrypoint = "/nodewright"
	// User is the numeric user and group it runs as (the chart's
	// runAsUser), so no passwd file is needed.
	User = "65532:65532"
)

// Binary is nodewright built for one platform.
type Binary struct {
	Arch string // amd64, arm64
	Data []byte
}

// Build makes the image of one binary. created stamps the image and its
// file (use the commit's time for a reproducible build).
func Build(b Binary, version string, created time.Time) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Name: Entrypoint[1:], Mode: 0o555, Size: int64(len(b.Data)), ModTime: created.UTC(),
		Typeflag: tar.TypeReg, Format: tar.FormatPAX, Uid: 0, Gid: 0,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b.Data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created.UTC()}, CreatedBy: "nodewright image build", Comment: "the static nodewright binary",
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", b.Arch
	cfg.Created = v1.Time{Time: created.UTC()}
	cfg.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		User:       User,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "nodewright",
			"org.opencontainers.image.version": version,
			"org.opencontainers.image.source":  "https://github.com/nodewright/nodewright",
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// Index puts the platforms' images in one multi-platform index.
func Index(images map[string]v1.Image) (v1.ImageIndex, error) {
	if len(images) == 0 {
		return nil, errors.New("no images to index")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range slices.Sorted(maps.Keys(images)) {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: images[arch], Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	return idx, nil
}

// WriteLayout writes the index as an OCI image layout at dir (replacing
// what was there).
func WriteLayout(dir string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	_, err := layout.Write(dir, idx)
	return err
}

// WriteTarball writes one image as a tarball `docker load` and
// `crane push` read, tagged ref.
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, tag, img)
}
