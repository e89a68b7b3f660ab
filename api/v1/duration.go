package v1

import (
	"fmt"
	"time"
)

// NillableDuration is a duration written as Go formats it ("30s", "720h",
// "1h30m") or the word "Never". It is kept as written so that manifests
// round-trip unchanged; Parse interprets it.
//
// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
type NillableDuration string

// Never disables whatever the duration schedules.
const Never NillableDuration = "Never"

// Parse returns the duration, or never=true for "Never". The empty value is
// an error: the API server always defaults these fields.
func (d NillableDuration) Parse() (duration time.Duration, never bool, err error) {
	switch d {
	case Never:
		return 0, true, nil
	case "":
		return 0, false, fmt.Errorf("duration is empty")
	}
	duration, err = time.ParseDuration(string(d))
	if err != nil {
		return 0, false, fmt.Errorf("duration %q is neither a duration such as 30s or 720h nor Never: %w", string(d), err)
	}
	return duration, false, nil
}
