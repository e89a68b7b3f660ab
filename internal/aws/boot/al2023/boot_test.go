package al2023_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelettest"
	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// TestGeneratedAL2023BootAsTheNodeDoesIt: on generated AL2023 user data
// as launched, the boot outcome agrees with the real components chained —
// current nodeadm's reading (its outcomes in testdata) and the kubelet's
// own flag handling over the configuration nodeadm writes — on whether the
// node joins and, when it does, the taints, labels and pod limit it
// registers with. The inputs whose scripts run nodeadm init themselves are
// judged by the model alone (the probe reads the run phase's sources).
func TestGeneratedAL2023BootAsTheNodeDoesIt(t *testing.T) {
	n := boottest.Cases(600)
	machine := al2023.Machine{MaxPods: 29} // nodeadm's own figure; nodewright's NodeConfig sets 58
	type item struct {
		in       al2023.Input
		launched []byte
		probe    probeInput
	}
	items := make([]item, 0, n)
	probes := make([]probeInput, 0, n)
	for i := range n {
		in := al2023.Generate(uint64(i))
		launched, err := userdata.Generate(awsv1.AMIFamilyAL2023, cluster, userdata.Node{MaxPods: 58}, in.UserData)
		if err != nil {
			t.Fatal(err)
		}
		files, _, _, _ := al2023.RunScripts([]byte(launched), nil)
		p := probeInput{UserData: base64.StdEncoding.EncodeToString([]byte(launched)), DropIns: map[string]string{}}
		for path, data := range files {
			if name, ok := strings.CutPrefix(path, al2023.DropInDir+"/"); ok {
				p.DropIns[name] = string(data)
			}
		}
		items = append(items, item{in: in, launched: []byte(launched), probe: p})
		probes = append(probes, p)
	}
	golden := nodeadmOutcomes(t, probes)

	// The kubelet of each input nodeadm's run phase reads.
	var kubeletInputs []kubelettest.Input
	owner := map[int]int{}
	for i, it := range items {
		real := golden[probeKey(it.probe)]
		if real.ConfigError != "" || real.RunError != "" {
			continue
		}
		var k struct {
			Config map[string]json.RawMessage `json:"config"`
			Flags  []string                   `json:"flags"`
		}
		if err := json.Unmarshal(real.Kubelet, &k); err != nil {
			t.Fatal(err)
		}
		// The file nodeadm writes: its defaults, the merged configuration
		// over them (by key: the defaults read here are not maps).
		file := map[string]any{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": machine.MaxPods, "clusterDNS": []string{"10.100.0.10"}}
		for key, v := range k.Config {
			file[key] = v
		}
		raw, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		owner[i] = len(kubeletInputs)
		kubeletInputs = append(kubeletInputs, kubelettest.Input{Args: append(slices.Clone(al2023.KubeletArgs[2:]), systemd.Words(strings.Join(k.Flags, " "))...), Config: string(raw)})
	}
	fromKubelet := kubelettest.Run(t, kubeletInputs)

	counts := map[string]int{}
	for i, it := range items {
		o := al2023.Boot(it.launched, machine)
		counts[string(o.Verdict)]++
		_, inits, _, _ := al2023.RunScripts(it.launched, nil)
		if len(inits) > 0 {
			counts["nodeadm init in a script"]++
			continue
		}
		j, started := owner[i]
		var diff string
		switch {
		case !started:
			if o.Verdict != boot.NeverJoins {
				diff = "nodeadm fails; the model says " + o.Summary()
			}
		case fromKubelet[j].Error != "":
			if o.Verdict != boot.NeverJoins {
				diff = "the kubelet exits (" + fromKubelet[j].Error + "); the model says " + o.Summary()
			}
		case o.Verdict != boot.Joins:
			diff = "the node joins; the model says " + o.Summary()
		default:
			diff = compareRegistration(o, fromKubelet[j])
		}
		if diff != "" {
			t.Errorf("input %d (%s):\n%s\n%s", i, strings.Join(it.in.Constructs, ", "), it.in.UserData, diff)
		}
	}
	t.Logf("AL2023 boot: %d generated inputs agree with nodeadm and the kubelet chained: %v", n, counts)
}

func compareRegistration(o boot.Outcome, real kubelettest.Output) string {
	var taints, realTaints []string
	for _, t := range o.Kubelet.RegisterWithTaints {
		taints = append(taints, t.ToString())
	}
	for _, t := range real.Taints {
		realTaints = append(realTaints, t.String())
	}
	var diffs []string
	if !slices.Equal(taints, realTaints) {
		diffs = append(diffs, fmt.Sprintf(" taints: kubelet %v, model %v", realTaints, taints))
	}
	if fmt.Sprint(sortedPairs(o.Kubelet.Labels)) != fmt.Sprint(sortedPairs(real.Labels)) {
		diffs = append(diffs, fmt.Sprintf(" labels: kubelet %v, model %v", real.Labels, o.Kubelet.Labels))
	}
	maxPods := o.Kubelet.MaxPods
	if maxPods == 0 {
		maxPods = 110
	}
	if maxPods != real.MaxPods {
		diffs = append(diffs, fmt.Sprintf(" maxPods: kubelet %d, model %d", real.MaxPods, maxPods))
	}
	return strings.Join(diffs, "\n")
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
