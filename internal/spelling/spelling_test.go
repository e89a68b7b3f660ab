package spelling

import "testing"

func TestNearest(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"max-pod", "max-pods", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}, {"same", "same", 0}} {
		if d := Distance(c.a, c.b); d != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
	if w, d := Nearest("clustre-name", []string{"api-server", "cluster-name", "cluster-domain"}); w != "cluster-name" || d != 2 {
		t.Errorf("Nearest = %q %d", w, d)
	}
	if _, d := Nearest("x", nil); d != -1 {
		t.Errorf("Nearest of nothing = %d", d)
	}
}
