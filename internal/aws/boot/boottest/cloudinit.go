package boottest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
)

// ciPart is one generated document of user data.
type ciPart struct {
	body        string
	contentType string // "" for none
}

// cloudInit is the state of one generated cloud-init user data.
type cloudInit struct {
	r          *rand.Rand
	constructs []string
}

func (g *cloudInit) pick(list []string) string { return list[g.r.IntN(len(list))] }
func (g *cloudInit) note(s string)             { g.constructs = append(g.constructs, s) }
func (g *cloudInit) chance(n int) bool         { return g.r.IntN(n) == 0 }

// CloudInitData is generated user data of the shapes cloud-init reads:
// MIME documents with and without MIME-Version, every part type nodewright
// meets (scripts, cloud-config, NodeConfig, Bottlerocket settings,
// boothooks, plain text, scripts by frequency), content types given,
// missing, contradicting the content or in capitals, file names (repeated,
// with slashes and spaces), base64 and quoted-printable transfer
// encodings (wrapped, unpadded), gzip parts and whole data gzip, CRLF line
// ends, missing closing boundaries, preambles; cloud-config with
// write_files in every encoding and runcmd in string and list forms with
// YAML 1.1 scalars.
func CloudInitData(seed uint64) Input {
	g := &cloudInit{r: rand.New(rand.NewPCG(seed, 0xc10d))} //nolint:gosec // reproducible inputs
	n := 1 + g.r.IntN(4)
	parts := make([]ciPart, n)
	for i := range parts {
		parts[i] = g.part()
	}
	var data []byte
	if n == 1 && g.chance(3) {
		g.note("one document, not MIME")
		data = []byte(parts[0].body)
	} else {
		data = g.mime(parts)
	}
	if g.chance(12) {
		g.note("whole data gzip")
		data = gzipped(data)
	}
	return Input{Seed: seed, UserData: string(data), Template: string(data), Constructs: g.constructs}
}

func (g *cloudInit) part() ciPart {
	switch g.r.IntN(10) {
	case 0, 1, 2:
		return ciPart{body: g.script(), contentType: g.typeFor("text/x-shellscript")}
	case 3, 4, 5:
		return ciPart{body: g.cloudConfig(), contentType: g.typeFor("text/cloud-config")}
	case 6:
		g.note("NodeConfig")
		return ciPart{body: "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [--node-labels=a=b]\n", contentType: g.typeFor("application/node.eks.aws")}
	case 7:
		g.note("Bottlerocket settings")
		return ciPart{body: "[settings.kubernetes]\nmax-pods = 58\n", contentType: g.typeFor("application/toml")}
	case 8:
		g.note("boothook")
		return ciPart{body: g.pick([]string{"#cloud-boothook\n#!/bin/sh\necho boot > /tmp/b\n", "#Cloud-Boothook\n  #!/bin/bash\ntrue\n", "#cloud-boothook\necho no shebang\n"}), contentType: g.typeFor("text/cloud-boothook")}
	default:
		kind := g.pick([]string{"text", "per-boot", "empty", "include-like"})
		g.note("part " + kind)
		switch kind {
		case "per-boot":
			return ciPart{body: "#!/bin/sh\necho per boot\n", contentType: g.pick([]string{"text/x-shellscript-per-boot", "text/x-shellscript-per-instance", "text/x-shellscript-per-once"})}
		case "empty":
			return ciPart{body: "", contentType: g.pick([]string{"text/x-shellscript", "text/plain", ""})}
		case "include-like":
			return ciPart{body: "# include this\n#include-nothing\n", contentType: "text/plain"}
		}
		return ciPart{body: "just some notes\nfor whoever reads this\n", contentType: g.typeFor("text/plain")}
	}
}

// typeFor is the Content-Type a part of the type gets: as it is, missing,
// text/plain, in capitals, with a charset, or another type's.
func (g *cloudInit) typeFor(ct string) string {
	switch g.r.IntN(9) {
	case 0:
		g.note("no Content-Type")
		return ""
	case 1:
		g.note("text/plain part")
		return "text/plain"
	case 2:
		g.note("Content-Type in capitals")
		return strings.ToUpper(ct[:1]) + ct[1:5] + strings.ToUpper(ct[5:6]) + ct[6:]
	case 3:
		g.note("Content-Type with charset")
		return ct + `; charset="us-ascii"`
	case 4:
		g.note("Content-Type of another part type")
		return g.pick([]string{"text/x-shellscript", "text/cloud-config", "application/octet-stream"})
	}
	return ct
}

