package doctor

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// The corpus: each field-report failure in the shapes users write it, in
// their own names (cluster payments-prod in eu-west-1, account
// 444455556666, not the simulated account's), as manifests from git
// (no status) and as `kubectl get -o yaml` dumps (with status), each with
// its correct twin. Every case says the finding doctor must make (code,
// object, fragments of the fix with its value) and whether the failure
// keeps launches from happening; its twin has no finding of the code and
// no error.

const corpusAccount = "444455556666"

// corpusClass is an EC2NodeClass of the corpus's cluster; extra is
// inserted under spec (indented two spaces), status after it.
func corpusClass(name, family, amiTerm, extra, status string) string {
	doc := fmt.Sprintf(`apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: %s
spec:
  amiFamily: %s
  amiSelectorTerms:
    - %s
  role: eks-payments-prod-nodes
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: payments-prod}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: payments-prod}
%s`, name, family, amiTerm, extra)
	if status != "" {
		doc += "status:\n" + status
	}
	return doc
}

// corpusPool is a NodePool of the corpus; reqs are its requirements as
// YAML list items (indented eight spaces), labels its template labels.
func corpusPool(name, class, reqs string) string {
	if reqs == "" {
		reqs = "        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n"
	}
	return fmt.Sprintf(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: %s
spec:
  template:
    metadata:
      labels: {team: payments}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %s}
      requirements:
%s`, name, class, reqs)
}

const corpusAWSAuth = `apiVersion: v1
kind: ConfigMap
metadata:
  name: aws-auth
  namespace: kube-system
data:
  mapRoles: |
    - rolearn: ROLEARN
      username: USERNAME
      groups:
GROUPS`

func awsAuthOf(arn, username string, groups ...string) string {
	var g strings.Builder
	for _, group := range groups {
		g.WriteString("        - " + group + "\n")
	}
	return strings.NewReplacer("ROLEARN", arn, "USERNAME", username, "GROUPS", g.String()).Replace(corpusAWSAuth)
}

var goodAWSAuth = awsAuthOf("arn:aws:iam::"+corpusAccount+":role/eks-payments-prod-nodes", "system:node:{{EC2PrivateDNSName}}", "system:bootstrappers", "system:nodes")

// corpusDaemonSet tolerates every taint, as CNI agents do.
const corpusDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: aws-node, namespace: kube-system}
spec:
  selector: {matchLabels: {k8s-app: aws-node}}
  template:
    metadata: {labels: {k8s-app: aws-node}}
    spec:
      tolerations: [{operator: Exists}]
      containers: [{name: aws-node, image: amazon-k8s-cni}]
`

// corpusWorkload is a Deployment of 3 pods selecting the corpus pools'
// label.
const corpusWorkload = `apiVersion: apps/v1
kind: Deployment
metadata: {name: checkout, namespace: payments}
spec:
  replicas: 3
  selector: {matchLabels: {app: checkout}}
  template:
    metadata: {labels: {app: checkout}}
    spec:
      nodeSelector: {team: payments}
      containers:
        - name: checkout
          image: payments/checkout:1.4
          resources: {requests: {cpu: 500m, memory: 512Mi}}
`

const nodeConfigHead = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
`

func userData(body string) string {
	var b strings.Builder
	b.WriteString("  userData: |\n")
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

func amd64Status(id, name string) string {
	return fmt.Sprintf(`  amis:
    - id: %s
      name: %s
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
`, id, name)
}

type corpusCase struct {
	shape string
	// broken and twin are the objects; the rest (aws-auth, DaemonSet,
	// workload) is added to both unless the case replaces it.
	broken, twin string
	code         string
	object       string
	fix          []string
	// blocksLaunch: the failure keeps the NodePool from launching, so
	// simulate leaves the workload's pods unplaced.
	blocksLaunch bool
	// noCommon: do not add the common objects.
	noCommon bool
}

func s1Cases() []corpusCase {
	pool := corpusPool("checkout", "payments", "")
	classWith := func(family, extra string) string {
		return corpusClass("payments", family, "alias: "+strings.ToLower(family)+"@latest", extra, "")
	}
	var out []corpusCase
	// The AL2023 kubelet flag, in every quoting users write it.
	for _, flag := range []string{
		`"--register-with-taints=dedicated=payments:NoSchedule"`,
		`'--register-with-taints=dedicated=payments:NoSchedule'`,
		`--register-with-taints=dedicated=payments:NoSchedule`,
		`"--register-with-taints dedicated=payments:NoSchedule"`,
		`"--node-labels=team=payments --register-with-taints=dedicated=payments:NoSchedule"`,
	} {
		out = append(out, corpusCase{shape: "S1 AL2023 flag " + flag,
			broken: classWith("AL2023", userData(nodeConfigHead+"    flags:\n      - "+flag+"\n--//--\n")) + "---\n" + pool,
			twin:   classWith("AL2023", userData(nodeConfigHead+"    flags:\n      - --node-labels=team=payments\n--//--\n")) + "---\n" + pool,
			code:   CodeUserDataOverridesTaints, object: "EC2NodeClass/payments", blocksLaunch: true,
			// A permanent taint goes to taints, not startupTaints.
			fix: []string{"taints:\n        - key: dedicated\n          value: \"payments\"\n          effect: NoSchedule"}})
	}
	out = append(out,
		corpusCase{shape: "S1 AL2023 config registerWithTaints",
			broken: classWith("AL2023", userData(nodeConfigHead+"    config:\n      registerWithTaints:\n        - {key: node.cilium.io/agent-not-ready, value: \"true\", effect: NoExecute}\n--//--\n")) + "---\n" + pool,
			twin:   classWith("AL2023", userData(nodeConfigHead+"    config:\n      imageGCHighThresholdPercent: 80\n--//--\n")) + "---\n" + pool,
			code:   CodeUserDataOverridesTaints, object: "EC2NodeClass/payments",
			// An agent's taint goes to startupTaints.
			fix: []string{"startupTaints:\n        - key: node.cilium.io/agent-not-ready"}},
		corpusCase{shape: "S1 spec.kubelet.registerWithTaints",
			broken: classWith("AL2023", "  kubelet:\n    registerWithTaints:\n      - {key: dedicated, value: payments, effect: NoSchedule}\n") + "---\n" + pool,
			twin:   classWith("AL2023", "  kubelet:\n    maxPods: 58\n") + "---\n" + pool,
			code:   CodeUserDataOverridesTaints, object: "EC2NodeClass/payments", blocksLaunch: true,
			fix: []string{"remove registerWithTaints from EC2NodeClass payments's spec.kubelet", "taints:\n        - key: dedicated"}},
		corpusCase{shape: "S1 AL2 script calls bootstrap.sh",
			broken: classWith("AL2", userData("#!/bin/bash\n/etc/eks/bootstrap.sh payments-prod --kubelet-extra-args '--register-with-taints=dedicated=payments:NoSchedule'\n")) + "---\n" + pool,
			twin:   classWith("AL2", userData("#!/bin/bash\necho 'vm.max_map_count=262144' >> /etc/sysctl.conf\n")) + "---\n" + pool,
			code:   CodeUserDataOverridesTaints, object: "EC2NodeClass/payments", blocksLaunch: true, fix: []string{"bootstrap.sh"}},
		corpusCase{shape: "S1 Bottlerocket node-taints",
			broken: classWith("Bottlerocket", userData("[settings.kubernetes.node-taints]\n\"dedicated\" = [\"payments:NoSchedule\"]\n")) + "---\n" + pool,
			twin:   classWith("Bottlerocket", userData("[settings.kubernetes]\nimage-gc-high-threshold-percent = 80\n")) + "---\n" + pool,
			code:   CodeUserDataOverridesTaints, object: "EC2NodeClass/payments", fix: []string{"taints:\n        - key: dedicated"}},
	)
	return out
}

func s3Cases() []corpusCase {
	pool := corpusPool("checkout", "payments", "")
	custom := func(script string) string {
		return corpusClass("payments", "Custom", "id: ami-0f3e2d1c0b9a87654", userData(script), amd64Status("ami-0f3e2d1c0b9a87654", "payments-golden-al2-x86_64-2026.10"))
	}
	twin := custom("#!/bin/bash\n/etc/eks/bootstrap.sh payments-prod --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute --node-labels=team=payments'\n") + "---\n" + pool
	var out []corpusCase
	for _, shape := range []struct{ name, line string }{
		{"--opt=value", "--kubelet-extra-args='--register-with-taints=karpenter.sh/unregistered:NoExecute'"},
		{"a single-quoted part with a space", "--kubelet-extra-args \"--node-labels 'team=payments, tier=a' --register-with-taints=karpenter.sh/unregistered:NoExecute\""},
		{"--kubelet-extra-args twice", "--kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' --kubelet-extra-args '--node-labels=team=payments'"},
		{"a trailing option without its value", "--kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute' --apiserver-endpoint"},
	} {
		out = append(out, corpusCase{shape: "S3 AL2 bootstrap " + shape.name,
			broken: custom("#!/bin/bash\n/etc/eks/bootstrap.sh payments-prod "+shape.line+"\n") + "---\n" + pool, twin: twin,
			code: CodeBootstrapArgsMalformed, object: "EC2NodeClass/payments", blocksLaunch: true, fix: []string{"--kubelet-extra-args"}})
	}
	out = append(out, corpusCase{shape: "S3 Custom without the taint",
		broken: custom("#!/bin/bash\n/etc/eks/bootstrap.sh payments-prod\n") + "---\n" + pool, twin: twin,
		code: CodeCustomMissingUnregistered, object: "EC2NodeClass/payments", blocksLaunch: true, fix: []string{"karpenter.sh/unregistered:NoExecute"}})
	return out
}

func s4Cases() []corpusCase {
	objects := corpusClass("payments", "AL2023", "alias: al2023@latest", "", "") + "---\n" + corpusPool("checkout", "payments", "")
	arn := "arn:aws:iam::" + corpusAccount + ":role/eks-payments-prod-nodes"
	var out []corpusCase
	for _, shape := range []struct {
		name, awsAuth string
		fix           []string
	}{
		{"role with its IAM path", awsAuthOf("arn:aws:iam::"+corpusAccount+":role/eks/nodes/eks-payments-prod-nodes", "system:node:{{EC2PrivateDNSName}}", "system:bootstrappers", "system:nodes"),
			[]string{"replace rolearn: arn:aws:iam::" + corpusAccount + ":role/eks/nodes/eks-payments-prod-nodes with rolearn: " + arn}},
		{"the controller's role", awsAuthOf("arn:aws:iam::"+corpusAccount+":role/eks-payments-prod-karpenter-controller", "system:node:{{EC2PrivateDNSName}}", "system:bootstrappers", "system:nodes"),
			[]string{"add to data.mapRoles", "- rolearn: " + arn}},
		{"without system:bootstrappers", awsAuthOf(arn, "system:node:{{EC2PrivateDNSName}}", "system:nodes"),
			[]string{"replace the entry of " + arn, "- system:bootstrappers"}},
		{"another username", awsAuthOf(arn, "system:node:{{SessionName}}", "system:bootstrappers", "system:nodes"),
			[]string{"replace the entry of " + arn, "username: system:node:{{EC2PrivateDNSName}}"}},
		{"another account", awsAuthOf("arn:aws:iam::111122223333:role/eks-payments-prod-nodes-staging", "system:node:{{EC2PrivateDNSName}}", "system:bootstrappers", "system:nodes"),
			[]string{"add to data.mapRoles", "role/eks-payments-prod-nodes"}},
	} {
		out = append(out, corpusCase{shape: "S4 aws-auth " + shape.name, noCommon: true,
			broken: objects + "---\n" + shape.awsAuth + "---\n" + corpusDaemonSet + "---\n" + corpusWorkload,
			twin:   objects + "---\n" + goodAWSAuth + "---\n" + corpusDaemonSet + "---\n" + corpusWorkload,
			code:   CodeNodeRoleNotMapped, object: "EC2NodeClass/payments", fix: shape.fix})
	}
	return out
}

func s5Cases() []corpusCase {
	var out []corpusCase
	x86 := amd64Status("ami-0c1d2e3f4a5b6c7d8", "amazon-eks-node-al2023-x86_64-standard-1.32-v20261015")
	// The AMI: by id in a dump, by name in a manifest.
	amis := []struct {
		name, term, status, fix string
	}{
		{"an x86_64 id in a dump", "id: ami-0c1d2e3f4a5b6c7d8", x86, "- name: amazon-eks-node-al2023-arm64-standard-1.32-v20261015"},
		{"an x86_64 name in a manifest", "name: amazon-eks-node-al2023-x86_64-standard-1.32-*", "", "- alias: al2023@latest"},
		{"an x86_64 SSM parameter", "ssmParameter: /aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/standard/recommended/image_id", "", "- alias: al2023@latest"},
	}
	// The architecture: implied by family, type, category and generation,
	// or explicit.
	arm := []struct{ name, reqs string }{
		{"instance family t4g", "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [t4g]}\n"},
		{"instance types m7g", "        - {key: node.kubernetes.io/instance-type, operator: In, values: [m7g.large, m7g.xlarge]}\n"},
		{"explicit arch", "        - {key: kubernetes.io/arch, operator: In, values: [arm64]}\n        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c7g, m7g]}\n"},
		{"family c6g and generation", "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c6g, c6gn]}\n        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: [\"5\"]}\n"},
	}
	for _, a := range amis {
		for _, p := range arm {
			out = append(out, corpusCase{shape: "S5 " + p.name + " with " + a.name,
				broken: corpusClass("graviton", "AL2023", a.term, "", a.status) + "---\n" + corpusPool("ci-arm", "graviton", p.reqs),
				twin:   corpusClass("graviton", "AL2023", "alias: al2023@latest", "", "") + "---\n" + corpusPool("ci-arm", "graviton", p.reqs),
				code:   CodeAMIArchitectureMismatch, object: "NodePool/ci-arm", blocksLaunch: true,
				fix: []string{"add an AMI for arm64 to EC2NodeClass graviton's spec.amiSelectorTerms", a.fix}})
		}
	}
	// Both architectures asked for by name, only one has an AMI: the fix
	// may keep to the one that has.
	both := "        - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}\n"
	out = append(out, corpusCase{shape: "S5 both architectures asked, x86_64 AMI",
		broken: corpusClass("graviton", "AL2023", "id: ami-0c1d2e3f4a5b6c7d8", "", x86) + "---\n" + corpusPool("ci-arm", "graviton", both),
		twin:   corpusClass("graviton", "AL2023", "alias: al2023@latest", "", "") + "---\n" + corpusPool("ci-arm", "graviton", both),
		code:   CodeAMIArchitectureMismatch, object: "NodePool/ci-arm", fix: []string{"kubernetes.io/arch In [amd64]"}})
	return out
}

// otherCases are the other ways users' inputs fail before launch.
func otherCases() []corpusCase {
	pool := corpusPool("checkout", "payments", "")
	good := corpusClass("payments", "AL2023", "alias: al2023@latest", "", "")
	big := strings.Repeat("# padding a script users inline: certificates, configuration files and the like\n", 190)
	huge := strings.Repeat("# a script over the limit by itself\n", 600)
	return []corpusCase{
		{shape: "nodeClassRef names a missing EC2NodeClass",
			broken: good + "---\n" + corpusPool("checkout", "paymnets", ""), twin: good + "---\n" + pool,
			code: CodeNodeClassNotFound, object: "NodePool/checkout", blocksLaunch: true, fix: []string{"nodeClassRef.name to payments (did you mean payments?)"}},
		{shape: "user data over 16 KB once merged",
			broken: corpusClass("payments", "AL2023", "alias: al2023@latest", userData("#!/bin/bash\n"+big), "") + "---\n" + pool,
			twin:   corpusClass("payments", "AL2023", "alias: al2023@latest", userData("#!/bin/bash\necho ok\n"), "") + "---\n" + pool,
			code:   CodeUserDataTooLarge, object: "EC2NodeClass/payments", blocksLaunch: true, fix: []string{"shrink EC2NodeClass payments's spec.userData by"}},
		{shape: "user data over 16 KB by itself",
			broken: corpusClass("payments", "AL2023", "alias: al2023@latest", userData("#!/bin/bash\n"+huge), "") + "---\n" + pool,
			twin:   corpusClass("payments", "AL2023", "alias: al2023@latest", userData("#!/bin/bash\necho ok\n"), "") + "---\n" + pool,
			code:   CodeUserDataTooLarge, object: "EC2NodeClass/payments", blocksLaunch: true, fix: []string{"shrink EC2NodeClass payments's spec.userData by"}},
		{shape: "spec.kubelet the controller refuses",
			broken: corpusClass("payments", "AL2023", "alias: al2023@latest", "  kubelet:\n    imageGCHighThresholdPercent: 40\n    imageGCLowThresholdPercent: 60\n", "") + "---\n" + pool,
			twin:   corpusClass("payments", "AL2023", "alias: al2023@latest", "  kubelet:\n    imageGCHighThresholdPercent: 85\n    imageGCLowThresholdPercent: 60\n", "") + "---\n" + pool,
			code:   CodeKubeletConfigRefused, object: "EC2NodeClass/payments", blocksLaunch: true, fix: []string{"spec.kubelet"}},
		{shape: "a pod selector no instance type of the NodePool meets", noCommon: true,
			broken: good + "---\n" + goodAWSAuth + "---\n" + corpusDaemonSet + "---\n" + corpusPool("checkout", "payments", "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i]}\n") +
				"---\n" + strings.Replace(corpusWorkload, "nodeSelector: {team: payments}", "nodeSelector: {team: payments, kubernetes.io/arch: arm64}", 1),
			twin: good + "---\n" + goodAWSAuth + "---\n" + corpusDaemonSet + "---\n" + corpusPool("checkout", "payments", "        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m6i, m7g]}\n") +
				"---\n" + strings.Replace(corpusWorkload, "nodeSelector: {team: payments}", "nodeSelector: {team: payments, kubernetes.io/arch: arm64}", 1),
			code: CodePodIncompatible, object: "Deployment/payments/checkout", blocksLaunch: true, fix: []string{"karpenter.k8s.aws/instance-family", "add ", "to its values"}},
	}
}

func corpus() []corpusCase {
	return slices.Concat(s1Cases(), s3Cases(), s4Cases(), s5Cases(), otherCases())
}

func loadCorpus(t *testing.T, name, docs string, common bool) *whatif.Objects {
	t.Helper()
	if common {
		docs += "---\n" + goodAWSAuth + "---\n" + corpusDaemonSet + "---\n" + corpusWorkload
	}
	o := &whatif.Objects{}
	if err := o.Load(name, strings.NewReader(docs)); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, docs)
	}
	return o
}

// TestCorpus: doctor names each failure on the object that holds it,
// with a fix that carries its value, and finds nothing wrong with its
// twin; and doctor and simulate agree on every case and twin: the pods
// simulate leaves without a place are exactly those doctor reports, and a
// failure that keeps a NodePool from launching leaves its pods unplaced.
func TestCorpus(t *testing.T) {
	cases := corpus()
	agreed, total := 0, 0
	for _, tc := range cases {
		t.Run(tc.shape, func(t *testing.T) {
			for _, side := range []struct {
				name, docs string
				broken     bool
			}{{"broken", tc.broken, true}, {"twin", tc.twin, false}} {
				o := loadCorpus(t, side.name+".yaml", side.docs, !tc.noCommon)
				r := diagnose(t, Input{Objects: o})
				fs := only(r, tc.code)
				if side.broken {
					if len(fs) == 0 {
						t.Fatalf("no %s finding; findings: %+v", tc.code, r.Findings)
					}
					f := fs[0]
					if f.Object != tc.object {
						t.Errorf("%s on %s, want %s", tc.code, f.Object, tc.object)
					}
					for _, frag := range tc.fix {
						if !strings.Contains(f.Fix, frag) {
							t.Errorf("%s's fix lacks %q:\n%s", tc.code, frag, f.Fix)
						}
					}
				} else if len(fs) > 0 || r.HasErrors() {
					t.Errorf("the twin has findings: %+v", r.Findings)
				}
				total++
				if agree(t, o, r, side.broken && tc.blocksLaunch) {
					agreed++
				}
			}
		})
	}
	t.Logf("corpus: %d cases (%d inputs with their twins); doctor and simulate agree on %d of %d", len(cases), 2*len(cases), agreed, total)
}

// agree checks that simulate leaves exactly the pods doctor reports
// without a place, and, when the failure blocks launches, some.
func agree(t *testing.T, o *whatif.Objects, r *Report, blocks bool) bool {
	t.Helper()
	res, err := whatif.Run(o)
	if err != nil {
		t.Errorf("simulate: %v", err)
		return false
	}
	var planned []string
	for _, u := range res.Plan.Unschedulable {
		planned = append(planned, u.Pod.Namespace+"/"+u.Pod.Name)
	}
	var reported []string
	for _, f := range only(r, CodePodIncompatible) {
		reported = append(reported, podsOf(f.Evidence)...)
	}
	sort.Strings(planned)
	sort.Strings(reported)
	ok := slices.Equal(planned, reported)
	if !ok {
		t.Errorf("simulate leaves %v unplaced, doctor reports %v", planned, reported)
	}
	if blocks && len(planned) == 0 {
		t.Errorf("the failure blocks launches, but simulate placed every pod")
		ok = false
	}
	return ok
}

// podsOf reads the pod names of a pod finding's evidence ("pods a, b, c
// and N more: ..."); the corpus's workloads have 3 pods.
func podsOf(evidence string) []string {
	list, _, _ := strings.Cut(strings.TrimPrefix(evidence, "pods "), ": ")
	var out []string
	for _, p := range strings.Split(list, ", ") {
		if !strings.HasPrefix(p, "and ") {
			out = append(out, p)
		}
	}
	return out
}
