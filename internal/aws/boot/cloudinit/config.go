package cloudinit

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// merge merges a cloud-config part into the configuration as cloud-init
// does by default: each top-level key of a later part replaces the
// earlier one's. A part that is not a YAML mapping is passed over; one
// that asks for other merge rules (merge_how, merge_type or a Merge-Type
// header) is named as not modelled.
func (p *Plan) merge(config map[string]any, l leaf) {
	doc, err := loadYAML(l.body)
	if err != nil || doc == nil {
		why := "it is not a YAML mapping"
		if err != nil {
			why = err.Error()
		}
		p.Notes = append(p.Notes, fmt.Sprintf("cloud-config %s is not read (%s): cloud-init passes over it", l.filename, why))
		return
	}
	if _, ok := doc["merge_how"]; ok || doc["merge_type"] != nil || l.header.get("Merge-Type") != "" || l.header.get("X-Merge-Type") != "" {
		p.Unmodelled = append(p.Unmodelled, fmt.Sprintf("cloud-config %s sets its own merge rules", l.filename))
	}
	for k, v := range doc {
		config[k] = v
	}
}

// configure is what cloud-init's write_files and runcmd modules make of
// the merged configuration: the files (write_files stops at an entry it
// cannot decode), and the script runcmd writes, given to script.
func (p *Plan) configure(config map[string]any, script func([]byte)) {
	if list, ok := config["write_files"].([]any); ok {
		for i, item := range list {
			f, ok := item.(map[string]any)
			if !ok || !truthy(f["path"]) {
				continue
			}
			file, err := writeFile(f)
			if err != nil {
				p.Notes = append(p.Notes, fmt.Sprintf("write_files[%d]: %v: cloud-init writes none of the entries from there on", i, err))
				break
			}
			p.Files = append(p.Files, file)
		}
	}
	if cmds, ok := config["runcmd"]; ok {
		body, err := shellify(cmds)
		if err != nil {
			p.Notes = append(p.Notes, "runcmd: "+err.Error()+": cloud-init writes no runcmd script")
			return
		}
		script(body)
	}
}

// writeFile is a write_files entry as cloud-init writes it.
func writeFile(f map[string]any) (File, error) {
	name, ok := f["path"].(string)
	if !ok {
		return File{}, fmt.Errorf("path %v is not a string", pyStr(f["path"]))
	}
	content := ""
	if c, ok := f["content"]; ok {
		s, isString := c.(string)
		if !isString {
			return File{}, fmt.Errorf("content %v is not a string", pyStr(c))
		}
		content = s
	}
	data := []byte(content)
	encoding := ""
	if e, ok := f["encoding"].(string); ok {
		encoding = strings.ToLower(strings.TrimSpace(e))
	}
	var err error
	switch encoding {
	case "gz", "gzip":
		data, err = gunzip(data)
	case "gz+base64", "gzip+base64", "gz+b64", "gzip+b64":
		if data, err = strictBase64(data); err == nil {
			data, err = gunzip(data)
		}
	case "b64", "base64":
		data, err = strictBase64(data)
	}
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	return File{Path: abspath(name), Content: data, Append: truthy(f["append"]) && pyBool(f["append"]), Defer: pyBool(f["defer"])}, nil
}

// abspath is a path made absolute from "/" and normalised, as Python's
// os.path.abspath does (two leading slashes kept).
func abspath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	clean := path.Clean(p)
	if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
		return "/" + clean
	}
	return clean
}

// shellify is the script cloud-init's runcmd module writes: a string item
// as it is, a list item's words each in single quotes.
func shellify(cmds any) ([]byte, error) {
	list, ok := cmds.([]any)
	if !ok {
		return nil, fmt.Errorf("runcmd is %s, not a list", pyType(cmds))
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, c := range list {
		switch v := c.(type) {
		case string:
			b.WriteString(v + "\n")
		case []any:
			words := make([]string, len(v))
			for i, w := range v {
				if _, nested := w.([]any); nested {
					return nil, errors.New("a word that is a list is not modelled")
				}
				if _, nested := w.(map[string]any); nested {
					return nil, errors.New("a word that is a mapping is not modelled")
				}
				words[i] = "'" + strings.ReplaceAll(pyStr(w), "'", `'\''`) + "'"
			}
			b.WriteString(strings.Join(words, " ") + "\n")
		case nil:
		default:
			return nil, fmt.Errorf("an item of runcmd is %s, not a string or a list", pyType(c))
		}
	}
	return []byte(b.String()), nil
}

// The YAML cloud-init reads (PyYAML's safe loader, YAML 1.1) is decoded
// into: map[string]any, []any, string, bool, nil, pyInt, pyFloat.
type (
	pyInt   string // a decimal integer's digits
	pyFloat float64
)

// loadYAML decodes a cloud-config document as cloud-init does; nil when
// it is not a mapping.
func loadYAML(body []byte) (map[string]any, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(body, &node); err != nil {
		return nil, err
	}
	if node.Kind != yaml.DocumentNode || len(node.Content) == 0 {
		return nil, nil
	}
	v, err := pyValue(node.Content[0], 0)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

func pyValue(n *yaml.Node, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested too deeply")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return pyValue(n.Alias, depth+1)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := pyValue(n.Content[i], depth+1)
			if err != nil {
				return nil, err
			}
			if n.Content[i].Value == "<<" && n.Content[i].Tag == "!!merge" {
				return nil, errors.New("a YAML merge key is not modelled")
			}
			v, err := pyValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[pyStr(k)] = v
		}
		return m, nil
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := pyValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.ScalarNode:
		return pyScalar(n)
	}
	return nil, fmt.Errorf("YAML node kind %d", n.Kind)
}

