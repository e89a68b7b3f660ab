package al2023

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"
)

// cloudConfig is what a #cloud-config document makes cloud-init do that
// the boot reads: the files write_files writes (before the scripts run)
// and runcmd, as the script cloud-init makes of it (run after the part
// scripts).
type cloudConfig struct {
	files  map[string][]byte
	runcmd []byte
}

func readCloudConfig(body []byte) (*cloudConfig, error) {
	var doc struct {
		WriteFiles []struct {
			Path     string `json:"path"`
			Content  string `json:"content"`
			Encoding string `json:"encoding"`
			Append   bool   `json:"append"`
		} `json:"write_files"`
		Runcmd []any `json:"runcmd"`
	}
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	cc := &cloudConfig{files: map[string][]byte{}}
	for i, f := range doc.WriteFiles {
		data, err := decodeContent(f.Content, f.Encoding)
		if err != nil {
			return nil, fmt.Errorf("write_files[%d] (%s): %w", i, f.Path, err)
		}
		if f.Append {
			data = append(cc.files[f.Path], data...)
		}
		cc.files[f.Path] = data
	}
	if len(doc.Runcmd) > 0 {
		var b strings.Builder
		b.WriteString("#!/bin/sh\n")
		for _, c := range doc.Runcmd {
			switch v := c.(type) {
			case string:
				b.WriteString(v + "\n")
			case []any:
				words := make([]string, 0, len(v))
				for _, w := range v {
					q, err := syntax.Quote(fmt.Sprint(w), syntax.LangBash)
					if err != nil {
						return nil, fmt.Errorf("runcmd: %w", err)
					}
					words = append(words, q)
				}
				b.WriteString(strings.Join(words, " ") + "\n")
			}
		}
		cc.runcmd = []byte(b.String())
	}
	return cc, nil
}

// decodeContent undoes a write_files encoding.
func decodeContent(content, encoding string) ([]byte, error) {
	data := []byte(content)
	e := strings.ToLower(encoding)
	if strings.Contains(e, "b64") || strings.Contains(e, "base64") {
		out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(content), ""))
		if err != nil {
			return nil, err
		}
		data = out
	}
	if strings.HasPrefix(e, "gz") {
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(r, 16<<20))
	}
	return data, nil
}
