package al2023

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Input is one generated AL2023 user data (the user's part of it).
type Input struct {
	Seed       uint64
	UserData   string
	Constructs []string
}

type gen struct {
	r          *rand.Rand
	constructs []string
}

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *gen) note(c string)             { g.constructs = append(g.constructs, c) }

var (
	genAPIVersions = []string{"node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1",
		"node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1", "node.eks.aws/v1alpha1",
		"node.eks.aws/v1alpha1", "node.eks.aws/v1beta1", "node.eks.amazonaws.com/v1alpha1", ""}
	genKinds = []string{"NodeConfig", "NodeConfig", "NodeConfig", "NodeConfig", "NodeConfig", "NodeConfig", "NodeConfig",
		"NodeConfig", "NodeConfig", "NodeConfig", "NodeConfig", "NodeConfiguration"}
	genFlags = []string{
		"--register-with-taints=karpenter.sh/unregistered:NoExecute", "--register-with-taints=dedicated=gpu:NoSchedule",
		"--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=gpu:NoSchedule", "--node-labels=team=ml",
		"--node-labels=node-role.kubernetes.io/gpu=true", "--max-pods=45", "--v=2", `--node-labels="team=ml,tier=a"`,
		"--register-with-taints=dedicated=gpu:Noschedule",
	}
	genConfigs = []string{
		"      maxPods: 37\n", "      registerWithTaints:\n        - key: dedicated\n          value: gpu\n          effect: NoSchedule\n",
		"      registerWithTaints: []\n", "      kubeReserved:\n        cpu: 100m\n", "      clusterDNS: [169.254.20.10]\n",
		"      evictionHard:\n        memory.available: 200Mi\n", "      maxPods: \"37\"\n", "      shutdownGracePeriod: 30s\n",
	}
)

// nodeConfig is a NodeConfig document: its apiVersion and kind (right,
// misspelt, another version), kubelet flags (a list or, wrongly, a
// scalar) and configuration.
func (g *gen) nodeConfig() string {
	var b strings.Builder
	if v := g.pick(genAPIVersions); v != "" {
		fmt.Fprintf(&b, "apiVersion: %s\n", v)
		if v != "node.eks.aws/v1alpha1" {
			g.note("apiVersion " + v)
		}
	} else {
		g.note("no apiVersion")
	}
	kind := g.pick(genKinds)
	if kind != "NodeConfig" {
		g.note("kind " + kind)
	}
	fmt.Fprintf(&b, "kind: %s\nspec:\n", kind)
	if g.r.IntN(3) == 0 {
		// A Custom AMI's user data names its cluster itself.
		cluster := []string{"    name: payments-prod\n", "    apiServerEndpoint: https://F00D.yl4.eu-west-1.eks.amazonaws.com\n",
			"    certificateAuthority: LS0tLS1CRUdJTg==\n", "    cidr: 10.100.0.0/16\n"}
		if g.r.IntN(4) == 0 {
			drop := g.r.IntN(len(cluster))
			g.note("spec.cluster without " + strings.Fields(cluster[drop])[0])
			cluster = append(cluster[:drop], cluster[drop+1:]...)
		}
		b.WriteString("  cluster:\n" + strings.Join(cluster, ""))
	}
	b.WriteString("  kubelet:\n")
	switch g.r.IntN(12) {
	case 0:
		fmt.Fprintf(&b, "    flags: %q\n", g.pick(genFlags))
		g.note("flags as a scalar")
	case 1, 2, 3, 4, 5, 6, 7:
		b.WriteString("    flags:\n")
		for range 1 + g.r.IntN(2) {
			fmt.Fprintf(&b, "      - %q\n", g.pick(genFlags))
		}
	}
	if g.r.IntN(2) == 0 {
		b.WriteString("    config:\n")
		for range 1 + g.r.IntN(2) {
			b.WriteString(g.pick(genConfigs))
		}
	}
	if g.r.IntN(8) == 0 {
		b.WriteString("---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--register-with-taints=second:NoSchedule\"]\n")
		g.note("two documents in a part")
	}
	return b.String()
}

func gzipped(s string) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return buf.String()
}

// part is a MIME part: a NodeConfig, a script that writes a drop-in or
// runs nodeadm, or a cloud-config that writes a drop-in; sometimes base64
// or gzip encoded.
func (g *gen) part() string {
	var ct, body string
	switch g.r.IntN(6) {
	case 0, 1, 2:
		ct, body = "application/node.eks.aws", g.nodeConfig()
	case 3:
		ct = "text/x-shellscript"
		name := g.pick([]string{"50-user.yaml", "00-first.yaml", "99-gpu.json", "notes.txt"})
		body = "#!/bin/bash\nmkdir -p /etc/eks/nodeadm.d\ncat > /etc/eks/nodeadm.d/" + name + " <<'EOF'\n" + g.nodeConfig() + "EOF\n"
		g.note("script writes drop-in " + name)
		if g.r.IntN(4) == 0 {
			body += "nodeadm init\n"
			g.note("script runs nodeadm init")
		}
	case 4:
		ct = "text/cloud-config"
		doc := g.nodeConfig()
		if g.r.IntN(2) == 0 {
			body = "#cloud-config\nwrite_files:\n  - path: /etc/eks/nodeadm.d/60-cc.yaml\n    encoding: b64\n    content: " + base64.StdEncoding.EncodeToString([]byte(doc)) + "\n"
			g.note("cloud-config writes a drop-in (b64)")
		} else {
			body = "#cloud-config\nwrite_files:\n  - path: /etc/eks/nodeadm.d/60-cc.yaml\n    content: |\n" + indent(doc, "      ") + "\n"
			g.note("cloud-config writes a drop-in")
		}
	default:
		ct, body = "text/x-shellscript", "#!/bin/bash\necho hello\n"
	}
	header := "Content-Type: " + ct + "\n"
	switch g.r.IntN(6) {
	case 0:
		header += "Content-Transfer-Encoding: base64\n"
		body = base64.StdEncoding.EncodeToString([]byte(body)) + "\n"
		g.note(ct + " base64")
	case 1:
		if ct == "application/node.eks.aws" {
			body = base64.StdEncoding.EncodeToString([]byte(gzipped(body))) + "\n"
			g.note("NodeConfig gzip+base64")
		}
	}
	return header + "\n" + body
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix)
}

// Generate is the user's AL2023 user data of a seed: one to three MIME
// parts, or a bare NodeConfig.
func Generate(seed uint64) Input {
	g := &gen{r: rand.New(rand.NewPCG(seed, 2023))} //nolint:gosec // reproducible inputs
	if g.r.IntN(6) == 0 {
		g.note("a bare NodeConfig")
		return Input{Seed: seed, UserData: g.nodeConfig(), Constructs: g.constructs}
	}
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n")
	for range 1 + g.r.IntN(3) {
		b.WriteString("--BOUNDARY\n" + g.part())
	}
	b.WriteString("--BOUNDARY--\n")
	return Input{Seed: seed, UserData: b.String(), Constructs: g.constructs}
}
