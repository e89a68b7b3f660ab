// Package aws simulates an AWS account behind the same SDK interfaces the
// real clients satisfy (internal/aws/sdk), so the provider's production
// code runs against it unchanged.
package aws

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// attributes answers a filter name for a resource: its values, and whether
// the simulator knows the filter at all.
type attributes func(name string) ([]string, bool)

// matches applies EC2 filter semantics: every filter must match (AND), one
// of a filter's values must match (OR), and values may use * and ?
// wildcards.
func matches(filters []ec2types.Filter, attrs attributes) (bool, error) {
	for _, f := range filters {
		name := deref(f.Name)
		have, known := attrs(name)
		if !known {
			return false, apiError("InvalidParameterValue", "The filter '"+name+"' is invalid")
		}
		if !anyMatch(f.Values, have) {
			return false, nil
		}
	}
	return true, nil
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcardMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcardMatch is EC2's filter value matching: * is any run of
// characters (slashes too: tag keys such as kubernetes.io/cluster/NAME
// have them), ? any one character, a backslash escapes either.
func wildcardMatch(pattern, value string) bool {
	if pattern == "" {
		return value == ""
	}
	switch c := pattern[0]; {
	case c == '*':
		return starMatch(pattern[1:], value)
	case c == '\\' && len(pattern) > 1:
		return literalMatch(pattern[1], pattern[2:], value)
	case c == '?':
		return value != "" && wildcardMatch(pattern[1:], value[1:])
	default:
		return literalMatch(c, pattern[1:], value)
	}
}

// literalMatch reports whether value starts with c and rest matches what
// follows it.
func literalMatch(c byte, rest, value string) bool {
	return value != "" && value[0] == c && wildcardMatch(rest, value[1:])
}

// starMatch reports whether rest, the pattern after a *, matches some
// suffix of value.
func starMatch(rest, value string) bool {
	for i := 0; i <= len(value); i++ {
		if wildcardMatch(rest, value[i:]) {
			return true
		}
	}
	return false
}

// tagAttributes answers tag:KEY and tag-key filters.
func tagAttributes(tags []ec2types.Tag, name string) ([]string, bool) {
	if name == "tag-key" {
		keys := make([]string, 0, len(tags))
		for _, t := range tags {
			keys = append(keys, deref(t.Key))
		}
		return keys, true
	}
	if len(name) > 4 && name[:4] == "tag:" {
		for _, t := range tags {
			if deref(t.Key) == name[4:] {
				return []string{deref(t.Value)}, true
			}
		}
		return nil, true
	}
	return nil, false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// selected reports whether a request listing ids selects id: an empty
// list selects everything.
func selected(ids []string, id string) bool {
	return len(ids) == 0 || contains(ids, id)
}

// resourceFilters are the filters a Describe call knows for one kind of
// resource: fields gives a resource's value for a filter name, tags its
// tags for tag:KEY and tag-key.
type resourceFilters[T any] struct {
	fields map[string]func(T) string
	tags   func(T) []ec2types.Tag
}

// attributes answers the filters for resource r.
func (f resourceFilters[T]) attributes(r T) attributes {
	return func(name string) ([]string, bool) {
		if value, ok := f.fields[name]; ok {
			return []string{value(r)}, true
		}
		return tagAttributes(f.tags(r), name)
	}
}

// filter returns, in order, the resources that wanted keeps and that match
// the filters; an unknown filter is an error.
func (f resourceFilters[T]) filter(resources []T, filters []ec2types.Filter, wanted func(T) bool) ([]T, error) {
	var out []T
	for _, r := range resources {
		if !wanted(r) {
			continue
		}
		ok, err := matches(filters, f.attributes(r))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}
