package state_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// selectorParts are pieces of device selectors as users write them: the
// fuzzer combines them with && and ||.
var selectorParts = []string{
	"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A10G'",
	"device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H')",
	"device.attributes['gpu.nvidia.com'].productName != 'Tesla T4'",
	"device.attributes['gpu.nvidia.com'].architecture == 'Ada Lovelace'",
	"device.attributes['gpu.nvidia.com'].architecture in ['Hopper', 'Blackwell']",
	"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('24Gi')) >= 0",
	"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) < 0",
	"device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))",
	"device.attributes['gpu.nvidia.com'].index < 2",
	"device.driver == 'gpu.nvidia.com'",
	"device.driver == 'neuron.aws.com'",
	"has(device.attributes['gpu.nvidia.com'].productName)",
	"device.attributes['neuron.aws.com'].instanceType.startsWith('inf2')",
}

// FuzzClaimSelectors checks the planner against the selectors evaluated
// device by device with the same CEL library: an instance type is
// admitted for a claim of n devices exactly when n of its devices match
// the class and the selector.
func FuzzClaimSelectors(f *testing.F) {
	for i := range selectorParts {
		f.Add(uint8(i), uint8(0), uint8(0), uint8(1))
		f.Add(uint8(i), uint8(i+3), uint8(1), uint8(2))
		f.Add(uint8(i), uint8(i+5), uint8(2), uint8(4))
	}
	classes := catalogClass(f)
	var types []*scheduling.InstanceType
	for _, it := range classes["default"].InstanceTypes {
		if len(it.Devices) > 0 {
			types = append(types, it)
		}
	}
	anyDevice := &resourcev1.DeviceClass{}
	anyDevice.Name = "any"
	cache := cel.NewCache(64, cel.Features{})
	f.Fuzz(func(t *testing.T, a, b, op, count uint8) {
		sel := selectorParts[int(a)%len(selectorParts)]
		switch op % 3 {
		case 1:
			sel = "(" + sel + ") && (" + selectorParts[int(b)%len(selectorParts)] + ")"
		case 2:
			sel = "(" + sel + ") || (" + selectorParts[int(b)%len(selectorParts)] + ")"
		}
		n := int64(count%8) + 1
		o := state.Objects{NodePools: []*v1.NodePool{nodePool("all", "default")}, DeviceClasses: []*resourcev1.DeviceClass{anyDevice},
			ResourceClaimTemplates: []*resourcev1.ResourceClaimTemplate{template("devices", request("r", "any", n, sel))},
			Pods:                   []*corev1.Pod{pod("p", claiming("devices"))}}
		in := state.Build(o, state.Options{Now: now, NodeClasses: classes}).Input(nil)
		demand := in.Devices[in.Pods[0]]
		var admitted []string
		if demand.Refused == "" {
			admitted = demand.Terms[0][0][scheduling.LabelInstanceType].Values()
		}
		var want []string
		matchedDriver := map[string]string{}
		for _, it := range types {
			// Devices attached on request (EFA) are the node's only when the
			// claim does not fit without them.
			for _, onRequest := range []bool{false, true} {
				driver, failed := fitsOn(cache, it, onRequest, sel, n)
				// A selector that fails on a device of the node (an attribute
				// it lacks) fails there, as in kube-scheduler: the type is
				// ruled out.
				if failed {
					if slices.Contains(admitted, it.Name) {
						t.Fatalf("selector %q: evaluation fails on %s (devices attached on request: %v), yet the claim was planned onto it", sel, it.Name, onRequest)
					}
					break
				}
				if driver != "" {
					want = append(want, it.Name)
					matchedDriver[it.Name] = driver
					break
				}
			}
		}
		if len(want) == 0 {
			if demand.Refused == "" {
				t.Fatalf("selector %q, %d devices: no type has them, yet planned onto %v", sel, n, admitted)
			}
			return
		}
		// The pod asks for what the cheapest type takes (n devices of its
		// driver): the types with n matching devices of that driver.
		want = ofCheapestDriver(want, types, matchedDriver)
		if !slices.Equal(admitted, want) {
			t.Fatalf("selector %q, %d devices: admitted %v, want %v (%s)", sel, n, admitted, want, fmt.Sprint(demand.Refused))
		}
	})
}

// fitsOn evaluates a selector on every device of a type (with or without
// those attached on request): the driver with n devices it matches, and
// whether it failed on any.
func fitsOn(cache *cel.Cache, it *scheduling.InstanceType, onRequest bool, sel string, n int64) (string, bool) {
	matching := map[string]int64{}
	for _, set := range it.Devices {
		if set.OnRequest && !onRequest {
			continue
		}
		for _, dev := range set.Devices {
			ok, _, err := cache.GetOrCompile(sel).DeviceMatches(context.Background(), cel.Device{Driver: set.Driver, Attributes: dev.Attributes, Capacity: dev.Capacity})
			if err != nil {
				return "", true
			}
			if ok {
				matching[set.Driver]++
			}
		}
	}
	for _, set := range it.Devices {
		if matching[set.Driver] >= n {
			return set.Driver, false
		}
	}
	return "", false
}

// ofCheapestDriver keeps the types whose matching devices are of the
// driver of the cheapest of them, sorted.
func ofCheapestDriver(names []string, types []*scheduling.InstanceType, driverOf map[string]string) []string {
	byName := map[string]*scheduling.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	price := func(name string) float64 {
		o, _ := byName[name].CheapestOffering(scheduling.Requirements{})
		return o.Price
	}
	cheapest := slices.MinFunc(names, func(a, b string) int { return cmp.Compare(price(a), price(b)) })
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return driverOf[n] != driverOf[cheapest] })
	slices.Sort(out)
	return out
}
