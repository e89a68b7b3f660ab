// Package disruption runs nodewright's disruption end to end with `nodewright
// sim`'s runner: consolidation, drift, expiration, static NodePools,
// interruption and repair, and taking nodes over from another
// provisioner. It runs beside package e2e, each in its own process.
package disruption

import (
	"os"
	"testing"

	"github.com/nodewright/nodewright/test/e2e/harness"
)

func TestMain(m *testing.M) {
	harness.Quiet()
	os.Exit(m.Run())
}
