// Package instancetypes turns the EC2 instance type catalog (embedded, with
// us-east-1 on-demand prices) into the scheduler's instance types: labels,
// capacity, allocatable as the kubelet computes it, and offerings per zone
// and capacity type.
package instancetypes

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/scheduling"
)

//go:embed ec2-instance-types.json
var catalogJSON []byte

// Spec is one instance type as the catalog records it.
type Spec struct {
	Name       string  `json:"name"`
	VCPU       int64   `json:"vcpu"`
	MemoryMiB  int64   `json:"memoryMiB"`
	GPU        int64   `json:"gpu"`
	Arch       string  `json:"arch"`
	OnDemand   float64 `json:"onDemandUSDPerHour"`
	MaxENIs    int64   `json:"maxENIs"`
	IPv4PerENI int64   `json:"ipv4PerENI"`
	Hypervisor string  `json:"hypervisor"`
	BareMetal  bool    `json:"bareMetal"`
	// Network cards, the EFA interfaces the type takes (0: no EFA), nested
	// virtualization support and the placement group strategies it can
	// launch in; the catalog derives them (see features.go), EC2's
	// DescribeInstanceTypes reports them.
	NetworkCards         int64 `json:"-"`
	MaxEFA               int64 `json:"-"`
	NestedVirtualization bool  `json:"-"`
	// NitroEnclaves: the type can run Nitro Enclaves.
	NitroEnclaves       bool     `json:"-"`
	PlacementStrategies []string `json:"-"`
	// Offered maps the zones the type is offered in to its spot price there
	// (0: no spot). Nil means every zone of Options, at SpotPrice.
	Offered map[string]float64 `json:"-"`
	// Accelerators are the GPUs and Neuron devices EC2 describes (the
	// embedded catalog counts GPUs only: see accelerators).
	Accelerators Accelerators `json:"-"`
}

// Catalog returns the embedded catalog's instance types, sorted by name.
func Catalog() ([]Spec, error) {
	var doc struct {
		InstanceTypes []Spec `json:"instanceTypes"`
	}
	if err := json.Unmarshal(catalogJSON, &doc); err != nil {
		return nil, fmt.Errorf("decoding the instance type catalog: %w", err)
	}
	sort.Slice(doc.InstanceTypes, func(i, j int) bool { return doc.InstanceTypes[i].Name < doc.InstanceTypes[j].Name })
	efa, err := efaInterfaces()
	if err != nil {
		return nil, err
	}
	for i := range doc.InstanceTypes {
		withFeatures(&doc.InstanceTypes[i], efa)
	}
	return doc.InstanceTypes, nil
}

// Options are what allocatable and offerings depend on.
type Options struct {
	// Zones offered; every instance type with a price is offered in each,
	// on-demand and spot.
	Zones []string
	// Kubelet settings of the EC2NodeClass (may be nil).
	Kubelet *kubeletconfig.Config
	// ExcludeSpot offers on-demand only.
	ExcludeSpot bool
	// Reservations add reserved offerings: capacity reserved for one
	// instance type in one zone.
	Reservations []Reservation
	// Needs are what an EC2NodeClass asks of instance types (network
	// interfaces, nested virtualization, ...): types without it are left
	// out.
	Needs Needs
}

// Reservation is a capacity reservation: an instance type in a zone and how
// many more instances it can take now.
type Reservation struct {
	ID           string
	InstanceType string
	Zone         string
	Available    int
	// Interruptible reservations lend another account's unused capacity.
	Interruptible bool
}

// ReservedPriceFactor prices reserved offerings against on-demand: the
// reservation is paid for whether it is used or not, so using it costs
// next to nothing and it comes before any spot or on-demand offering.
const ReservedPriceFactor = 1e-6

// defaultPods is the pod limit of instance types without ENI data.
const defaultPods = 110

// Load converts the whole embedded catalog.
func Load(opts Options) ([]*scheduling.InstanceType, error) {
	specs, err := Catalog()
	if err != nil {
		return nil, err
	}
	return InstanceTypes(specs, opts), nil
}

