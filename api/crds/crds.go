// Package crds embeds the CustomResourceDefinitions generated from ../v1,
// ../v1alpha1, ../aws/v1 and ../autoscaling/v1beta1 by controller-gen, so tests, the simulator and installers apply
// exactly what was generated.
package crds

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
	defaulting.Default(obj, v.structural)
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
	u := &unstructured.Unstructured{Object: spec}
	if v.namespaced && u.GetNamespace() == "" {
		// kubectl puts an object without a namespace in its context's,
		// default unless set.
		u.Object = runtime.DeepCopyJSON(spec)
		u.SetNamespace(metav1.NamespaceDefault)
		spec = u.Object
	}
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(u, v.namespaced, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, spec, v.schema)...)
	errs = append(errs, v.scaleErrors(spec)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, spec)...)
	// As kube-apiserver: CEL rules run unless an error makes the object
	// unfit for them, which is then said.
	if blocking(errs) {
		errs = append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
	} else {
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

// blocking reports errors after which kube-apiserver does not run a
// CRD's CEL rules: a value not supported, required, too long, too many,
// of the wrong type.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// scaleErrors are kube-apiserver's checks of the replicas a scale
// subresource reads: a whole number from 0 to the largest int32.
func (v *validator) scaleErrors(obj map[string]any) field.ErrorList {
	if v.specReplicasPath == "" {
		return nil
	}
	path := strings.TrimPrefix(v.specReplicasPath, ".")
	replicas, _, err := unstructured.NestedInt64(obj, strings.Split(path, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(v.specReplicasPath), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(v.specReplicasPath), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(v.specReplicasPath), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// validator is a CRD version's schema, structural and CEL validators.
type validator struct {
	group            string
	namespaced       bool
	specReplicasPath string
	schema           apiservervalidation.SchemaValidator
	structural       *structuralschema.Structural
	cel              *cel.Validator
}

// validators are the CRDs' schemas and validators by apiVersion and kind,
// compiled once.
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
			val := &validator{group: crd.Spec.Group, namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, schema: sv, structural: s,
				cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
			if v.Subresources != nil && v.Subresources.Scale != nil {
				val.specReplicasPath = v.Subresources.Scale.SpecReplicasPath
			}
			out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = val
		}
	}
	return out, nil
})
