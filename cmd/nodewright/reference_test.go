package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	yamlv3 "gopkg.in/yaml.v3"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/tools/doctor"
)

// The reference under docs/reference is generated from the code: the
// commands and their flags (cobra's generator), the metrics (as the
// controller registers them), the doctor's finding codes and the chart's
// values. `make docs` writes it (go test -run TestReferenceIsCurrent
// -update-docs); this test fails while what is committed differs.
var updateDocs = flag.Bool("update-docs", false, "write docs/reference from the code instead of comparing")

const referenceDir = "../../docs/reference"

func TestReferenceIsCurrent(t *testing.T) {
	want, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		writeReference(t, want)
		return
	}
	have := map[string]bool{}
	err = filepath.WalkDir(referenceDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(referenceDir, path)
		have[rel] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, err := os.ReadFile(filepath.Join(referenceDir, name))
		switch {
		case err != nil:
			t.Errorf("docs/reference/%s is missing: run make docs and commit it", name)
		case string(got) != want[name]:
			t.Errorf("docs/reference/%s is stale: run make docs and commit it", name)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/reference/%s is generated from nothing any more: run make docs (it removes it) and commit", name)
		}
	}
}

func writeReference(t *testing.T, files map[string]string) {
	t.Helper()
	if err := os.RemoveAll(referenceDir); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		path := filepath.Join(referenceDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// reference is every generated page by its path under docs/reference.
func reference() (map[string]string, error) {
	files, err := cliReference()
	if err != nil {
		return nil, err
	}
	if files["metrics.md"], err = metricsReference(); err != nil {
		return nil, err
	}
	files["doctor-codes.md"] = doctorCodesReference()
	if files["chart-values.md"], err = chartValuesReference(); err != nil {
		return nil, err
	}
	if files["instance-types.md"], err = instanceTypesReference(); err != nil {
		return nil, err
	}
	return files, nil
}

// instanceTypesReference is every instance type of the built-in catalog
// with its labels and resources, as an AL2023 node of the default
// EC2NodeClass has them.
func instanceTypesReference() (string, error) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		return "", err
	}
	types := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: []string{"us-east-1a"}})
	label := func(it *scheduling.InstanceType, key string) string {
		if r, ok := it.Requirements[key]; ok {
			return strings.Join(r.Values(), ", ")
		}
		return ""
	}
	g := "karpenter.k8s.aws/instance-"
	var b strings.Builder
	b.WriteString("# Instance types\n\n" + generated)
	b.WriteString("Every instance type of the built-in catalog (EC2's DescribeInstanceTypes\n" +
		"records; see [Scheduling labels](../concepts/scheduling.md)), as a node of\n" +
		"an AL2023 EC2NodeClass with its defaults has it: the\n" +
		"`karpenter.k8s.aws/instance-*` labels (empty: the type has none) and its\n" +
		"capacity and allocatable. The us-east-1 on-demand price is the built-in\n" +
		"table's ($/h; none: not priced there).\n\n")
	b.WriteString("| type | arch | cpu | memory MiB | cpu maker | MHz | GPU | GPU memory MiB | accelerator | local NVMe GB | network Mbps | EBS Mbps | capacity | allocatable | $/h |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, it := range types {
		gpu := ""
		if n := label(it, g+"gpu-count"); n != "" {
			gpu = n + " × " + label(it, g+"gpu-name")
		}
		accel := ""
		if n := label(it, g+"accelerator-count"); n != "" {
			accel = n + " × " + label(it, g+"accelerator-name")
		}
		price := "none"
		if specs[i].OnDemand > 0 {
			price = fmt.Sprintf("%.4f", specs[i].OnDemand)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", it.Name, label(it, "kubernetes.io/arch"),
			label(it, g+"cpu"), label(it, g+"memory"), label(it, g+"cpu-manufacturer"), label(it, g+"cpu-sustained-clock-speed-mhz"), gpu,
			label(it, g+"gpu-memory"), accel, label(it, g+"local-nvme"), label(it, g+"network-bandwidth"), label(it, g+"ebs-bandwidth"),
			it.Capacity, it.Allocatable, price)
	}
	return b.String(), nil
}

const generated = "<!-- Generated from the code by make docs; do not edit. -->\n\n"