// InstanceTypes converts catalog entries. Types without a price have no
// offerings.
func InstanceTypes(specs []Spec, opts Options) []*scheduling.InstanceType {
	out := make([]*scheduling.InstanceType, 0, len(specs))
	for _, s := range specs {
		if opts.Needs.Unmet(s) != "" {
			continue
		}
		o := opts
		if opts.Kubelet.HasExpressions() {
			k, err := opts.Kubelet.For(VarsOf(s, opts.Needs.Windows))
			if err != nil {
				continue // the EC2NodeClass says why (KubeletExpressionEvaluationFailed)
			}
			o.Kubelet = k
		}
		out = append(out, convert(s, o))
	}
	return out
}

// VarsOf is what spec.kubelet's expressions read of an instance type,
// for Linux or Windows nodes.
func VarsOf(s Spec, windows bool) kubeletconfig.Vars {
	return kubeletconfig.Vars{InstanceType: s.Name, VCPUs: s.VCPU, MemoryMiB: s.MemoryMiB, DefaultENIs: s.MaxENIs, IPsPerENI: s.IPv4PerENI, MaxPods: pods(s, nil, windows)}
}

// convert makes the scheduling instance type of a catalog entry: its
// labels, capacity and allocatable, and its offerings in the zones and
// reservations of opts.
func convert(s Spec, opts Options) *scheduling.InstanceType {
	capacity := capacityOf(s, opts.Kubelet, opts.Needs)
	it := &scheduling.InstanceType{
		Name:         s.Name,
		Requirements: scheduling.LabelRequirements(labelsOf(s, opts.Needs)),
		Capacity:     capacity,
		Allocatable:  capacity.Sub(overhead(s, capacity, opts.Kubelet)),
		Devices:      devicesOf(s, opts.Needs),
	}
	if s.OnDemand > 0 {
		it.Offerings = append(zoneOfferings(s, opts), reservedOfferings(s, opts)...)
	}
	addOfferingRequirements(it, opts)
	opts.Needs.placementLabels(it.Requirements)
	return it
}

// zoneOfferings are the on-demand and spot offerings of a priced type in
// the zones it is offered in.
func zoneOfferings(s Spec, opts Options) []scheduling.Offering {
	var out []scheduling.Offering
	for _, zone := range opts.Zones {
		spot, offered := spotIn(s, zone)
		if !offered {
			continue
		}
		out = append(out, scheduling.Offering{
			Zone: zone, CapacityType: v1.CapacityTypeOnDemand, Price: s.OnDemand, Available: true,
		})
		if !opts.ExcludeSpot && spot > 0 {
			out = append(out, scheduling.Offering{
				Zone: zone, CapacityType: v1.CapacityTypeSpot, Price: spot, Available: true,
			})
		}
	}
	return out
}

// spotIn is the spot price of a type in a zone, and whether the type is
// offered there: a type without its own list of offered zones is offered
// everywhere at the simulated spot price.
func spotIn(s Spec, zone string) (float64, bool) {
	if s.Offered != nil {
		spot, offered := s.Offered[zone]
		return spot, offered
	}
	return SpotPrice(s.Name, zone, s.OnDemand), true
}

// reservedOfferings are the offerings of the capacity reservations for a
// priced type in the zones of opts.
func reservedOfferings(s Spec, opts Options) []scheduling.Offering {
	var out []scheduling.Offering
	for _, r := range opts.Reservations {
		if r.InstanceType == s.Name && slices.Contains(opts.Zones, r.Zone) {
			out = append(out, scheduling.Offering{
				Zone: r.Zone, CapacityType: v1.CapacityTypeReserved, Price: s.OnDemand * ReservedPriceFactor, Available: r.Available > 0,
				ReservationID: r.ID, ReservationCapacity: r.Available, ReservationInterruptible: r.Interruptible,
			})
		}
	}
	return out
}

// addOfferingRequirements limits the type's zones and capacity types to
// those of its offerings, and adds the region of the zones.
func addOfferingRequirements(it *scheduling.InstanceType, opts Options) {
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	for _, o := range it.Offerings {
		zones[o.Zone], capacityTypes[o.CapacityType] = true, true
	}
	it.Requirements.Add(scheduling.NewRequirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, keys(zones)...))
	if region := regionOf(opts.Zones); region != "" {
		it.Requirements.Add(scheduling.NewRequirement(scheduling.LabelRegion, corev1.NodeSelectorOpIn, region))
	}
	it.Requirements.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, keys(capacityTypes)...))
}

