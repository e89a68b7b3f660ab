// Package manifest splits multi-document YAML the way people write it,
// keeping the line each document starts on, so that every command that
// reads manifests names the file and line of what it cannot read.
package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
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

var yamlLine = regexp.MustCompile(`yaml: line (\d+):`)

// Errorf is err in document d of file: "file:line: ...", the line of a
// YAML syntax error when err has one, else the document's first line.
func Errorf(file string, d Document, err error) error {
	line := d.Line
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		line += n - 1
	}
	return fmt.Errorf("%s:%d: %s", file, line, yamlLine.ReplaceAllString(err.Error(), "yaml:"))
}
