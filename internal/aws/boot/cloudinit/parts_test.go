package cloudinit

import (
	"bytes"
	"testing"
)

func TestSplit(t *testing.T) {
	mime := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho one\n--//\nContent-Type: application/node.eks.aws\nContent-Transfer-Encoding: base64\n\nYXBpVmVyc2lvbjogbm9kZS5la3MuYXdzL3YxYWxwaGExCmtpbmQ6IE5vZGVDb25maWcK\n--//--\n"
	parts, err := Split([]byte(mime))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].ContentType != ContentTypeShell || parts[1].ContentType != ContentTypeNodeadm {
		t.Fatalf("parts %+v", parts)
	}
	if string(parts[1].Body) != "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n" {
		t.Errorf("base64 part decoded to %q", parts[1].Body)
	}
	for data, want := range map[string]string{
		"#!/bin/bash\necho hi\n":                                ContentTypeShell,
		"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n": ContentTypeNodeadm,
		"[settings.kubernetes]\nmax-pods = 10\n":                ContentTypeTOML,
	} {
		parts, err := Split([]byte(data))
		if err != nil || len(parts) != 1 || parts[0].ContentType != want || string(parts[0].Body) != data {
			t.Errorf("%q: %+v %v, want one %s part", data, parts, err, want)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nx\n--b--\n"))
	f.Add([]byte("#!/bin/sh\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts, err := Split(data)
		if err != nil {
			return
		}
		if !LooksLikeMIME(data) && (len(parts) != 1 || !bytes.Equal(parts[0].Body, data)) {
			t.Fatalf("plain user data must come back whole: %+v", parts)
		}
	})
}

// FuzzRead: any user data is read without failing, and the scripts it
// runs come in cloud-init's order (by directory, each by name).
func FuzzRead(f *testing.F) {
	f.Add([]byte("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/cloud-config\n\n#cloud-config\nruncmd: [[a, 1.5e+3]]\nwrite_files: [{path: x, encoding: gz+b64, content: '='}]\n--b\nContent-Transfer-Encoding: quoted-printable\n\n#!/bin/sh=\n=3D\n--b--\n"))
	f.Add([]byte("#cloud-boothook\n#!/bin/sh\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := Read(data)
		for _, s := range p.Scripts {
			if s.Name == "" {
				t.Fatalf("a script without a name: %+v", p.Scripts)
			}
		}
		_, _, _ = p.Run(map[string][]byte{}, func(_ Script, files map[string][]byte) (map[string][]byte, error) { return files, nil })
	})
}
