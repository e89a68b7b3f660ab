// Package instancetypestest runs the reference's own instance type
// computation, built at test time from its module in a temporary module,
// on the inputs tests give it.
package instancetypestest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/referencetest"
)

// Reference is the release of the reference's AWS provider whose
// instance type computation nodewright's is compared with.
var Reference = referencetest.AWSProviderNew

// Input is one instance type under one EC2NodeClass, as the oracle reads
// it.
type Input struct {
	Info                    json.RawMessage                    `json:"info"`
	Region                  string                             `json:"region"`
	Zones                   []string                           `json:"zones"`
	ZoneInfo                []map[string]string                `json:"zoneInfo"`
	AMIFamily               string                             `json:"amiFamily"`
	BlockDeviceMappings     []*awsv1.BlockDeviceMapping        `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy     *string                            `json:"instanceStorePolicy,omitempty"`
	MaxPods                 *int32                             `json:"maxPods,omitempty"`
	PodsPerCore             *int32                             `json:"podsPerCore,omitempty"`
	KubeReserved            map[string]string                  `json:"kubeReserved,omitempty"`
	SystemReserved          map[string]string                  `json:"systemReserved,omitempty"`
	EvictionHard            map[string]string                  `json:"evictionHard,omitempty"`
	VMMemoryOverheadPercent float64                            `json:"vmMemoryOverheadPercent"`
	ReservedENIs            int                                `json:"reservedENIs"`
	Probes                  [][]corev1.NodeSelectorRequirement `json:"probes,omitempty"`
}

// Output is what the reference computes of an Input.
type Output struct {
	Name         string `json:"name"`
	Requirements map[string]struct {
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	} `json:"requirements"`
	Capacity    corev1.ResourceList `json:"capacity"`
	Allocatable corev1.ResourceList `json:"allocatable"`
	// Admitted says, for each probe, whether the type's requirements
	// intersect it, as the reference's provisioner filters types.
	Admitted []bool `json:"admitted"`
}

// oracle builds the reference's pkg/providers/instancetype under a small
// main (testdata/oracle).
func oracle(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	main, err := os.ReadFile(filepath.Join(filepath.Dir(here), "testdata", "oracle", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	// Its core module's release (v1.15.1) is refused by the proxy; v1.15.0
	// builds the same instance type code. One SDK module it names is not
	// served at its version either.
	goMod := "module nodewright.local/instancetypes-oracle\n\ngo 1.26.11\n\nrequire " + referencetest.AWSProvider + " " + Reference + "\n\n" +
		"replace sigs.k8s.io/karpenter => sigs.k8s.io/karpenter v1.15.0\n\n" +
		"replace github.com/aws/aws-sdk-go-v2/service/timestreamwrite => github.com/aws/aws-sdk-go-v2/service/timestreamwrite v1.35.25\n"
	return referencetest.Oracle{Name: "instancetypes-" + Reference, GoMod: goMod, Files: map[string]string{"main.go": string(main)},
		Toolchain: referencetest.Toolchain, TestDepsMissing: true}.Build(t)
}

// FakeRecords are the DescribeInstanceTypes records the reference's own
// tests use (its pkg/fake), as JSON.
func FakeRecords(t testing.TB) []json.RawMessage {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), oracle(t), "fake-records").Output() //nolint:gosec // the oracle built above
	if err != nil {
		t.Fatalf("the reference's test records: %v", err)
	}
	var records []json.RawMessage
	if err := json.Unmarshal(out, &records); err != nil {
		t.Fatal(err)
	}
	return records
}

// Run computes the inputs with the reference's code, in one run of the
// oracle.
func Run(t testing.TB, inputs []Input) []Output {
	t.Helper()
	bin := oracle(t)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, c := range inputs {
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), bin) //nolint:gosec // the oracle built above
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the reference's instance type computation: %v\n%s", err, stderr.String())
	}
	var outputs []Output
	scanner := bufio.NewScanner(bytes.NewReader(out))
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var o Output
		if err := json.Unmarshal(scanner.Bytes(), &o); err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, o)
	}
	if len(outputs) != len(inputs) {
		t.Fatalf("the oracle answered %d of %d inputs", len(outputs), len(inputs))
	}
	return outputs
}
