// Package systemd reads what systemd reads of a unit's settings: the
// words of an Environment= line and of a variable expanded unquoted in
// ExecStart=.
package systemd

import "strings"

// Words splits a command line's text as systemd splits the value
// of an environment variable it expands unquoted ($VAR in ExecStart):
// at whitespace, with single and double quotes grouping and removed, and
// a backslash escaping the next character.
func Words(s string) []string {
	var words []string
	var b strings.Builder
	in, quote, escaped := false, rune(0), false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped, in = false, true
		case r == '\\' && quote != '\'':
			escaped, in = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, b.String())
	}
	return words
}

// Environment reads the value of a systemd Environment= setting: a
// list of NAME=VALUE words, quotes grouping and removed; a word that is
// not an assignment is ignored, as systemd ignores it.
func Environment(line string) map[string]string {
	env := map[string]string{}
	for _, w := range Words(line) {
		name, value, ok := strings.Cut(w, "=")
		if !ok || !validEnvName(name) {
			continue
		}
		env[name] = value
	}
	return env
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
