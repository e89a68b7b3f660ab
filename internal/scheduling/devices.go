package scheduling

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// deviceResourcePrefix names the scheduler's count of a DRA driver's
// devices on a node, among the resources it accounts for.
const deviceResourcePrefix = "devices/"

// DeviceResource is the resource that counts the devices of a DRA driver
// on a node; false for a driver the scheduler does not count.
func DeviceResource(driver string) (corev1.ResourceName, bool) {
	name := corev1.ResourceName(deviceResourcePrefix + driver)
	return name, resourceIndex(name) >= 0
}

// CountedDrivers are the DRA drivers whose devices the scheduler counts.
func CountedDrivers() []string {
	var out []string
	for _, name := range resourceNames {
		if driver, ok := strings.CutPrefix(string(name), deviceResourcePrefix); ok {
			out = append(out, driver)
		}
	}
	return out
}

// AddDevices returns r with n more devices of the driver; r unchanged for
// a driver the scheduler does not count.
func (r Resources) AddDevices(driver string, n int64) Resources {
	if name, ok := DeviceResource(driver); ok {
		r[resourceIndex(name)] += n
	}
	return r
}

func isDeviceIndex(i int) bool {
	return strings.HasPrefix(string(resourceNames[i]), deviceResourcePrefix)
}

// Devices returns the device counts of r by driver, omitting zeros.
func (r Resources) Devices() map[string]int64 {
	var out map[string]int64
	for i, name := range resourceNames {
		if driver, ok := strings.CutPrefix(string(name), deviceResourcePrefix); ok && r[i] != 0 {
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
}
