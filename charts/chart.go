// Package charts embeds nodewright's Helm chart and renders it the way
// `helm template` does, so the simulation and the tests run under exactly
// the objects a user installs.
package charts

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

//go:embed all:nodewright
var files embed.FS

// Name is the chart's directory and name.
const Name = "nodewright"

// Load reads the embedded chart.
func Load() (*chart.Chart, error) {
	var buffered []*loader.BufferedFile
	err := fs.WalkDir(files, Name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		buffered = append(buffered, &loader.BufferedFile{Name: strings.TrimPrefix(p, Name+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(buffered)
}

// Release is what a release is installed as.
type Release struct {
	Name, Namespace string
	// Values override the chart's values.yaml, as --set and -f do.
	Values map[string]any
	// KubeVersion is the cluster's (default 1.34.0).
	KubeVersion string
	// AppVersion, when set, replaces the chart's appVersion, as
	// helm package --app-version (make chart VERSION=...) does.
	AppVersion string
}

// Render renders the chart's templates for a release (schema checked)
// into objects, ordered by template and then by position; the CRDs are
// not among them (CRDs returns those).
func Render(r Release) ([]*unstructured.Unstructured, error) {
	c, err := Load()
	if err != nil {
		return nil, err
	}
	if r.AppVersion != "" {
		c.Metadata.AppVersion = r.AppVersion
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv := r.KubeVersion
	if kv == "" {
		kv = "1.34.0"
	}
	v, err := chartutil.ParseKubeVersion(kv)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *v
	vals, err := chartutil.ToRenderValues(c, r.Values, chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", Name, err)
	}
	rendered, err := engine.Render(c, vals)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", Name, err)
	}
	names := make([]string, 0, len(rendered))
	for n := range rendered {
		if path.Ext(n) == ".yaml" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, n := range names {
		docs := releaseutil.SplitManifests(rendered[n])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sort.Sort(releaseutil.BySplitManifestsOrder(keys))
		for _, k := range keys {
			if strings.TrimSpace(docs[k]) == "" {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(docs[k]), &u.Object); err != nil {
				return nil, fmt.Errorf("chart %s: %s: %w", Name, n, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			objs = append(objs, u)
		}
	}
	return objs, nil
}

// CRDs are the chart's crds/ files (Helm installs them before the
// templates and never upgrades or deletes them).
func CRDs() (map[string][]byte, error) {
	out := map[string][]byte{}
	entries, err := files.ReadDir(Name + "/crds")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		data, err := files.ReadFile(Name + "/crds/" + e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = data
	}
	return out, nil
}
