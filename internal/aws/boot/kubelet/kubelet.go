// Package kubelet reads a kubelet command line as the kubelet does before
// it starts: its flag set (every flag it defines, from the table generated
// from its own code), pflag's parsing with the kubelet's normalisation, the
// value types of component-base it binds its flags to, its checks on node
// labels and taints (the well-known label rules of k8s.io/kubelet), and
// the flags applied over its configuration file. What it gives is what the
// kubelet registers the Node with, or the error the kubelet exits with.
package kubelet

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	netutils "k8s.io/utils/net"
)

// Config is the part of the kubelet's configuration a Node's registration
// and capacity depend on, as a configuration file gives it (zero values:
// not set) and as the kubelet ends with.
type Config struct {
	MaxPods        int32
	PodsPerCore    int32
	ClusterDNS     []string
	KubeReserved   map[string]string
	SystemReserved map[string]string
	EvictionHard   map[string]string
	// RegisterWithTaints are the taints the Node is created with.
	RegisterWithTaints []corev1.Taint
}

// Started is what the kubelet starts with: its configuration with the
// flags applied over it, the labels it registers the Node with, and its
// cloud provider.
type Started struct {
	Config
	Labels        map[string]string
	CloudProvider string
	// Given are the flags the command line sets, by name.
	Given sets.Set[string]
}

// ExitError is the error the kubelet exits with before it registers.
type ExitError struct{ Reason string }

func (e *ExitError) Error() string { return "the kubelet exits: " + e.Reason }

// Start reads the kubelet's arguments over its configuration file (nil:
// the kubelet runs without one) as the kubelet does, and returns what it
// starts with, or an *ExitError.
func Start(args []string, file *Config) (*Started, error) {
	s := &Started{Labels: map[string]string{}, Given: sets.New[string]()}
	if file != nil {
		s.Config = clone(*file)
	}
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	bind(fs, s)
	if err := fs.Parse(args); err != nil {
		return nil, &ExitError{Reason: "failed to parse kubelet flag: " + err.Error()}
	}
	if rest := fs.Args(); len(rest) > 0 {
		return nil, &ExitError{Reason: fmt.Sprintf("unknown command %s (a word that is not a flag)", rest[0])}
	}
	fs.Visit(func(f *pflag.Flag) { s.Given.Insert(f.Name) })
	switch {
	case s.Given.Has("help"):
		return nil, &ExitError{Reason: "--help prints the help and exits"}
	case s.Given.Has("version") && fs.Lookup("version").Value.String() != "false":
		return nil, &ExitError{Reason: "--version prints the version and exits"}
	}
	if err := checkLabels(s.Labels); err != nil {
		return nil, &ExitError{Reason: "failed to validate kubelet flags: " + err.Error()}
	}
	if err := checkConfig(s.Config); err != nil {
		return nil, &ExitError{Reason: "failed to validate kubelet configuration: " + err.Error()}
	}
	return s, nil
}

func clone(c Config) Config {
	c.ClusterDNS = slices.Clone(c.ClusterDNS)
	c.KubeReserved = maps.Clone(c.KubeReserved)
	c.SystemReserved = maps.Clone(c.SystemReserved)
	c.EvictionHard = maps.Clone(c.EvictionHard)
	c.RegisterWithTaints = slices.Clone(c.RegisterWithTaints)
	return c
}

// bind defines every flag of the kubelet on fs: those that shape the
// Node bound to s with the value types the kubelet binds them to, the
// others checked by their type and otherwise not kept.
func bind(fs *pflag.FlagSet, s *Started) {
	labels := cliflag.ConfigurationMap(s.Labels)
	modelled := map[string]pflag.Value{
		"node-labels":          &labels,
		"register-with-taints": &taintsValue{&s.RegisterWithTaints},
		"max-pods":             int32Value{&s.MaxPods},
		"pods-per-core":        int32Value{&s.PodsPerCore},
		"cluster-dns":          &stringSliceValue{value: &s.ClusterDNS},
		"kube-reserved":        cliflag.NewMapStringString(&s.KubeReserved),
		"system-reserved":      cliflag.NewMapStringString(&s.SystemReserved),
		"eviction-hard":        cliflag.NewLangleSeparatedMapStringString(&s.EvictionHard),
		"cloud-provider":       stringValue{&s.CloudProvider},
	}
	for _, f := range Flags {
		v, ok := modelled[f.Name]
		if !ok {
			v = checked(f.Type)
		}
		flag := fs.VarPF(v, f.Name, f.Shorthand, "")
		if f.NoValue {
			flag.NoOptDefVal = "true"
		}
	}
}