// regionOf is the region of the zones, "" when there are none or the
// first is not a zone name.
func regionOf(zones []string) string {
	if len(zones) == 0 {
		return ""
	}
	return regionOfZone.FindString(zones[0])
}

// regionOfZone finds the region of a zone: us-east-1 of us-east-1a, of
// the Local Zone us-east-1-bos-1a, us-gov-west-1 of us-gov-west-1a.
var regionOfZone = regexp.MustCompile(`^[a-z]+(-[a-z]+)+-[0-9]+`)

// SpotPrice is the simulated spot price: between 30% and 70% of the
// on-demand price, fixed per instance type and zone by an FNV-1a hash of
// "<type>/<zone>", so it is deterministic and differs between zones.
func SpotPrice(instanceType, zone string, onDemand float64) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(instanceType + "/" + zone))
	fraction := 0.30 + 0.40*float64(h.Sum32()%10001)/10000
	return math.Round(onDemand*fraction*1e5) / 1e5
}

// familyPattern splits a family into category and generation: m7i-flex is
// category m, generation 7; u-6tb1 is category u, generation 1.
var familyPattern = regexp.MustCompile(`^([a-z]+)(?:-[0-9]+[a-z]+)?([0-9]+)`)

// labelsOf returns the well-known labels of an instance type, for Linux
// or Windows nodes as needs say.
func labelsOf(s Spec, needs Needs) map[string]string {
	family, size, _ := strings.Cut(s.Name, ".")
	labels := map[string]string{
		scheduling.LabelInstanceType:         s.Name,
		scheduling.LabelArch:                 s.Arch,
		scheduling.LabelOS:                   "linux",
		awsv1.Group + "/instance-family":     family,
		awsv1.Group + "/instance-size":       size,
		awsv1.Group + "/instance-cpu":        strconv.FormatInt(s.VCPU, 10),
		awsv1.Group + "/instance-memory":     strconv.FormatInt(s.MemoryMiB, 10),
		awsv1.Group + "/instance-gpu-count":  strconv.FormatInt(s.GPU, 10),
		awsv1.Group + "/instance-hypervisor": s.Hypervisor,
		awsv1.Group + "/instance-bare-metal": strconv.FormatBool(s.BareMetal),
	}
	if needs.Windows {
		labels[scheduling.LabelOS] = string(corev1.Windows)
	}
	if needs.Windows && needs.WindowsBuild != "" {
		labels[corev1.LabelWindowsBuild] = needs.WindowsBuild
	}
	if m := familyPattern.FindStringSubmatch(family); m != nil {
		labels[awsv1.Group+"/instance-category"] = m[1]
		labels[awsv1.Group+"/instance-generation"] = m[2]
	}
	return labels
}

