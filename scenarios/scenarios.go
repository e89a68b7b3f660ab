// Package scenarios embeds the scenario manifests: the field reports S1–S5
// and a healthy baseline, shared by `nodewright sim`, doctor and the tests.
package scenarios

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// Names lists the embedded scenarios, such as "s1-userdata-register-taints".
func Names() []string {
	entries, _ := files.ReadDir(".")
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !strings.Contains(e.Name(), ".then-") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// Load returns a scenario by name, by prefix ("s1", "healthy") or, when
// it names a file, from disk.
func Load(name string) (string, []byte, error) {
	var matches []string
	for _, n := range Names() {
		if n == name || strings.HasPrefix(n, name+"-") {
			matches = append(matches, n)
		}
	}
	if len(matches) == 1 {
		data, err := files.ReadFile(matches[0] + ".yaml")
		return matches[0], data, err
	}
	if data, err := os.ReadFile(name); err == nil {
		return name, data, nil
	}
	return "", nil, fmt.Errorf("no scenario %q: use one of %s, or a file path", name, strings.Join(Names(), ", "))
}

// Then returns the steps an embedded scenario applies after it settles
// (files NAME.then-1.yaml, NAME.then-2.yaml, ...), in order, with their
// names.
func Then(name string) ([]string, [][]byte) {
	var names []string
	var out [][]byte
	for i := 1; ; i++ {
		file := fmt.Sprintf("%s.then-%d.yaml", name, i)
		data, err := files.ReadFile(file)
		if err != nil {
			return names, out
		}
		names, out = append(names, strings.TrimSuffix(file, ".yaml")), append(out, data)
	}
}

// WithPods spreads pods over a manifest's Deployments and StatefulSets as
// evenly as their order allows (the first ones get one more), leaving
// every other document as written.
func WithPods(manifest []byte, pods int) ([]byte, error) {
	if pods < 0 {
		return nil, fmt.Errorf("--pods %d: use a count of zero or more", pods)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	var objs []map[string]any
	var workloads []int
	for {
		d, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(d, &obj); err != nil {
			return nil, err
		}
		if k, _ := obj["kind"].(string); k == "Deployment" || k == "StatefulSet" {
			workloads = append(workloads, len(objs))
		}
		objs = append(objs, obj)
	}
	if len(workloads) == 0 {
		return nil, errors.New("--pods: the scenario has no Deployment or StatefulSet to scale")
	}
	var out bytes.Buffer
	for i, obj := range objs {
		if len(obj) == 0 {
			continue
		}
		if n := slices.Index(workloads, i); n >= 0 {
			replicas := pods / len(workloads)
			if n < pods%len(workloads) {
				replicas++
			}
			spec, _ := obj["spec"].(map[string]any)
			if spec == nil {
				spec = map[string]any{}
				obj["spec"] = spec
			}
			spec["replicas"] = replicas
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out.Bytes(), nil
}
