// Package boottest generates user data, seeded and reproducible, by
// composing the constructs users write (part types and encodings, flag
// spellings, quoting, variables and exports, repeats, script order), for
// tests that run it through the boot models and through the real
// implementations.
package boottest

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// Cases is how many generated inputs a test runs: NODEWRIGHT_BOOT_CASES,
// else def.
func Cases(def int) int {
	if n, err := strconv.Atoi(os.Getenv("NODEWRIGHT_BOOT_CASES")); err == nil && n > 0 {
		return n
	}
	return def
}

// Input is one generated user data.
type Input struct {
	// Seed reproduces it: Generate(seed) is the same input.
	Seed     uint64
	Family   string
	UserData string
	// Constructs name what it is made of, for messages.
	Constructs []string
	// Template is the user data with @EKS@ where the directory of the
	// node image's scripts (/etc/eks) is, so that an oracle can run it
	// with its own recorder there.
	Template string
}

// EKSDir is the directory the node image keeps its scripts in.
const EKSDir = "/etc/eks"

// Render is the user data with the image's scripts in dir.
func (in Input) Render(dir string) string { return strings.ReplaceAll(in.Template, "@EKS@", dir) }

// KubeletWords are kubelet arguments users pass, right and wrong: the
// registration taint spelled every way, labels the kubelet refuses,
// values it cannot parse.
var KubeletWords = []string{
	"--register-with-taints=karpenter.sh/unregistered:NoExecute",
	"--register-with-taints=karpenter.sh/unregistered=true:NoExecute",
	"--register-with-taints=karpenter.sh/unregistered:NoExecute,dedicated=ci:NoSchedule",
	"--register-with-taints=dedicated=ci:NoSchedule",
	"--register-with-taints=karpenter.sh/unregistered:Noschedule",
	"--register-with-taints=karpenter.sh/uninitialized:NoExecute",
	"--register-with-taints karpenter.sh/unregistered:NoExecute",
	"--node-labels=team=ci",
	"--node-labels=node-role.kubernetes.io/worker=true",
	"--node-labels=node.kubernetes.io/lifecycle=spot",
	"--node-labels=team=ci,tier=batch",
	"--node-labels=bad key=x",
	"--max-pods=58",
	"--max-pods=abc",
	"--v=2",
	"--eviction-hard=memory.available<200Mi",
	"--kube-reserved=cpu=100m,memory=512Mi",
	"--image-gc-high-threshold=85",
	"--no-such-flag",
	"--anonymous-auth false",
}

// al2 is the state of one generated AL2 script.
type al2 struct {
	r          *rand.Rand
	constructs []string
}

func (g *al2) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *al2) note(construct string) {
	g.constructs = append(g.constructs, construct)
}

