package cloudinit

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"
	"unicode/utf8"
)

// Plan is what cloud-init does with user data, as its own user-data
// processing and part handlers do it: the parts it makes of the data, the
// boothooks it runs first, the files write_files writes, and the scripts
// its final stage runs, in order (the part scripts and the one runcmd
// makes, by file name).
type Plan struct {
	// Parts are the documents as cloud-init types them, in order, with
	// the file names it gives them.
	Parts []Part
	// Boothooks run first (cloud-init's init stage), in order.
	Boothooks []Script
	// Files are the write_files entries of the merged cloud-config, in
	// order; Deferred ones are written in the final stage.
	Files []File
	// Scripts run in cloud-init's final stage, in order: once, per boot,
	// per instance, then the user's (part scripts and runcmd), each set by
	// file name.
	Scripts []Script
	// Unmodelled names what cloud-init would do that the plan does not
	// follow (an #include's download, a Jinja template, a part handler, a
	// cloud-config merged by its own rules).
	Unmodelled []string
	// Notes name what cloud-init passes over: a part no handler takes, a
	// cloud-config it cannot read, a write_files entry it stops at.
	Notes []string
}

// Script is a script cloud-init writes and runs.
type Script struct {
	Name string
	Body []byte
}

// File is a write_files entry.
type File struct {
	Path    string
	Content []byte
	Append  bool
	Defer   bool
}

// Types cloud-init gives parts besides the ones nodewright reads.
const (
	typeNotMultipart = "text/x-not-multipart"
	typeBoothook     = "text/cloud-boothook"
	typePerBoot      = "text/x-shellscript-per-boot"
	typePerInstance  = "text/x-shellscript-per-instance"
	typePerOnce      = "text/x-shellscript-per-once"
)

// startsWith are the first words cloud-init types a document by, longest
// first, and the types they give.
var startsWith = []struct{ prefix, ctype string }{
	{"text/x-shellscript-per-instance", typePerInstance},
	{"text/x-shellscript-per-boot", typePerBoot},
	{"text/x-shellscript-per-once", typePerOnce},
	{"#cloud-config-archive", "text/cloud-config-archive"},
	{"#cloud-config-jsonp", "text/cloud-config-jsonp"},
	{"## template: jinja", "text/jinja2"},
	{"#cloud-boothook", typeBoothook},
	{"#include-once", "text/x-include-once-url"},
	{"#part-handler", "text/part-handler"},
	{"#cloud-config", ContentTypeCloudCfg},
	{"#include", "text/x-include-url"},
	{"#!", ContentTypeShell},
}

// gzipTypes are the content types whose parts cloud-init decompresses.
var gzipTypes = []string{
	"application/gzip", "application/gzip-compressed", "application/gzipped", "application/x-compress",
	"application/x-compressed", "application/x-gunzip", "application/x-gzip", "application/x-gzip-compressed",
}

// unmodelledTypes are the parts whose effect the plan names but does not
// follow.
var unmodelledTypes = map[string]string{
	"text/x-include-url":        "an #include part (cloud-init downloads and reads what it names)",
	"text/x-include-once-url":   "an #include-once part (cloud-init downloads and reads what it names)",
	"text/cloud-config-archive": "a #cloud-config-archive part",
	"text/cloud-config-jsonp":   "a #cloud-config-jsonp part (a JSON patch of the configuration)",
	"text/jinja2":               "a Jinja template part (cloud-init renders it from the instance's data)",
	"text/part-handler":         "a #part-handler part (Python code cloud-init loads to handle other parts)",
}

// Read is what cloud-init does with user data.
func Read(data []byte) Plan {
	data = gunzipped(data)
	var leaves []leaf
	head := data[:min(len(data), 4096)]
	if bytes.Contains(bytes.ToLower(head), []byte("mime-version:")) {
		leaves = walkMessage(data, 0)
	} else {
		leaves = []leaf{{ctype: typeNotMultipart, body: data}}
	}
	var p Plan
	var attached []leaf
	for _, l := range leaves {
		l, ok := p.typed(l)
		if !ok {
			continue
		}
		if strings.HasPrefix(l.ctype, "text/x-include") || l.ctype == "text/cloud-config-archive" {
			p.Unmodelled = append(p.Unmodelled, unmodelledTypes[l.ctype])
			continue
		}
		if l.filename == "" {
			l.filename = fmt.Sprintf("part-%03d", len(attached)+1)
		}
		attached = append(attached, l)
		p.Parts = append(p.Parts, Part{ContentType: l.ctype, Body: l.body, Filename: l.filename})
	}
	p.handle(attached)
	return p
}

