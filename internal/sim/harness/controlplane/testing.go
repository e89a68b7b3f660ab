package controlplane

import (
	"context"
	"testing"
)

// StartForTest starts a control plane for a test and stops it when the test
// ends. Missing binaries fail the test with the command that builds them.
func StartForTest(tb testing.TB, opts Options) *ControlPlane {
	tb.Helper()
	cp, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("starting the control plane: %v", err)
	}
	tb.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			tb.Errorf("stopping the control plane: %v", err)
		}
	})
	return cp
}
