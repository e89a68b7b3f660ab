package runner

import (
	"testing"
	"time"
)

func TestParseSpotInterruptions(t *testing.T) {
	got, err := ParseSpotInterruptions("2/90s")
	if err != nil || got != (SpotInterruptions{Count: 2, Every: 90 * time.Second}) {
		t.Errorf("2/90s: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "2", "0/1m", "-1/1m", "1/0s", "x/1m", "1/m", "1.5/1m"} {
		if _, err := ParseSpotInterruptions(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
