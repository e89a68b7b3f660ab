package al2

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/boot"
)

const call = "/etc/eks/bootstrap.sh shop-eu --kubelet-extra-args '--register-with-taints=karpenter.sh/unregistered:NoExecute'"

func mime(parts ...string) string {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"XX\"\n\n")
	for _, p := range parts {
		b.WriteString("--XX\n" + p + "\n")
	}
	b.WriteString("--XX--\n")
	return b.String()
}

// TestBootThroughCloudInit: what AL2 runs is what cloud-init runs.
func TestBootThroughCloudInit(t *testing.T) {
	cases := []struct {
		name, userData string
		want           boot.Verdict
		registered     bool
		why            string
	}{
		{"runcmd runs bootstrap.sh", "#cloud-config\nruncmd:\n  - " + call + "\n", boot.Joins, true, ""},
		{"runcmd list form", "#cloud-config\nruncmd:\n  - [/etc/eks/bootstrap.sh, shop-eu, --kubelet-extra-args, '--register-with-taints=karpenter.sh/unregistered:NoExecute']\n", boot.Joins, true, ""},
		{"a later cloud-config's runcmd replaces the first's", mime(
			"Content-Type: text/cloud-config\n\n#cloud-config\nruncmd:\n  - "+call,
			"Content-Type: text/cloud-config\n\n#cloud-config\nruncmd:\n  - echo hello"), boot.NeverJoins, false, "no script"},
		{"a script indented before its #! is never executed", "  #!/bin/bash\n" + call + "\n", boot.NeverJoins, false, "bootstrap.sh"},
		{"a MIME document without MIME-Version is not split", "Content-Type: multipart/mixed; boundary=\"XX\"\n\n--XX\nContent-Type: text/x-shellscript\n\n#!/bin/bash\n" + call + "\n--XX--\n", boot.NeverJoins, false, "no script"},
		{"write_files writes the script runcmd runs", "#cloud-config\nwrite_files:\n  - path: /opt/join.sh\n    encoding: b64\n    content: " + b64("#!/bin/bash\n"+call+"\n") + "\nruncmd:\n  - [bash, /opt/join.sh]\n", boot.Joins, true, ""},
		{"a gzip part", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"XX\"\n\n--XX\nContent-Type: application/gzip\nContent-Transfer-Encoding: base64\n\n" + gz("#!/bin/bash\n"+call+"\n") + "\n--XX--\n", boot.Joins, true, ""},
		{"an #include part is not modelled", mime("Content-Type: text/x-include-url\n\n#include\nhttps://example.com/boot.sh"), boot.NotModelled, false, "#include"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Boot([]byte(c.userData), Machine{MaxPods: 29})
			if o.Verdict != c.want || o.Registered() != c.registered {
				t.Fatalf("got %s (notes %q), want %s registered=%v", o.Summary(), o.Notes, c.want, c.registered)
			}
			if c.why != "" && !strings.Contains(o.Why+strings.Join(o.Notes, " "), c.why) {
				t.Errorf("the outcome does not say %q: %s %q", c.why, o.Why, o.Notes)
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func gz(s string) string {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
