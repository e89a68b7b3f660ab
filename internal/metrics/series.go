package metrics

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"strings"
)

// family is a gauge family written in the text exposition format.
type family struct {
	name, help string
	labels     []string
	// sorted are the labels' indexes by name: series are written with
	// their labels sorted, as a registry writes them.
	sorted []int
}

func newFamily(name, help string, labels []string) family {
	sorted := make([]int, len(labels))
	for i := range sorted {
		sorted[i] = i
	}
	slices.SortFunc(sorted, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return family{name: name, help: help, labels: labels, sorted: sorted}
}

// textWriter writes gauge series in the text exposition format, a
// family's header before its first series. The first error is kept and
// ends the writing.
type textWriter struct {
	w       *bufio.Writer
	last    *family
	written int64
	err     error
	scratch []byte
}

// series writes one series of f; values are in the order of f's labels.
// The series of a family are written together.
func (t *textWriter) series(f *family, value float64, values ...string) {
	if t.err != nil {
		return
	}
	b := t.scratch[:0]
	if t.last != f {
		t.last = f
		b = append(b, "# HELP "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = appendEscaped(b, f.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.name...)
		b = append(b, " gauge\n"...)
	}
	b = append(b, f.name...)
	for n, i := range f.sorted {
		if n == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, f.labels[i]...)
		b = append(b, `="`...)
		b = appendEscaped(b, values[i], true)
		b = append(b, '"')
	}
	if len(f.labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, value)
	b = append(b, '\n')
	n, err := t.w.Write(b)
	t.written += int64(n)
	t.err, t.scratch = err, b
}

func (t *textWriter) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.w.Flush()
}

// appendEscaped escapes a label value (backslash, double quote, line feed)
// or a help text (backslash, line feed).
func appendEscaped(b []byte, s string, quoted bool) []byte {
	if !strings.ContainsAny(s, "\\\"\n") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quoted:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat writes a value as the exposition format spells it.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
