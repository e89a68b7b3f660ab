package crds_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/referencetest"
)

// typedFor returns an empty Go object for the API kinds nodewright defines.
func typedFor(kind string) client.Object {
	switch kind {
	case "NodePool":
		return &v1.NodePool{}
	case "NodeClaim":
		return &v1.NodeClaim{}
	case "EC2NodeClass":
		return &awsv1.EC2NodeClass{}
	case "NodeOverlay":
		return &v1alpha1.NodeOverlay{}
	}
	return nil
}

// apiDocuments returns the documents of the given files that are
// nodewright API objects, as JSON.
func apiDocuments(t *testing.T, patterns ...string) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no files match %s (%v)", pattern, err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for {
				doc, err := reader.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				obj := &unstructured.Unstructured{}
				js, err := yaml.YAMLToJSON(doc)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if string(js) == "null" {
					continue
				}
				if err := obj.UnmarshalJSON(js); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if typedFor(obj.GetKind()) != nil {
					docs[filepath.Base(file)+"/"+obj.GetKind()+"/"+obj.GetName()] = js
				}
			}
		}
	}
	return docs
}

// YAML → Go → YAML keeps every field of every scenario object and of the
// objects that set every field. Decoding is strict, so a field the Go types
// lack fails the test rather than vanishing.
func TestRoundTripThroughGoKeepsEveryField(t *testing.T) {
	docs := apiDocuments(t, "../../scenarios/*.yaml", "testdata/every-field.yaml")
	if len(docs) < 14 {
		t.Fatalf("found only %d API objects", len(docs))
	}
	for name, js := range docs {
		t.Run(name, func(t *testing.T) {
			var in map[string]any
			if err := json.Unmarshal(js, &in); err != nil {
				t.Fatal(err)
			}
			typed := typedFor(in["kind"].(string))
			if err := yaml.UnmarshalStrict(js, typed); err != nil {
				t.Fatalf("decoding into %T: %v", typed, err)
			}
			outYAML, err := yaml.Marshal(typed)
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			if err := yaml.Unmarshal(outYAML, &out); err != nil {
				t.Fatal(err)
			}
			delete(out["metadata"].(map[string]any), "creationTimestamp")
			if diff := cmp.Diff(in, out, sameDuration); diff != "" {
				t.Errorf("round trip changed the object (-in +out):\n%s", diff)
			}
		})
	}
}

// The API server keeps every field too: no field of the objects is pruned
// for lack of a schema, spec or status.
func TestRoundTripThroughAPIServerKeepsEveryField(t *testing.T) {
	ctx := context.Background()
	for name, js := range apiDocuments(t, "testdata/every-field.yaml") {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(js); err != nil {
				t.Fatal(err)
			}
			want := obj.DeepCopy()
			if err := kube.Create(ctx, obj); err != nil {
				t.Fatalf("creating: %v", err)
			}
			t.Cleanup(func() { _ = kube.Delete(ctx, obj) })
			obj.Object["status"] = want.Object["status"]
			if err := kube.Status().Update(ctx, obj); err != nil {
				t.Fatalf("updating status: %v", err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"spec", "status"} {
				if diff := cmp.Diff(want.Object[field], got.Object[field], sameDuration); diff != "" {
					t.Errorf("%s changed on the API server (-sent +stored):\n%s", field, diff)
				}
			}
		})
	}
}

// sameDuration compares duration strings by value: Go writes 1h0m0s for
// the 1h a person writes.
var sameDuration = cmp.Transformer("duration", func(s string) string {
	if d, err := time.ParseDuration(s); err == nil {
		return d.String()
	}
	return s
})

// Every object of every file of the reference's examples/v1 (the AWS
// provider's module, through the module proxy), of its newest release
// and of its long-term support line, applies to nodewright's CRDs
// unchanged, with strict field validation; the one object the
// reference's own CRDs refuse is refused too.
func TestReferenceExampleFilesApply(t *testing.T) {
	for _, version := range []string{referencetest.AWSProviderNew, referencetest.AWSProviderLTS} {
		t.Run(version, func(t *testing.T) {
			dir := filepath.Join(referencetest.ModuleDir(t, referencetest.AWSProvider, version), "examples", "v1")
			docs := apiDocuments(t, filepath.Join(dir, "*.yaml"))
			// Objects of the examples that the reference's own CRDs refuse
			// too: nodeClassRef.group "karpenter.k8s.aws/v1" (the pattern
			// ^[^/]*$).
			refused := map[string]string{"windows-custom-userdata.yaml/NodePool/windows2022": "should match '^[^/]*$'"}
			for name, fragment := range refused {
				js, ok := docs[name]
				if !ok {
					t.Fatalf("%s is not among the examples any more", name)
				}
				delete(docs, name)
				obj := &unstructured.Unstructured{}
				if err := obj.UnmarshalJSON(js); err != nil {
					t.Fatal(err)
				}
				err := kube.Create(context.Background(), obj, client.FieldValidation("Strict"))
				if err == nil {
					_ = kube.Delete(context.Background(), obj)
					t.Errorf("%s applied; the reference's CRDs refuse it", name)
				} else if !strings.Contains(err.Error(), fragment) {
					t.Errorf("%s: %v, want it refused with %q", name, err, fragment)
				}
			}
			applyStrictly(t, docs, 40)
		})
	}
}

// applyStrictly creates each object with strict field validation and
// deletes it again; there must be at least that many (least).
func applyStrictly(t *testing.T, docs map[string][]byte, least int) {
	t.Helper()
	ctx := context.Background()
	if len(docs) < least {
		t.Fatalf("found only %d objects", len(docs))
	}
	t.Logf("applying %d objects", len(docs))
	for name, js := range docs {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			t.Fatal(err)
		}
		if err := kube.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		_ = kube.Delete(ctx, obj)
	}
}