// checkLabels is the kubelet's check of --node-labels: a label in the
// kubernetes.io or k8s.io namespaces must be one the kubelet may set
// (k8s.io/kubelet's list), and every key and value must be valid.
func checkLabels(labels map[string]string) error {
	unknown := sets.New[string]()
	var invalid []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if kubernetesNamespace(k) && !kubeletapis.IsKubeletLabel(k) {
			unknown.Insert(k)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("%q: %s", k, strings.Join(errs, ", ")))
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("%q: %s", labels[k], strings.Join(errs, ", ")))
		}
	}
	if unknown.Len() > 0 {
		return fmt.Errorf("--node-labels sets %s, in the kubernetes.io or k8s.io namespace, which the kubelet may not set itself: only labels under %s and %s are allowed",
			strings.Join(sets.List(unknown), ", "), strings.Join(kubeletapis.KubeletLabelNamespaces(), ", "), strings.Join(kubeletapis.KubeletLabels(), ", "))
	}
	if len(invalid) > 0 {
		return fmt.Errorf("invalid node labels: %s", strings.Join(invalid, "; "))
	}
	return nil
}

// kubernetesNamespace reports a label key whose prefix is kubernetes.io,
// k8s.io or a subdomain of them.
func kubernetesNamespace(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, ns := range []string{"kubernetes.io", "k8s.io"} {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			return true
		}
	}
	return false
}

// checkConfig is the kubelet's check of the configuration fields modelled
// here.
func checkConfig(c Config) error {
	var errs []error
	if c.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("maxPods (--max-pods) %d must not be a negative number", c.MaxPods))
	}
	if c.PodsPerCore < 0 {
		errs = append(errs, fmt.Errorf("podsPerCore (--pods-per-core) %d must not be a negative number", c.PodsPerCore))
	}
	for _, t := range c.RegisterWithTaints {
		if err := checkTaint(t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkTaint checks a taint of the configuration as the kubelet does.
func checkTaint(t corev1.Taint) error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("invalid taint %s: %s", t.ToString(), strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
		return fmt.Errorf("invalid taint %s: %s", t.ToString(), strings.Join(errs, "; "))
	}
	if !validEffect(t.Effect) {
		return fmt.Errorf("invalid taint %s: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.ToString(), t.Effect)
	}
	return nil
}

func validEffect(e corev1.TaintEffect) bool {
	return e == corev1.TaintEffectNoSchedule || e == corev1.TaintEffectPreferNoSchedule || e == corev1.TaintEffectNoExecute
}

// taintsValue is --register-with-taints: a comma-separated list of
// key[=value]:Effect; an empty value clears the list, a later flag
// replaces an earlier one, and an item ending in "-" (a removal, in
// kubectl's syntax) is read and dropped.
type taintsValue struct{ taints *[]corev1.Taint }

func (v *taintsValue) String() string { return fmt.Sprint(*v.taints) }
func (v *taintsValue) Type() string   { return "[]v1.Taint" }

func (v *taintsValue) Set(s string) error {
	if s == "" {
		*v.taints = nil
		return nil
	}
	var out []corev1.Taint
	seen := map[corev1.TaintEffect]sets.Set[string]{}
	for _, item := range strings.Split(s, ",") {
		removal := strings.HasSuffix(item, "-")
		t, err := parseTaint(strings.TrimSuffix(item, "-"))
		if err != nil {
			return err
		}
		if removal {
			continue
		}
		if t.Effect == "" {
			return fmt.Errorf("invalid taint spec: %v", item)
		}
		if seen[t.Effect].Has(t.Key) {
			return fmt.Errorf("duplicated taints with the same key and effect: %s", t.ToString())
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = sets.New[string]()
		}
		seen[t.Effect].Insert(t.Key)
		out = append(out, t)
	}
	*v.taints = out
	return nil
}

// parseTaint reads key, key:Effect or key=value:Effect.
func parseTaint(s string) (corev1.Taint, error) {
	fields := strings.Split(s, ":")
	var t corev1.Taint
	switch len(fields) {
	case 1:
		t.Key = fields[0]
	case 2:
		t.Effect = corev1.TaintEffect(fields[1])
		if !validEffect(t.Effect) {
			return t, fmt.Errorf("invalid taint effect: %v, unsupported taint effect", t.Effect)
		}
		kv := strings.Split(fields[0], "=")
		if len(kv) > 2 {
			return t, fmt.Errorf("invalid taint spec: %v", s)
		}
		t.Key = kv[0]
		if len(kv) == 2 {
			t.Value = kv[1]
			if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
				return t, fmt.Errorf("invalid taint spec: %v, %s", s, strings.Join(errs, "; "))
			}
		}
	default:
		return t, fmt.Errorf("invalid taint spec: %v", s)
	}
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return t, fmt.Errorf("invalid taint spec: %v, %s", s, strings.Join(errs, "; "))
	}
	return t, nil
}

