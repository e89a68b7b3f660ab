package al2

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/boot/cloudinit"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelettest"
	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
)

// machine is the instance the generated user data boots on.
var machine = Machine{MaxPods: 29}

// TestGeneratedAL2UserDataAsTheNodeRunsIt runs generated AL2 scripts
// through the model and through the real implementations — bash itself
// (bootstrap.sh recorded), the real bootstrap.sh's argument handling
// (its outcomes kept in testdata), the kubelet's own flag handling — and
// requires the same bootstrap.sh calls, the same settings, and the same
// outcome: never joins, or joins with the same taints, labels and pod
// limit.
func TestGeneratedAL2UserDataAsTheNodeRunsIt(t *testing.T) {
	n := boottest.Cases(600)
	inputs := make([]boottest.Input, n)
	eksDir := t.TempDir()
	rendered := make([]string, n)
	for i := range inputs {
		inputs[i] = boottest.AL2Script(uint64(i))
		rendered[i] = inputs[i].Render(eksDir)
	}
	fromBash, golden := bashRunsWithGolden(t, rendered, eksDir)

	// Every run the real bootstrap.sh goes through starts the kubelet
	// with its drop-in; the first kubelet that starts registers the Node
	// (one that exits is restarted with a later run's drop-in).
	var kubeletInputs []kubelettest.Input
	owner := []int{}
	for i, calls := range fromBash {
		for _, c := range calls {
			p := golden[parseKey(c.Args, c.Env)]
			if p.status() != 0 {
				continue
			}
			b := &Bootstrap{Vars: p.Vars}
			var words []string
			if p.Vars["KUBELET_EXTRA_ARGS"] != "" {
				words = systemd.Words(systemd.Environment("'KUBELET_EXTRA_ARGS=" + p.Vars["KUBELET_EXTRA_ARGS"] + "'")["KUBELET_EXTRA_ARGS"])
			}
			kubeletInputs = append(kubeletInputs, kubelettest.Input{Args: append(withoutConfig(kubeletArgs), words...), Config: kubelettest.ConfigFile(configFile(b, machine))})
			owner = append(owner, i)
		}
	}
	fromKubelet := kubelettest.Run(t, kubeletInputs)
	realOutcome := make([]string, n)
	started := map[int]kubelettest.Output{}
	for i := range realOutcome {
		realOutcome[i] = "never joins"
	}
	for j, out := range fromKubelet {
		i := owner[j]
		if realOutcome[i] == "never joins" && out.Error == "" {
			realOutcome[i], started[i] = "joins", out
		}
	}

	agree, differ := 0, map[string]int{}
	for i, in := range inputs {
		diff := compareAL2(in, fromBash[i], golden, realOutcome[i], started[i])
		switch {
		case diff == "":
			agree++
		case strings.HasPrefix(diff, "listed: "):
			differ[strings.TrimPrefix(diff, "listed: ")]++
		default:
			t.Errorf("input %d (%s):\n%s\n%s", in.Seed, strings.Join(in.Constructs, ", "), in.UserData, diff)
		}
	}
	t.Logf("AL2 user data: %d of %d generated inputs agree with bash, bootstrap.sh and the kubelet; listed differences: %v", agree, n, differ)
}

// compareAL2 compares the model with the real run of one input: "" when
// they agree, "listed: WHAT" for a listed difference.
func compareAL2(in boottest.Input, calls []bashCall, golden map[string]bootstrapParse, real string, kube kubelettest.Output) string {
	ours := run(cloudinit.Read([]byte(in.UserData)), false)
	if len(ours.calls) != len(calls) {
		return fmt.Sprintf("bash runs bootstrap.sh %d times, the sandbox %d", len(calls), len(ours.calls))
	}
	for j, c := range calls {
		if !slices.Equal(ours.calls[j].Args[1:], c.Args) {
			return fmt.Sprintf("bootstrap.sh run %d: bash gives %q, the sandbox %q", j+1, c.Args, ours.calls[j].Args[1:])
		}
		for _, k := range bootstrapVars {
			if ours.calls[j].Env[k] != c.Env[k] {
				return fmt.Sprintf("bootstrap.sh run %d: $%s is %q in bash, %q in the sandbox", j+1, k, c.Env[k], ours.calls[j].Env[k])
			}
		}
		p := golden[parseKey(c.Args, c.Env)]
		b := Read(c.Args, c.Env)
		if (p.status() != 0) != (b.Exits != "") {
			return fmt.Sprintf("bootstrap.sh %q: the real script exits %d (cluster %q), the model says %q", c.Args, p.Exit, p.Vars["CLUSTER_NAME"], b.Exits)
		}
		if p.Exit == 0 {
			for _, k := range bootstrapVars[1:] {
				if p.Vars[k] != b.Vars[k] {
					return fmt.Sprintf("bootstrap.sh %q: the real script has %s=%q, the model %q", c.Args, k, p.Vars[k], b.Vars[k])
				}
			}
		}
	}
	o := Boot([]byte(in.UserData), machine)
	switch {
	case real == "never joins":
		if o.Verdict != boot.NeverJoins {
			return "the node never joins; the model says " + o.Summary()
		}
		return ""
	case o.Verdict != boot.Joins:
		return "the node joins; the model says " + o.Summary()
	}
	return compareStarted(o.Kubelet, kube)
}

func compareStarted(ours *kubelet.Started, real kubelettest.Output) string {
	var diffs []string
	var taints []string
	for _, t := range ours.RegisterWithTaints {
		taints = append(taints, t.ToString())
	}
	var realTaints []string
	for _, t := range real.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		realTaints = append(realTaints, s+":"+t.Effect)
	}
	if !slices.Equal(taints, realTaints) {
		diffs = append(diffs, fmt.Sprintf(" taints: kubelet %v, model %v", realTaints, taints))
	}
	if fmt.Sprint(sortedMap(ours.Labels)) != fmt.Sprint(sortedMap(real.Labels)) {
		diffs = append(diffs, fmt.Sprintf(" labels: kubelet %v, model %v", real.Labels, ours.Labels))
	}
	maxPods := ours.MaxPods
	if maxPods == 0 {
		maxPods = 110 // the kubelet's default
	}
	if maxPods != real.MaxPods {
		diffs = append(diffs, fmt.Sprintf(" maxPods: kubelet %d, model %d", real.MaxPods, maxPods))
	}
	return strings.Join(diffs, "\n")
}

func sortedMap(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// withoutConfig drops --config PATH: the oracle is given the file itself.
func withoutConfig(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--config" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
