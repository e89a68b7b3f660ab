package doctor

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's doctor section lists every finding code the binary can
// emit, and no other.
func TestREADMEListsEveryCode(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start := strings.Index(readme, "## `nodewright doctor`")
	if start < 0 {
		t.Fatal("the README has no doctor section")
	}
	section := readme[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	for _, code := range Codes {
		if !slices.Contains(listed, code) {
			t.Errorf("the README's doctor section does not list %s", code)
		}
	}
	for _, code := range listed {
		if !slices.Contains(Codes, code) {
			t.Errorf("the README lists %s, which doctor never emits", code)
		}
	}
}
