package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/yaml"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/referencetest"
)

// The reference's v1beta1 conversion: Karpenter v1.0.8, the last release
// that served v1beta1 beside v1, and its AWS provider.
const referenceConversion = "v1.0.8"

// conversionOracle builds the reference's conversion (testdata/convertoracle).
func conversionOracle(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	main, err := os.ReadFile(filepath.Join(filepath.Dir(here), "testdata", "convertoracle", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod := "module nodewright.local/convert-oracle\n\ngo 1.26\n\nrequire (\n\tsigs.k8s.io/karpenter " + referenceConversion +
		"\n\tgithub.com/aws/karpenter-provider-aws " + referenceConversion + "\n)\n"
	return referencetest.Oracle{Name: "convert-" + referenceConversion, GoMod: goMod, Files: map[string]string{"main.go": string(main)}, TestDepsMissing: true}.Build(t)
}

// v1beta1Defaulter defaults an object as the API server did with the
// reference's v1beta1 CRD schema (from its module), by kind.
func v1beta1Defaulter(t *testing.T) map[string]*structuralschema.Structural {
	t.Helper()
	core := referencetest.ModuleDir(t, "sigs.k8s.io/karpenter", referenceConversion)
	provider := referencetest.ModuleDir(t, referencetest.AWSProvider, referenceConversion)
	out := map[string]*structuralschema.Structural{}
	for kind, path := range map[string]string{
		"NodePool":     filepath.Join(core, "pkg", "apis", "crds", "karpenter.sh_nodepools.yaml"),
		"NodeClaim":    filepath.Join(core, "pkg", "apis", "crds", "karpenter.sh_nodeclaims.yaml"),
		"EC2NodeClass": filepath.Join(provider, "pkg", "apis", "crds", "karpenter.k8s.aws_ec2nodeclasses.yaml"),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != "v1beta1" {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				t.Fatal(err)
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				t.Fatal(err)
			}
			out[kind] = s
		}
		if out[kind] == nil {
			t.Fatalf("%s: no v1beta1 version", path)
		}
	}
	return out
}

// TestConversionAsTheReference runs generated v1beta1 NodePools,
// EC2NodeClasses and NodeClaims, written as users wrote them (manifests
// without the defaults, dumps with status), through nodewright's
// conversion and through the reference's (its v1beta1 CRD's defaults as
// the API server applied them, then its conversion webhook's code): the
// v1 objects must be the same.
func TestConversionAsTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reference's conversion")
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("CONVERT_CASES")); err == nil {
		n = v
	}
	oracle := conversionOracle(t)
	schemas := v1beta1Defaulter(t)
	rng := rand.New(rand.NewPCG(63, 1))
	type tc struct {
		kind string
		doc  map[string]any
		pool map[string]any // a NodeClaim's NodePool, as v1beta1
	}
	var cases []tc
	var input bytes.Buffer
	for i := range n {
		var c tc
		switch i % 3 {
		case 0:
			c = tc{kind: "NodePool", doc: genPool(rng, fmt.Sprintf("pool-%d", i))}
		case 1:
			c = tc{kind: "EC2NodeClass", doc: genClass(rng, fmt.Sprintf("class-%d", i))}
		default:
			poolName := fmt.Sprintf("pool-of-%d", i)
			c = tc{kind: "NodeClaim", doc: genClaim(rng, fmt.Sprintf("claim-%d", i), poolName)}
			if rng.IntN(4) > 0 {
				c.pool = genPool(rng, poolName)
			}
		}
		cases = append(cases, c)
		line := map[string]any{"kind": c.kind, "object": defaulted(t, schemas[c.kind], c.doc)}
		if c.pool != nil {
			// The NodeClaim's NodePool as the reference stored it in v1:
			// its own conversion of the pool.
			line["nodePool"] = json.RawMessage(referencetest.RunLines(t, oracle, mustJSON(t, map[string]any{"kind": "NodePool", "object": defaulted(t, schemas["NodePool"], c.pool)}))[0])
		}
		input.Write(mustJSON(t, line))
	}
	outputs := referencetest.RunLines(t, oracle, input.Bytes())
	if len(outputs) != len(cases) {
		t.Fatalf("the reference converted %d objects of %d", len(outputs), len(cases))
	}
	differ := 0
	for i, c := range cases {
		doc := mustJSON(t, c.doc)
		res, err := Document(c.doc["apiVersion"].(string), c.kind, doc)
		if err != nil {
			t.Errorf("case %d (%s): %v\n%s", i, c.kind, err, doc)
			continue
		}
		obj := res.Objects[0]
		if c.kind == "NodeClaim" {
			var pools []*v1.NodePool
			if c.pool != nil {
				pr, err := Document("karpenter.sh/v1beta1", "NodePool", mustJSON(t, c.pool))
				if err != nil {
					t.Fatal(err)
				}
				pools = append(pools, pr.Objects[0].(*v1.NodePool))
			}
			claim := obj.(*v1.NodeClaim)
			annotations := maps.Clone(claim.Annotations)
			if _, _, err := Settle(pools, nil, []*v1.NodeClaim{claim}); err != nil {
				t.Fatal(err)
			}
			claim.Annotations = annotations // compared as the reference leaves them
		}
		ours, theirs := normalize(t, mustJSON(t, obj)), normalize(t, outputs[i])
		if status, ok := ours["status"].(map[string]any); ok && c.kind == "NodePool" {
			delete(status, "nodes") // nodewright's NodePool status counts nodes, zero until read
		}
		if !reflect.DeepEqual(ours, theirs) {
			differ++
			if differ <= 10 {
				t.Errorf("case %d (%s) converts otherwise:\ninput:     %s\nnodewright: %s\nreference:  %s", i, c.kind, doc, mustJSON(t, ours), mustJSON(t, theirs))
			}
		}
	}
	t.Logf("%d v1beta1 objects: %d converted otherwise than the reference", len(cases), differ)
}

func defaulted(t *testing.T, s *structuralschema.Structural, doc map[string]any) map[string]any {
	t.Helper()
	var copied map[string]any
	if err := json.Unmarshal(mustJSON(t, doc), &copied); err != nil {
		t.Fatal(err)
	}
	defaulting.Default(copied, s)
	return copied
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

// normalize is an object as JSON without what the two sides write
// differently and means the same: the type (the reference's output has
// none), empty values and a null creation time.
func normalize(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	out, _ := prune(m).(map[string]any)
	return out
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(x) == 0 {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(e)
		}
		return out
	case string:
		return x
	}
	return v
}
