package kubelet_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelettest"
)

// Generator pieces: what users pass the kubelet, right and wrong.
var (
	genLabels = []string{
		"team=ci", "tier=a,env=prod", "node.kubernetes.io/lifecycle=spot", "node-role.kubernetes.io/worker=",
		"node-role.kubernetes.io/worker=true", "kubernetes.io/role=worker", "example.k8s.io/x=y", "kubelet.kubernetes.io/x=1",
		"topology.kubernetes.io/zone=eu-west-1a", "Team=CI", "bad key=x", "team=has space", "a=b=c", "=novalue", "team",
		"team=ci,", " team = ci ", "company.com/gpu=true", "k8s.io/x=1", "sub.kubernetes.io/x=1", "x/y/z=1", "team=" + strings.Repeat("a", 64),
	}
	genTaints = []string{
		"karpenter.sh/unregistered:NoExecute", "karpenter.sh/unregistered=true:NoExecute", "dedicated=gpu:NoSchedule",
		"dedicated=gpu:Noschedule", "dedicated:PreferNoSchedule", "dedicated", "dedicated=gpu", "a=b:NoSchedule,a=c:NoSchedule",
		"a=b:NoSchedule,a=c:NoExecute", "gone:NoSchedule-", "", "x=y:z:NoSchedule", "bad key:NoSchedule", "k=has space:NoSchedule",
		"karpenter.sh/unregistered:NoExecute,node.cilium.io/agent-not-ready=true:NoExecute", "a=b=c:NoSchedule",
	}
	genNumbers = []string{"110", "58", "0", "-1", "0x20", "017", "1e3", "abc", "", "2147483648", " 20"}
	genMaps    = []string{"cpu=100m,memory=512Mi", "cpu=100m", "memory=1Gi,ephemeral-storage=1Gi", "cpu", "", "cpu=1,cpu=2", "=1"}
	genEvict   = []string{"memory.available<100Mi", "memory.available<5%,nodefs.available<10%", "memory.available=100Mi", "", "nodefs.available<1Gi"}
	genDNS     = []string{"10.100.0.10", "172.20.0.10,169.254.20.10", "", `"10.0.0.10"`}
	genOther   = [][]string{
		{"--v=2"}, {"-v", "4"}, {"--anonymous-auth=false"}, {"--anonymous-auth", "false"}, {"--read-only-port=0"},
		{"--image-gc-high-threshold=85"}, {"--node-status-update-frequency=10s"}, {"--node-status-update-frequency=10"},
		{"--no-such-flag=1"}, {"--max_pods=30"}, {"--node_labels=from=underscore"}, {"--"}, {"extra"}, {"-h"}, {"--version=false"},
		{"--cloud-provider=external"}, {"--cloud-provider=aws"}, {"--address=0.0.0.0"}, {"--address=not-an-ip"},
		{"--feature-gates=KubeletInUserNamespace=true"}, {"--feature-gates=Nope"}, {"--container-log-max-size=10Mi"},
		{"--hostname-override=ip-10-0-0-1.ec2.internal"}, {"--protect-kernel-defaults"}, {"--serialize-image-pulls=false"},
	}
)

// genArgs composes a kubelet command line: flags in both spellings
// (--flag=VALUE and --flag VALUE), repeated, with other flags around.
func genArgs(r *rand.Rand) []string {
	var args []string
	add := func(flag, value string) {
		if r.IntN(3) == 0 {
			args = append(args, flag, value)
		} else {
			args = append(args, flag+"="+value)
		}
	}
	for range 1 + r.IntN(5) {
		switch r.IntN(9) {
		case 0, 1:
			add("--node-labels", genLabels[r.IntN(len(genLabels))])
		case 2, 3:
			add("--register-with-taints", genTaints[r.IntN(len(genTaints))])
		case 4:
			add([]string{"--max-pods", "--pods-per-core"}[r.IntN(2)], genNumbers[r.IntN(len(genNumbers))])
		case 5:
			add([]string{"--kube-reserved", "--system-reserved"}[r.IntN(2)], genMaps[r.IntN(len(genMaps))])
		case 6:
			add("--eviction-hard", genEvict[r.IntN(len(genEvict))])
		case 7:
			add("--cluster-dns", genDNS[r.IntN(len(genDNS))])
		default:
			args = append(args, genOther[r.IntN(len(genOther))]...)
		}
	}
	return args
}

