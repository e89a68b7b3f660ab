// Package manifest splits multi-document YAML the way people write it,
// keeping the line each document starts on, so that every command that
// reads manifests names the file and line of what it cannot read.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Document is one YAML document of a file.
type Document struct {
	// Line is the 1-based line of the document's first line in its file.
	Line int
	Body []byte
}

// Empty reports whether the document holds nothing but blank lines and
// comments.
func (d Document) Empty() bool {
	for _, l := range bytes.Split(d.Body, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// Split splits YAML (or JSON) at its "---" lines.
func Split(data []byte) []Document {
	var docs []Document
	start, line := 1, 1
	var cur bytes.Buffer
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if separator(l) {
			docs = append(docs, Document{Line: start, Body: bytes.Clone(cur.Bytes())})
			cur.Reset()
			start = line + 1
		} else {
			cur.Write(l)
		}
		line++
	}
	return append(docs, Document{Line: start, Body: cur.Bytes()})
}

// separator reports a "---" line, alone or followed by a comment.
func separator(line []byte) bool {
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, " \t\r\n"), []byte("---"))
	switch {
	case !ok:
		return false
	case len(rest) == 0:
		return true
	}
	return (rest[0] == ' ' || rest[0] == '\t') && bytes.TrimLeft(rest, " \t")[0] == '#'
}

var (
	yamlLine     = regexp.MustCompile(`yaml: line (\d+):`)
	unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)
)

// Error is what a document could not be read for, at the line that
// says it: File and Line name where (Line the field's own line when the
// error names a field the document has).
type Error struct {
	File string
	Line int
	Err  error
	msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.msg) }

func (e *Error) Unwrap() error { return e.Err }

// Message is the error without its file and line.
func (e *Error) Message() string { return e.msg }

// FieldError is an error about one field of a document, by its path
// (kind, spec.role): Errorf gives it that field's line.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// FieldPath is the field's path.
func (e *FieldError) FieldPath() string { return e.Path }

// Errorf is err in document d of file: "file:line: ...", the line of a
// YAML syntax error when err has one, of the field it names (an unknown
// field, a field the API server's validation refuses) when the document
// has it, else the document's first line.
func Errorf(file string, d Document, err error) error {
	line := d.Line
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		line += n - 1
		msg = yamlLine.ReplaceAllString(msg, "yaml:")
	} else if path := fieldOf(err); path != "" {
		if n, ok := FieldLine(d.Body, path); ok {
			line += n - 1
		}
	}
	return &Error{File: file, Line: line, Err: err, msg: msg}
}

// fieldOf is the path of the first field an error names: an unknown
// field's, or a validation error's.
func fieldOf(err error) string {
	var at interface{ FieldPath() string }
	if errors.As(err, &at) {
		return at.FieldPath()
	}
	if fields := UnknownFields(err); len(fields) > 0 {
		return fields[0]
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) {
				return fe.Field
			}
		}
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// UnknownFields are the paths of the unknown fields a strict decoding
// error names, in its order.
func UnknownFields(err error) []string {
	matches := unknownField.FindAllStringSubmatch(err.Error(), -1)
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, m[1])
	}
	return out
}

// FieldLine is the 1-based line, within a document, of the field a path
// names (spec.blockDeviceMappings[0].ebs.volumeSize, metadata.labels[team]),
// or of the deepest part of it the document has; false when the document
// has not even its first part.
func FieldLine(doc []byte, path string) (int, bool) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil || len(root.Content) == 0 {
		return 0, false
	}
	node, line := root.Content[0], 0
	for _, seg := range pathSegments(path) {
		next, at := child(node, seg)
		if next == nil {
			break
		}
		node, line = next, at
	}
	return line, line > 0
}

// pathSegments splits a field path at its dots and brackets.
func pathSegments(path string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				cur.WriteString(path[i+1:])
				i = len(path)
				continue
			}
			out = append(out, "["+path[i+1:i+end]+"]")
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// child is a mapping's value for a key (or "[key]"), or a sequence's
// item for "[i]", with the line that names it.
func child(n *yaml.Node, seg string) (*yaml.Node, int) {
	key := seg
	if strings.HasPrefix(seg, "[") {
		key = strings.Trim(seg, "[]")
		if i, err := strconv.Atoi(key); err == nil && n.Kind == yaml.SequenceNode {
			if i >= 0 && i < len(n.Content) {
				return n.Content[i], n.Content[i].Line
			}
			return nil, 0
		}
	}
	if n.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}
