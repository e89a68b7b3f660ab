package doctor

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// CodeTemplated is manifests kept as templates (Terraform or Helm): the
// fields that hold template expressions, and the values user data was
// checked with.
const CodeTemplated = "templated-input"

// anyTemplate finds a Terraform or Helm expression in a field's value.
var anyTemplate = regexp.MustCompile(`\$\{[^}]+\}|\{\{-?\s*[.$][^}]*\}\}`)

// filledTemplates returns the objects with each EC2NodeClass's templated
// user data filled (on a copy of the class), so the user data rules read
// it as a node would once Terraform or Helm has rendered it, and notes
// every templated field. A cluster's objects are what nodes get: they
// are read as they are.
func filledTemplates(r *Report, in Input) *whatif.Objects {
	o := in.Objects
	if in.FromCluster || o == nil {
		return o
	}
	filled := *o
	filled.EC2NodeClasses = make([]*awsv1.EC2NodeClass, len(o.EC2NodeClasses))
	for i, nc := range o.EC2NodeClasses {
		filled.EC2NodeClasses[i] = nc
		// User data's ${VAR} may be the shell's: Filled tells.
		fields := without(templatedFields(nc.Spec, "spec"), "spec.userData")
		var exprs []userdata.Expression
		if nc.Spec.UserData != nil {
			if text, found, ok := userdata.Filled(*nc.Spec.UserData); ok {
				c := nc.DeepCopy()
				c.Spec.UserData = &text
				filled.EC2NodeClasses[i] = c
				exprs = found
				fields = append([]string{"spec.userData"}, fields...)
			}
		}
		if len(fields) > 0 {
			r.add(templatedFinding("EC2NodeClass/"+nc.Name, fields, exprs))
		}
	}
	for _, np := range o.NodePools {
		if fields := templatedFields(np.Spec, "spec"); len(fields) > 0 {
			r.add(templatedFinding("NodePool/"+np.Name, fields, nil))
		}
	}
	return &filled
}

func templatedFinding(object string, fields []string, exprs []userdata.Expression) Finding {
	values := make([]string, 0, len(exprs))
	for _, e := range exprs {
		values = append(values, e.Text+" as "+e.Value)
	}
	evidence := "templated: " + strings.Join(fields, ", ")
	if len(values) > 0 {
		evidence += "; user data checked with " + strings.Join(values, ", ")
	}
	return Finding{Code: CodeTemplated, Severity: Info, Object: object,
		Message:  fmt.Sprintf("%s is a template (Terraform or Helm): its user data is checked as if filled with values of the shapes the expressions' names say; the values themselves, and the other templated fields, are checked only once rendered", object),
		Evidence: evidence,
		Fix:      "to check the values too, run nodewright doctor on the manifests with the spec. fields named rendered (helm template CHART | nodewright doctor -f -, Terraform's rendered kubernetes_manifest), or against the cluster once applied"}
}

// templatedFields are the paths of an object's string fields that hold
// template expressions.
func templatedFields(spec any, root string) []string {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var out []string
	var walk func(string, any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if anyTemplate.MatchString(x) {
				out = append(out, path)
			}
		}
	}
	walk(root, v)
	sort.Strings(out)
	return out
}

func without(list []string, s string) []string {
	var out []string
	for _, e := range list {
		if e != s {
			out = append(out, e)
		}
	}
	return out
}
