package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"slices"
	"testing"
)

// nodeadm (its releases since 2025) decodes user data that is base64 as a
// whole and decompresses gzip before it reads it: so does the reader.
func TestNodeadmReadsGzipAndBase64(t *testing.T) {
	plain := []byte("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--register-with-taints=dedicated=ci:NoSchedule\"]\n")
	var zipped bytes.Buffer
	w := gzip.NewWriter(&zipped)
	_, _ = w.Write(plain)
	_ = w.Close()
	for name, data := range map[string][]byte{
		"plain": plain, "gzip": zipped.Bytes(), "base64": []byte(base64.StdEncoding.EncodeToString(plain)),
		"base64 of gzip": []byte(base64.StdEncoding.EncodeToString(zipped.Bytes())),
	} {
		n, err := ReadNodeadm(data)
		if err != nil || !n.Found {
			t.Fatalf("%s: %v, found %v", name, err, n.Found)
		}
		if taints, from := n.RegistrationTaints(); from != "flag" || !slices.Equal(taints, []string{"dedicated=ci:NoSchedule"}) {
			t.Errorf("%s: taints %v from %q", name, taints, from)
		}
	}
	if _, err := ReadNodeadm([]byte{0x1f, 0x8b, 'x'}); err == nil {
		t.Error("a broken gzip stream must be an error: nodeadm fails on it")
	}
}
