package static

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// The NodeClaims the controller created count in its next decisions while
// its cache does not show them (a cache behind a busy API server would
// otherwise have it create them again), until the cache shows them or
// for a minute at most.
func TestCreatedNodeClaimsCountUntilTheCacheShowsThem(t *testing.T) {
	c := &Controller{}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	claim := func(name string) *v1.NodeClaim { return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	names := func(claims []*v1.NodeClaim) map[string]bool {
		out := map[string]bool{}
		for _, nc := range claims {
			if out[nc.Name] {
				t.Errorf("NodeClaim %s counted twice", nc.Name)
			}
			out[nc.Name] = true
		}
		return out
	}
	c.remember(claim("a"), now)
	c.remember(claim("b"), now)
	got := names(c.withCreated([]*v1.NodeClaim{claim("old")}, now.Add(5*time.Second)))
	if len(got) != 3 || !got["a"] || !got["b"] {
		t.Errorf("a cache showing neither: counted %v, want old, a and b", got)
	}
	got = names(c.withCreated([]*v1.NodeClaim{claim("old"), claim("a")}, now.Add(10*time.Second)))
	if len(got) != 3 || !got["b"] {
		t.Errorf("a cache showing a: counted %v, want old, a and b", got)
	}
	got = names(c.withCreated([]*v1.NodeClaim{claim("old")}, now.Add(20*time.Second)))
	if len(got) != 2 || got["a"] {
		t.Errorf("a, once shown, is the cache's to count: counted %v, want old and b", got)
	}
	got = names(c.withCreated([]*v1.NodeClaim{claim("old")}, now.Add(createdTTL+time.Second)))
	if len(got) != 1 {
		t.Errorf("b, never shown for over %v: counted %v, want old only", createdTTL, got)
	}
}
