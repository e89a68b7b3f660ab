package runner_test

import (
	"testing"

	"github.com/nodewright/nodewright/internal/fake/runner"
)

// A process's CPU time is its user and system ticks, counted after its
// command name however many spaces and parentheses that holds.
func TestCPUSecondsFromStat(t *testing.T) {
	stat := "4903 (nodewright (ctl) x) S 1 4903 4903 0 -1 4194560 51000 0 0 0 2350 415 0 0 20 0 14 0 4829472 3133440 344"
	if got := runner.CPUSecondsFromStat(stat); got != 27.65 {
		t.Errorf("CPU seconds = %v, want 27.65 (2350 user + 415 system ticks)", got)
	}
	if got := runner.CPUSecondsFromStat("4903 (truncated"); got != 0 {
		t.Errorf("CPU seconds of an unreadable stat = %v, want 0", got)
	}
}
