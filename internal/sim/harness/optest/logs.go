package optest

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Logs collects the operator's structured log lines (pass Logger as
// Options.Log), safe for concurrent use.
type Logs struct {
	mu    sync.Mutex
	lines []map[string]any
}

// Logger is a logger whose lines Logs keeps; a line that is not JSON
// fails the test.
func (l *Logs) Logger(t *testing.T) logr.Logger {
	return funcr.NewJSON(func(obj string) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(obj), &entry); err != nil {
			t.Errorf("log line is not JSON: %s", obj)
			return
		}
		l.mu.Lock()
		l.lines = append(l.lines, entry)
		l.mu.Unlock()
	}, funcr.Options{})
}

// With returns the lines with the message, in order.
func (l *Logs) With(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, e := range l.lines {
		if e["msg"] == msg {
			out = append(out, e)
		}
	}
	return out
}

// Find returns the first line with the message whose NodeClaim is name.
func (l *Logs) Find(msg, nodeClaim string) map[string]any {
	for _, e := range l.With(msg) {
		if ref, ok := e["NodeClaim"].(map[string]any); ok && ref["name"] == nodeClaim {
			return e
		}
		if e["NodeClaim"] == nodeClaim {
			return e
		}
	}
	return nil
}
