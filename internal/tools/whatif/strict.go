package whatif

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodewright/nodewright/internal/manifest"
	"github.com/nodewright/nodewright/internal/spelling"
)

// Strict input: what kubectl apply refuses is refused here, in words
// that say how to fix it.

var duplicateKey = regexp.MustCompile(`line (\d+): key "([^"]+)" already set in map`)

// duplicateKeyError says what a key given twice in a document means: two
// objects joined without a "---" between them (apiVersion or kind
// again), or one field written twice, which strict decoding refuses.
func duplicateKeyError(err error) error {
	m := duplicateKey.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	if m[2] == "apiVersion" || m[2] == "kind" {
		return fmt.Errorf("yaml: line %s: key %q again in the same document: two objects are joined without a \"---\" line between them, and the first would be lost; put \"---\" on the line before this object's apiVersion", m[1], m[2])
	}
	return fmt.Errorf("yaml: line %s: key %q is given twice in the same map (kubectl apply refuses it, and which one was meant is not nodewright's to guess): keep one", m[1], m[2])
}

// groupKinds are the kinds of the autoscaler's API groups, the older
// APIs' too, for a kind misspelt in one of them.
var groupKinds = map[string][]string{
	"karpenter.sh":      {"NodePool", "NodeClaim", "NodeOverlay", "Provisioner", "Machine"},
	"karpenter.k8s.aws": {"EC2NodeClass", "AWSNodeTemplate"},
}

// checkGroupKind refuses a kind the autoscaler's groups do not have
// (kubectl apply refuses it: no such resource), naming the nearest, or
// the group a kind of the other group belongs to.
func checkGroupKind(apiVersion, kind, name string) error {
	if err := groupKindError(apiVersion, kind, name); err != nil {
		return &manifest.FieldError{Path: "kind", Err: err}
	}
	return nil
}

func groupKindError(apiVersion, kind, name string) error {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return nil
	}
	kinds, ours := groupKinds[group]
	if !ours || slices.Contains(kinds, kind) {
		return nil
	}
	for other, otherKinds := range groupKinds {
		if slices.Contains(otherKinds, kind) {
			return fmt.Errorf("%s %s: kind %s is in API group %s, not %s: set apiVersion: %s/%s", kind, name, kind, other, group, other, version)
		}
	}
	msg := fmt.Sprintf("%s %s: %s has no kind %s (kubectl apply refuses it: no matches for kind %q in version %q)", kind, name, group, kind, kind, apiVersion)
	if near, d := spelling.Nearest(strings.ToLower(kind), lower(kinds)); d >= 0 && d <= max(2, len(kind)/3) {
		for _, k := range kinds {
			if strings.ToLower(k) == near {
				return fmt.Errorf("%s: did you mean %s?", msg, k)
			}
		}
	}
	return fmt.Errorf("%s; its kinds are %s", msg, strings.Join(kinds, ", "))
}

func lower(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = strings.ToLower(w)
	}
	return out
}

// didYouMean names, for each unknown field of a strict decoding error,
// the nearest field the object's type has at that place.
func didYouMean(obj runtime.Object, err error) string {
	if obj == nil {
		return ""
	}
	var hints []string
	for _, path := range manifest.UnknownFields(err) {
		parent, leaf := splitLeaf(path)
		t := typeAt(reflect.TypeOf(obj), parent)
		if t == nil {
			continue
		}
		names := jsonNames(t)
		if near, d := spelling.Nearest(strings.ToLower(leaf), lower(names)); d >= 0 && d <= max(2, len(leaf)/3) {
			for _, n := range names {
				if strings.ToLower(n) == near {
					hints = append(hints, fmt.Sprintf("%s: did you mean %s?", path, n))
				}
			}
		} else if len(names) > 0 {
			hints = append(hints, fmt.Sprintf("%s: the fields there are %s", path, strings.Join(names, ", ")))
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, "; ") + ")"
}

// splitLeaf splits a path into its parent and last field.
func splitLeaf(path string) (string, string) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

// typeAt is the struct type a field path leads to from t, by json names.
func typeAt(t reflect.Type, path string) reflect.Type {
	t = deref(t)
	if path == "" {
		return t
	}
	for _, seg := range strings.Split(path, ".") {
		name, index, _ := strings.Cut(seg, "[")
		if t = deref(fieldType(t, name)); t == nil {
			return nil
		}
		for index != "" { // [0] or [key]: a list's or map's element
			if t.Kind() != reflect.Slice && t.Kind() != reflect.Map {
				return nil
			}
			t = deref(t.Elem())
			_, index, _ = strings.Cut(index, "[")
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldType is the type of a struct's field of a json name (inline
// fields' too).
func fieldType(t reflect.Type, name string) reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == name:
			return f.Type
		case f.Anonymous && (tag == "" || strings.Contains(f.Tag.Get("json"), "inline")):
			if ft := fieldType(deref(f.Type), name); ft != nil {
				return ft
			}
		}
	}
	return nil
}

// jsonNames are a struct's fields' json names (inline fields' too).
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "":
			if ft := deref(f.Type); ft.Kind() == reflect.Struct {
				out = append(out, jsonNames(ft)...)
			}
		case tag != "":
			out = append(out, tag)
		}
	}
	return out
}
