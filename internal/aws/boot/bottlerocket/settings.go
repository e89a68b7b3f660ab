package bottlerocket

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/nodewright/nodewright/internal/spelling"
)

// A rule checks one value of the settings model as its type decodes it
// (from the JSON the TOML becomes): nil when the type takes it.
type rule func(v any) error

// checkKubernetes checks settings.kubernetes against the model: every key
// one of its fields (kebab-case), every value one its type takes.
func checkKubernetes(k map[string]any) error {
	for _, key := range slices.Sorted(maps.Keys(k)) {
		check, ok := kubernetesFields[key]
		if !ok && slices.Contains(versionedFields, key) {
			return &NotModelledError{Reason: "settings.kubernetes." + key + " is a setting of some Bottlerocket versions only, which others refuse; the model does not know which the AMI is"}
		}
		if !ok {
			return fmt.Errorf("settings.kubernetes.%s: the settings model has no such setting (%s)", key, closest(key, slices.Collect(maps.Keys(kubernetesFields))))
		}
		if err := check(k[key]); err != nil {
			return fmt.Errorf("settings.kubernetes.%s: %w", key, err)
		}
	}
	return nil
}

// NotModelledError says the settings hold what the model does not read.
type NotModelledError struct{ Reason string }

func (e *NotModelledError) Error() string { return e.Reason }

// kind names a decoded TOML value's type, for messages.
func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case time.Time, toml.LocalDate, toml.LocalDateTime, toml.LocalTime:
		return "a date-time"
	}
	return fmt.Sprintf("%T", v)
}

// str is a rule for a string type whose text check accepts.
func str(check func(string) error) rule {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v is %s; the setting takes a string", show(v), kind(v))
		}
		if err := check(s); err != nil {
			return fmt.Errorf("%q: %w", s, err)
		}
		return nil
	}
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// matches is a check by a regular expression (anchored).
func matches(re *regexp.Regexp, what string) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("not %s", what)
		}
		return nil
	}
}

// oneOf is a check for an enumeration's values.
func oneOf(values ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(values, s) {
			return fmt.Errorf("not one of %s", strings.Join(quoted(values), ", "))
		}
		return nil
	}
}

func quoted(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strconv.Quote(v)
	}
	return out
}

// integer is a rule for an integer type of the range: a TOML integer (a
// float or a string is refused).
func integer(lo, hi int64) rule {
	return func(v any) error {
		i, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%v is %s; the setting takes an integer", show(v), kind(v))
		}
		if i < lo || i > hi {
			return fmt.Errorf("%d is outside %d to %d", i, lo, hi)
		}
		return nil
	}
}

func boolean(v any) error {
	if _, ok := v.(bool); !ok {
		return fmt.Errorf("%v is %s; the setting takes true or false", show(v), kind(v))
	}
	return nil
}

// integerPercent takes an integer, or a string that is one, from 0 to 100.
func integerPercent(v any) error {
	var i int64
	switch x := v.(type) {
	case int64:
		i = x
	case string:
		n, err := strconv.ParseInt(x, 10, 32)
		if err != nil {
			return fmt.Errorf("%q is not an integer percentage", x)
		}
		i = n
	default:
		return fmt.Errorf("%v is %s; the setting takes an integer percentage", show(v), kind(v))
	}
	if i < 0 || i > 100 {
		return fmt.Errorf("%d is outside 0 to 100", i)
	}
	return nil
}

// mapOf is a rule for a table whose keys and values the rules take.
func mapOf(key func(string) error, value rule) rule {
	return func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is %s; the setting takes a table", show(v), kind(v))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := key(k); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			if err := value(m[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	}
}

// listOf is a rule for an array whose items the rule takes.
func listOf(item rule) rule {
	return func(v any) error {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%v is %s; the setting takes an array", show(v), kind(v))
		}
		for i, x := range list {
			if err := item(x); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	}
}

// structOf is a rule for a table of the model's fields (others refused).
func structOf(fields map[string]rule) rule {
	return func(v any) error {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is %s; the setting takes a table", show(v), kind(v))
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			check, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: the settings model has no such field (%s)", k, closest(k, slices.Collect(maps.Keys(fields))))
			}
			if err := check(m[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	}
}

// nodeTaints takes a table of label keys to a "value:Effect" string or a
// non-empty array of them.
func nodeTaints(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%v is %s; the setting takes a table", show(v), kind(v))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := labelKey(k); err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		var err error
		switch t := m[k].(type) {
		case string:
			err = str(taintValue)(t)
		case []any:
			if len(t) == 0 {
				err = fmt.Errorf("an empty array (Bottlerocket refuses an empty taint value)")
			} else {
				err = listOf(str(taintValue))(t)
			}
		default:
			err = fmt.Errorf("%v is %s; a taint is a \"value:Effect\" string or an array of them", show(t), kind(t))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// clusterDNSIP takes an IP address or an array of them.
func clusterDNSIP(v any) error {
	if list, ok := v.([]any); ok {
		return listOf(str(ipAddress))(list)
	}
	return str(ipAddress)(v)
}

// ipAddress takes an IPv4 address in dotted quads or an IPv6 address (no
// zone, no prefix length).
func ipAddress(s string) error {
	if net.ParseIP(s) == nil {
		return fmt.Errorf("not an IP address")
	}
	return nil
}

// validBase64 takes standard base64, padded, with nothing else in it
// (not even a line break); empty is taken.
func validBase64(s string) error {
	if err := controlFree(s); err != nil {
		return fmt.Errorf("%w: Bottlerocket takes the base64 on one line", err)
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(s); err != nil {
		return fmt.Errorf("not base64: %w", err)
	}
	return nil
}

// urlValue takes what parses as a URL, as it is or with http:// before
// it; a scheme that needs a host (http, https) must have one.
func urlValue(s string) error {
	if err := controlFree(s); err != nil {
		return err
	}
	s = strings.TrimSpace(s)
	for _, candidate := range []string{s, "http://" + s} {
		u, err := url.Parse(candidate)
		if err != nil || u.Scheme == "" {
			continue
		}
		if u.Scheme == "http" || u.Scheme == "https" {
			if u.Host != "" && u.Hostname() != "" && strings.Trim(u.Hostname(), "0123456789.") != "" || net.ParseIP(u.Hostname()) != nil {
				return nil
			}
			continue
		}
		return nil
	}
	return fmt.Errorf("not a URL")
}

// Label keys and values, as Kubernetes writes them.
var (
	labelName        = `[[:alnum:]]([[:alnum:]._-]{0,61}[[:alnum:]])?`
	labelKeyPattern  = regexp.MustCompile(`^([[:alnum:].-]{1,253}/)?` + labelName + `$`)
	labelValuePatten = regexp.MustCompile(`^(` + labelName + `)?$`)
	taintValuePatten = regexp.MustCompile(`^(` + labelName + `)?:[[:alnum:]]{1,253}$`)
)

func labelKey(s string) error {
	return matches(labelKeyPattern, "a label key ([prefix/]name: a name of up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)")(s)
}

func labelValue(s string) error {
	return matches(labelValuePatten, "a label value (empty, or up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)")(s)
}

func taintValue(s string) error {
	return matches(taintValuePatten, `a taint value ("value:Effect" or ":Effect", the effect letters and digits)`)(s)
}

// closest names the nearest of the known keys, for a misspelt one.
func closest(key string, known []string) string {
	slices.Sort(known)
	if best, d := spelling.Nearest(key, known); d >= 0 && d <= 3 {
		return "did you mean " + best + "?"
	}
	return "see the Bottlerocket settings reference"
}
