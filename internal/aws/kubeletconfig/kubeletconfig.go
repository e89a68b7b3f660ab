// Package kubeletconfig reads an EC2NodeClass's spec.kubelet: any field of
// the kubelet's own configuration (kubelet.config.k8s.io/v1beta1
// KubeletConfiguration), checked here since the API server stores the
// field unvalidated. Parse is the one place the map becomes typed
// settings; Unsupported says which fields an AMI family would not apply.
package kubeletconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	kjson "sigs.k8s.io/json"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Config is the part of spec.kubelet nodewright reads itself: what shapes
// a node's capacity and the settings every AMI family applies.
type Config struct {
	ClusterDNS                  []string                   `json:"clusterDNS,omitempty"`
	MaxPods                     *int32                     `json:"maxPods,omitempty"`
	PodsPerCore                 *int32                     `json:"podsPerCore,omitempty"`
	SystemReserved              map[string]string          `json:"systemReserved,omitempty"`
	KubeReserved                map[string]string          `json:"kubeReserved,omitempty"`
	EvictionHard                map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32                     `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32                     `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32                     `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool                      `json:"cpuCFSQuota,omitempty"`
	// Expressions are the settings given as CEL expressions, evaluated
	// for each instance type (For); nil when there are none.
	Expressions *Expressions `json:"expressions,omitempty"`
}

// Error is why spec.kubelet cannot be used: the condition reason and
// every problem, each naming its field.
type Error struct {
	Reason   string
	Problems []string
}

func (e *Error) Error() string { return strings.Join(e.Problems, "; ") }

// Managed are the fields Config holds, sorted: every AMI family that
// nodewright writes user data for applies them.
var Managed = func() []string {
	var out []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "expressions" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}()

// Signals are the eviction signals a threshold may name.
var Signals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}

// Reservable are the resources kubeReserved and systemReserved may name.
var Reservable = []string{"cpu", "memory", "ephemeral-storage", "pid"}

// owned are kubelet settings nodewright writes itself from other fields
// of the NodePool and EC2NodeClass, with what to set instead.
var owned = map[string]string{
	"registerWithTaints": "nodewright registers nodes with the NodePool's spec.template.spec.taints and startupTaints and its own karpenter.sh/unregistered; set the taints there",
	"providerID":         "the instance's provider ID is the kubelet's to report",
}

// Parse checks spec.kubelet and returns the settings nodewright reads;
// nil when it is empty. The error lists every problem, each naming the
// field, the value and what is allowed.
func Parse(k awsv1.KubeletConfiguration) (*Config, error) {
	if len(k) == 0 {
		return nil, nil
	}
	x, k := expressions(k)
	data, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("spec.kubelet: %w", err)
	}
	var problems []string
	var periods struct {
		EvictionSoftGracePeriod map[string]any `json:"evictionSoftGracePeriod"`
	}
	if json.Unmarshal(data, &periods) == nil {
		for _, signal := range sortedKeys(periods.EvictionSoftGracePeriod) {
			if v, ok := periods.EvictionSoftGracePeriod[signal].(string); !ok || !isDuration(v) {
				problems = append(problems, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]: %v is not a duration, such as 1m30s", signal, periods.EvictionSoftGracePeriod[signal]))
			}
		}
	}
	if len(problems) > 0 {
		// The kubelet's own decoding stops at the first bad duration.
		return nil, invalid(problems)
	}
	problems = append(problems, upstream(data)...)
	for _, field := range sortedKeys(k) {
		if why, ok := owned[field]; ok {
			problems = append(problems, fmt.Sprintf("spec.kubelet.%s: can't be set, %s", field, why))
		}
	}
	var reclaim struct {
		EvictionMinimumReclaim map[string]string `json:"evictionMinimumReclaim"`
	}
	if json.Unmarshal(data, &reclaim) == nil {
		problems = append(problems, thresholds("evictionMinimumReclaim", reclaim.EvictionMinimumReclaim)...)
	}
	c := &Config{}
	if err := json.Unmarshal(data, c); err != nil {
		// Wrong types are reported by upstream already.
		if len(problems) == 0 {
			problems = append(problems, "spec.kubelet: "+err.Error())
		}
		return nil, invalid(problems)
	}
	problems = append(problems, c.check()...)
	if len(problems) > 0 {
		return nil, invalid(problems)
	}
	if x != nil {
		if bad := x.check(); len(bad) > 0 {
			return nil, &Error{Reason: awsv1.ReasonKubeletExpressionInvalid, Problems: bad}
		}
		c.Expressions = x
	}
	return c, nil
}

func invalid(problems []string) *Error {
	return &Error{Reason: awsv1.ReasonInvalidKubeletConfiguration, Problems: problems}
}

// expressions takes the CEL expressions out of spec.kubelet: maxPods
// given as a string, and kubeReserved and systemReserved values that are
// not quantities. The rest is the kubelet's configuration as it is
// checked (maxPods 0 in the expression's place).
func expressions(k awsv1.KubeletConfiguration) (*Expressions, awsv1.KubeletConfiguration) {
	x := &Expressions{}
	rest := maps.Clone(k)
	var s string
	if raw, ok := k["maxPods"]; ok && json.Unmarshal(raw.Raw, &s) == nil {
		x.MaxPods = s
		rest["maxPods"] = apiextensionsv1.JSON{Raw: []byte("0")}
	}
	for field, dst := range map[string]*map[string]string{"kubeReserved": &x.KubeReserved, "systemReserved": &x.SystemReserved} {
		var m map[string]string
		if raw, ok := k[field]; !ok || json.Unmarshal(raw.Raw, &m) != nil {
			continue
		}
		literal := map[string]string{}
		for key, v := range m {
			if _, err := resource.ParseQuantity(v); err != nil && !strings.HasPrefix(strings.TrimSpace(v), "-") {
				if *dst == nil {
					*dst = map[string]string{}
				}
				(*dst)[key] = v
				literal[key] = "0"
				continue
			}
			literal[key] = v
		}
		if *dst != nil {
			data, _ := json.Marshal(literal)
			rest[field] = apiextensionsv1.JSON{Raw: data}
		}
	}
	if x.MaxPods == "" && x.KubeReserved == nil && x.SystemReserved == nil {
		return nil, k
	}
	return x, rest
}

// upstream decodes the configuration strictly as the kubelet's own type:
// a field the kubelet does not have, or a value of the wrong type.
func upstream(data []byte) []string {
	var cfg kubeletv1beta1.KubeletConfiguration
	strict, err := kjson.UnmarshalStrict(data, &cfg)
	var out []string
	for _, e := range strict {
		out = append(out, "spec.kubelet: "+strings.TrimPrefix(e.Error(), "json: ")+" in the kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1)")
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		out = append(out, fmt.Sprintf("spec.kubelet.%s: a %s where the kubelet takes %s", typeErr.Field, typeErr.Value, kind(typeErr.Type.String())))
	case errors.As(err, &typeErr):
		out = append(out, fmt.Sprintf("spec.kubelet: a %s where the kubelet takes %s", typeErr.Value, kind(typeErr.Type.String())))
	case err != nil:
		out = append(out, "spec.kubelet: "+err.Error())
	}
	return out
}

// kind names a Go type the way a manifest's author thinks of it.
func kind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "*int"):
		return "a whole number"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.HasPrefix(goType, "map["):
		return "a map"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case goType == "string", goType == "v1.Duration":
		return "a string"
	}
	return "a " + goType
}

var percentage = regexp.MustCompile(`^(100(\.0+)?|[0-9]{1,2}(\.[0-9]+)?)%$`)

// check holds the rules the kubelet would refuse the configuration for.
func (c *Config) check() []string {
	var out []string
	for i, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			out = append(out, fmt.Sprintf("spec.kubelet.clusterDNS[%d]: %q is not an IP address; give the cluster DNS service's ClusterIP", i, ip))
		}
	}
	for field, v := range map[string]*int32{"maxPods": c.MaxPods, "podsPerCore": c.PodsPerCore, "evictionMaxPodGracePeriod": c.EvictionMaxPodGracePeriod} {
		if v != nil && *v < 0 {
			out = append(out, fmt.Sprintf("spec.kubelet.%s: %d is negative; give 0 or more", field, *v))
		}
	}
	for field, v := range map[string]*int32{"imageGCHighThresholdPercent": c.ImageGCHighThresholdPercent, "imageGCLowThresholdPercent": c.ImageGCLowThresholdPercent} {
		if v != nil && (*v < 0 || *v > 100) {
			out = append(out, fmt.Sprintf("spec.kubelet.%s: %d is not a percentage from 0 to 100", field, *v))
		}
	}
	if h, l := c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent; h != nil && l != nil && *h <= *l {
		out = append(out, fmt.Sprintf("spec.kubelet: imageGCHighThresholdPercent (%d) must be greater than imageGCLowThresholdPercent (%d)", *h, *l))
	}
	out = append(out, reserved("kubeReserved", c.KubeReserved)...)
	out = append(out, reserved("systemReserved", c.SystemReserved)...)
	out = append(out, thresholds("evictionHard", c.EvictionHard)...)
	out = append(out, thresholds("evictionSoft", c.EvictionSoft)...)
	for _, signal := range sortedKeys(c.EvictionSoftGracePeriod) {
		if !slices.Contains(Signals, signal) {
			out = append(out, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]: not an eviction signal; use one of %s", signal, strings.Join(Signals, ", ")))
		}
		if d := c.EvictionSoftGracePeriod[signal].Duration; d < 0 {
			out = append(out, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]: %s is negative", signal, d))
		}
		if _, ok := c.EvictionSoft[signal]; !ok {
			out = append(out, fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]: has no threshold in evictionSoft; give one or remove the grace period", signal))
		}
	}
	for _, signal := range sortedKeys(c.EvictionSoft) {
		if _, ok := c.EvictionSoftGracePeriod[signal]; !ok {
			out = append(out, fmt.Sprintf("spec.kubelet.evictionSoft[%s]: has no matching evictionSoftGracePeriod; give one, such as 1m30s", signal))
		}
	}
	return out
}

func reserved(field string, m map[string]string) []string {
	return entries(field, m, Reservable, "a resource the kubelet reserves", "is not a quantity of 0 or more, such as 100m, 1Gi or 1000",
		func(string) bool { return false })
}

func thresholds(field string, m map[string]string) []string {
	return entries(field, m, Signals, "an eviction signal", "must be a percentage from 0% to 100%, such as 10%, or a quantity of 0 or more, such as 500Mi",
		percentage.MatchString)
}

// entries checks a map's keys (one of keys) and values (a quantity of 0
// or more, or what also accepts).
func entries(field string, m map[string]string, keys []string, what, notValue string, also func(string) bool) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		if !slices.Contains(keys, k) {
			out = append(out, fmt.Sprintf("spec.kubelet.%s[%s]: not %s; use one of %s", field, k, what, strings.Join(keys, ", ")))
		}
		if also(m[k]) {
			continue
		}
		if q, err := resource.ParseQuantity(m[k]); err != nil || q.Sign() < 0 {
			out = append(out, fmt.Sprintf("spec.kubelet.%s[%s]: %q %s", field, k, m[k], notValue))
		}
	}
	return out
}

// Unsupported says which of spec.kubelet's fields an AMI family would
// not apply (empty when it applies them all): AL2023 hands the whole
// configuration to nodeadm; AL2, Bottlerocket and Windows apply the
// managed fields only (Bottlerocket has no podsPerCore) and a single
// cluster DNS address; Custom user data is the user's, so nothing is
// applied and nothing is refused.
func Unsupported(family string, k awsv1.KubeletConfiguration) string {
	switch family {
	case awsv1.AMIFamilyAL2023, awsv1.AMIFamilyCustom, "":
		return ""
	}
	var dropped []string
	for _, field := range sortedKeys(k) {
		if !slices.Contains(Managed, field) || (field == "podsPerCore" && family == awsv1.AMIFamilyBottlerocket) {
			dropped = append(dropped, field)
		}
	}
	var parts []string
	if len(dropped) > 0 {
		parts = append(parts, fmt.Sprintf("spec.kubelet has fields not applied by the %s AMI family that would be silently dropped: %s; remove them or use amiFamily AL2023, whose nodeadm applies any kubelet field",
			family, strings.Join(dropped, ", ")))
	}
	var dns []string
	if raw, ok := k["clusterDNS"]; ok && json.Unmarshal(raw.Raw, &dns) == nil && len(dns) > 1 {
		parts = append(parts, fmt.Sprintf("spec.kubelet.clusterDNS: the %s AMI family takes one address, but %d were set", family, len(dns)))
	}
	return strings.Join(parts, "; ")
}

// Fields are spec.kubelet's fields that Config does not hold, as given,
// for the AMI family that passes them on (AL2023).
func Fields(k awsv1.KubeletConfiguration) map[string]any {
	out := map[string]any{}
	for field, raw := range k {
		if slices.Contains(Managed, field) {
			continue
		}
		var v any
		if err := json.Unmarshal(raw.Raw, &v); err == nil {
			out[field] = v
		}
	}
	return out
}

func isDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
