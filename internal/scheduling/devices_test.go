package scheduling

import (
	"fmt"
	"strings"
	"testing"
)

// Drivers the catalog does not know are counted, each apart, in as many
// slots as there are; one more is not counted, and messages name the
// drivers, never the slots.
func TestExtraDriversCounted(t *testing.T) {
	var r Resources
	taken := len(extraDrivers.names)
	for i := range MaxExtraDrivers - taken {
		driver := fmt.Sprintf("d%d.counted.example.com", i)
		if !CountsDevicesOf(driver) {
			t.Fatalf("%s not counted with %d of %d extra drivers counted", driver, taken+i, MaxExtraDrivers)
		}
		r = r.AddDevices(driver, int64(i+1))
	}
	if CountsDevicesOf("one-too-many.example.com") {
		t.Errorf("a driver beyond the %d extra slots is counted", MaxExtraDrivers)
	}
	if before := r; r.AddDevices("one-too-many.example.com", 5) != before {
		t.Errorf("devices of a driver not counted changed the resources")
	}
	for i := range MaxExtraDrivers - taken {
		driver := fmt.Sprintf("d%d.counted.example.com", i)
		if got := r.Devices()[driver]; got != int64(i+1) {
			t.Errorf("%s: %d devices, want %d", driver, got, i+1)
		}
	}
	if s := r.String(); strings.Contains(s, extraDriverSlot) || !strings.Contains(s, "devices/d0.counted.example.com=1") {
		t.Errorf("String() = %q, want the drivers named", s)
	}
	if first := resourceIndex(deviceResourcePrefix + extraDriverSlot + "1"); numResources-first != MaxExtraDrivers {
		t.Errorf("%d extra slots, MaxExtraDrivers says %d", numResources-first, MaxExtraDrivers)
	}
	if !CountsDevicesOf("gpu.nvidia.com") || r.AddDevices("gpu.nvidia.com", 2).Devices()["gpu.nvidia.com"] != 2 {
		t.Errorf("the catalog's drivers are counted in their own slots")
	}
}