type int32Value struct{ v *int32 }

func (v int32Value) String() string { return strconv.Itoa(int(*v.v)) }
func (v int32Value) Type() string   { return "int32" }
func (v int32Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return numError(err)
	}
	*v.v = int32(n)
	return nil
}

type stringValue struct{ v *string }

func (v stringValue) String() string     { return *v.v }
func (v stringValue) Type() string       { return "string" }
func (v stringValue) Set(s string) error { *v.v = s; return nil }

// stringSliceValue is pflag's string slice: comma-separated values, the
// first flag replacing the configuration's list and later ones appending.
type stringSliceValue struct {
	value   *[]string
	changed bool
}

func (v *stringSliceValue) String() string { return strings.Join(*v.value, ",") }
func (v *stringSliceValue) Type() string   { return "stringSlice" }
func (v *stringSliceValue) Set(s string) error {
	words, err := csvWords(s)
	if err != nil {
		return err
	}
	if !v.changed {
		*v.value = words
	} else {
		*v.value = append(*v.value, words...)
	}
	v.changed = true
	return nil
}

// csvWords reads a string slice flag's value as pflag does, as one CSV
// record.
func csvWords(s string) ([]string, error) {
	if s == "" {
		return []string{}, nil
	}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	out := fs.StringSlice("v", nil, "")
	if err := fs.Set("v", s); err != nil {
		return nil, err
	}
	return *out, nil
}

// numError is strconv's error as pflag reports it.
func numError(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}

// checked is a flag value of a kubelet type that is checked as the
// kubelet checks it and not kept.
func checked(typ string) pflag.Value {
	parse := parsers[typ]
	if parse == nil {
		parse = func(string) error { return nil }
	}
	return &checkedValue{typ: typ, parse: parse}
}

type checkedValue struct {
	typ   string
	parse func(string) error
	value string
}

func (v *checkedValue) String() string { return v.value }
func (v *checkedValue) Type() string   { return v.typ }
func (v *checkedValue) Set(s string) error {
	if err := v.parse(s); err != nil {
		return err
	}
	v.value = s
	return nil
}

// parsers check a value of each of the kubelet's flag types.
var parsers = map[string]func(string) error{
	"bool": func(s string) error { _, err := strconv.ParseBool(s); return numError(err) },
	"version": func(s string) error {
		_, err := strconv.ParseBool(s)
		if s == "raw" {
			return nil
		}
		return numError(err)
	},
	"duration": func(s string) error { _, err := time.ParseDuration(s); return err },
	"int32":    func(s string) error { _, err := strconv.ParseInt(s, 0, 32); return numError(err) },
	"int64":    func(s string) error { _, err := strconv.ParseInt(s, 0, 64); return numError(err) },
	"int":      func(s string) error { _, err := strconv.ParseInt(s, 0, strconv.IntSize); return numError(err) },
	"ip": func(s string) error {
		if s != "" && netutils.ParseIPSloppy(s) == nil {
			return fmt.Errorf("%q is not a valid IP address", s)
		}
		return nil
	},
	"quantity": func(s string) error { _, err := resource.ParseQuantity(s); return err },
	"mapStringString": func(s string) error {
		m := map[string]string{}
		return cliflag.NewMapStringString(&m).Set(s)
	},
	"mapStringBool": func(s string) error {
		m := map[string]bool{}
		return cliflag.NewMapStringBool(&m).Set(s)
	},
	"colonSeparatedMultimapStringString": func(s string) error {
		m := map[string][]string{}
		return cliflag.NewColonSeparatedMultimapStringString(&m).Set(s)
	},
	"stringSlice": func(s string) error { _, err := csvWords(s); return err },
	"Level":       func(s string) error { var l klog.Level; return l.Set(s) },
}
