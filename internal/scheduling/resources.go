package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceNames are the resources the scheduler accounts for, in the order
// of a Resources vector. CPU is in millicores, the rest in their base unit.
var resourceNames = [...]corev1.ResourceName{
	corev1.ResourceCPU,
	corev1.ResourceMemory,
	corev1.ResourcePods,
	corev1.ResourceEphemeralStorage,
	"nvidia.com/gpu",
	"amd.com/gpu",
	"aws.amazon.com/neuron",
	"aws.amazon.com/neuroncore",
	"vpc.amazonaws.com/efa",
	"habana.ai/gaudi",
	"vpc.amazonaws.com/pod-eni",
	// The IPv4 addresses of Windows nodes' pods.
	"vpc.amazonaws.com/PrivateIPv4Address",
	// Huge pages exist on a node only as configured (NodeOverlay capacity
	// says so to the scheduler).
	"hugepages-2Mi",
	"hugepages-1Gi",
	// The devices of the DRA drivers the scheduler counts (see
	// DeviceResource): never a pod's request, what its resource claims
	// take.
	deviceResourcePrefix + "gpu.nvidia.com",
	deviceResourcePrefix + "neuron.aws.com",
	deviceResourcePrefix + "gpu.amd.com",
	deviceResourcePrefix + "dra.net",
	// Drivers the catalog does not know (a NodeOverlay declares their
	// devices) take these in the order they are first counted.
	deviceResourcePrefix + extraDriverSlot + "1",
	deviceResourcePrefix + extraDriverSlot + "2",
	deviceResourcePrefix + extraDriverSlot + "3",
	deviceResourcePrefix + extraDriverSlot + "4",
}

const numResources = len(resourceNames)

// Indexes of the resources the scheduler uses by name.
const (
	cpuIndex       = 0
	memoryIndex    = 1
	podsIndex      = 2
	ephemeralIndex = 3
)

// Resources is a vector of resource quantities: requests, capacity or
// allocatable. A fixed array keeps fit checks free of maps.
type Resources [numResources]int64

// ParseResources converts a resource list. Resources the scheduler does not
// know are returned by name, sorted; nothing can provide them.
func ParseResources(list corev1.ResourceList) (r Resources, unknown []string) {
	for name, q := range list {
		i := resourceIndex(name)
		if i < 0 {
			if !q.IsZero() {
				unknown = append(unknown, string(name))
			}
			continue
		}
		r[i] = quantityValue(i, q)
	}
	sort.Strings(unknown)
	return r, unknown
}

// MustParseResources parses "cpu=2,memory=4Gi"-style text; for tests and
// fixed tables.
func MustParseResources(s string) Resources {
	list := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		if kv == "" {
			continue
		}
		name, value, _ := strings.Cut(kv, "=")
		list[corev1.ResourceName(name)] = resource.MustParse(value)
	}
	r, unknown := ParseResources(list)
	if len(unknown) > 0 {
		panic(fmt.Sprintf("unknown resources %v", unknown))
	}
	return r
}

func resourceIndex(name corev1.ResourceName) int {
	for i, n := range resourceNames {
		if n == name {
			return i
		}
	}
	return -1
}

func quantityValue(i int, q resource.Quantity) int64 {
	if i == cpuIndex {
		return Counted(q, resource.Milli)
	}
	return Counted(q, 0)
}

// MaxCounted is the largest quantity counted: a larger one (the API
// accepts a pod asking 1e22 CPUs, a NodePool limit of 1e16) counts as
// this — more than any node has, so it never fits, yet a thousand of
// them sum without overflowing. Read as it is, such a quantity wraps
// around int64 (a pod planned onto the smallest type, a limit below
// zero).
const MaxCounted int64 = 1 << 53

// Counted is a quantity in units of scale (resource.Milli for
// millicores), held within ±MaxCounted.
func Counted(q resource.Quantity, scale resource.Scale) int64 {
	bound := float64(MaxCounted)
	for range int(-scale) {
		bound /= 10
	}
	switch f := q.AsApproximateFloat64(); {
	case f >= bound:
		return MaxCounted
	case f <= -bound:
		return -MaxCounted
	}
	return q.ScaledValue(scale)
}

// CPU returns millicores.
func (r Resources) CPU() int64 { return r[cpuIndex] }

// Memory returns bytes.
func (r Resources) Memory() int64 { return r[memoryIndex] }

// Pods returns the pod count.
func (r Resources) Pods() int64 { return r[podsIndex] }

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	for i := range r {
		r[i] += o[i]
	}
	return r
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	for i := range r {
		r[i] -= o[i]
	}
	return r
}

// Max returns the element-wise maximum.
func (r Resources) Max(o Resources) Resources {
	for i := range r {
		r[i] = max(r[i], o[i])
	}
	return r
}

// Fits reports whether r fits within capacity in every resource.
func (r Resources) Fits(capacity Resources) bool {
	for i := range r {
		if r[i] > capacity[i] {
			return false
		}
	}
	return true
}

// IsZero reports whether every quantity is zero.
func (r Resources) IsZero() bool { return r == Resources{} }

// List converts back to a resource list, omitting zeros and the device
// counts (which are no resources of the API: see DeviceResource).
func (r Resources) List() corev1.ResourceList {
	list := corev1.ResourceList{}
	for i, v := range r {
		if v != 0 && !isDeviceIndex(i) {
			list[resourceNames[i]] = r.quantity(i)
		}
	}
	return list
}

func (r Resources) quantity(i int) resource.Quantity {
	switch i {
	case cpuIndex:
		return *resource.NewMilliQuantity(r[i], resource.DecimalSI)
	case memoryIndex, ephemeralIndex:
		return *resource.NewQuantity(r[i], resource.BinarySI)
	}
	return *resource.NewQuantity(r[i], resource.DecimalSI)
}

// String prints the non-zero quantities, such as "cpu=1500m memory=3Gi pods=2".
func (r Resources) String() string {
	var parts []string
	for i := range resourceNames {
		if r[i] != 0 {
			q := r.quantity(i)
			parts = append(parts, string(resourceNameAt(i))+"="+q.String())
		}
	}
	return strings.Join(parts, " ")
}

// Exceeding names the resources in which r exceeds capacity, with both
// quantities, for messages.
func (r Resources) Exceeding(capacity Resources) []string {
	var out []string
	for i := range resourceNames {
		if r[i] > capacity[i] {
			want, have := r.quantity(i), capacity.quantity(i)
			out = append(out, fmt.Sprintf("%s %s > %s", resourceNameAt(i), want.String(), have.String()))
		}
	}
	return out
}

// MustResources formats a resource list as Resources.String does.
func MustResources(list corev1.ResourceList) string {
	r, _ := ParseResources(list)
	return r.String()
}

// WithPods returns r with the pod count set to n.
func (r Resources) WithPods(n int64) Resources {
	r[podsIndex] = n
	return r
}

// Missing names the resources r asks for that capacity has none of.
func (r Resources) Missing(capacity Resources) []corev1.ResourceName {
	var out []corev1.ResourceName
	for i := range resourceNames {
		if r[i] > 0 && capacity[i] == 0 {
			out = append(out, resourceNameAt(i))
		}
	}
	return out
}