// pyScalar resolves a scalar as YAML 1.1 does: a plain scalar may be a
// boolean (yes/no/on/off too), null, an integer or a float; a quoted one
// is a string.
func pyScalar(n *yaml.Node) (any, error) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Value, nil
	}
	if n.Style&yaml.TaggedStyle != 0 {
		if n.Tag == "!!str" {
			return n.Value, nil
		}
		return nil, fmt.Errorf("YAML tag %s is not modelled", n.Tag)
	}
	s := n.Value
	switch s {
	case "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, nil
	case "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, nil
	case "", "~", "null", "Null", "NULL":
		return nil, nil
	}
	if i, ok := yaml11Int(s); ok {
		return i, nil
	}
	if f, ok := yaml11Float(s); ok {
		return f, nil
	}
	if looksLikeTimestamp(s) {
		return nil, fmt.Errorf("the timestamp %s is not modelled", s)
	}
	return s, nil
}

// yaml11Int reads YAML 1.1's integers: decimal, 0x, 0b and 0-prefixed
// octal, with underscores.
func yaml11Int(s string) (pyInt, bool) {
	t := strings.ReplaceAll(s, "_", "")
	sign := ""
	if t != "" && (t[0] == '-' || t[0] == '+') {
		if t[0] == '-' {
			sign = "-"
		}
		t = t[1:]
	}
	if t == "" || strings.HasPrefix(s, "_") || strings.ContainsRune(t, ':') {
		return "", false
	}
	base := 10
	switch {
	case strings.HasPrefix(t, "0x"):
		base, t = 16, t[2:]
	case strings.HasPrefix(t, "0b"):
		base, t = 2, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	v, err := strconv.ParseUint(t, base, 64)
	if err != nil || t == "" {
		return "", false
	}
	if v == 0 {
		sign = ""
	}
	return pyInt(sign + strconv.FormatUint(v, 10)), true
}

// yaml11Float reads YAML 1.1's floats: digits with a dot (an exponent
// needs its sign), .inf and .nan.
func yaml11Float(s string) (pyFloat, bool) {
	t := strings.ReplaceAll(s, "_", "")
	body := strings.TrimLeft(t, "+-")
	switch strings.ToLower(body) {
	case ".inf", ".nan":
		return 0, false // rendered differently; left a string, named below
	}
	mantissa, exp, hasExp := strings.Cut(body, "e")
	if !hasExp {
		mantissa, exp, hasExp = strings.Cut(body, "E")
	}
	if !strings.Contains(mantissa, ".") || mantissa == "." || mantissa[0] == '.' {
		return 0, false
	}
	if hasExp && (len(exp) < 2 || exp[0] != '+' && exp[0] != '-') {
		return 0, false
	}
	for _, r := range strings.Replace(mantissa, ".", "", 1) + strings.TrimLeft(exp, "+-") {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, false
	}
	return pyFloat(f), true
}

func looksLikeTimestamp(s string) bool {
	return len(s) >= 8 && s[4] == '-' && strings.Count(s[:min(len(s), 10)], "-") == 2 && s[0] >= '0' && s[0] <= '9'
}

// pyStr is Python's str() of a decoded value.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	case pyInt:
		return string(x)
	case pyFloat:
		return pyFloatRepr(float64(x))
	}
	return fmt.Sprint(v)
}

// pyFloatRepr is Python's repr of a float: the shortest digits that read
// back, with ".0" on integral values and an exponent from 1e16.
func pyFloatRepr(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if abs := max(f, -f); abs >= 1e16 || abs != 0 && abs < 1e-4 {
		s = strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = fmt.Sprintf("%02s", digits)
		}
		return mant + "e" + string(sign) + digits
	}
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func pyType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case pyInt:
		return "an integer"
	case pyFloat:
		return "a float"
	case bool:
		return "a boolean"
	case nil:
		return "empty"
	}
	return "a string"
}

// truthy is Python's truth of a decoded value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	case bool:
		return x
	case pyInt:
		return x != "0"
	case pyFloat:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// pyBool is cloud-init's reading of an option as a boolean: true, or a
// value whose text is true, 1, on or yes.
func pyBool(v any) bool {
	if !truthy(v) {
		return false
	}
	if b, ok := v.(bool); ok {
		return b
	}
	switch strings.ToLower(strings.TrimSpace(pyStr(v))) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

// isB64 reports a character of the base64 alphabet.
func isB64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}

// b64Chars is data's base64 characters (others dropped) up to the padding
// that completes a quantum, and whether padding ended it.
func b64Chars(data []byte) (chars []byte, padded bool) {
	for i, c := range data {
		if isB64(c) {
			chars = append(chars, c)
			continue
		}
		if c == '=' && len(chars)%4 >= 2 {
			pads := 0
			for _, d := range data[i:] {
				if d == '=' {
					pads++
				} else if isB64(d) {
					break
				}
			}
			if len(chars)%4+pads >= 4 {
				return chars, true
			}
		}
	}
	return chars, false
}

// strictBase64 decodes as Python's base64.b64decode does: characters
// outside the alphabet dropped, the last quantum complete or padded.
func strictBase64(data []byte) ([]byte, error) {
	chars, padded := b64Chars(data)
	if len(chars)%4 != 0 && !padded {
		return nil, errors.New("incorrect base64 padding")
	}
	return base64.RawStdEncoding.DecodeString(string(chars))
}

// lenientBase64 decodes a base64 MIME part as Python's email package
// does: missing padding added; a length no padding can complete leaves
// the part as it is.
func lenientBase64(data []byte) []byte {
	chars, _ := b64Chars(data)
	if len(chars)%4 == 1 {
		return data
	}
	out, err := base64.RawStdEncoding.DecodeString(string(chars))
	if err != nil {
		return data
	}
	return out
}
