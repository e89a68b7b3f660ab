//go:build tools

// Package reference pins the programs the side-by-side benchmark runs
// beside nodewright, built from their modules through the Go module proxy:
// the reference autoscaler's KWOK cloud provider and the KWOK controller.
// Their module needs Go 1.26.9 or newer (GOTOOLCHAIN=go1.27.3 fetches it).
package reference

import (
	_ "sigs.k8s.io/karpenter/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
