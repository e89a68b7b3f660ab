package crds_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/api/crds"
	"github.com/nodewright/nodewright/internal/referencetest"
)

// extensions are the fields nodewright's CRDs have and the reference's do
// not, each with why; none may be in spec but those in specProposals.
var extensions = map[string]string{
	"NodeOverlay .spec.dynamicResources":   "devices DRA drivers publish on instance types the catalog does not describe, in the shape of the reference's NodeOverlay DRA proposal (designs/node-overlay-dra.md), which its published v1alpha1 CRD does not have yet",
	"NodePool .status.registrationBackoff": "how long the NodePool waits after nodes failed to register, and why: shown by kubectl and doctor while launches back off",
	"NodePool .status.driftBackoff":        "a drift rollout paused after replacements failed, and how to resume it",
	"EC2NodeClass .status.placementGroup":  "the placement group spec.placementGroupSelector resolved to, with its strategy, as the launch uses it",
}

// specProposals are the extensions in spec: fields the reference has
// proposed in a design of its own and not published, in that design's
// shape, so that manifests written for it now keep working when it does.
var specProposals = map[string]bool{"NodeOverlay .spec.dynamicResources": true}

// TestCRDsAreTheReferences compares nodewright's CRDs with the reference's
// published ones (the AWS provider's, which include the core's), field by
// field: names, scope, versions, printer columns and, for every path of
// the schema, its type, format, enum, pattern, default, required list,
// bounds, list and map types and CEL rules (expression, reason, field
// path: what decides whether and where an object is refused; the messages
// are nodewright's own). A field the reference has that nodewright lacks
// or shapes differently fails; nodewright's own fields are allowed only
// in status, each listed above with why.
func TestCRDsAreTheReferences(t *testing.T) {
	for _, version := range []string{referencetest.AWSProviderNew} {
		dir := referencetest.ModuleDir(t, referencetest.AWSProvider, version)
		ours, err := crds.All()
		if err != nil {
			t.Fatal(err)
		}
		var diffs []string
		compared := 0
		for _, our := range ours {
			ref := loadCRD(t, filepath.Join(dir, "pkg", "apis", "crds", our.Spec.Group+"_"+our.Spec.Names.Plural+".yaml"))
			d, n := compareCRDs(ref, our)
			diffs, compared = append(diffs, d...), compared+n
		}
		t.Logf("%s %s: %d schema paths compared, %d differences", referencetest.AWSProvider, version, compared, len(diffs))
		if len(diffs) > 0 {
			t.Errorf("nodewright's CRDs differ from the reference's %s:\n%s", version, strings.Join(diffs, "\n"))
		}
	}
}

func loadCRD(t *testing.T, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the reference's CRD: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return crd
}

func compareCRDs(ref, our *apiextensionsv1.CustomResourceDefinition) ([]string, int) {
	kind := ref.Spec.Names.Kind
	var diffs []string
	differ := func(what string, a, b any) {
		if ja, jb := asJSON(a), asJSON(b); ja != jb {
			diffs = append(diffs, fmt.Sprintf("%s %s: the reference's %s, nodewright's %s", kind, what, ja, jb))
		}
	}
	differ("group", ref.Spec.Group, our.Spec.Group)
	differ("names", ref.Spec.Names, our.Spec.Names)
	differ("scope", ref.Spec.Scope, our.Spec.Scope)
	compared := 0
	for _, rv := range ref.Spec.Versions {
		i := slices.IndexFunc(our.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == rv.Name })
		if i < 0 {
			diffs = append(diffs, fmt.Sprintf("%s version %s: missing", kind, rv.Name))
			continue
		}
		ov := our.Spec.Versions[i]
		differ(rv.Name+" served/storage", []bool{rv.Served, rv.Storage}, []bool{ov.Served, ov.Storage})
		differ(rv.Name+" subresources", rv.Subresources, ov.Subresources)
		diffs = append(diffs, compareColumns(kind, rv.AdditionalPrinterColumns, ov.AdditionalPrinterColumns)...)
		s := &schemaDiff{kind: kind}
		s.compare("", rv.Schema.OpenAPIV3Schema, ov.Schema.OpenAPIV3Schema)
		diffs, compared = append(diffs, s.diffs...), compared+s.compared
	}
	return diffs, compared
}

// extraColumns are the printer columns nodewright adds, each shown only
// by kubectl get -o wide, with why.
var extraColumns = map[string]string{
	"NodePool Rollout": "the progress of a drift rollout (RolloutInProgress's message)",
}

// compareColumns: kubectl get shows the reference's columns, in its order
// and shapes (descriptions aside); nodewright's own columns are only in
// the wide output, each listed above.
func compareColumns(kind string, ref, our []apiextensionsv1.CustomResourceColumnDefinition) []string {
	var diffs []string
	strip := func(c apiextensionsv1.CustomResourceColumnDefinition) string {
		c.Description = ""
		return asJSON(c)
	}
	next := 0
	for _, c := range our {
		if next < len(ref) && strip(c) == strip(ref[next]) {
			next++
			continue
		}
		if _, ok := extraColumns[kind+" "+c.Name]; !ok || c.Priority < 1 {
			diffs = append(diffs, fmt.Sprintf("%s printer column %s: nodewright's own, not in the reference's, and not a listed wide column", kind, strip(c)))
		}
	}
	for _, c := range ref[next:] {
		diffs = append(diffs, fmt.Sprintf("%s printer column %s: the reference's, missing or out of order in nodewright's", kind, strip(c)))
	}
	return diffs
}

type schemaDiff struct {
	kind     string
	diffs    []string
	compared int
}