// capacityOf is what the node reports: CPU, memory less the VM overhead,
// the pod limit, the ephemeral storage of the EC2NodeClass's volumes
// (by default a 20Gi root volume, a Windows node's 50Gi) and GPUs; a
// Windows node and the IPv4 addresses its pods can have, one per address
// of its primary network interface but its own.
func capacityOf(s Spec, kubelet *kubeletconfig.Config, needs Needs) scheduling.Resources {
	windows := needs.Windows
	memMiB := s.MemoryMiB - int64(math.Ceil(float64(s.MemoryMiB)*0.075))
	if s.Arch == "arm64" {
		memMiB -= 64
	}
	list := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memMiB*mib, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(pods(s, kubelet, windows), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	if windows {
		list[corev1.ResourceEphemeralStorage] = resource.MustParse("50Gi") // the Windows root volume
	}
	if needs.EphemeralStorage > 0 {
		list[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(needs.EphemeralStorage, resource.BinarySI)
	}
	if windows {
		list[PrivateIPv4Address] = *resource.NewQuantity(max(s.IPv4PerENI-1, 0), resource.DecimalSI)
	}
	if s.GPU > 0 {
		list[GPUResource(s.Name)] = *resource.NewQuantity(s.GPU, resource.DecimalSI)
	}
	if n := accelerators(s).NeuronDevices; n > 0 {
		list[NeuronResource] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	if efa, _ := efaOf(s, needs); efa > 0 {
		list[EFAResource] = *resource.NewQuantity(efa, resource.DecimalSI)
	}
	r, _ := scheduling.ParseResources(list)
	return deviceCounts(r, devicesOf(s, needs))
}

// EFAResource is the extended resource the EFA device plugin advertises
// a node's EFA interfaces as (attached when the launch asks: see the
// launch).
const EFAResource corev1.ResourceName = "vpc.amazonaws.com/efa"

// NeuronResource is the extended resource the Neuron device plugin
// advertises a node's Neuron devices as.
const NeuronResource corev1.ResourceName = "aws.amazon.com/neuron"

const mib = 1 << 20

// PrivateIPv4Address is the resource Windows nodes advertise their pods'
// IPv4 addresses as (the VPC resource controller adds a request of one
// to each Windows pod).
const PrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"

// GPUResource is the extended resource an instance type's GPUs (or
// accelerators) are advertised as by their device plugin.
func GPUResource(name string) corev1.ResourceName {
	switch {
	case strings.HasPrefix(name, "g4ad"):
		return "amd.com/gpu"
	case strings.HasPrefix(name, "dl1"):
		return "habana.ai/gaudi"
	default:
		return "nvidia.com/gpu"
	}
}

// pods is maxPods if set, else the ENI limit (110 on Windows, whose pods'
// addresses are counted apart), capped by podsPerCore.
func pods(s Spec, kubelet *kubeletconfig.Config, windows bool) int64 {
	if kubelet != nil && kubelet.MaxPods != nil {
		return int64(*kubelet.MaxPods)
	}
	n := int64(defaultPods)
	if s.MaxENIs > 0 && s.IPv4PerENI > 0 && !windows {
		n = s.MaxENIs*(s.IPv4PerENI-1) + 2
	}
	if kubelet != nil && kubelet.PodsPerCore != nil && *kubelet.PodsPerCore > 0 {
		n = min(n, int64(*kubelet.PodsPerCore)*s.VCPU)
	}
	return n
}

// overhead is kube-reserved, system-reserved and the eviction thresholds.
func overhead(s Spec, capacity scheduling.Resources, kubelet *kubeletconfig.Config) scheduling.Resources {
	kubeReserved := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedCPU(s.VCPU), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*capacity.Pods()+255)*mib, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	systemReserved := corev1.ResourceList{}
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(capacity[3]/10, resource.BinarySI),
	}
	if kubelet != nil {
		override(kubeReserved, kubelet.KubeReserved)
		override(systemReserved, kubelet.SystemReserved)
		if v, ok := kubelet.EvictionHard["memory.available"]; ok {
			eviction[corev1.ResourceMemory] = thresholdOf(v, capacity.Memory())
		}
		if v, ok := kubelet.EvictionHard["nodefs.available"]; ok {
			eviction[corev1.ResourceEphemeralStorage] = thresholdOf(v, capacity[3])
		}
	}
	total := scheduling.Resources{}
	for _, list := range []corev1.ResourceList{kubeReserved, systemReserved, eviction} {
		r, _ := scheduling.ParseResources(list)
		total = total.Add(r)
	}
	return total
}

// kubeReservedCPU: 6% of the first core, 1% of the second, 0.5% of the
// third and fourth, 0.25% of the rest, in millicores.
func kubeReservedCPU(vcpu int64) int64 {
	milli := 0.0
	for core := int64(1); core <= vcpu; core++ {
		switch {
		case core == 1:
			milli += 60
		case core == 2:
			milli += 10
		case core <= 4:
			milli += 5
		default:
			milli += 2.5
		}
	}
	return int64(math.Ceil(milli))
}

func override(list corev1.ResourceList, values map[string]string) {
	for k, v := range values {
		if q, err := resource.ParseQuantity(v); err == nil {
			list[corev1.ResourceName(k)] = q
		}
	}
}

// thresholdOf reads an eviction threshold: a quantity or a percentage of
// capacity.
func thresholdOf(v string, capacity int64) resource.Quantity {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return resource.Quantity{}
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity)*f/100)), resource.BinarySI)
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
