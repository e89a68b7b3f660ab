package boottest

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// brValue is a generated settings.kubernetes entry: its key and the
// TOML of its value.
type brValue struct{ key, toml string }

// brValues are settings users write, right and wrong: quoted integers,
// floats, bad effects, label keys the kubelet refuses, typos, every
// value shape the model's types take or refuse.
var brValues = []brValue{
	{"max-pods", "58"}, {"max-pods", `"110"`}, {"max-pods", `"58"`}, {"max-pods", "110.0"}, {"max-pods", "-1"}, {"max-pods", "4294967296"},
	{"cluster-dns-ip", `"10.100.0.10"`}, {"cluster-dns-ip", `["10.100.0.10", "10.100.0.11"]`}, {"cluster-dns-ip", `"10.100.0"`}, {"cluster-dns-ip", "[]"},
	{"kube-reserved", `{ cpu = "100m", memory = "512Mi" }`}, {"kube-reserved", `{ gpu = "1" }`}, {"kube-reserved", `{ cpu = 100 }`}, {"kube-reserved", `{ ephemeral-storage = "1Gi" }`},
	{"system-reserved", `{ memory = "1.5Gi" }`}, {"system-reserved", `{ memory = "12%" }`},
	{"eviction-hard", `{ "memory.available" = "200Mi" }`}, {"eviction-hard", `{ "memory.available" = "10%" }`}, {"eviction-hard", `{ "memory.available" = "100%" }`},
	{"eviction-hard", `{ "memory.avail" = "1Gi" }`}, {"eviction-hard", `{ "nodefs.available" = "9.5%" }`},
	{"eviction-soft-grace-period", `{ "memory.available" = "1m30s" }`}, {"eviction-soft-grace-period", `{ "memory.available" = "90" }`},
	{"eviction-max-pod-grace-period", "30"}, {"eviction-max-pod-grace-period", "-5"},
	{"image-gc-high-threshold-percent", "85"}, {"image-gc-high-threshold-percent", `"85"`}, {"image-gc-high-threshold-percent", "101"}, {"image-gc-high-threshold-percent", "85.5"},
	{"image-gc-low-threshold-percent", `"+40"`}, {"image-gc-low-threshold-percent", `" 40"`},
	{"cpu-cfs-quota-enforced", "true"}, {"cpu-cfs-quota-enforced", `"true"`},
	{"cpu-manager-policy", `"static"`}, {"cpu-manager-policy", `"STATIC"`}, {"topology-manager-policy", `"best-effort"`}, {"topology-manager-scope", `"node"`},
	{"registry-qps", "20"}, {"registry-qps", "2147483648"}, {"pod-pids-limit", "4096"}, {"log-level", "4"}, {"log-level", "256"},
	{"container-log-max-size", `"50Mi"`}, {"container-log-max-files", "5"}, {"shutdown-grace-period", `"30s"`}, {"shutdown-grace-period", `"30 s"`},
	{"allowed-unsafe-sysctls", `["net.core.somaxconn"]`}, {"allowed-unsafe-sysctls", `"net.core.somaxconn"`},
	{"cloud-provider", `"external"`}, {"cloud-provider", `""`}, {"cloud-provider", `"gce"`},
	{"authentication-mode", `"aws"`}, {"authentication-mode", `"iam"`},
	{"hostname-override-source", `"instance-id"`}, {"hostname-override", `"ip-10-0-0-1.ec2.internal"`}, {"hostname-override", `"Ip-10"`},
	{"cluster-domain", `"cluster.local"`}, {"cluster-domain", `".cluster.local"`},
	{"node-ip", `"10.0.0.1"`}, {"reserved-cpus", `"0-1"`}, {"reserved-cpus", `"0-1,"`},
	{"seccomp-default", "true"}, {"pod-infra-container-image", `"602401143452.dkr.ecr.eu-west-1.amazonaws.com/eks/pause:3.9"`},
	{"max-pod", "58"}, {"clusterdns-ip", `"10.100.0.10"`}, {"node-label", `{ team = "ci" }`}, {"kubelet-extra-config", `"e30="`},
	{"credential-providers", `{ ecr-credential-provider = { enabled = true, image-patterns = ["*.dkr.ecr.*.amazonaws.com"] } }`},
	{"credential-providers", `{ ecr-credential-provider = { enabled = true } }`},
	{"static-pods", `{ my-pod = { enabled = true, manifest = "e30=" } }`}, {"static-pods", `{ my-pod = { enabled = true, path = "x" } }`},
}

