// Package scenarios embeds the scenario manifests: the field reports S1–S5
// and a healthy baseline, shared by `nodewright sim`, doctor and the tests.
package scenarios

import (
	"embed"
	"fmt"
	"os"
	"sort"
	"strings"
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