// cliReference is one page per command, cobra's Markdown.
func cliReference() (map[string]string, error) {
	root := newRootCommand()
	root.DisableAutoGenTag = true
	files := map[string]string{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() && c != root {
			return nil
		}
		var buf bytes.Buffer
		buf.WriteString(generated)
		if err := doc.GenMarkdownCustom(c, &buf, func(s string) string { return s }); err != nil {
			return err
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
		files["cli/"+name] = buf.String()
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	return files, walk(root)
}

func metricsReference() (string, error) {
	families, err := metrics.Catalog()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Metrics\n\n" + generated)
	b.WriteString("Every series the controller serves on `/metrics`, besides Go's and the\n" +
		"process's own and controller-runtime's (`controller_runtime_*`,\n" +
		"`workqueue_*`, `rest_client_*`). `karpenter_*` and `operator_*` series carry\n" +
		"Karpenter's names, types and labels (see [Observability](../observability.md)); the\n" +
		"per-node, per-pod and per-condition gauges (`karpenter_nodes_*`,\n" +
		"`karpenter_pods_*`, `operator_status_condition_*`) are read from the cache at each scrape.\n\n")
	b.WriteString("| metric | type | labels | meaning |\n|---|---|---|---|\n")
	for _, d := range families {
		ls := "—"
		if len(d.Labels) > 0 {
			ls = "`" + strings.Join(d.Labels, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, ls, cell(d.Help))
	}
	return b.String(), nil
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func doctorCodesReference() string {
	var b strings.Builder
	b.WriteString("# Doctor finding codes\n\n" + generated)
	b.WriteString("Every code `nodewright doctor` reports (and `plan`, on the objects a\n" +
		"change makes). Each finding names the object, its evidence and a fix;\n" +
		"its severity (error, warning, info) is in the output. See\n" +
		"[`nodewright doctor`](../tools/doctor.md) and\n" +
		"[Troubleshooting](../troubleshooting.md).\n\n")
	b.WriteString("The codes are grouped as users meet them: the input itself, what keeps\n" +
		"a launch from happening, then a node from joining, from initializing,\n" +
		"and what holds nodes once they run.\n")
	for _, g := range doctor.Groups {
		fmt.Fprintf(&b, "\n## %s\n\n| code | what it reports |\n|---|---|\n", g.Title)
		for _, c := range g.Codes {
			fmt.Fprintf(&b, "| `%s` | %s |\n", c, cell(doctor.Meanings[c]))
		}
	}
	return b.String()
}

// Every code is in one group of the reference, once.
func TestEveryCodeHasAGroup(t *testing.T) {
	in := map[string]int{}
	for _, g := range doctor.Groups {
		for _, c := range g.Codes {
			in[c]++
		}
	}
	for _, c := range doctor.Codes {
		if in[c] != 1 {
			t.Errorf("doctor code %s is in %d groups of doctor.Groups, want 1", c, in[c])
		}
	}
	if len(in) != len(doctor.Codes) {
		t.Errorf("doctor.Groups name %d codes, doctor.Codes has %d", len(in), len(doctor.Codes))
	}
}

// TestEveryCodeHasAMeaning: the reference lists no code without saying
// what it reports, and nothing for a code doctor never emits.
func TestEveryCodeHasAMeaning(t *testing.T) {
	for _, c := range doctor.Codes {
		if doctor.Meanings[c] == "" {
			t.Errorf("doctor code %s has no meaning in doctor.Meanings", c)
		}
	}
	for c := range doctor.Meanings {
		if !slices.Contains(doctor.Codes, c) {
			t.Errorf("doctor.Meanings explains %s, which is not among doctor.Codes", c)
		}
	}
}

// chartValuesReference lists every leaf of the chart's values.yaml with
// its default and the comment above it. A leaf among commented siblings
// needs its own comment; the leaves of a group without any (resources)
// take their parent's.
func chartValuesReference() (string, error) {
	data, err := os.ReadFile("../../charts/nodewright/values.yaml")
	if err != nil {
		return "", err
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Chart values\n\n" + generated)
	b.WriteString("Every value of `charts/nodewright/values.yaml`, with its default.\n" +
		"`values.schema.json` refuses a key the chart does not know. `settings.*`\n" +
		"are the controller's flags ([`nodewright controller`](cli/nodewright_controller.md)).\n\n")
	b.WriteString("| value | default | meaning |\n|---|---|---|\n")
	var undocumented []string
	if len(root.Content) == 1 {
		valueRows(&b, "", "", root.Content[0], &undocumented)
	}
	if len(undocumented) > 0 {
		return "", fmt.Errorf("charts/nodewright/values.yaml: no comment says what %s is", strings.Join(undocumented, ", "))
	}
	return b.String(), nil
}

func valueRows(b *strings.Builder, prefix, inherited string, n *yamlv3.Node, undocumented *[]string) {
	commented := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		commented = commented || n.Content[i].HeadComment != ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		path := key.Value
		if prefix != "" {
			path = prefix + "." + key.Value
		}
		comment := commentText(key.HeadComment)
		if comment == "" && !commented {
			comment = inherited
		}
		if val.Kind == yamlv3.MappingNode && len(val.Content) > 0 {
			valueRows(b, path, comment, val, undocumented)
			continue
		}
		if comment == "" {
			*undocumented = append(*undocumented, path)
		}
		out, _ := yamlv3.Marshal(val)
		def := strings.TrimSpace(string(out))
		if val.Kind != yamlv3.ScalarNode {
			def = strings.Join(strings.Fields(def), " ")
		}
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", path, cell(def), cell(comment))
	}
}

// commentText is a YAML head comment as prose.
func commentText(c string) string {
	var lines []string
	for _, l := range strings.Split(c, "\n") {
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")))
	}
	return strings.TrimSpace(strings.Join(lines, " "))
}
