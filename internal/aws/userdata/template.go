package userdata

import (
	"regexp"
	"strings"
)

// Templates: user data kept in git as Terraform (templatefile, heredocs
// with interpolations) or Helm templates is not what a node reads; the
// tools that read such manifests check it as if filled, with values of
// the shapes the names say.

// Expression is a template expression in user data and the value it was
// checked with.
type Expression struct {
	Text, Value string
}

var (
	// Terraform's sure signs: a reference (var., local., module., data.,
	// a resource's attribute), a function call, a directive, an escape.
	terraformSure = regexp.MustCompile(`\$\{\s*~?\s*((var|local|module|data|each|count|path|terraform|self)\.|[a-z][a-z0-9_]*\(|[a-z][a-z0-9_]*_[a-z0-9_]+\.[a-z_])|%\{|\$\$\{`)
	// Helm's actions: {{ .Values.x }}, {{ include ... }}, {{- ... -}}.
	helmAction = regexp.MustCompile(`\{\{-?\s*(\.|\$|include |tpl |toYaml |required |default |quote |printf |if |else|end|range |with )[^}]*-?\}\}`)
	directive  = regexp.MustCompile(`%\{~?\s*(if|else|endif|for|endfor)\b[^}]*~?\}`)
)

// Filled is user data with its Terraform or Helm template expressions
// replaced by values of the shapes their names say (an endpoint an
// https URL, a CA base64, a CIDR, a DNS address), what it replaced, and
// whether it held any. Shell parameters (${VAR}) are template
// expressions only in user data that is surely a Terraform template.
func Filled(userData string) (string, []Expression, bool) {
	var exprs []Expression
	out := userData
	if terraformSure.MatchString(out) {
		out = directives(out)
		out = strings.ReplaceAll(out, "$${", "\x00{")
		out = replaceInterpolations(out, &exprs)
		out = strings.ReplaceAll(out, "\x00{", "${")
	}
	out = helmAction.ReplaceAllStringFunc(out, func(action string) string {
		inner := strings.Trim(action, "{}- ")
		if strings.HasPrefix(inner, "if ") || strings.HasPrefix(inner, "range ") || strings.HasPrefix(inner, "with ") || inner == "end" || strings.HasPrefix(inner, "else") {
			return ""
		}
		v := placeholder(inner)
		exprs = append(exprs, Expression{Text: action, Value: v})
		return v
	})
	return out, exprs, len(exprs) > 0 || out != userData
}

// directives keeps, of Terraform's %{ if } ... %{ else } ... %{ endif },
// the first branch, and of %{ for }, the body once.
func directives(s string) string {
	var b strings.Builder
	skipping := 0
	depth := 0
	rest := s
	for {
		loc := directive.FindStringSubmatchIndex(rest)
		if loc == nil {
			if skipping == 0 {
				b.WriteString(rest)
			}
			return b.String()
		}
		if skipping == 0 {
			b.WriteString(rest[:loc[0]])
		}
		switch rest[loc[2]:loc[3]] {
		case "if", "for":
			depth++
		case "else":
			if skipping == 0 {
				skipping = depth
			}
		case "endif", "endfor":
			if skipping == depth {
				skipping = 0
			}
			depth--
		}
		rest = rest[loc[1]:]
		rest = strings.TrimPrefix(rest, "\n")
	}
}

// replaceInterpolations replaces each ${ ... } (braces balanced).
func replaceInterpolations(s string, exprs *[]Expression) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		depth, end := 0, -1
		for j := i + 1; j < len(s); j++ {
			if s[j] == '{' {
				depth++
			} else if s[j] == '}' {
				depth--
				if depth == 0 {
					end = j
					break
				}
			}
		}
		if end < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		text := s[i : end+1]
		v := placeholder(strings.Trim(text, "${}~ "))
		*exprs = append(*exprs, Expression{Text: text, Value: v})
		b.WriteString(v)
		s = s[end+1:]
	}
}

// placeholders are values of the shapes expressions' names say, the
// first whose pattern matches the name.
var placeholders = []struct {
	name  *regexp.Regexp
	value string
}{
	{regexp.MustCompile(`(?i)endpoint|server|api_?url|apiserver`), "https://0123456789ABCDEF0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"},
	{regexp.MustCompile(`(?i)certificate|cluster_?ca|ca_?data|b64|base64`), "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRREFqQVZNUk13RVFZRFZRUURFd3ByZFdKbGNtNWwKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="},
	{regexp.MustCompile(`(?i)cidr`), "10.100.0.0/16"},
	{regexp.MustCompile(`(?i)dns`), "10.100.0.10"},
	{regexp.MustCompile(`(?i)max_?pods`), "110"},
	{regexp.MustCompile(`(?i)region`), "eu-west-1"},
	{regexp.MustCompile(`(?i)name|cluster`), "templated-cluster"},
}

func placeholder(expr string) string {
	for _, p := range placeholders {
		if p.name.MatchString(expr) {
			return p.value
		}
	}
	return "templated-value"
}
