// Command catalog writes the embedded instance type catalog nodewright's
// simulated account serves and its offline tools plan with: EC2's own
// DescribeInstanceTypes records, and the network tables the instance
// types' labels and capacity read beside them.
//
//	go run ./hack/catalog
//
// The records are EC2's answers as moto (an independent AWS
// implementation, installed for the tests) keeps them, for every instance
// type with a us-east-1 price in internal/aws/instancetypes/prices.json;
// each is decoded into aws-sdk-go-v2's InstanceTypeInfo, so the catalog
// holds what the SDK reads of a live answer. The network bandwidth and
// the VPC limits (trunking, branch interfaces) are what EC2's
// documentation publishes, as the reference's AWS provider generates them
// (its zz_generated tables, read from its module through the Go module
// proxy).
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// referenceVersion is the release of the reference's AWS provider whose
// network tables the catalog takes.
const referenceVersion = "v1.15.2"

func main() {
	motoRecords := flag.String("moto", "", "moto's instance_types.json.gz (default: the installed moto's)")
	reference := flag.String("reference", "", "the reference's AWS provider module directory (default: downloaded through the Go module proxy)")
	out := flag.String("out", "internal/aws/instancetypes", "where to write the catalog")
	flag.Parse()
	motoVersion := "a copy given with -moto"
	if *motoRecords == "" {
		*motoRecords, motoVersion = installedMoto()
	}
	if *reference == "" {
		*reference = referenceModule()
	}
	prices, _, err := instancetypes.BuiltInPrices("us-east-1")
	if err != nil {
		log.Fatal(err)
	}
	records, missing := recordsFor(*motoRecords, prices.OnDemand)
	network := networkTables(filepath.Join(*reference, "pkg", "providers", "instancetype"))
	catalog := map[string]any{
		"source": fmt.Sprintf("EC2 DescribeInstanceTypes records (as moto %s keeps them) of the %d instance types priced in us-east-1; network tables from EC2's published specifications, as github.com/aws/karpenter-provider-aws %s generates them",
			motoVersion, len(records), referenceVersion),
		"instanceTypes": records,
	}
	writeGzip(filepath.Join(*out, "ec2-instance-types.json.gz"), catalog)
	writeJSON(filepath.Join(*out, "ec2-network.json"), network)
	log.Printf("%d instance types; priced but not described (retired): %s", len(records), strings.Join(missing, ", "))
}

// installedMoto is the instance type records of the moto python3
// imports, and its version.
func installedMoto() (path, version string) {
	out, err := exec.CommandContext(context.Background(), "python3", "-c", "import moto, os; print(os.path.join(os.path.dirname(moto.__file__), 'ec2', 'resources', 'instance_types.json.gz')); print(moto.__version__)").Output()
	if err != nil {
		log.Fatalf("finding moto's instance type records (pip install 'moto[server]'): %v", err)
	}
	path, version, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	return path, version
}

// referenceModule downloads the reference's AWS provider module.
func referenceModule() string {
	cmd := exec.CommandContext(context.Background(), "go", "mod", "download", "-json", "github.com/aws/karpenter-provider-aws@"+referenceVersion)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=go1.27.3")
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("downloading the reference's module: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		log.Fatalf("the reference's module: %v %s", err, out)
	}
	return mod.Dir
}

// recordsFor reads moto's records of the priced types, through the SDK's
// type, sorted by name; missing are the priced types it lacks.
func recordsFor(path string, priced map[string]float64) (records []ec2types.InstanceTypeInfo, missing []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		log.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.NewDecoder(z).Decode(&all); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	names := make([]string, 0, len(priced))
	for name := range priced {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, ok := all[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		var info ec2types.InstanceTypeInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		records = append(records, info)
	}
	return records, missing
}

// networkTables reads the reference's generated bandwidth and VPC limit
// tables (Go source, parsed).
func networkTables(dir string) instancetypes.NetworkTables {
	t := instancetypes.NetworkTables{BandwidthMbps: map[string]int64{}, Limits: map[string]instancetypes.VPCLimits{}}
	for name, lit := range mapLiterals(filepath.Join(dir, "zz_generated.bandwidth.go"), "InstanceTypeBandwidthMegabits") {
		v, err := strconv.ParseInt(lit.(*ast.BasicLit).Value, 10, 64)
		if err != nil {
			log.Fatalf("bandwidth of %s: %v", name, err)
		}
		t.BandwidthMbps[name] = v
	}
	for name, lit := range mapLiterals(filepath.Join(dir, "zz_generated.vpclimits.go"), "Limits") {
		var l instancetypes.VPCLimits
		for _, e := range lit.(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			switch kv.Key.(*ast.Ident).Name {
			case "IPv4PerInterface":
				l.IPv4PerInterface = intOf(kv.Value)
			case "BranchInterface":
				l.BranchInterfaces = intOf(kv.Value)
			case "IsTrunkingCompatible":
				l.Trunking = kv.Value.(*ast.Ident).Name == "true"
			}
		}
		t.Limits[name] = l
	}
	if len(t.BandwidthMbps) == 0 || len(t.Limits) == 0 {
		log.Fatalf("%s: the network tables are empty", dir)
	}
	return t
}

func intOf(e ast.Expr) int64 {
	v, err := strconv.ParseInt(e.(*ast.BasicLit).Value, 10, 64)
	if err != nil {
		log.Fatal(err)
	}
	return v
}

// mapLiterals are the entries of the map literal a package-level
// variable of a Go file is set to.
func mapLiterals(path, variable string) map[string]ast.Expr {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		log.Fatal(err)
	}
	out := map[string]ast.Expr{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != variable || len(spec.Values) != 1 {
			return true
		}
		for _, e := range spec.Values[0].(*ast.CompositeLit).Elts {
			kv := e.(*ast.KeyValueExpr)
			name, err := strconv.Unquote(kv.Key.(*ast.BasicLit).Value)
			if err != nil {
				log.Fatal(err)
			}
			out[name] = kv.Value
		}
		return false
	})
	return out
}

func writeGzip(path string, v any) {
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	enc := json.NewEncoder(z)
	if err := enc.Encode(v); err != nil {
		log.Fatal(err)
	}
	if err := z.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

func writeJSON(path string, v any) {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
}