// typed is a leaf as cloud-init types it: a gzip part decompressed, a
// text/plain, non-multipart or shell script part typed by its first
// words; ok is false for a part cloud-init drops.
func (p *Plan) typed(l leaf) (leaf, bool) {
	orig := l.ctype
	if slices.Contains(gzipTypes, orig) {
		out, err := gunzip(l.body)
		if err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("a %s part does not decompress (%v): cloud-init drops it", orig, err))
			return l, false
		}
		l.body, orig = out, ContentTypeText
	}
	l.ctype = orig
	if orig == ContentTypeText || orig == typeNotMultipart || orig == ContentTypeShell {
		if t := typeFromStart(l.body); t != "" {
			l.ctype = t
		}
	}
	return l, true
}

// typeFromStart is the type cloud-init gives a document from its first
// words, "" when none.
func typeFromStart(body []byte) string {
	text := strings.ToLower(strings.TrimLeft(string(body), " \t\r\n\v\f"))
	for _, s := range startsWith {
		if strings.HasPrefix(text, s.prefix) {
			return s.ctype
		}
	}
	return ""
}

// handle runs cloud-init's part handlers over the parts: boothooks,
// scripts by frequency, cloud-config merged; then what the write_files and
// runcmd modules make of the configuration.
func (p *Plan) handle(parts []leaf) {
	dirs := map[string]map[string][]byte{}
	put := func(dir, name string, body []byte) {
		if dirs[dir] == nil {
			dirs[dir] = map[string][]byte{}
		}
		dirs[dir][name] = body
	}
	config := map[string]any{}
	for _, l := range parts {
		if name := scriptName(l); name == "" || name == "." || name == ".." {
			p.Notes = append(p.Notes, fmt.Sprintf("the part named %q has no characters cloud-init keeps in a file name: it cannot write the script, and it never runs", l.filename))
			continue
		}
		switch l.ctype {
		case typeBoothook:
			body := bytes.TrimPrefix(dos2unix(l.body), []byte("#cloud-boothook"))
			p.Boothooks = append(p.Boothooks, Script{Name: scriptName(l), Body: bytes.TrimLeft(body, " \t\r\n\v\f")})
		case ContentTypeShell:
			if !utf8.Valid(l.body) {
				p.Notes = append(p.Notes, fmt.Sprintf("script %s is not UTF-8 text: cloud-init cannot write it, and it never runs", l.filename))
				continue
			}
			put("user", scriptName(l), dos2unix(l.body))
		case typePerBoot, typePerInstance, typePerOnce:
			put(strings.TrimPrefix(l.ctype, "text/x-shellscript-"), scriptName(l), dos2unix(l.body))
		case ContentTypeCloudCfg:
			p.merge(config, l)
		default:
			if why, ok := unmodelledTypes[l.ctype]; ok {
				p.Unmodelled = append(p.Unmodelled, why)
				continue
			}
			if len(l.body) > 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("%s (%s) is not a script or cloud-config: cloud-init does not run it", l.filename, l.ctype))
			}
		}
	}
	p.configure(config, func(runcmd []byte) { put("user", "runcmd", runcmd) })
	for _, dir := range []string{"per-once", "per-boot", "per-instance", "user"} {
		names := make([]string, 0, len(dirs[dir]))
		for name := range dirs[dir] {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			p.Scripts = append(p.Scripts, Script{Name: name, Body: dirs[dir][name]})
		}
	}
}

