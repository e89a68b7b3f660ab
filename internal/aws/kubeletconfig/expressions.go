package kubeletconfig

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Expressions are the settings of spec.kubelet given as CEL expressions
// over the instance type, evaluated for each: maxPods as a string,
// kubeReserved and systemReserved values that are not quantities.
type Expressions struct {
	MaxPods        string
	KubeReserved   map[string]string
	SystemReserved map[string]string
}

// Vars are what an expression reads of an instance type.
type Vars struct {
	InstanceType string
	VCPUs        int64
	MemoryMiB    int64
	// DefaultENIs and IPsPerENI are the network interfaces of the default
	// network card and the IPv4 addresses of each.
	DefaultENIs, IPsPerENI int64
	// MaxPods is the pod limit without maxPods set (the ENI limit).
	MaxPods int64
}

// VariableNames are the variables an expression may read.
var VariableNames = []string{"instance_type", "vcpus", "memory_mib", "default_enis", "ips_per_eni", "max_pods"}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
	// programs caches compiled expressions by their text.
	programs sync.Map // string → cel.Program
)

func celEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := []cel.EnvOption{cel.Variable("instance_type", cel.StringType)}
		for _, name := range VariableNames[1:] {
			opts = append(opts, cel.Variable(name, cel.IntType))
		}
		for _, name := range []string{"max", "min"} {
			pick := math.Max
			if name == "min" {
				pick = math.Min
			}
			signatures := [][2]*cel.Type{{cel.IntType, cel.IntType}, {cel.DoubleType, cel.DoubleType}, {cel.IntType, cel.DoubleType}, {cel.DoubleType, cel.IntType}}
			overloads := make([]cel.FunctionOpt, 0, len(signatures))
			for _, sig := range signatures {
				result := cel.DoubleType
				if sig[0] == cel.IntType && sig[1] == cel.IntType {
					result = cel.IntType
				}
				id := fmt.Sprintf("%s_%s_%s", name, sig[0], sig[1])
				overloads = append(overloads, cel.Overload(id, []*cel.Type{sig[0], sig[1]}, result, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
					x, y := number(a), number(b)
					if _, ok := a.(types.Int); ok {
						if _, ok := b.(types.Int); ok {
							return types.Int(int64(pick(x, y)))
						}
					}
					return types.Double(pick(x, y))
				})))
			}
			opts = append(opts, cel.Function(name, overloads...))
		}
		env, envErr = cel.NewEnv(opts...)
	})
	return env, envErr
}

func number(v ref.Val) float64 {
	switch n := v.(type) {
	case types.Int:
		return float64(n)
	case types.Double:
		return float64(n)
	}
	return math.NaN()
}

// compile compiles an expression, which must give a number.
func compile(expr string) (cel.Program, error) {
	if p, ok := programs.Load(expr); ok {
		return p.(cel.Program), nil
	}
	e, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, issues := e.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(issues.Err().Error(), "\n", " "))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.IntType) && !t.IsExactType(cel.DoubleType) {
		return nil, fmt.Errorf("gives a %s; it must give a number (int or double)", t)
	}
	p, err := e.Program(ast)
	if err != nil {
		return nil, err
	}
	programs.Store(expr, p)
	return p, nil
}

// check compiles every expression; each problem names its field.
func (x *Expressions) check() []string {
	var out []string
	if x.MaxPods != "" {
		if _, err := compile(x.MaxPods); err != nil {
			out = append(out, fmt.Sprintf("spec.kubelet.maxPods: the expression %q: %v", x.MaxPods, err))
		}
	}
	for field, m := range map[string]map[string]string{"kubeReserved": x.KubeReserved, "systemReserved": x.SystemReserved} {
		for _, k := range sortedKeys(m) {
			if _, err := compile(m[k]); err != nil {
				out = append(out, fmt.Sprintf("spec.kubelet.%s[%s]: the expression %q: %v", field, k, m[k], err))
			}
		}
	}
	sort.Strings(out)
	return out
}

