// Command crdpatch adds to the CRDs controller-gen generates the schema
// constraints it has no marker for: the maximum length of map values and
// of the fields of Kubernetes' own types (taints). The API server estimates the cost of a CEL rule from these bounds, and rejects
// rules over unbounded strings.
//
// Usage: go run ./hack/crdpatch DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// patch sets fields of the schema node at path (dot-separated property
// names below spec.versions[*].schema.openAPIV3Schema) in file.
type patch struct {
	file   string
	path   string
	fields map[string]any
}

var patches = append([]patch{{
	file:   "karpenter.sh_nodepools.yaml",
	path:   "spec.template.metadata.labels.additionalProperties",
	fields: map[string]any{"maxLength": 63},
}}, taintBounds()...)

// taintBounds bound the taints' keys (a qualified name: a 253-character
// prefix, '/', a 63-character name) and values (63 characters).
func taintBounds() []patch {
	out := make([]patch, 0, 8)
	for file, prefix := range map[string]string{"karpenter.sh_nodepools.yaml": "spec.template.spec.", "karpenter.sh_nodeclaims.yaml": "spec."} {
		for _, list := range []string{"taints", "startupTaints"} {
			out = append(out,
				patch{file: file, path: prefix + list + ".items.key", fields: map[string]any{"maxLength": 316}},
				patch{file: file, path: prefix + list + ".items.value", fields: map[string]any{"maxLength": 63}})
		}
	}
	return out
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch DIR")
		os.Exit(2)
	}
	for _, p := range patches {
		if err := apply(filepath.Join(os.Args[1], p.file), p); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %v\n", err)
			os.Exit(1)
		}
	}
}

func apply(file string, p patch) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	versions, _ := lookup(crd, "spec.versions").([]any)
	if len(versions) == 0 {
		return fmt.Errorf("%s: no spec.versions", file)
	}
	for _, v := range versions {
		node, ok := lookupSchema(v, p.path).(map[string]any)
		if !ok {
			return fmt.Errorf("%s: no schema at %s", file, p.path)
		}
		for k, val := range p.fields {
			node[k] = val
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(file, append([]byte("---\n"), out...), 0o644)
}

// lookupSchema follows property names from a version's openAPIV3Schema;
// "additionalProperties" and "items" step into those schemas.
func lookupSchema(version any, path string) any {
	node := lookup(version, "schema.openAPIV3Schema")
	for _, name := range strings.Split(path, ".") {
		if name == "additionalProperties" || name == "items" {
			node = lookup(node, name)
			continue
		}
		node = lookup(node, "properties."+name)
	}
	return node
}

func lookup(node any, path string) any {
	for _, key := range strings.Split(path, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[key]
	}
	return node
}