// scriptName is the file name cloud-init writes a script part under
// (scripts by frequency by their base name); "x" for parts that are not
// scripts.
func scriptName(l leaf) string {
	switch {
	case l.ctype == typeBoothook || l.ctype == ContentTypeShell:
		return cleanFilename(l.filename)
	case strings.HasPrefix(l.ctype, "text/x-shellscript-"):
		return cleanFilename(basename(l.filename))
	}
	return "x"
}

// basename is what follows a path's last "/" (Python's
// os.path.basename: "" for "dir/").
func basename(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// dos2unix turns CRLF line ends into LF, as cloud-init does to scripts
// whose first line ends in CRLF.
func dos2unix(body []byte) []byte {
	i := bytes.IndexByte(body, '\n')
	if i <= 0 || body[i-1] != '\r' {
		return body
	}
	return bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
}

// cleanFilename is a part's file name as cloud-init writes it: "/" made
// "_", characters outside [A-Za-z0-9_.()-] dropped.
func cleanFilename(name string) string {
	var b strings.Builder
	for _, r := range strings.ReplaceAll(name, "/", "_") {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.()", r)) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// leaf is a non-multipart entity of a MIME message.
type leaf struct {
	ctype, filename string
	header          header
	body            []byte
}

// walkMessage is the leaf entities of a MIME message, depth first, as
// Python's email package (which cloud-init uses) parses it: lenient
// headers, parts split on boundary lines, a missing closing boundary
// allowed, transfer encodings undone.
func walkMessage(data []byte, depth int) []leaf {
	h, body := readHeader(data)
	mediaType, params := h.contentType()
	if strings.HasPrefix(mediaType, "multipart/") {
		if depth >= maxDepth {
			return nil
		}
		var out []leaf
		for _, part := range splitBoundary(body, params["boundary"]) {
			out = append(out, walkMessage(part, depth+1)...)
		}
		return out
	}
	return []leaf{{ctype: mediaType, filename: h.filename(), header: h, body: decodePayload(h.get("Content-Transfer-Encoding"), body)}}
}

// header is a MIME entity's header fields, in order.
type header [][2]string

func (h header) get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f[0], name) {
			return f[1]
		}
	}
	return ""
}

// contentType is the entity's media type (lowercased; text/plain when
// missing or not type/subtype) and parameters.
func (h header) contentType() (string, map[string]string) {
	value := h.get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(value)
	if err != nil {
		before, _, _ := strings.Cut(value, ";")
		mediaType, params = strings.ToLower(strings.TrimSpace(before)), lenientParams(value)
	}
	if strings.Count(mediaType, "/") != 1 {
		return ContentTypeText, params
	}
	return mediaType, params
}

// lenientParams reads name=value parameters the strict parser refused.
func lenientParams(value string) map[string]string {
	out := map[string]string{}
	fields := strings.Split(value, ";")
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if ok {
			out[strings.ToLower(strings.TrimSpace(k))] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return out
}

// filename is the entity's file name: Content-Disposition's filename, or
// Content-Type's name.
func (h header) filename() string {
	for _, field := range []struct{ name, param string }{{"Content-Disposition", "filename"}, {"Content-Type", "name"}} {
		value := h.get(field.name)
		if value == "" {
			continue
		}
		if _, params, err := mime.ParseMediaType(value); err == nil && strings.TrimSpace(params[field.param]) != "" {
			return strings.TrimSpace(params[field.param])
		}
		if v := strings.TrimSpace(lenientParams(value)[field.param]); v != "" {
			return v
		}
	}
	return ""
}

// readHeader splits an entity into its header fields and body: fields up
// to the first empty line (a line that is not a field ends them, and
// starts the body), continuation lines joined.
func readHeader(data []byte) (header, []byte) {
	var h header
	rest := data
	for len(rest) > 0 {
		line, next := cutLine(rest)
		text := strings.TrimRight(string(line), "\r\n")
		if text == "" {
			return h, next
		}
		if (text[0] == ' ' || text[0] == '\t') && len(h) > 0 {
			h[len(h)-1][1] += " " + strings.TrimSpace(text)
			rest = next
			continue
		}
		name, value, ok := strings.Cut(text, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return h, rest
		}
		h = append(h, [2]string{name, strings.TrimSpace(value)})
		rest = next
	}
	return h, nil
}

// cutLine is the first line of data (with its line end) and the rest.
func cutLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i+1], data[i+1:]
	}
	return data, nil
}