func (g *cloudInit) script() string {
	shebang := g.pick([]string{"#!/bin/bash", "#!/bin/sh", "  #!/bin/bash", "\n#!/usr/bin/env bash", "#! /bin/bash -xe", "echo no shebang"})
	if !strings.HasPrefix(shebang, "#!") {
		g.note("script without shebang: " + strings.TrimSpace(shebang))
	}
	body := shebang + "\nset -e\necho \"hello $(hostname)\" >> /var/log/user.log\n"
	if g.chance(4) {
		g.note("CRLF script")
		body = strings.ReplaceAll(body, "\n", "\r\n")
	}
	return body
}

func (g *cloudInit) cloudConfig() string {
	var b strings.Builder
	b.WriteString(g.pick([]string{"#cloud-config\n", "#cloud-config\n", "#Cloud-Config\n", "  #cloud-config\n", "#cloud-config\n---\n"}))
	if g.chance(10) {
		g.note("cloud-config not a mapping")
		b.WriteString("- just\n- a list\n")
		return b.String()
	}
	if g.chance(2) {
		g.note("write_files")
		b.WriteString("write_files:\n")
		for range 1 + g.r.IntN(3) {
			b.WriteString(g.writeFile())
		}
	}
	if g.chance(2) {
		g.note("runcmd")
		b.WriteString("runcmd:\n")
		for range 1 + g.r.IntN(3) {
			b.WriteString(g.runcmd())
		}
	}
	if g.chance(6) {
		b.WriteString("packages: [jq]\n")
	}
	return b.String()
}

var writePaths = []string{
	"/etc/eks/nodeadm.d/10-user.yaml", "/etc/eks/nodeadm.d/../nodeadm.d/20.yaml", "etc/relative.conf",
	"/etc/systemd/system/kubelet.service.d/90-user.conf", "//etc/two-slashes", "/tmp/x y",
}

func (g *cloudInit) writeFile() string {
	content := g.pick([]string{"hello\n", "line one\nline two\n", "", "key: 'quoted'\n"})
	var b strings.Builder
	fmt.Fprintf(&b, "  - path: %s\n", g.pick(writePaths))
	encoding := g.pick([]string{"", "b64", "base64", "gz+b64", "gzip+base64", "gzip", "text/plain", "B64 ", "b64-typo", "base64 with bad padding"})
	switch encoding {
	case "":
		fmt.Fprintf(&b, "    content: %q\n", content)
	case "b64", "base64", "B64 ":
		fmt.Fprintf(&b, "    encoding: %q\n    content: %s\n", encoding, base64.StdEncoding.EncodeToString([]byte(content)))
	case "base64 with bad padding":
		fmt.Fprintf(&b, "    encoding: b64\n    content: %s\n", strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(content+"x")), "="))
	case "gz+b64", "gzip+base64":
		fmt.Fprintf(&b, "    encoding: %s\n    content: %s\n", encoding, base64.StdEncoding.EncodeToString(gzipped([]byte(content))))
	case "gzip":
		fmt.Fprintf(&b, "    encoding: gzip\n    content: %q\n", content)
	default:
		fmt.Fprintf(&b, "    encoding: %s\n    content: %q\n", encoding, content)
	}
	g.note("write_files encoding " + encoding)
	if g.chance(3) {
		fmt.Fprintf(&b, "    append: %s\n", g.pick([]string{"true", "yes", "'true'", "1", "false", "on", "\"no\""}))
	}
	if g.chance(6) {
		fmt.Fprintf(&b, "    defer: %s\n", g.pick([]string{"true", "false"}))
	}
	if g.chance(8) {
		b.WriteString("    permissions: '0644'\n")
	}
	return b.String()
}

