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
	extraDrivers.Lock()
	saved := extraDrivers.names
	extraDrivers.names = nil
	extraDrivers.Unlock()
	t.Cleanup(func() {
		extraDrivers.Lock()
		extraDrivers.names = saved
		extraDrivers.Unlock()
	})
	var r Resources
	if r.AddDevices("unbound.example.com", 3) != r || CountsDevicesOf("unbound.example.com") {
		t.Fatal("a driver nothing bound is counted")
	}
	taken := 0
	for i := range MaxExtraDrivers - taken {
		driver := fmt.Sprintf("d%d.counted.example.com", i)
		if !BindDriver(driver) || !CountsDevicesOf(driver) {
			t.Fatalf("%s not counted with %d of %d extra drivers counted", driver, taken+i, MaxExtraDrivers)
		}
		r = r.AddDevices(driver, int64(i+1))
	}
	if BindDriver("one-too-many.example.com") || CountsDevicesOf("one-too-many.example.com") {
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
