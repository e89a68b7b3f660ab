package userdata

import (
	"bytes"
	"path"
	"strconv"
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
		if p.Dollar {
			b.WriteString(ansiC(p.Value))
		} else {
			b.WriteString(p.Value)
		}
	case *syntax.DblQuoted:
		for _, inner := range p.Parts {
			if lit, ok := inner.(*syntax.Lit); ok {
				b.WriteString(unescapeDouble(lit.Value))
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

// unescapeDouble resolves the escapes bash honours inside double quotes:
// a backslash before $, `, ", \ or a newline; any other backslash stays.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC resolves the escapes of a $'...' string.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	simple := map[byte]string{'n': "\n", 't': "\t", 'r': "\r", 'a': "\a", 'b': "\b", 'f': "\f", 'v': "\v", 'e': "\x1b", 'E': "\x1b", '\\': "\\", '\'': "'", '"': "\"", '?': "?"}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		if r, ok := simple[s[i]]; ok {
			b.WriteString(r)
			continue
		}
		base, digits := 8, "01234567"
		start, limit := i, i+3
		if s[i] == 'x' {
			base, digits, start, limit = 16, "0123456789abcdefABCDEF", i+1, i+3
		}
		end := start
		for end < len(s) && end < limit && strings.IndexByte(digits, s[end]) >= 0 {
			end++
		}
		if end == start {
			b.WriteByte('\\')
			b.WriteByte(s[i])
			continue
		}
		n, _ := strconv.ParseUint(s[start:end], base, 8)
		b.WriteByte(byte(n))
		i = end - 1
	}
	return b.String()
}

// IsBootstrap reports whether a command runs the EKS AL2 bootstrap script.
func IsBootstrap(name string) bool { return path.Base(name) == "bootstrap.sh" }
