// Package crds embeds the CustomResourceDefinitions generated from ../v1,
// ../v1alpha1, ../aws/v1 and ../autoscaling/v1beta1 by controller-gen, so tests, the simulator and installers apply
// exactly what was generated.
package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// All returns the CRDs nodewright serves: NodePool, NodeClaim,
// EC2NodeClass, NodeOverlay and CapacityBuffer.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Default fills an object of one of the CRDs' kinds, as decoded JSON,
// with the defaults the CRD's schema declares for its version, as the API
// server does when the object is created. False: the object is not of a
// kind and version the CRDs serve.
func Default(obj map[string]any) (bool, error) {
	schemas, err := structurals()
	if err != nil {
		return false, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	s := schemas[apiVersion+"/"+kind]
	if s == nil {
		return false, nil
	}
	defaulting.Default(obj, s)
	return true, nil
}

// Validate checks an object of one of the CRDs' kinds, as decoded JSON
// and defaulted, as the API server does when it is created: its OpenAPI
// schema, its list types and its x-kubernetes-validations (CEL) rules,
// by apiextensions' own validators; the error reads as kubectl apply's
// would. The status is not checked: a create drops it. False: the object
// is not of a kind and version the CRDs serve.
func Validate(ctx context.Context, obj map[string]any) (bool, error) {
	vs, err := validators()
	if err != nil {
		return false, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	v := vs[apiVersion+"/"+kind]
	if v == nil {
		return false, nil
	}
	spec := make(map[string]any, len(obj))
	for k, val := range obj {
		if k != "status" {
			spec[k] = val
		}
	}
	errs := apiservervalidation.ValidateCustomResource(nil, spec, v.schema)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, spec)...)
	if len(errs) == 0 {
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, spec, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	if len(errs) == 0 {
		return true, nil
	}
	name := ""
	if meta, ok := obj["metadata"].(map[string]any); ok {
		name, _ = meta["name"].(string)
	}
	return true, fmt.Errorf("%s.%s %q is invalid: %w", kind, v.group, name, errs.ToAggregate())
}

// validator is a CRD version's schema, structural and CEL validators.
type validator struct {
	group      string
	schema     apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

// validators are the CRDs' validators by apiVersion and kind.
var validators = sync.OnceValues(func() (map[string]*validator, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	out := map[string]*validator{}
	for _, crd := range all {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			sv, _, err := apiservervalidation.NewSchemaValidator(internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = &validator{group: crd.Spec.Group, schema: sv, structural: s,
				cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
		}
	}
	return out, nil
})

// structurals are the CRDs' schemas by apiVersion and kind.
var structurals = sync.OnceValues(func() (map[string]*structuralschema.Structural, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	out := map[string]*structuralschema.Structural{}
	for _, crd := range all {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensions.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = s
		}
	}
	return out, nil
})
