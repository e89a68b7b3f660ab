package al2023_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// probeInput and probeResult are what the probe over current nodeadm's
// configuration reading takes and prints (cmd/nwprobe in a copy of
// amazon-eks-ami's nodeadm module; see docs/development.md).
type probeInput struct {
	UserData string            `json:"userData"`
	DropIns  map[string]string `json:"dropIns,omitempty"`
}

type probeResult struct {
	ConfigError string          `json:"configError,omitempty"`
	RunError    string          `json:"runError,omitempty"`
	Kubelet     json.RawMessage `json:"kubelet,omitempty"`
}

const nodeadmGolden = "testdata/nodeadm-golden.json"

var cluster = userdata.Cluster{Name: "payments-prod", Endpoint: "https://F00D.yl4.eu-west-1.eks.amazonaws.com", CABundle: "LS0tLS1CRUdJTg==", CIDR: "10.100.0.0/16", DNS: "10.100.0.10"}

// probeInputOf is user data with the drop-ins its scripts and
// cloud-config leave.
func probeInputOf(userData string) probeInput {
	files, _, _, _ := al2023.RunScripts([]byte(userData), nil)
	in := probeInput{UserData: base64.StdEncoding.EncodeToString([]byte(userData)), DropIns: map[string]string{}}
	for p, data := range files {
		if dir, name := path.Split(p); dir == al2023.DropInDir+"/" {
			in.DropIns[name] = string(data)
		}
	}
	return in
}

func probeKey(in probeInput) string {
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10])
}

// TestGeneratedAL2023UserDataAsNodeadmReadsIt runs generated AL2023 user
// data, merged with nodewright's NodeConfig as launched, through the
// model's reading and through current nodeadm's own (its outcomes kept in
// testdata; NODEWRIGHT_NODEADM_PROBE=path writes them again), with the
// drop-ins the scripts and cloud-config leave: both phases must fail or
// succeed alike, and the merged kubelet flags and configuration be the
// same.
func TestGeneratedAL2023UserDataAsNodeadmReadsIt(t *testing.T) {
	n := boottest.Cases(600)
	// Each generated user data as an AL2023 node is launched with it
	// (nodewright's NodeConfig merged in), and every fourth also as a
	// Custom AMI's, as written.
	var inputs []probeInput
	var gens []al2023.Input
	for i := range n {
		in := al2023.Generate(uint64(i))
		launched, err := userdata.Generate(awsv1.AMIFamilyAL2023, cluster, userdata.Node{MaxPods: 58}, in.UserData)
		if err != nil {
			t.Fatal(err)
		}
		inputs, gens = append(inputs, probeInputOf(launched)), append(gens, in)
		if i%4 == 0 {
			custom := in
			custom.Constructs = append(slices.Clone(in.Constructs), "as a Custom AMI's")
			inputs, gens = append(inputs, probeInputOf(in.UserData)), append(gens, custom)
		}
	}
	golden := nodeadmOutcomes(t, inputs)
	agree := 0
	failing := map[string]int{}
	for i, in := range inputs {
		real, ok := golden[probeKey(in)]
		if !ok {
			t.Fatalf("input %d: nodeadm's outcomes lack it; write them again with `make boot-golden`", i)
		}
		launched, _ := base64.StdEncoding.DecodeString(in.UserData)
		files := map[string][]byte{}
		for name, body := range in.DropIns {
			files[al2023.DropInDir+"/"+name] = []byte(body)
		}
		_, configErr := al2023.ReadSources(al2023.UserDataSource(launched))
		nc, runErr := al2023.ReadSources(al2023.UserDataSource(launched), al2023.DropInSource(files))
		var diffs []string
		if (configErr != nil) != (real.ConfigError != "") {
			diffs = append(diffs, fmt.Sprintf(" config phase: nodeadm %q, model %v", real.ConfigError, configErr))
		}
		if (runErr != nil) != (real.RunError != "") {
			diffs = append(diffs, fmt.Sprintf(" run phase: nodeadm %q, model %v", real.RunError, runErr))
		}
		if runErr == nil && real.RunError == "" {
			if d := compareKubelet(nc, real.Kubelet); d != "" {
				diffs = append(diffs, d)
			}
		}
		if len(diffs) > 0 {
			t.Errorf("input %d (%s):\n%s\n%s", i, strings.Join(gens[i].Constructs, ", "), gens[i].UserData, strings.Join(diffs, "\n"))
			continue
		}
		agree++
		if real.RunError != "" || real.ConfigError != "" {
			failing["fails"]++
		} else {
			failing["reads"]++
		}
	}
	t.Logf("AL2023 user data: %d of %d generated inputs agree with nodeadm's reading (%v)", agree, len(inputs), failing)
}

func compareKubelet(nc *al2023.NodeConfig, real json.RawMessage) string {
	var want struct {
		Config map[string]any `json:"config"`
		Flags  []string       `json:"flags"`
	}
	if err := json.Unmarshal(real, &want); err != nil {
		return err.Error()
	}
	got, err := al2023.Document(nc.Spec.Kubelet.Config)
	if err != nil {
		return err.Error()
	}
	var diffs []string
	if !slices.Equal(nc.Spec.Kubelet.Flags, want.Flags) {
		diffs = append(diffs, fmt.Sprintf(" flags: nodeadm %q, model %q", want.Flags, nc.Spec.Kubelet.Flags))
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want.Config)
	if len(want.Config) == 0 && len(got) == 0 {
		return strings.Join(diffs, "\n")
	}
	if !bytes.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf(" config: nodeadm %s, model %s", b, a))
	}
	return strings.Join(diffs, "\n")
}

// nodeadmOutcomes are current nodeadm's outcomes on the inputs: from
// testdata, or, with NODEWRIGHT_NODEADM_PROBE naming the probe, from
// running it (and written to testdata).
func nodeadmOutcomes(t *testing.T, inputs []probeInput) map[string]probeResult {
	t.Helper()
	probe := os.Getenv("NODEWRIGHT_NODEADM_PROBE")
	if probe == "" {
		data, err := os.ReadFile(nodeadmGolden)
		if err != nil {
			t.Fatalf("nodeadm's outcomes: %v (write them with `make boot-golden`)", err)
		}
		golden := map[string]probeResult{}
		if err := json.Unmarshal(data, &golden); err != nil {
			t.Fatal(err)
		}
		return golden
	}
	stdin, _ := json.Marshal(inputs)
	cmd := exec.CommandContext(t.Context(), probe)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stderr = nil
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the nodeadm probe: %v", err)
	}
	var results []probeResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(inputs) {
		t.Fatalf("the nodeadm probe printed %d results for %d inputs (%v)", len(results), len(inputs), err)
	}
	golden := map[string]probeResult{}
	for i, in := range inputs {
		golden[probeKey(in)] = results[i]
	}
	if err := boottest.WriteGolden(nodeadmGolden, golden); err != nil {
		t.Fatal(err)
	}
	return golden
}
