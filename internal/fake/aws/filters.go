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
		for i := 0; i <= len(value); i++ {
			if wildcardMatch(pattern[1:], value[i:]) {
				return true
			}
		}
		return false
	case c == '\\' && len(pattern) > 1:
		return value != "" && value[0] == pattern[1] && wildcardMatch(pattern[2:], value[1:])
	case value == "":
		return false
	case c == '?' || c == value[0]:
		return wildcardMatch(pattern[1:], value[1:])
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