// brLabels and brTaints are node-labels and node-taints entries, right
// and wrong.
var (
	brLabels = []string{
		`team = "ci"`, `"node.kubernetes.io/lifecycle" = "spot"`, `"node-role.kubernetes.io/worker" = ""`, `"bad key" = "x"`,
		`tier = 5`, `"example.com/gpu" = "true"`, `"kubernetes.io/arch" = "amd64"`, `"k8s.io/team" = "a"`, `zone = "eu west"`,
	}
	brTaints = []string{
		`dedicated = "ci:NoSchedule"`, `dedicated = ["ci:NoSchedule"]`, `dedicated = ["ci:NoSchedule", "ci:NoExecute"]`, `dedicated = []`,
		`dedicated = "ci:NO_SCHEDULE"`, `dedicated = "ci:Noschedule"`, `gpu = ":NoSchedule"`, `dedicated = "ci"`, `dedicated = 5`,
		`"karpenter.sh/unregistered" = ":NoExecute"`, `"nvidia.com/gpu" = "true:PreferNoSchedule"`,
	}
	brOtherTables = []string{
		"[settings.host-containers.admin]\nenabled = true\n", "[settings.kernel.sysctl]\n\"net.core.somaxconn\" = \"1024\"\n",
		"[settings.kernel.sysctl]\n\"fs.inotify.max_user_watches\" = 1048576\n",
		"[settings.foo]\nbar = 1\n", "[settings.kubelet]\nmax-pods = 10\n", "[metadata]\nowner = \"team-ci\"\n",
		"[settings.bootstrap-containers.setup]\nsource = \"example.com/setup:1\"\nmode = \"once\"\nessential = true\n",
	}
)

// bottlerocket is the state of one generated Bottlerocket user data.
type bottlerocket struct {
	r          *rand.Rand
	constructs []string
}

func (g *bottlerocket) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *bottlerocket) chance(n int) bool         { return g.r.IntN(n) == 0 }

// BottlerocketSettings is generated Bottlerocket user data: TOML with
// settings.kubernetes written as a table, with dotted keys or inline,
// cluster settings present or missing, the entries above, node-labels
// and node-taints, other settings tables (known and not), top-level
// tables, sometimes whole-data gzip or not TOML at all.
func BottlerocketSettings(seed uint64) Input {
	g := &bottlerocket{r: rand.New(rand.NewPCG(seed, 0xb077))} //nolint:gosec // reproducible inputs
	var b strings.Builder
	if g.chance(25) {
		g.constructs = append(g.constructs, "a shell script")
		return Input{Seed: seed, Family: "Bottlerocket", UserData: "#!/bin/bash\necho hi\n", Constructs: g.constructs}
	}
	entries := g.entries()
	switch g.r.IntN(4) {
	case 0:
		g.constructs = append(g.constructs, "dotted keys")
		for _, e := range entries {
			fmt.Fprintf(&b, "settings.kubernetes.%s = %s\n", e.key, e.toml)
		}
	case 1:
		g.constructs = append(g.constructs, "inline table")
		parts := make([]string, len(entries))
		for i, e := range entries {
			parts[i] = e.key + " = " + e.toml
		}
		fmt.Fprintf(&b, "[settings]\nkubernetes = { %s }\n", strings.Join(parts, ", "))
	default:
		b.WriteString("[settings.kubernetes]\n")
		for _, e := range entries {
			fmt.Fprintf(&b, "%s = %s\n", e.key, e.toml)
		}
	}
	if g.chance(2) {
		b.WriteString("\n[settings.kubernetes.node-labels]\n")
		for range 1 + g.r.IntN(2) {
			b.WriteString(g.pick(brLabels) + "\n")
		}
		g.constructs = append(g.constructs, "node-labels")
	}
	if g.chance(2) {
		b.WriteString("\n[settings.kubernetes.node-taints]\n")
		for range 1 + g.r.IntN(2) {
			b.WriteString(g.pick(brTaints) + "\n")
		}
		g.constructs = append(g.constructs, "node-taints")
	}
	if g.chance(3) {
		t := g.pick(brOtherTables)
		b.WriteString("\n" + t)
		g.constructs = append(g.constructs, "table "+strings.SplitN(t, "\n", 2)[0])
	}
	data := b.String()
	if g.chance(15) {
		g.constructs = append(g.constructs, "whole data gzip")
		data = string(gzipped([]byte(data)))
	}
	return Input{Seed: seed, Family: "Bottlerocket", UserData: data, Template: data, Constructs: g.constructs}
}

// entries are the settings.kubernetes entries: the cluster's (sometimes
// one missing or wrong), then a few of brValues, each key once.
func (g *bottlerocket) entries() []brValue {
	out := []brValue{
		{"cluster-name", `"payments-prod"`},
		{"api-server", `"https://F00D.yl4.eu-west-1.eks.amazonaws.com"`},
		{"cluster-certificate", `"LS0tLS1CRUdJTg=="`},
	}
	switch g.r.IntN(8) {
	case 0:
		i := g.r.IntN(len(out))
		g.constructs = append(g.constructs, "without "+out[i].key)
		out = append(out[:i], out[i+1:]...)
	case 1:
		bad := g.pick([]string{`cluster-name = "payments prod"`, `api-server = "not a url"`, `cluster-certificate = "LS0t\nLS1C"`, `cluster-name = 42`})
		key, value, _ := strings.Cut(bad, " = ")
		g.constructs = append(g.constructs, "bad "+key)
		for i := range out {
			if out[i].key == key {
				out[i].toml = value
			}
		}
		if strings.Contains(value, `\n`) {
			g.constructs = append(g.constructs, "escaped line break")
		}
	}
	seen := map[string]bool{}
	for _, e := range out {
		seen[e.key] = true
	}
	for range g.r.IntN(4) {
		v := brValues[g.r.IntN(len(brValues))]
		if seen[v.key] {
			continue
		}
		seen[v.key] = true
		out = append(out, v)
		g.constructs = append(g.constructs, v.key+" = "+v.toml)
	}
	return out
}