// splitBoundary is the parts of a multipart body: the text between lines
// that are the boundary ("--" boundary, then "--" on the closing one,
// trailing blanks allowed); the line end before a boundary line belongs to
// it. What precedes the first boundary and follows the closing one is not
// a part; without a closing boundary the last part runs to the end.
func splitBoundary(body []byte, boundary string) [][]byte {
	if boundary == "" {
		return nil
	}
	delim := "--" + boundary
	var parts [][]byte
	var current []byte
	in := false
	rest := body
	for len(rest) > 0 {
		line, next := cutLine(rest)
		rest = next
		text := strings.TrimRight(strings.TrimRight(string(line), "\r\n"), " \t")
		if text == delim || text == delim+"--" {
			if in {
				parts = append(parts, trimLineEnd(current))
			}
			current, in = nil, text == delim
			if !in {
				return parts
			}
			continue
		}
		if in {
			current = append(current, line...)
		}
	}
	if in {
		parts = append(parts, trimLineEnd(current))
	}
	return parts
}

func trimLineEnd(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// decodePayload undoes a transfer encoding as Python's email package
// does: base64 leniently (characters outside the alphabet dropped, missing
// padding added), quoted-printable; others as they are.
func decodePayload(encoding string, body []byte) []byte {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "base64":
		return lenientBase64(body)
	case "quoted-printable":
		return qpDecode(body)
	}
	return body
}

// qpDecode undoes quoted-printable as Python's binascii does: "=XX" a
// byte, "=" before a line end a soft break (through the end of the line),
// "==" one "=", every other byte (trailing blanks and CR included) kept.
func qpDecode(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '=' {
			out = append(out, c)
			continue
		}
		i++
		switch {
		case i >= len(body):
		case body[i] == '\n' || body[i] == '\r':
			for i < len(body) && body[i] != '\n' {
				i++
			}
		case body[i] == '=':
			out = append(out, '=')
		case i+1 < len(body) && isHex(body[i]) && isHex(body[i+1]):
			out = append(out, unhex(body[i])<<4|unhex(body[i+1]))
			i++
		default:
			out = append(out, '=')
			i--
		}
	}
	return out
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// gunzipped is data decompressed when it is gzip, as it is otherwise.
func gunzipped(data []byte) []byte {
	out, err := gunzip(data)
	if err != nil {
		return data
	}
	return out
}

// gunzip decompresses gzip data (none is empty, as Python's gzip reads it).
func gunzip(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return data, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(r, 16<<20))
}

// Runner runs one script on the machine whose files it is given and
// returns the files it leaves; an error stops the boot's reading (what
// the script does is not modelled).
type Runner func(s Script, files map[string][]byte) (map[string][]byte, error)

// Run runs what cloud-init runs, in its order, on one machine: the
// boothooks, then — once write_files has written its files — the final
// stage's scripts. cloud-init executes each script file, so a script that
// does not start with "#!" fails to run and is passed over (notes say
// so). It returns the files left, and the error of the script that
// stopped it.
func (p Plan) Run(files map[string][]byte, run Runner) (map[string][]byte, []string, error) {
	var notes []string
	step := func(kind string, scripts []Script) error {
		for _, s := range scripts {
			if !bytes.HasPrefix(s.Body, []byte("#!")) {
				notes = append(notes, fmt.Sprintf("%s %s does not start with #!: cloud-init cannot execute it, and it never runs", kind, s.Name))
				continue
			}
			out, err := run(s, files)
			if err != nil {
				return fmt.Errorf("%s %s: %w", kind, s.Name, err)
			}
			files = out
		}
		return nil
	}
	if err := step("boothook", p.Boothooks); err != nil {
		return files, notes, err
	}
	for _, f := range p.Files {
		if f.Append {
			files[f.Path] = append(slices.Clone(files[f.Path]), f.Content...)
			continue
		}
		files[f.Path] = f.Content
	}
	err := step("script", p.Scripts)
	return files, notes, err
}
