package userdata

import (
	"bytes"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is a command a shell script runs, with its arguments as the
// command receives them (quotes removed; variables left as ${NAME}).
type Command struct {
	Name string
	Args []string
	// Raw are the arguments as written, for messages.
	Raw []string
}

// Commands parses a shell script and returns every simple command in it,
// in order.
func Commands(script []byte) ([]Command, error) {
	file, err := syntax.NewParser(syntax.KeepComments(false)).Parse(bytes.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	var out []Command
	printer := syntax.NewPrinter()
	syntax.Walk(file, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		c := Command{Name: wordValue(call.Args[0])}
		for _, w := range call.Args[1:] {
			c.Args = append(c.Args, wordValue(w))
			var b bytes.Buffer
			_ = printer.Print(&b, w)
			c.Raw = append(c.Raw, b.String())
		}
		out = append(out, c)
		return true
	})
	return out, nil
}

// wordValue is what a command receives for a word: quotes removed, escapes
// resolved, parameter expansions left as ${NAME}.
func wordValue(w *syntax.Word) string {
	var b strings.Builder
	for _, part := range w.Parts {
		writePart(&b, part)
	}
	return b.String()
}

func writePart(b *strings.Builder, part syntax.WordPart) {
	switch p := part.(type) {
	case *syntax.Lit:
		b.WriteString(unescape(p.Value))
	case *syntax.SglQuoted:
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		for _, inner := range p.Parts {
			if lit, ok := inner.(*syntax.Lit); ok {
				b.WriteString(lit.Value)
				continue
			}
			writePart(b, inner)
		}
	case *syntax.ParamExp:
		if p.Param != nil {
			b.WriteString("${" + p.Param.Value + "}")
		}
	default:
		b.WriteString("${…}")
	}
}

// unescape removes the backslashes of an unquoted literal.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	escaped := false
	for _, r := range s {
		if r == '\\' && !escaped {
			escaped = true
			continue
		}
		escaped = false
		b.WriteRune(r)
	}
	return b.String()
}

// IsBootstrap reports whether a command runs the EKS AL2 bootstrap script.
func IsBootstrap(name string) bool { return path.Base(name) == "bootstrap.sh" }