func (s *schemaDiff) add(path, format string, args ...any) {
	if path == "" {
		path = "(root)"
	}
	s.diffs = append(s.diffs, fmt.Sprintf("%s %s: %s", s.kind, path, fmt.Sprintf(format, args...)))
}

func (s *schemaDiff) compare(path string, ref, our *apiextensionsv1.JSONSchemaProps) {
	s.compared++
	for _, k := range schemaKeywords {
		if a, b := asJSON(k.get(ref)), asJSON(k.get(our)); a != b {
			s.add(path, "%s: the reference's %s, nodewright's %s", k.name, a, b)
		}
	}
	if a, b := rules(ref.XValidations), rules(our.XValidations); !slices.Equal(a, b) {
		s.add(path, "CEL rules differ:\n    the reference's %s\n    nodewright's    %s", strings.Join(a, "\n                    "), strings.Join(b, "\n                    "))
	}
	names := map[string]bool{}
	for name := range ref.Properties {
		names[name] = true
	}
	for name := range our.Properties {
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		r, rok := ref.Properties[name]
		o, ook := our.Properties[name]
		child := path + "." + name
		switch {
		case !ook:
			s.add(child, "the reference has this field; nodewright does not")
		case !rok:
			if _, ok := extensions[s.kind+" "+child]; !ok || !strings.HasPrefix(child, ".status.") && !specProposals[s.kind+" "+child] {
				s.add(child, "nodewright has this field; the reference does not")
			}
		default:
			s.compare(child, &r, &o)
		}
	}
	if ref.Items != nil && our.Items != nil && ref.Items.Schema != nil && our.Items.Schema != nil {
		s.compare(path+"[]", ref.Items.Schema, our.Items.Schema)
	}
	if ref.AdditionalProperties != nil && our.AdditionalProperties != nil && ref.AdditionalProperties.Schema != nil && our.AdditionalProperties.Schema != nil {
		s.compare(path+"{*}", ref.AdditionalProperties.Schema, our.AdditionalProperties.Schema)
	}
}

// rules are a schema's CEL rules as what decides their effect: the
// expression, the reason and field path of the error; sorted.
func rules(vs apiextensionsv1.ValidationRules) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		r := strings.Join(strings.Fields(v.Rule), " ")
		if v.Reason != nil {
			r += " [reason " + string(*v.Reason) + "]"
		}
		if v.FieldPath != "" {
			r += " [fieldPath " + v.FieldPath + "]"
		}
		if v.OptionalOldSelf != nil && *v.OptionalOldSelf {
			r += " [optionalOldSelf]"
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

type keyword struct {
	name string
	get  func(*apiextensionsv1.JSONSchemaProps) any
}

// schemaKeywords are what a schema node says of its value, descriptions
// and nested schemas aside.
var schemaKeywords = []keyword{
	{"type", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Type }},
	{"format", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Format }},
	{"enum", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Enum }},
	{"pattern", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Pattern }},
	{"default", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Default }},
	{"required", func(p *apiextensionsv1.JSONSchemaProps) any { return slices.Sorted(slices.Values(p.Required)) }},
	{"minimum", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Minimum }},
	{"maximum", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Maximum }},
	{"exclusiveMinimum", func(p *apiextensionsv1.JSONSchemaProps) any { return p.ExclusiveMinimum }},
	{"exclusiveMaximum", func(p *apiextensionsv1.JSONSchemaProps) any { return p.ExclusiveMaximum }},
	{"minLength", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MinLength }},
	{"maxLength", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MaxLength }},
	{"minItems", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MinItems }},
	{"maxItems", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MaxItems }},
	{"minProperties", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MinProperties }},
	{"maxProperties", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MaxProperties }},
	{"uniqueItems", func(p *apiextensionsv1.JSONSchemaProps) any { return p.UniqueItems }},
	{"multipleOf", func(p *apiextensionsv1.JSONSchemaProps) any { return p.MultipleOf }},
	{"nullable", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Nullable }},
	{"x-kubernetes-preserve-unknown-fields", func(p *apiextensionsv1.JSONSchemaProps) any { return p.XPreserveUnknownFields }},
	{"x-kubernetes-int-or-string", func(p *apiextensionsv1.JSONSchemaProps) any { return p.XIntOrString }},
	{"x-kubernetes-embedded-resource", func(p *apiextensionsv1.JSONSchemaProps) any { return p.XEmbeddedResource }},
	{"x-kubernetes-list-type", func(p *apiextensionsv1.JSONSchemaProps) any { return p.XListType }},
	{"x-kubernetes-list-map-keys", func(p *apiextensionsv1.JSONSchemaProps) any { return p.XListMapKeys }},
	{"x-kubernetes-map-type", func(p *apiextensionsv1.JSONSchemaProps) any { return p.XMapType }},
	{"additionalProperties", func(p *apiextensionsv1.JSONSchemaProps) any {
		if p.AdditionalProperties == nil {
			return nil
		}
		return p.AdditionalProperties.Allows || p.AdditionalProperties.Schema != nil
	}},
	{"items", func(p *apiextensionsv1.JSONSchemaProps) any { return p.Items != nil }},
	{"anyOf/oneOf/allOf/not", func(p *apiextensionsv1.JSONSchemaProps) any {
		return []any{withoutDescriptions(p.AnyOf), withoutDescriptions(p.OneOf), withoutDescriptions(p.AllOf), p.Not != nil}
	}},
}

func withoutDescriptions(ps []apiextensionsv1.JSONSchemaProps) []apiextensionsv1.JSONSchemaProps {
	out := slices.Clone(ps)
	for i := range out {
		out[i].Description = ""
	}
	return out
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
