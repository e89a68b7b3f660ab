package kubelet

import (
	"fmt"
	"testing"
	"time"
)

// Instances launched one after another (ids a character apart) boot over
// the whole jitter, not within a few seconds of each other.
func TestBootJitterSpreadsInstances(t *testing.T) {
	s := &Simulator{BootDelay: time.Second, BootJitter: 40 * time.Second}
	lo, hi := time.Hour, time.Duration(0)
	for i := 1; i <= 10; i++ {
		d := s.bootDelay(fmt.Sprintf("i-%017x", i))
		if d != s.bootDelay(fmt.Sprintf("i-%017x", i)) {
			t.Fatalf("instance %d boots after %v, then after another delay", i, d)
		}
		if d < s.BootDelay || d >= s.BootDelay+s.BootJitter {
			t.Errorf("instance %d boots after %v, outside [%v, %v)", i, d, s.BootDelay, s.BootDelay+s.BootJitter)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < 20*time.Second {
		t.Errorf("ten instances boot between %v and %v: not apart", lo, hi)
	}
}
