package whatif_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
// a kustomization (its patch applied, as kustomize build applies it), a
// Helm chart (rendered with its default values), READMEs and a .git
// directory beside the objects.
func TestLoadPathsReadsADirectoryRecursively(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "infra/karpenter/ec2nodeclass.yaml", pathsClass)
	write(t, dir, "infra/karpenter/nodepool.yml", pathsPool)
	write(t, dir, "infra/karpenter/unlisted.yaml", strings.Replace(pathsPool, "name: checkout", "name: not-in-the-kustomization", 1))
	write(t, dir, "infra/karpenter/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ec2nodeclass.yaml, nodepool.yml]\n"+
		"patches:\n  - target: {kind: NodePool, name: checkout}\n    patch: |\n      - op: add\n        path: /spec/weight\n        value: 30\n")
	write(t, dir, "charts/workers/Chart.yaml", "apiVersion: v2\nname: workers\nversion: 0.1.0\n")
	write(t, dir, "charts/workers/values.yaml", "replicas: 3\nteam: payments\n")
	write(t, dir, "charts/workers/templates/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: {{ .Release.Name }}-{{ .Values.team }}, namespace: shop}\n"+
		"spec:\n  replicas: {{ .Values.replicas }}\n  selector: {matchLabels: {app: w}}\n  template:\n    metadata: {labels: {app: w}}\n    spec: {containers: [{name: c, image: nginx}]}\n")
	write(t, dir, "charts/workers/templates/NOTES.txt", "installed {{ .Release.Name }}")
	write(t, dir, "infra/README.md", "not a manifest")
	write(t, dir, ".git/objects.yaml", "this: [is not read")
	write(t, dir, "apps/web.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)
	// Without helm, the chart is named with how to render it.
	whatif.HelmCommand = filepath.Join(dir, "no-helm-here")
	if _, err := whatif.LoadPaths([]string{dir}, nil); err == nil || !strings.Contains(err.Error(), "helm template RELEASE "+filepath.Join(dir, "charts/workers")) {
		t.Errorf("a chart without helm: %v", err)
	}
	whatif.HelmCommand = helmBinary(t)
	t.Cleanup(func() { whatif.HelmCommand = "helm" })
	o, err := whatif.LoadPaths([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.EC2NodeClasses) != 1 || len(o.NodePools) != 1 || len(o.Pods) != 4 {
		t.Fatalf("read %d EC2NodeClasses, %d NodePools, %d pods", len(o.EC2NodeClasses), len(o.NodePools), len(o.Pods))
	}
	if w := o.NodePools[0].Spec.Weight; w == nil || *w != 30 {
		t.Errorf("the kustomization's patch was not applied: weight %v", w)
	}
	if !slices.ContainsFunc(o.Pods, func(p *corev1.Pod) bool { return strings.HasPrefix(p.Name, "release-name-payments-") }) {
		t.Errorf("the chart was not rendered with its values: %v", o.Pods)
	}
	if len(o.Ignored) != 0 || len(o.Skipped) != 0 {
		t.Errorf("ignored %v, skipped %v", o.Ignored, o.Skipped)
	}
	// The kustomization file named alone renders its directory.
	k, err := whatif.LoadPaths([]string{filepath.Join(dir, "infra/karpenter/kustomization.yaml")}, nil)
	if err != nil || len(k.NodePools) != 1 || k.NodePools[0].Name != "checkout" {
		t.Errorf("the kustomization named alone: %v", err)
	}
	if _, err := whatif.LoadPaths([]string{filepath.Join(dir, "infra/karpenter/missing")}, nil); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing path: %v", err)
	}
	// A chart's template named alone is not a manifest: the chart is.
	_, err = whatif.LoadPaths([]string{filepath.Join(dir, "charts/workers/templates/deployment.yaml")}, nil)
	if err == nil || !strings.Contains(err.Error(), "-f "+filepath.Join(dir, "charts/workers")) {
		t.Errorf("a Helm template named alone: %v", err)
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
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.change, err, c.want)
			continue
		}
		// The error names the line of the field it refuses.
		m := regexp.MustCompile(`^pools\.yaml:(\d+): `).FindStringSubmatch(err.Error())
		leaf := regexp.MustCompile(`(\w+)(\[\d+\])?: (Invalid|Unsupported)`).FindStringSubmatch(err.Error())
		if m == nil || leaf == nil {
			t.Errorf("%s: %v names no line or field", c.change, err)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if lines := strings.Split(doc, "\n"); n < 1 || n > len(lines) || !strings.Contains(lines[n-1], leaf[1]) {
			t.Errorf("%s: line %d does not hold %s:\n%s", c.change, n, leaf[1], doc)
		}
	}
}

