package userdata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
)

// Nodeadm is what nodeadm (AL2023's bootstrap) reads of user data, by its
// own rules: the NodeConfigs of the top-level MIME parts whose type is
// application/node.eks.aws (or the whole user data, when it is not
// multipart), the first YAML document of each, merged in order —
// spec.kubelet.config deep-merged (maps merged; lists and scalars
// replaced), spec.kubelet.flags appended. The kubelet then gets the flags
// after its configuration, split as systemd splits an environment
// variable (quotes removed), and a flag beats the configuration.
type Nodeadm struct {
	// Config is the merged spec.kubelet.config.
	Config map[string]any
	// Flags are the kubelet's words from spec.kubelet.flags, in order,
	// as systemd splits them.
	Flags []string
	// Found: at least one NodeConfig is read. Without one `nodeadm init`
	// fails and the node never joins.
	Found bool
	// Dropped says what holds a NodeConfig nodeadm never reads: a later
	// YAML document of a part, a part of a nested multipart.
	Dropped []string
}

// ReadNodeadm reads user data as nodeadm does. An error is what makes
// nodeadm fail (a NodeConfig part that cannot be decoded).
func ReadNodeadm(data []byte) (*Nodeadm, error) {
	n := &Nodeadm{Config: map[string]any{}}
	data, err := unwrapNodeadm(data)
	if err != nil {
		return n, err
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	var mediaType string
	var params map[string]string
	if err == nil {
		mediaType, params, err = mime.ParseMediaType(msg.Header.Get("Content-Type"))
	}
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") {
		// Not multipart: the whole user data is one NodeConfig, or none.
		if looksLikeNodeConfig(data) {
			return n, n.add("the user data", data)
		}
		return n, nil
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	for i := 1; ; i++ {
		part, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading MIME part %d: %w", i, err)
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return n, fmt.Errorf("reading MIME part %d: %w", i, err)
		}
		ct := part.Header.Get("Content-Type")
		if ct == "" {
			continue // nodeadm skips a part without a type
		}
		partType, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return n, fmt.Errorf("MIME part %d: Content-Type %q: %w", i, ct, err)
		}
		switch {
		case partType == ContentTypeNodeadm:
			if err := n.add(fmt.Sprintf("MIME part %d", i), body); err != nil {
				return n, err
			}
		case strings.HasPrefix(partType, "multipart/") && bytes.Contains(body, []byte("node.eks.aws/")):
			n.Dropped = append(n.Dropped, fmt.Sprintf("MIME part %d is a nested %s holding a NodeConfig: nodeadm reads only the top-level parts", i, partType))
		}
	}
}

// add merges the first YAML document of a NodeConfig part; later
// documents are dropped, as nodeadm drops them.
func (n *Nodeadm) add(where string, body []byte) error {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(body)))
	first := true
	for i := 1; ; i++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if first {
				return fmt.Errorf("%s: nodeadm cannot decode the NodeConfig: %w", where, err)
			}
			return nil // nodeadm never reads past the first document
		}
		if !first {
			if bytes.Contains(doc, []byte("NodeConfig")) {
				n.Dropped = append(n.Dropped, fmt.Sprintf("%s, YAML document %d: nodeadm reads only a part's first document", where, i))
			}
			continue
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			return fmt.Errorf("%s: the first YAML document is empty, and nodeadm decodes only the first", where)
		}
		first = false
		var nc nodeConfig
		if err := yaml.Unmarshal(doc, &nc); err != nil {
			return fmt.Errorf("%s: nodeadm cannot decode the NodeConfig: %w", where, err)
		}
		if nc.Kind != "NodeConfig" {
			return fmt.Errorf("%s: the first document is a %q, not a NodeConfig, and nodeadm fails on it", where, nc.Kind)
		}
		n.Found = true
		mergeConfig(n.Config, nc.Spec.Kubelet.Config)
		for _, f := range nc.Spec.Kubelet.Flags {
			n.Flags = append(n.Flags, SystemdWords(f)...)
		}
	}
}

// mergeConfig deep-merges src into dst as nodeadm merges kubelet
// configurations: maps merge, anything else (lists included) is replaced.
func mergeConfig(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeConfig(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// looksLikeNodeConfig reports data that is a NodeConfig document.
func looksLikeNodeConfig(data []byte) bool {
	return bytes.Contains(data, []byte("node.eks.aws/")) && bytes.Contains(data, []byte("NodeConfig"))
}

// SystemdWords splits text as systemd splits an environment variable it
// expands unquoted.
func SystemdWords(s string) []string { return systemd.Words(s) }

// RegistrationTaints are the taints the kubelet registers with: those of
// the last --register-with-taints flag, which replaces every earlier one
// and the configuration's registerWithTaints; else the configuration's.
// From is "flag" or "config" ("" when none is set).
func (n *Nodeadm) RegistrationTaints() (taints []string, from string) {
	if v := FlagValues(n.Flags, "--register-with-taints"); len(v) > 0 {
		return splitTaints(v[len(v)-1]), "flag"
	}
	raw, ok := n.Config["registerWithTaints"].([]any)
	if !ok {
		return nil, ""
	}
	for _, item := range raw {
		m, _ := item.(map[string]any)
		t := fmt.Sprint(m["key"])
		if v, _ := m["value"].(string); v != "" {
			t += "=" + v
		}
		taints = append(taints, t+":"+fmt.Sprint(m["effect"]))
	}
	return taints, "config"
}

// unwrapNodeadm undoes what nodeadm undoes before it reads user data
// (the AL2023 model's rules): base64 as a whole, then gzip.
func unwrapNodeadm(data []byte) ([]byte, error) { return al2023.Unwrap(data) }