// extraArgs is a value for --kubelet-extra-args: one to four kubelet
// words, sometimes quoted inside.
func (g *al2) extraArgs() string {
	count := 1 + g.r.IntN(3)
	words := make([]string, 0, count)
	for range count {
		w := g.pick(KubeletWords)
		if g.r.IntN(6) == 0 {
			// quotes inside the value, which systemd removes
			if flag, value, ok := strings.Cut(w, "="); ok {
				w = flag + `="` + value + `"`
			}
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// quote writes a word for the shell: single, double or no quotes.
func (g *al2) quote(s string) string {
	switch g.r.IntN(5) {
	case 0:
		if !strings.ContainsAny(s, " \t'\"$`\\<>|&;(){}*?[]#~=") {
			return s
		}
		return "'" + strings.ReplaceAll(s, `'`, `'\''`) + "'"
	case 1, 2:
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(s) + `"`
	default:
		return "'" + strings.ReplaceAll(s, `'`, `'\''`) + "'"
	}
}

// call is a bootstrap.sh call with its preparation: how the kubelet
// arguments reach it (an option, a variable, an export, a prefix
// assignment, an array, the option repeated or joined with =), the
// cluster options, and the command's spelling.
func (g *al2) call() string {
	var pre []string
	var args []string
	cluster := g.pick([]string{"prod-eu", "team-a-dev", "c1"})
	switch g.r.IntN(5) {
	case 0:
		pre = append(pre, "CLUSTER="+g.quote(cluster))
		args = append(args, g.pick([]string{`"$CLUSTER"`, `${CLUSTER}`, `"${CLUSTER}"`}))
		g.note("cluster from a variable")
	case 1:
		g.note("no cluster name")
	default:
		args = append(args, g.quote(cluster))
	}
	if g.r.IntN(8) != 0 {
		args = append(args, "--b64-cluster-ca", g.quote("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"), "--apiserver-endpoint", g.quote("https://ABC123.gr7.eu-west-1.eks.amazonaws.com"))
	} else {
		g.note("no endpoint or CA")
	}
	if g.r.IntN(4) == 0 {
		args = append(args, "--dns-cluster-ip", g.pick([]string{"10.100.0.10", "172.20.0.10"}))
	}
	if g.r.IntN(4) == 0 {
		args = append(args, "--use-max-pods", g.pick([]string{"false", "true"}))
	}
	extra := g.extraArgs()
	switch g.r.IntN(11) {
	case 0:
		pre = append(pre, "KUBELET_EXTRA_ARGS="+g.quote(extra))
		args = append(args, "--kubelet-extra-args", `"$KUBELET_EXTRA_ARGS"`)
		g.note("extra args from a variable")
	case 1:
		pre = append(pre, "export KUBELET_EXTRA_ARGS="+g.quote(extra))
		g.note("extra args exported")
	case 2:
		pre = append(pre, "EXTRA="+g.quote(extra))
		args = append(args, "--kubelet-extra-args", "$EXTRA")
		g.note("extra args unquoted variable")
	case 3:
		args = append(args, "--kubelet-extra-args="+g.quote(extra))
		g.note("--kubelet-extra-args=VALUE")
	case 4:
		args = append(args, "--kubelet-extra-args", g.quote(g.extraArgs()), "--kubelet-extra-args", g.quote(extra))
		g.note("--kubelet-extra-args twice")
	case 5:
		pre = append(pre, "ARGS=(--kubelet-extra-args "+g.quote(extra)+")")
		args = append(args, `"${ARGS[@]}"`)
		g.note("arguments from an array")
	case 6:
		args = append(args, "--kubelet-extra-args")
		g.note("--kubelet-extra-args last, without a value")
	case 7:
		pre = append(pre, "export KUBELET_EXTRA_ARGS="+g.quote(g.extraArgs()))
		args = append(args, "--kubelet-extra-args", g.quote(extra))
		g.note("exported and given")
	default:
		args = append(args, "--kubelet-extra-args", g.quote(extra))
	}
	if g.r.IntN(20) == 0 {
		args = append(args, "--help")
		g.note("--help")
	}
	// an argument before the cluster name moves it
	if g.r.IntN(12) == 0 {
		args = append([]string{"--use-max-pods", "false"}, args...)
	}
	name := "@EKS@/bootstrap.sh"
	switch g.r.IntN(8) {
	case 0:
		name = "bash @EKS@/bootstrap.sh"
		g.note("bash bootstrap.sh")
	case 1:
		pre = append(pre, "cd @EKS@")
		name = "./bootstrap.sh"
		g.note("./bootstrap.sh")
	}
	sep := " "
	if g.r.IntN(3) == 0 {
		sep = " \\\n  "
	}
	line := name + " " + strings.Join(args, sep)
	if g.r.IntN(10) == 0 {
		line = "KUBELET_EXTRA_ARGS=" + g.quote(g.extraArgs()) + " " + line
		g.note("prefix assignment")
	}
	return strings.Join(append(pre, line), "\n")
}

// wrap puts the call in the constructs scripts put it in: a function, a
// condition, set -e with commands before it, an early exit.
func (g *al2) wrap(call string) string {
	switch g.r.IntN(9) {
	case 0:
		g.note("in a function")
		return "join() {\n" + call + "\n}\njoin"
	case 1:
		g.note("after set -e and yum")
		return "set -euo pipefail\nyum install -y amazon-ssm-agent\n" + call
	case 2:
		g.note("in an if")
		return "if [ -x @EKS@/bootstrap.sh ]; then\n" + call + "\nfi"
	case 3:
		g.note("|| exit")
		return call + " || exit 1"
	case 4:
		g.note("exit before the call")
		return "exit 0\n" + call
	case 5:
		g.note("called twice")
		return call + "\n" + call
	case 6:
		g.note("a second, different call")
		return call + "\n" + g.call()
	case 7:
		g.note("written to a file that bash runs")
		return "cat > @EKS@/join.sh <<'EOF'\n#!/bin/bash\n" + call + "\nEOF\nbash @EKS@/join.sh"
	case 8:
		g.note("written to a file that runs itself")
		return "cat > @EKS@/join.sh <<'EOF'\n#!/bin/bash -e\n" + call + "\nEOF\nchmod +x @EKS@/join.sh\n@EKS@/join.sh"
	}
	return call
}

// AL2Script is a generated AL2 user data script.
func AL2Script(seed uint64) Input {
	g := &al2{r: rand.New(rand.NewPCG(seed, 2))} //nolint:gosec // reproducible inputs
	shebang := g.pick([]string{"#!/bin/bash", "#!/usr/bin/env bash", "#!/bin/bash -xe"})
	body := g.wrap(g.call())
	if g.r.IntN(4) == 0 {
		body = "echo starting\nsysctl -w net.core.somaxconn=1024\n" + body
	}
	in := Input{Seed: seed, Family: "AL2", Template: shebang + "\n" + body + "\n", Constructs: g.constructs}
	in.UserData = in.Render(EKSDir)
	return in
}
