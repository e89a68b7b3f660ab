package scheduling

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// deviceResourcePrefix names the scheduler's count of a DRA driver's
// devices on a node, among the resources it accounts for.
const deviceResourcePrefix = "devices/"

// extraDriverSlot names the device resources of drivers the catalog does
// not know, bound to a driver when it is first counted.
const extraDriverSlot = "extra-"

// extraDrivers are the drivers bound to the extra slots, in slot order.
var extraDrivers struct {
	sync.RWMutex
	names []string
}

// deviceIndex is the index of the resource counting the driver's devices:
// a driver the catalog knows, or one bound to an extra slot; -1 otherwise.
func deviceIndex(driver string) int {
	if i := resourceIndex(corev1.ResourceName(deviceResourcePrefix + driver)); i >= 0 && !strings.HasPrefix(driver, extraDriverSlot) {
		return i
	}
	extraDrivers.RLock()
	defer extraDrivers.RUnlock()
	if i := slices.Index(extraDrivers.names, driver); i >= 0 {
		return firstExtraSlot() + i
	}
	return -1
}

func firstExtraSlot() int { return resourceIndex(deviceResourcePrefix + extraDriverSlot + "1") }

// BindDriver makes the scheduler count the devices of a driver the
// catalog does not know (one a NodeOverlay declares), in a free extra
// slot; false when every slot is taken. Slots are never freed: a process
// counts the first MaxExtraDrivers drivers bound.
func BindDriver(driver string) bool {
	if deviceIndex(driver) >= 0 {
		return true
	}
	extraDrivers.Lock()
	defer extraDrivers.Unlock()
	if slices.Contains(extraDrivers.names, driver) {
		return true
	}
	if len(extraDrivers.names) >= MaxExtraDrivers {
		return false
	}
	extraDrivers.names = append(extraDrivers.names, driver)
	return true
}

// ExtraDrivers are the drivers the catalog does not know whose devices
// the scheduler counts, in the order they were bound.
func ExtraDrivers() []string {
	extraDrivers.RLock()
	defer extraDrivers.RUnlock()
	return slices.Clone(extraDrivers.names)
}

// driverAt is the driver whose devices resource i counts; "" for none.
func driverAt(i int) string {
	name, ok := strings.CutPrefix(string(resourceNames[i]), deviceResourcePrefix)
	if !ok || !strings.HasPrefix(name, extraDriverSlot) {
		return name
	}
	first := firstExtraSlot()
	extraDrivers.RLock()
	defer extraDrivers.RUnlock()
	if i-first < len(extraDrivers.names) {
		return extraDrivers.names[i-first]
	}
	return ""
}

// resourceNameAt names resource i for messages: a driver's devices by
// the driver.
func resourceNameAt(i int) corev1.ResourceName {
	if isDeviceIndex(i) {
		return corev1.ResourceName(deviceResourcePrefix + driverAt(i))
	}
	return resourceNames[i]
}

// CountsDevicesOf reports whether the scheduler counts the driver's
// devices: every driver the catalog knows, and those bound (BindDriver).
func CountsDevicesOf(driver string) bool { return deviceIndex(driver) >= 0 }

// MaxExtraDrivers is how many DRA drivers the catalog does not know the
// scheduler counts the devices of.
const MaxExtraDrivers = 4

// AddDevices returns r with n more devices of the driver; r unchanged for
// a driver the scheduler does not count (see CountsDevicesOf).
func (r Resources) AddDevices(driver string, n int64) Resources {
	if i := deviceIndex(driver); i >= 0 {
		r[i] += n
	}
	return r
}

// withoutDevices returns r with no device counts: what kube-scheduler's
// resource filter compares.
func (r Resources) withoutDevices() Resources {
	for i := range r {
		if isDeviceIndex(i) {
			r[i] = 0
		}
	}
	return r
}

func isDeviceIndex(i int) bool {
	return strings.HasPrefix(string(resourceNames[i]), deviceResourcePrefix)
}

// Devices returns the device counts of r by driver, omitting zeros.
func (r Resources) Devices() map[string]int64 {
	var out map[string]int64
	for i := range resourceNames {
		if isDeviceIndex(i) && r[i] != 0 {
			driver := driverAt(i)
			if out == nil {
				out = map[string]int64{}
			}
			out[driver] = r[i]
		}
	}
	return out
}

// DeviceSet is what one DRA driver publishes on a node of an instance
// type: the devices of one pool, as its ResourceSlice lists them.
type DeviceSet struct {
	Driver  string
	Devices []resourcev1.Device
	// OnRequest marks devices a node has only when its launch asks for
	// them (EFA interfaces): a node launched for other pods lacks them.
	OnRequest bool
}

// DeviceDemand is what a pod's resource claims require of its node.
type DeviceDemand struct {
	// Requests are the devices the claims take, by driver (the device
	// resources): the most any admitted instance type allocates.
	Requests Resources
	// Terms has one list of alternatives per constraint: the instance
	// types whose devices satisfy the claims, the node a claim is
	// allocated on. The node must meet one alternative of each.
	Terms [][]Requirements
	// Refused says why no node can satisfy the claims; empty otherwise.
	Refused string
	// FailsOn are the existing nodes whose devices make the claims'
	// selectors fail, with the error: kube-scheduler stops scheduling the
	// pod at such a node once its other filters pass it.
	FailsOn map[string]string
}
