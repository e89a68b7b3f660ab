package manifest

import (
	"errors"
	"strings"
	"testing"
)

func TestSplitKeepsLines(t *testing.T) {
	docs := Split([]byte("a: 1\n--- # second\nb: 2\n---\n# only a comment\n---\nc: 3\n----\nd: 4\n"))
	var got []string
	for _, d := range docs {
		if !d.Empty() {
			got = append(got, strings.TrimSpace(string(d.Body))+"@"+string(rune('0'+d.Line)))
		}
	}
	// "----" is not a separator.
	want := []string{"a: 1@1", "b: 2@3", "c: 3\n----\nd: 4@7"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("documents %q, want %q", got, want)
	}
}

func TestErrorfNamesTheLine(t *testing.T) {
	err := Errorf("f.yaml", Document{Line: 6}, errors.New("error converting YAML to JSON: yaml: line 8: mapping values are not allowed"))
	if err.Error() != "f.yaml:13: error converting YAML to JSON: yaml: mapping values are not allowed" {
		t.Errorf("got %q", err)
	}
	err = Errorf("f.yaml", Document{Line: 6}, errors.New("unknown field"))
	if err.Error() != "f.yaml:6: unknown field" {
		t.Errorf("got %q", err)
	}
}
