package whatif

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Templated manifests are rendered as their own tools render them, with
// kustomize's library as kustomize build does; a Helm chart by helm
// template, with its default values, when helm is installed.

// kustomizationFiles are the names kustomize reads a kustomization from.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// renderer is how a directory renders, when it is a kustomization or a
// chart: its name for messages and the render.
func renderer(dir string) (string, func(string) ([]byte, error)) {
	for _, name := range kustomizationFiles {
		if fileExists(filepath.Join(dir, name)) {
			return "kustomize build " + dir, kustomizeBuild
		}
	}
	if fileExists(filepath.Join(dir, "Chart.yaml")) {
		return "helm template " + dir, helmTemplate
	}
	return "", nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// kustomizeBuild renders a kustomization directory.
func kustomizeBuild(dir string) ([]byte, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return resources.AsYaml()
}

// HelmCommand is the helm binary charts are rendered with: helm on the
// PATH unless set.
var HelmCommand = "helm"

// helmTemplate renders a chart directory with its default values by
// running helm template, when helm is installed; without it, the error
// says how to render the chart.
func helmTemplate(dir string) ([]byte, error) {
	helm, err := exec.LookPath(HelmCommand)
	if err != nil {
		return nil, fmt.Errorf("the directory is a Helm chart, and helm is not installed to render it: install helm, or render it yourself: helm template RELEASE %s [-f values.yaml] | nodewright doctor -f -", dir)
	}
	// A render that hangs (a chart whose dependencies are fetched from
	// an unreachable repository) stops.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, "template", "release-name", dir) //nolint:gosec // the user's helm on the user's chart
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template release-name %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// loadRendered reads a kustomization's or a chart's rendered manifests,
// named for what rendered them.
func (o *Objects) loadRendered(dir, name string, render func(string) ([]byte, error)) error {
	data, err := render(dir)
	if err != nil {
		return fmt.Errorf("-f %s: %s: %w", dir, name, err)
	}
	return o.Load(dir+" ("+name+")", bytes.NewReader(data))
}

// templateHint adds to an error in a document that holds Helm template
// actions ({{ ... }}) that it is a template, and what renders it: its
// chart's directory when one holds the file.
func templateHint(file string, doc []byte, err error) error {
	if !bytes.Contains(doc, []byte("{{")) {
		return err
	}
	for dir := filepath.Dir(file); dir != "." && dir != "/" && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if fileExists(filepath.Join(dir, "Chart.yaml")) {
			return fmt.Errorf("%w (the file is a template of Helm chart %s: give -f %s to read it as helm template renders it)", err, dir, dir)
		}
	}
	return fmt.Errorf("%w (the document holds template actions {{ ... }}: render it first, as helm template CHART | nodewright doctor -f - does)", err)
}
