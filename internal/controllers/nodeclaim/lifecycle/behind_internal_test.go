package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// A NodeClaim read from a cache that does not show this process's last
// write of it yet is behind until the cache shows that write or a later
// one; a NodeClaim never written, or with a resourceVersion that is not
// a number, never is.
func TestANodeClaimOlderThanTheLastWriteIsBehind(t *testing.T) {
	c := &Controller{}
	at := func(rv string) *v1.NodeClaim {
		return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: rv}}
	}
	if c.behind(at("5")) {
		t.Error("a NodeClaim this process never wrote is behind")
	}
	c.written(at("10"))
	for _, step := range []struct {
		rv     string
		behind bool
	}{{"9", true}, {"7", true}, {"10", false}, {"9", false}} {
		if got := c.behind(at(step.rv)); got != step.behind {
			t.Errorf("cached at %s after a write at 10 (and the reads before): behind %v, want %v", step.rv, got, step.behind)
		}
	}
	c.written(at("20"))
	if c.behind(at("x")) || c.behind(at("21")) {
		t.Error("a resourceVersion that is not a number, or a later one, is behind")
	}
}
