// Package docs holds the checks that the documentation says what the code
// does.
package docs

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const module = "github.com/nodewright/nodewright"

// layer is a row of the layer table of architecture.md.
type layer struct {
	name, rule string
	folders    []string
	deny       []string
}

var ticked = regexp.MustCompile("`([^`]+)`")

// cells splits a Markdown table row into its cells.
func cells(line string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// table returns the rows under the header that starts with head.
func table(t *testing.T, doc, head string) [][]string {
	t.Helper()
	i := strings.Index(doc, head)
	if i < 0 {
		t.Fatalf("architecture.md has no table %q", head)
	}
	var rows [][]string
	for _, line := range strings.Split(doc[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, cells(line))
	}
	return rows
}

// tickedIn are the `quoted` names of a cell.
func tickedIn(cell string) []string {
	var out []string
	for _, m := range ticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// within: a package path lies in a folder glob (DIR/** is DIR and below).
func within(pkg, glob string) bool {
	dir, ok := strings.CutSuffix(glob, "/**")
	if !ok {
		return pkg == glob
	}
	return pkg == dir || strings.HasPrefix(pkg, dir+"/")
}

func readLayers(t *testing.T, doc string) map[string]layer {
	t.Helper()
	layers := map[string]layer{}
	for _, row := range table(t, doc, "| layer | folders | rule | may not import |") {
		if len(row) != 4 {
			t.Fatalf("layer row %q: want 4 cells", row)
		}
		l := layer{name: row[0], folders: tickedIn(row[1])}
		if r := tickedIn(row[2]); len(r) == 1 {
			l.rule = r[0]
		}
		for _, d := range tickedIn(row[3]) {
			l.deny = append(l.deny, strings.Replace(d, "nodewright/", module+"/", 1))
		}
		layers[l.name] = l
	}
	return layers
}

// Every package has a row, in a layer whose folders hold it and no other
// layer's; every row is a package.
func TestEveryPackageHasItsRowAndLayer(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	layers := readLayers(t, doc)
	rows := map[string]string{}
	for _, row := range table(t, doc, "| package | layer | what it is |") {
		names := tickedIn(row[0])
		if len(names) != 1 || len(row) != 3 {
			t.Fatalf("package row %q", row)
		}
		if _, dup := rows[names[0]]; dup {
			t.Errorf("package %s has two rows", names[0])
		}
		rows[names[0]] = row[1]
	}
	list := exec.Command("go", "list", "./...")
	list.Dir = ".."
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	packages := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		pkg := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if pkg == "docs" {
			continue
		}
		packages[pkg] = true
		name, ok := rows[pkg]
		if !ok {
			t.Errorf("package %s has no row in architecture.md's package table: add it, with its layer", pkg)
			continue
		}
		l, ok := layers[name]
		if !ok {
			t.Errorf("package %s: layer %q is not in the layer table", pkg, name)
			continue
		}
		if !slices.ContainsFunc(l.folders, func(g string) bool { return within(pkg, g) }) {
			t.Errorf("package %s is in layer %q, whose folders %v do not hold it: move it or its row", pkg, name, l.folders)
		}
		for _, other := range layers {
			if other.name != name && slices.ContainsFunc(other.folders, func(g string) bool { return within(pkg, g) }) {
				t.Errorf("package %s (layer %q) also lies in the folders of layer %q", pkg, name, other.name)
			}
		}
	}
	for pkg := range rows {
		if !packages[pkg] {
			t.Errorf("architecture.md has a row for %s, which is no package", pkg)
		}
	}
}

// golangci is the part of .golangci.yml the layer table is held against.
type golangci struct {
	Linters struct {
		Settings struct {
			Depguard struct {
				Rules map[string]struct {
					Files []string `json:"files"`
					Deny  []struct {
						Pkg string `json:"pkg"`
					} `json:"deny"`
				} `json:"rules"`
			} `json:"depguard"`
		} `json:"settings"`
	} `json:"linters"`
}

// Each layer with a rule has the depguard rule of the same files and
// denials, and every depguard rule is a layer's.
func TestTheLayerTableIsTheLintRules(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	layers := readLayers(t, string(data))
	raw, err := os.ReadFile("../.golangci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg golangci
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	rules := cfg.Linters.Settings.Depguard.Rules
	seen := map[string]bool{}
	for _, l := range layers {
		if l.rule == "" {
			continue
		}
		seen[l.rule] = true
		rule, ok := rules[l.rule]
		if !ok {
			t.Errorf("layer %q names depguard rule %q, which .golangci.yml does not have", l.name, l.rule)
			continue
		}
		var files []string
		for _, f := range l.folders {
			files = append(files, "**/"+f)
		}
		files = append(files, "!$test")
		if !sameSet(files, rule.Files) {
			t.Errorf("rule %q covers %v; layer %q's folders are %v", l.rule, rule.Files, l.name, files)
		}
		var deny []string
		for _, d := range rule.Deny {
			deny = append(deny, d.Pkg)
		}
		if !sameSet(deny, l.deny) {
			t.Errorf("rule %q denies %v; layer %q may not import %v", l.rule, deny, l.name, l.deny)
		}
	}
	for name := range rules {
		if !seen[name] {
			t.Errorf("depguard rule %q is no layer's: add its row to architecture.md", name)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