func eval(expr string, v Vars, maxPods int64) (int64, error) {
	p, err := compile(expr)
	if err != nil {
		return 0, err
	}
	out, _, err := p.Eval(map[string]any{
		"instance_type": v.InstanceType, "vcpus": v.VCPUs, "memory_mib": v.MemoryMiB,
		"default_enis": v.DefaultENIs, "ips_per_eni": v.IPsPerENI, "max_pods": maxPods,
	})
	if err != nil {
		return 0, err
	}
	f := number(out)
	if math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, fmt.Errorf("gives %v, not a number nodewright can use", out)
	}
	return int64(f), nil // a double is truncated
}

// HasExpressions reports whether spec.kubelet gives some setting as a CEL
// expression, whether or not it compiles.
func HasExpressions(k awsv1.KubeletConfiguration) bool {
	x, _ := expressions(k)
	return x != nil
}

// HasExpressions reports whether some setting is an expression.
func (c *Config) HasExpressions() bool {
	return c != nil && c.Expressions != nil
}

// For is the configuration of one instance type: its expressions
// evaluated (maxPods first, with max_pods the type's default; the
// reservations with max_pods the type's pod limit), cpu in millicores
// rounded up to 10m, memory in MiB rounded up to 16Mi, ephemeral-storage
// in Gi, other resources as whole numbers.
func (c *Config) For(v Vars) (*Config, error) {
	if !c.HasExpressions() {
		return c, nil
	}
	out := *c
	out.Expressions = nil
	x := c.Expressions
	pods := v.MaxPods
	if c.MaxPods != nil {
		pods = int64(*c.MaxPods)
	}
	if x.MaxPods != "" {
		n, err := eval(x.MaxPods, v, v.MaxPods)
		if err != nil {
			return nil, fmt.Errorf("spec.kubelet.maxPods %q for %s: %w", x.MaxPods, v.InstanceType, err)
		}
		if n < 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("spec.kubelet.maxPods %q for %s gives %d pods, outside 0 to %d", x.MaxPods, v.InstanceType, n, math.MaxInt32)
		}
		out.MaxPods, pods = ptr.To(int32(n)), n
	}
	for field, pair := range map[string]struct {
		exprs map[string]string
		dst   *map[string]string
	}{"kubeReserved": {x.KubeReserved, &out.KubeReserved}, "systemReserved": {x.SystemReserved, &out.SystemReserved}} {
		if len(pair.exprs) == 0 {
			continue
		}
		resolved := maps.Clone(*pair.dst)
		if resolved == nil {
			resolved = map[string]string{}
		}
		for _, k := range sortedKeys(pair.exprs) {
			n, err := eval(pair.exprs[k], v, pods)
			if err != nil {
				return nil, fmt.Errorf("spec.kubelet.%s[%s] %q for %s: %w", field, k, pair.exprs[k], v.InstanceType, err)
			}
			if n < 0 {
				return nil, fmt.Errorf("spec.kubelet.%s[%s] %q for %s gives %d, a negative reservation", field, k, pair.exprs[k], v.InstanceType, n)
			}
			resolved[k] = quantity(k, n)
		}
		*pair.dst = resolved
	}
	return &out, nil
}

// quantity writes an expression's result in the resource's unit.
func quantity(resourceName string, n int64) string {
	roundUp := func(n, step int64) int64 {
		if n%step == 0 || n > math.MaxInt64-step {
			return n
		}
		return (n/step + 1) * step
	}
	switch resourceName {
	case "cpu":
		return resource.NewMilliQuantity(roundUp(n, 10), resource.DecimalSI).String()
	case "memory":
		return fmt.Sprintf("%dMi", roundUp(n, 16))
	case "ephemeral-storage":
		return fmt.Sprintf("%dGi", n)
	}
	return fmt.Sprint(n)
}
