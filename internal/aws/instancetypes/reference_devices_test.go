package instancetypes_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/referencetest"
)

// referenceDevices reads a table of the reference's AWS provider that
// records, per instance type, the devices a DRA driver published on a
// live node of it (pkg/providers/drametadata): the Go source, parsed.
func referenceDevices(t *testing.T, file, table string) map[string][]resourcev1.Device {
	t.Helper()
	dir := referencetest.ModuleDir(t, referencetest.AWSProvider, referencetest.AWSProviderNew)
	path := filepath.Join(dir, "pkg", "providers", "drametadata", file)
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("the reference's device table: %v", err)
	}
	out := map[string][]resourcev1.Device{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != table || len(spec.Values) != 1 {
			return true
		}
		for _, e := range spec.Values[0].(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			name := unquote(t, kv.Key)
			for _, field := range kv.Value.(*ast.CompositeLit).Elts {
				if fkv := field.(*ast.KeyValueExpr); fkv.Key.(*ast.Ident).Name == "Devices" {
					for _, d := range fkv.Value.(*ast.CompositeLit).Elts {
						out[name] = append(out[name], parseDevice(t, d.(*ast.CompositeLit), len(out[name])))
					}
				}
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatalf("%s: no %s", path, table)
	}
	return out
}

func parseDevice(t *testing.T, lit *ast.CompositeLit, index int) resourcev1.Device {
	d := resourcev1.Device{Name: fmt.Sprintf("device-%d", index), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}}
	for _, e := range lit.Elts {
		kv := e.(*ast.KeyValueExpr)
		for _, entry := range kv.Value.(*ast.CompositeLit).Elts {
			ekv := entry.(*ast.KeyValueExpr)
			key := resourcev1.QualifiedName(unquote(t, ekv.Key))
			value := ekv.Value.(*ast.CompositeLit).Elts[0].(*ast.KeyValueExpr)
			arg := value.Value.(*ast.CallExpr).Args[0]
			switch kv.Key.(*ast.Ident).Name + "." + value.Key.(*ast.Ident).Name {
			case "Attributes.StringValue":
				d.Attributes[key] = resourcev1.DeviceAttribute{StringValue: ptr.To(unquote(t, arg))}
			case "Attributes.VersionValue":
				d.Attributes[key] = resourcev1.DeviceAttribute{VersionValue: ptr.To(unquote(t, arg))}
			case "Attributes.IntValue":
				v, err := strconv.ParseInt(arg.(*ast.BasicLit).Value, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				d.Attributes[key] = resourcev1.DeviceAttribute{IntValue: ptr.To(v)}
			case "Attributes.BoolValue":
				d.Attributes[key] = resourcev1.DeviceAttribute{BoolValue: ptr.To(arg.(*ast.Ident).Name == "true")}
			case "Capacity.Value":
				if d.Capacity == nil {
					d.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{}
				}
				d.Capacity[key] = resourcev1.DeviceCapacity{Value: resource.MustParse(unquote(t, arg))}
			default:
				t.Fatalf("the reference's device table has %s.%s, which this test does not read", kv.Key.(*ast.Ident).Name, value.Key.(*ast.Ident).Name)
			}
		}
	}
	return d
}

func unquote(t *testing.T, e ast.Expr) string {
	s, err := strconv.Unquote(e.(*ast.BasicLit).Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runtimeOnly are the attributes the reference records from a live node
// that the catalog leaves out, with why: the value depends on the node.
var runtimeOnly = map[resourcev1.QualifiedName]string{
	"dra.net/numaNode":                "which NUMA node each EFA interface is on is the node's topology",
	"dra.net/pciSubsystem":            "the EFA generation (efa0 to efa3) of a type, which DescribeInstanceTypes does not report",
	"resource.kubernetes.io/pcieRoot": "which PCIe root each device hangs off is the node's topology, not the type's name; a claim constraining it is refused with how to declare it (a NodeOverlay's attributeBindings)",
}

// catalogOnly are the attributes the catalog describes that the
// reference's records leave out, with why; any other attribute of the
// catalog's that a live node did not publish fails the test.
var catalogOnly = map[resourcev1.QualifiedName]string{
	"index": "the NVIDIA driver publishes each GPU's index and minor number, the same on every node of a type; the reference's records leave both out",
	"minor": "as index",
}

// TestDevicesAreTheReferences compares the devices the catalog says each
// instance type's DRA drivers publish with those the reference's AWS
// provider recorded from live nodes, for every type both know: how many,
// and each device's attributes and capacity both ways (those that depend
// on the node itself, and those the records leave out, listed above,
// aside). A GPU or EFA type the reference
// describes and the catalog knows without devices fails too.
func TestDevicesAreTheReferences(t *testing.T) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]instancetypes.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	for _, table := range []struct{ file, name, driver string }{
		{"zz_generated_gpu_metadata.go", "GPUMetadataByInstanceType", instancetypes.NVIDIADriver},
		{"zz_generated_efa_metadata.go", "EFAMetadataByInstanceType", instancetypes.EFADriver},
	} {
		ref := referenceDevices(t, table.file, table.name)
		var diffs []string
		compared, unknown := 0, 0
		for _, name := range slices.Sorted(maps.Keys(ref)) {
			s, ok := byName[name]
			if !ok {
				unknown++
				continue
			}
			compared++
			var ours []resourcev1.Device
			for _, set := range instancetypes.Devices(s) {
				if set.Driver == table.driver {
					ours = set.Devices
				}
			}
			diffs = append(diffs, compareDevices(name, ref[name], ours)...)
		}
		// A type the catalog gives the driver's devices has been measured
		// by the reference on a live node.
		var guessed []string
		for _, s := range specs {
			for _, set := range instancetypes.Devices(s) {
				if _, measured := ref[s.Name]; set.Driver == table.driver && !measured {
					guessed = append(guessed, s.Name)
				}
			}
		}
		if len(guessed) > 0 && table.driver == instancetypes.NVIDIADriver {
			t.Errorf("%s: the catalog gives %d types GPUs the reference's records do not measure (their attributes are guesses): %v", table.driver, len(guessed), guessed)
		} else if len(guessed) > 0 {
			t.Logf("%s: the catalog gives %d types devices the reference's records do not measure: %v", table.driver, len(guessed), guessed)
		}
		t.Logf("%s: %d instance types compared, %d the catalog does not have", table.driver, compared, unknown)
		if len(diffs) > 0 {
			t.Errorf("%s devices differ from the reference's %s records of live nodes:\n%s", table.driver, referencetest.AWSProviderNew, strings.Join(diffs, "\n"))
		}
	}
}

func compareDevices(name string, ref, ours []resourcev1.Device) []string {
	if len(ref) != len(ours) {
		return []string{fmt.Sprintf("%s: %d devices, the reference %d", name, len(ours), len(ref))}
	}
	var diffs []string
	for i := range ref {
		for key, want := range ref[i].Attributes {
			if _, skip := runtimeOnly[key]; skip {
				continue
			}
			got, ok := ours[i].Attributes[key]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: no attribute %s, the reference %s", name, key, attr(want)))
			} else if attr(got) != attr(want) {
				diffs = append(diffs, fmt.Sprintf("%s: attribute %s %s, the reference %s", name, key, attr(got), attr(want)))
			}
		}
		for key, got := range ours[i].Attributes {
			if _, ok := ref[i].Attributes[key]; !ok && catalogOnly[key] == "" {
				diffs = append(diffs, fmt.Sprintf("%s: attribute %s %s, which the reference's live node did not publish", name, key, attr(got)))
			}
		}
		for key, want := range ref[i].Capacity {
			got, ok := ours[i].Capacity[key]
			if !ok || got.Value.Cmp(want.Value) != 0 {
				diffs = append(diffs, fmt.Sprintf("%s: capacity %s %v, the reference %s", name, key, got.Value.String(), want.Value.String()))
			}
		}
	}
	slices.Sort(diffs)
	return slices.Compact(diffs)
}

func attr(a resourcev1.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return strconv.Quote(*a.StringValue)
	case a.VersionValue != nil:
		return "version " + *a.VersionValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue)
	}
	return "(none)"
}
