package cloudinit_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot/boottest"
	"github.com/nodewright/nodewright/internal/aws/boot/cloudinit"
)

// oraclePlan is what testdata/oracle.py reports cloud-init's own code
// does with one user data.
type oraclePlan struct {
	Failed string `json:"failed"`
	Parts  []struct {
		Type     string `json:"type"`
		Filename string `json:"filename"`
	} `json:"parts"`
	Boothooks []oracleScript            `json:"boothooks"`
	Scripts   map[string][]oracleScript `json:"scripts"`
	Files     []struct {
		Path    string `json:"path"`
		Content []byte `json:"content"`
		Append  bool   `json:"append"`
		Defer   bool   `json:"defer"`
	} `json:"files"`
	Unmodelled []string `json:"unmodelled"`
}

type oracleScript struct {
	Name string `json:"name"`
	Body []byte `json:"body"`
}

// cloudInitPython is a Python that imports cloud-init's own package.
func cloudInitPython(t *testing.T) string {
	t.Helper()
	for _, python := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(python, "-c", "import cloudinit").Run() == nil {
			return python
		}
	}
	t.Fatal("no python3 here imports cloud-init: install Debian's package (apt-get install cloud-init; .ci/run does)")
	return ""
}

// runOracle runs cloud-init's own user-data processing and part
// handlers over the inputs, once for the batch.
func runOracle(t *testing.T, inputs []boottest.Input) []oraclePlan {
	t.Helper()
	blobs := make([]string, len(inputs))
	for i, in := range inputs {
		blobs[i] = base64.StdEncoding.EncodeToString([]byte(in.UserData))
	}
	stdin, err := json.Marshal(blobs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cloudInitPython(t), "testdata/oracle.py")
	cmd.Dir, cmd.Stdin = ".", bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cloud-init oracle: %v\n%s", err, stderr.String())
	}
	var plans []oraclePlan
	if err := json.Unmarshal(out, &plans); err != nil {
		t.Fatalf("cloud-init oracle output: %v", err)
	}
	if len(plans) != len(inputs) {
		t.Fatalf("cloud-init oracle answered %d of %d inputs", len(plans), len(inputs))
	}
	return plans
}

// TestGeneratedUserDataAsCloudInitReadsIt runs generated user data through Read and
// through cloud-init's own code (Debian's package): the parts and their
// types and file names, the boothooks, the scripts in the order the final
// stage runs them (runcmd's among them), the files write_files writes, and
// whether something is not modelled must be the same.
func TestGeneratedUserDataAsCloudInitReadsIt(t *testing.T) {
	n := boottest.Cases(500)
	inputs := make([]boottest.Input, n)
	for i := range inputs {
		inputs[i] = boottest.CloudInitData(uint64(i + 1))
	}
	plans := runOracle(t, inputs)
	agree := 0
	for i, in := range inputs {
		got := describe(cloudinit.Read([]byte(in.UserData)))
		want := describeOracle(plans[i])
		if got == want {
			agree++
			continue
		}
		if i-agree <= 10 {
			t.Errorf("seed %d (%s): Read and cloud-init differ\nuser data:\n%s\nRead:\n%s\ncloud-init:\n%s", in.Seed, strings.Join(in.Constructs, ", "), in.UserData, got, want)
		}
	}
	fmt.Printf("cloud-init reading: %d of %d generated user data agree with cloud-init's own code\n", agree, n)
	if agree != n {
		t.Errorf("%d of %d differ", n-agree, n)
	}
}

func describe(p cloudinit.Plan) string {
	var b strings.Builder
	for _, part := range p.Parts {
		fmt.Fprintf(&b, "part %s %s\n", part.ContentType, part.Filename)
	}
	for _, s := range p.Boothooks {
		fmt.Fprintf(&b, "boothook %s %q\n", s.Name, s.Body)
	}
	for _, s := range p.Scripts {
		fmt.Fprintf(&b, "script %s %q\n", s.Name, s.Body)
	}
	for _, f := range p.Files {
		fmt.Fprintf(&b, "file %s %q append=%v defer=%v\n", f.Path, f.Content, f.Append, f.Defer)
	}
	fmt.Fprintf(&b, "unmodelled %v\n", len(p.Unmodelled) > 0)
	return b.String()
}

func describeOracle(o oraclePlan) string {
	if o.Failed != "" {
		return "failed: " + o.Failed
	}
	var b strings.Builder
	for _, part := range o.Parts {
		fmt.Fprintf(&b, "part %s %s\n", part.Type, part.Filename)
	}
	for _, s := range o.Boothooks {
		fmt.Fprintf(&b, "boothook %s %q\n", s.Name, s.Body)
	}
	for _, dir := range []string{"per-once", "per-boot", "per-instance", "user"} {
		for _, s := range o.Scripts[dir] {
			fmt.Fprintf(&b, "script %s %q\n", s.Name, s.Body)
		}
	}
	for _, f := range o.Files {
		fmt.Fprintf(&b, "file %s %q append=%v defer=%v\n", f.Path, f.Content, f.Append, f.Defer)
	}
	fmt.Fprintf(&b, "unmodelled %v\n", len(o.Unmodelled) > 0)
	return b.String()
}