func (g *cloudInit) runcmd() string {
	switch g.r.IntN(5) {
	case 0:
		return "  - echo string form > /tmp/r\n"
	case 1:
		return "  - [sh, -c, \"echo 'list form'\"]\n"
	case 2:
		g.note("runcmd YAML 1.1 scalars")
		return "  - [echo, " + g.pick([]string{"yes", "on", "1.5", "017", "0x1f", "1_000", "~", "true", "1.0e+3", "12", "-0", "NO"}) + ", " + g.pick([]string{"'quoted yes'", "off", "3.25", "x"}) + "]\n"
	case 3:
		return "  - /etc/eks/bootstrap.sh my-cluster --kubelet-extra-args '--node-labels=a=b'\n"
	}
	return "  -\n"
}

// mime is a MIME multipart document of the parts.
func (g *cloudInit) mime(parts []ciPart) []byte {
	boundary := g.pick([]string{"==BOUNDARY==", "MIMEBOUNDARY", "//", "b1_" + fmt.Sprint(g.r.IntN(1000))})
	var b strings.Builder
	headers := []string{fmt.Sprintf("Content-Type: multipart/mixed; boundary=%q", boundary)}
	if g.chance(2) {
		headers[0] = "Content-Type: multipart/mixed; boundary=" + boundary
		if strings.Contains(boundary, "/") || strings.Contains(boundary, "=") {
			headers[0] = fmt.Sprintf("Content-Type: multipart/mixed;\n boundary=%q", boundary)
			g.note("folded Content-Type")
		}
	}
	if !g.chance(8) {
		headers = append(headers, g.pick([]string{"MIME-Version: 1.0", "mime-version: 1.0"}))
	} else {
		g.note("no MIME-Version")
	}
	if g.chance(2) {
		headers[0], headers[len(headers)-1] = headers[len(headers)-1], headers[0]
	}
	b.WriteString(strings.Join(headers, "\n") + "\n\n")
	if g.chance(5) {
		g.note("preamble")
		b.WriteString("This is a multi-part message in MIME format.\n")
	}
	for _, p := range parts {
		b.WriteString("--" + boundary + "\n")
		body := p.body
		gz := g.chance(6)
		if p.contentType != "" && !gz {
			b.WriteString("Content-Type: " + p.contentType + "\n")
		}
		if g.chance(4) {
			name := g.pick([]string{"setup.sh", "a.sh", "zz-last.sh", "dir/name.sh", "my script.sh", "part-001", "runcmd", "userdata.txt", "   ", " a b.sh ", "..", "%%%", "/"})
			g.note("file name " + name)
			fmt.Fprintf(&b, "Content-Disposition: attachment; filename=%q\n", name)
		}
		switch {
		case gz:
			g.note("gzip part")
			b.WriteString("Content-Type: application/gzip\nContent-Transfer-Encoding: base64\n")
			body = base64.StdEncoding.EncodeToString(gzipped([]byte(body))) + "\n"
		case g.chance(5):
			g.note("base64 part")
			b.WriteString(g.pick([]string{"Content-Transfer-Encoding: base64\n", "Content-Transfer-Encoding: BASE64\n"}))
			enc := base64.StdEncoding.EncodeToString([]byte(body))
			if g.chance(2) {
				g.note("base64 unpadded")
				enc = strings.TrimRight(enc, "=")
			}
			body = wrap(enc, 76) + "\n"
		case g.chance(12):
			g.note("quoted-printable part")
			b.WriteString("Content-Transfer-Encoding: quoted-printable\n")
			body = strings.ReplaceAll(body, "=", "=3D")
		}
		b.WriteString("\n" + body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
	}
	if !g.chance(8) {
		b.WriteString("--" + boundary + "--\n")
	} else {
		g.note("no closing boundary")
	}
	out := b.String()
	if g.chance(6) {
		g.note("CRLF document")
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return []byte(out)
}

func wrap(s string, n int) string {
	var lines []string
	for len(s) > n {
		lines = append(lines, s[:n])
		s = s[n:]
	}
	return strings.Join(append(lines, s), "\n")
}

func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(data)
	_ = w.Close()
	return buf.Bytes()
}
