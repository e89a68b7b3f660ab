// Command crdpatch gives the CRDs controller-gen generates the schema
// the API has where no marker can say it: on Kubernetes' own types
// (taints, conditions), on a shared type whose rules differ by kind
// (requirements), on the values of a map (labels) and on an array's own
// level (requirement values).
//
// Usage: go run ./hack/crdpatch DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// patch sets fields of the schema node at path (dot-separated property
// names below spec.versions[*].schema.openAPIV3Schema) in file, and
// removes the keys in drop.
type patch struct {
	file   string
	path   string
	fields map[string]any
	drop   []string
}

// Patterns the API's schemas use for label keys (a qualified name) and
// label values.
const (
	qualifiedName = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	labelValue    = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
)

const (
	nodePools    = "karpenter.sh_nodepools.yaml"
	nodeClaims   = "karpenter.sh_nodeclaims.yaml"
	nodeOverlays = "karpenter.sh_nodeoverlays.yaml"
)

// wellKnownAWS are the karpenter.k8s.aws labels a NodePool or NodeClaim
// may require or set, in the API's order (the NodePool's labels list
// capacity-reservation-interruptible twice, as the API does); a
// NodeOverlay may require those from ec2nodeclass to
// instance-capability-flex.
var wellKnownAWS = []string{
	"karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/capacity-reservation-type", "karpenter.k8s.aws/capacity-reservation-id",
	"karpenter.k8s.aws/capacity-reservation-interruptible", "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
	"karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-hypervisor", "karpenter.k8s.aws/instance-family",
	"karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size",
	"karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
	"karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
	"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
	"karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name", "karpenter.k8s.aws/instance-accelerator-manufacturer",
	"karpenter.k8s.aws/instance-accelerator-count", "karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/placement-group-id",
	"karpenter.k8s.aws/placement-group-partition",
}

func quoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func rule(expr, message string) map[string]any {
	return map[string]any{"rule": expr, "message": message}
}

// keyRules are the rules on a requirement's key (x: the key itself) or,
// for a map of labels, on each key (wrapped in self.all).
func keyRules(x string, aws []string, nodePool bool) []any {
	rules := []any{
		rule(x+` in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !`+x+`.find("^([^/]+)").endsWith("karpenter.sh")`,
			"of the karpenter.sh labels only karpenter.sh/capacity-type (and, on NodeClaims, karpenter.sh/nodepool) can be used; nodewright sets the others"),
	}
	if nodePool {
		rules = append(rules, rule(x+` != "karpenter.sh/nodepool"`, "karpenter.sh/nodepool is set to the NodePool's own name; remove it"))
	}
	rules = append(rules,
		rule(x+` != "kubernetes.io/hostname"`, "kubernetes.io/hostname is every node's own name and cannot be set or required; use pod anti-affinity or topology spread to spread pods"),
		rule(x+` in `+quoted(aws)+` || !`+x+`.find("^([^/]+)").endsWith("karpenter.k8s.aws")`,
			"of the karpenter.k8s.aws labels only the well-known ones (instance-family, instance-size, instance-cpu, ...) can be used"))
	return rules
}

func labelRules(aws []string) []any {
	rules := keyRules("x", aws, true)
	out := make([]any, 0, len(rules))
	for _, r := range rules {
		m := r.(map[string]any)
		out = append(out, rule("self.all(x, "+m["rule"].(string)+")", m["message"].(string)))
	}
	return out
}

var patches = slices.Concat(taintPatches(), requirementPatches(), []patch{
	{file: nodePools, path: "spec.template.metadata.labels", fields: map[string]any{"x-kubernetes-validations": labelRules(slices.Insert(slices.Clone(wellKnownAWS), 4, "karpenter.k8s.aws/capacity-reservation-interruptible"))}},
	{file: nodePools, path: "spec.template.metadata.labels.additionalProperties", fields: map[string]any{"maxLength": 63, "pattern": labelValue}},
	// The API's conditions allow an empty reason and message.
	{file: nodeClaims, path: "status.conditions.items", fields: map[string]any{"required": []any{"lastTransitionTime", "status", "type"}}},
	{file: nodeClaims, path: "status.conditions.items.reason", fields: map[string]any{"pattern": `^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$`}, drop: []string{"minLength"}},
})

// taintPatches give the taints of NodePools and NodeClaims (Kubernetes'
// own type) the API's bounds: a qualified key and value, a known effect.
func taintPatches() []patch {
	out := make([]patch, 0, 12)
	for file, prefix := range map[string]string{nodePools: "spec.template.spec.", nodeClaims: "spec."} {
		for _, list := range []string{"taints", "startupTaints"} {
			out = append(out,
				patch{file: file, path: prefix + list + ".items.key", fields: map[string]any{"minLength": 1, "pattern": qualifiedName}},
				patch{file: file, path: prefix + list + ".items.value", fields: map[string]any{"pattern": qualifiedName}},
				patch{file: file, path: prefix + list + ".items.effect", fields: map[string]any{"enum": []any{"NoSchedule", "PreferNoSchedule", "NoExecute"}}})
		}
	}
	return out
}

// requirementPatches give requirements their keys' rules (per kind) and
// their values' bounds.
func requirementPatches() []patch {
	out := make([]patch, 0, 9)
	for _, r := range []struct {
		file, prefix string
		aws          []string
		nodePool     bool
	}{
		{nodePools, "spec.template.spec.", wellKnownAWS, true},
		{nodeClaims, "spec.", wellKnownAWS, false},
		{nodeOverlays, "spec.", wellKnownAWS[4 : len(wellKnownAWS)-2], false},
	} {
		out = append(out,
			patch{file: r.file, path: r.prefix + "requirements.items.key", fields: map[string]any{"maxLength": 316, "pattern": qualifiedName, "x-kubernetes-validations": keyRules("self", r.aws, r.nodePool)}},
			patch{file: r.file, path: r.prefix + "requirements.items.values", fields: map[string]any{"maxLength": 63, "pattern": labelValue}},
			patch{file: r.file, path: r.prefix + "requirements.items.values.items", drop: []string{"maxLength"}})
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
		for _, k := range p.drop {
			delete(node, k)
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