// genFile is, half of the time, a configuration file of the kind the
// node images write.
func genFile(r *rand.Rand) *kubelet.Config {
	if r.IntN(2) == 0 {
		return nil
	}
	c := &kubelet.Config{MaxPods: int32(10 + r.IntN(100)), ClusterDNS: []string{"10.100.0.10"}}
	if r.IntN(2) == 0 {
		c.KubeReserved = map[string]string{"cpu": "70m", "memory": "574Mi", "ephemeral-storage": "1Gi"}
	}
	if r.IntN(3) == 0 {
		c.RegisterWithTaints = []corev1.Taint{{Key: "from-file", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	}
	if r.IntN(2) == 0 {
		c.EvictionHard = map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}
	}
	return c
}

// TestGeneratedCommandLinesAsTheKubeletReadsThem runs generated kubelet
// command lines through the model and through the kubelet's own flag
// handling, and requires the same outcome: the same exit, or the same
// labels, taints, pod limits, DNS and reservations.
func TestGeneratedCommandLinesAsTheKubeletReadsThem(t *testing.T) {
	n := boottest.Cases(600)
	r := rand.New(rand.NewPCG(60, 1))
	type gen struct {
		args []string
		file *kubelet.Config
	}
	cases := make([]gen, n)
	inputs := make([]kubelettest.Input, n+1)
	for i := range cases {
		cases[i] = gen{genArgs(r), genFile(r)}
		inputs[i] = kubelettest.Input{Args: cases[i].args, Config: kubelettest.ConfigFile(cases[i].file)}
	}
	results := kubelettest.Run(t, inputs)
	defaults := results[n] // no arguments: the kubelet's defaults
	agree, exits := 0, 0
	for i, c := range cases {
		ours, err := kubelet.Start(c.args, c.file)
		real := results[i]
		if diff := compare(ours, err, real, defaults); diff != "" {
			t.Errorf("kubelet %q (file %s):\n%s", c.args, kubelettest.ConfigFile(c.file), diff)
			continue
		}
		agree++
		if err != nil {
			exits++
		}
	}
	t.Logf("kubelet command lines: %d of %d agree with the kubelet %s (%d of them exits)", agree, n, kubelettest.KubernetesVersion, exits)
}

func compare(ours *kubelet.Started, err error, real, defaults kubelettest.Output) string {
	switch {
	case err != nil && real.Error == "":
		return fmt.Sprintf(" the kubelet starts; the model says %v", err)
	case err == nil && real.Error != "":
		return fmt.Sprintf(" the kubelet exits: %s; the model starts it", real.Error)
	case err != nil:
		return ""
	}
	var diffs []string
	check := func(what string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			diffs = append(diffs, fmt.Sprintf(" %s: kubelet %v, model %v", what, b, a))
		}
	}
	maxPods := ours.MaxPods
	if !ours.Given.Has("max-pods") && maxPods == 0 {
		maxPods = defaults.MaxPods
	}
	evict := ours.EvictionHard
	if evict == nil {
		evict = defaults.EvictionHard
	}
	var taints []kubelettest.Taint
	for _, tn := range ours.RegisterWithTaints {
		taints = append(taints, kubelettest.Taint{Key: tn.Key, Value: tn.Value, Effect: string(tn.Effect)})
	}
	check("labels", sorted(ours.Labels), sorted(real.Labels))
	check("taints", taints, real.Taints)
	check("maxPods", maxPods, real.MaxPods)
	check("podsPerCore", ours.PodsPerCore, real.PodsPerCore)
	check("clusterDNS", ours.ClusterDNS, real.ClusterDNS)
	check("kubeReserved", sorted(ours.KubeReserved), sorted(real.KubeReserved))
	check("systemReserved", sorted(ours.SystemReserved), sorted(real.SystemReserved))
	check("evictionHard", sorted(evict), sorted(real.EvictionHard))
	check("cloudProvider", ours.CloudProvider, real.CloudProvider)
	return strings.Join(diffs, "\n")
}

func sorted(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
