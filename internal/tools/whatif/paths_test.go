package whatif_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

const pathsClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: payments}
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{alias: al2023@latest}]
  role: eks-payments-prod-nodes
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: payments-prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: payments-prod}}]
`

const pathsPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: checkout}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: payments}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A repository of manifests as users keep them: a directory tree with
// kustomizations, READMEs and a .git directory beside the objects.
func TestLoadPathsReadsADirectoryRecursively(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "infra/karpenter/ec2nodeclass.yaml", pathsClass)
	write(t, dir, "infra/karpenter/nodepool.yml", pathsPool)
	write(t, dir, "infra/karpenter/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ec2nodeclass.yaml]\n")
	write(t, dir, "infra/README.md", "not a manifest")
	write(t, dir, ".git/objects.yaml", "this: [is not read")
	write(t, dir, "apps/web.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	o, err := whatif.LoadPaths([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.EC2NodeClasses) != 1 || len(o.NodePools) != 1 || len(o.Pods) != 1 {
		t.Errorf("read %d EC2NodeClasses, %d NodePools, %d pods", len(o.EC2NodeClasses), len(o.NodePools), len(o.Pods))
	}
	if len(o.Ignored) != 1 || !strings.Contains(o.Ignored[0], "kustomization.yaml") || !strings.Contains(o.Ignored[0], "Kustomization") || len(o.Skipped) != 0 {
		t.Errorf("ignored %v, skipped %v", o.Ignored, o.Skipped)
	}
	// Given by name, a file with nothing read is an error.
	if _, err := whatif.LoadPaths([]string{filepath.Join(dir, "infra/karpenter/kustomization.yaml")}, nil); err == nil {
		t.Error("a file with nothing read, named, was accepted")
	}
	if _, err := whatif.LoadPaths([]string{filepath.Join(dir, "infra/karpenter/missing")}, nil); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing path: %v", err)
	}
}

// kubectl get ... -o yaml | nodewright doctor -f -: standard input, once.
func TestLoadPathsReadsStandardInput(t *testing.T) {
	dump := "apiVersion: v1\nkind: List\nitems:\n" + indentItems(pathsClass) + indentItems(pathsPool)
	o, err := whatif.LoadPaths([]string{"-"}, strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.EC2NodeClasses) != 1 || len(o.NodePools) != 1 {
		t.Errorf("read %d EC2NodeClasses, %d NodePools", len(o.EC2NodeClasses), len(o.NodePools))
	}
	if _, err := whatif.LoadPaths([]string{"-", "-"}, strings.NewReader(dump)); err == nil || !strings.Contains(err.Error(), "once") {
		t.Errorf("- twice: %v", err)
	}
}

func indentItems(doc string) string {
	lines := strings.Split(strings.TrimSuffix(doc, "\n"), "\n")
	for i, l := range lines {
		if i == 0 {
			lines[i] = "  - " + l
		} else {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// The same object in two files is an error naming both: which one the
// user meant is not for nodewright to guess. Objects of the same name in
// other namespaces, or of other kinds, are not the same.
func TestLoadPathsRefusesTheSameObjectTwice(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a/class.yaml", pathsClass)
	b := write(t, dir, "b/class-copy.yaml", "# edited copy\n"+pathsClass)
	_, err := whatif.LoadPaths([]string{a, b}, nil)
	if err == nil || !strings.Contains(err.Error(), a+":1") || !strings.Contains(err.Error(), b+":") || !strings.Contains(err.Error(), "EC2NodeClass payments") {
		t.Errorf("duplicate: %v", err)
	}
	pod := func(ns string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: " + ns + "}\nspec: {containers: [{name: c, image: nginx}]}\n"
	}
	c := write(t, dir, "c.yaml", pod("shop")+"---\n"+pod("blog"))
	if _, err := whatif.LoadPaths([]string{c}, nil); err != nil {
		t.Errorf("pods of one name in two namespaces: %v", err)
	}
	d := write(t, dir, "d.yaml", pod("default")+"---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: nginx}]}\n")
	if _, err := whatif.LoadPaths([]string{d}, nil); err == nil || !strings.Contains(err.Error(), "Pod default/web") {
		t.Errorf("a pod without a namespace is default's: %v", err)
	}
}

var fileLine = regexp.MustCompile(`^in\.yaml(:\d+)?: `)

// Whatever a file holds, reading it does not panic, and an error names
// the file (and the line, for a document it could not read).
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{pathsClass, pathsPool, pathsClass + "---\n" + pathsClass, "apiVersion: v1\nkind: List\nitems: [{kind: Node}]\n",
		"kind: NodePool\nspec: {template: {spec: {requirements: [{key: a, operator: Gt, values: [x]}]}}}\n", "{", "---\n---\n", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: [1]\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		err := (&whatif.Objects{}).Load("in.yaml", strings.NewReader(doc))
		if err != nil && !fileLine.MatchString(err.Error()) {
			t.Errorf("error without the file: %v", err)
		}
	})
}

// What kubectl apply refuses is refused offline, by the CRD's own schema
// and CEL rules (apiextensions' validators), in the API server's words:
// the shapes users write by mistake.
func TestWhatTheAPIServerRefusesIsRefusedOffline(t *testing.T) {
	for _, c := range []struct{ change, want string }{
		{"disruption: {consolidateAfter: 5 minutes}", `NodePool.karpenter.sh "checkout" is invalid: spec.disruption.consolidateAfter: Invalid value:`},
		{"template: {spec: {expireAfter: 30d, nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: payments}, requirements: []}}", "spec.template.spec.expireAfter: Invalid value:"},
		{"disruption: {budgets: [{nodes: \"150%\"}]}", "spec.disruption.budgets[0].nodes: Invalid value:"},
		{"template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: payments}, requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [\"-1\"]}]}}", "spec.template.spec.requirements: Invalid value:"},
		{"template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: payments}, requirements: [], taints: [{key: dedicated, effect: NoScheduled}]}}", "spec.template.spec.taints[0].effect"},
	} {
		doc := strings.Replace(pathsPool, "spec:\n  template:", "spec:\n  "+c.change+"\n  template:", 1)
		if strings.HasPrefix(c.change, "template:") {
			doc = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: checkout}\nspec:\n  " + c.change + "\n"
		}
		err := (&whatif.Objects{}).Load("pools.yaml", strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "pools.yaml:1: ") {
			t.Errorf("%s: %v, want %q", c.change, err, c.want)
		}
	}
}