// Input that never ends, or that would fill memory, is an error that
// names the bound: -f /dev/zero, a stream past MaxInputBytes, a
// Deployment of a million replicas. A FIFO (or socket) in a -f directory
// is listed as not read, not opened (opening a FIFO waits for a writer
// for ever).
func TestInputIsBounded(t *testing.T) {
	old := whatif.MaxInputBytes
	whatif.MaxInputBytes = 1 << 20
	t.Cleanup(func() { whatif.MaxInputBytes = old })
	if _, err := whatif.LoadPaths([]string{"/dev/zero"}, nil); err == nil || !strings.Contains(err.Error(), "over 1 MiB, the most nodewright reads") {
		t.Errorf("-f /dev/zero: %v; want the input bound named", err)
	}
	endless := strings.NewReader(pathsClass + "---\n" + strings.Repeat("# padding\n", 200_000))
	if _, err := whatif.LoadPaths([]string{whatif.Stdin}, endless); err == nil || !strings.Contains(err.Error(), "<stdin>: the inputs are over 1 MiB") {
		t.Errorf("standard input over the bound: %v", err)
	}

	dir := t.TempDir()
	write(t, dir, "class.yaml", pathsClass)
	write(t, dir, "pool.yaml", pathsPool)
	fifo := filepath.Join(dir, "stream.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var o *whatif.Objects
	go func() {
		var err error
		o, err = whatif.LoadPaths([]string{dir}, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("-f %s with a FIFO in it did not return in a minute", dir)
	}
	if len(o.NodePools) != 1 || !slices.ContainsFunc(o.Ignored, func(s string) bool { return strings.Contains(s, "stream.yaml: not a regular file (a named pipe)") }) {
		t.Errorf("NodePools %d, ignored %v; want the pool read and the FIFO named as not read", len(o.NodePools), o.Ignored)
	}

	million := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1000000\n  selector: {matchLabels: {app: web}}\n" +
		"  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n"
	err := (&whatif.Objects{}).Load("web.yaml", strings.NewReader(million))
	if err == nil || !strings.Contains(err.Error(), "Deployment web: spec.replicas: 1000000 pods are over") || !strings.Contains(err.Error(), "the most nodewright plans at once") {
		t.Errorf("a million replicas: %v; want an error naming the workload and the bound", err)
	}
}

// What the API server refuses of pods and workloads is refused offline,
// with the field: negative requests, limits and replicas, and requests
// over their limits.
func TestPodResourcesTheAPIServerRefuses(t *testing.T) {
	deployment := func(replicas, resources string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: shop}\nspec:\n  replicas: " + replicas + "\n  selector: {matchLabels: {app: api}}\n" +
			"  template:\n    metadata: {labels: {app: api}}\n    spec:\n      containers:\n      - {name: sidecar, image: envoy}\n      - name: api\n        image: api\n        resources: " + resources + "\n"
	}
	for _, c := range []struct{ doc, want string }{
		{deployment("3", "{requests: {cpu: \"-500m\"}}"), `Deployment api: spec.template.spec.containers[1].resources.requests.cpu: Invalid value: "-500m": must be greater than or equal to 0`},
		{deployment("3", "{limits: {memory: \"-1Gi\"}}"), `spec.template.spec.containers[1].resources.limits.memory: Invalid value: "-1Gi": must be greater than or equal to 0`},
		{deployment("3", "{requests: {cpu: \"2\"}, limits: {cpu: \"1\"}}"), `spec.template.spec.containers[1].resources.requests.cpu: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{deployment("-2", "{requests: {cpu: \"1\"}}"), "Deployment api: spec.replicas: Invalid value: -2: must be greater than or equal to 0"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers: [{name: init, image: busybox, resources: {requests: {ephemeral-storage: \"-1\"}}}]\n  containers: [{name: c, image: busybox}]\n",
			`Pod p: spec.initContainers[0].resources.requests.ephemeral-storage: Invalid value: "-1"`},
	} {
		err := (&whatif.Objects{}).Load("app.yaml", strings.NewReader(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v\nwant %q", err, c.want)
		}
	}
	if err := (&whatif.Objects{}).Load("app.yaml", strings.NewReader(deployment("0", "{requests: {cpu: \"1\"}, limits: {cpu: \"1\"}}"))); err != nil {
		t.Errorf("a valid Deployment of 0 replicas: %v", err)
	}
}

// helmBinary is the real helm (the module's tool), built once into the
// user's cache.
func helmBinary(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "nodewright", "helm-"+helmVersion(t))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	tmp := bin + "." + strconv.Itoa(os.Getpid())
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", tmp, "helm.sh/helm/v3/cmd/helm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building helm: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// helmVersion is the version of helm go.mod requires.
func helmVersion(t *testing.T) string {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Version}}", "helm.sh/helm/v3").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A v1beta1 dump split by kind, its NodeClaims' file read before its
// NodePools': each NodeClaim expires as its NodePool does, as the
// reference's conversion looks the NodePool up.
func TestConvertedNodeClaimsFindTheirNodePoolInALaterFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "dump/nodeclaims.yaml", `apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
metadata:
  name: general-x7k2p
  labels: {karpenter.sh/nodepool: general}
spec:
  nodeClassRef: {name: default}
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
`)
	write(t, dir, "dump/nodepools.yaml", `apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  disruption: {consolidationPolicy: WhenUnderutilized, expireAfter: 168h}
`)
	o, err := whatif.LoadPaths([]string{filepath.Join(dir, "dump")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.NodeClaims) != 1 || o.NodeClaims[0].Spec.ExpireAfter != "168h" {
		t.Fatalf("the NodeClaim expires after %v, want its NodePool's 168h", o.NodeClaims)
	}
	if _, kept := o.NodeClaims[0].Annotations["compatibility.karpenter.sh/v1beta1-nodeclass-reference"]; kept {
		t.Error("the conversion's bookkeeping annotation stayed on the settled NodeClaim")
	}
}
