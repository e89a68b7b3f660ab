package boottest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteGolden writes a real component's outcomes, by input key, one a
// line in key order (so a change to them reads as a diff of lines).
func WriteGolden[V any](path string, golden map[string]V) error {
	keys := make([]string, 0, len(golden))
	for k := range golden {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for i, k := range keys {
		v, err := json.Marshal(golden[k])
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%q: %s", k, v)
		if i < len(keys)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}
