package instancetypes

import (
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The DRA drivers whose devices the catalog describes.
const (
	// NVIDIADriver is the NVIDIA GPU DRA driver: devices gpu-0, gpu-1, …
	NVIDIADriver = "gpu.nvidia.com"
	// NeuronDriver is the AWS Neuron DRA driver: devices neurondevice0, …
	NeuronDriver = "neuron.aws.com"
	// EFADriver is DRANET, which publishes a node's network interfaces,
	// its EFA interfaces among them: devices efa-0, efa-1, …
	EFADriver = "dra.net"
)

// gpuModel is what the NVIDIA driver says of a GPU model: the product
// name NVML reports, its architecture, CUDA compute capability and the
// memory NVML reports (less than the card's nominal size, which EC2
// reports: what a claim's memory selector is evaluated against on the
// node); 0 where it has not been measured, and EC2's size is used.
type gpuModel struct {
	product, arch, compute string
	driverMiB              int64
	// brand is NVML's brand: Nvidia but for Tesla V100s and vGPUs.
	brand string
}

// gpuFamilies are the GPU instance families: the GPU each has (by EC2's
// name for it), its memory as DescribeInstanceTypes reports it, and the
// driver's view of it.
var gpuFamilies = map[string]struct {
	ec2Name   string
	memoryMiB int64
	model     gpuModel
}{
	"g4dn":    {"T4", 16384, gpuModel{"Tesla T4", "Turing", "7.5", 15360, "Nvidia"}},
	"g5g":     {"T4g", 16384, gpuModel{"NVIDIA T4G", "Turing", "7.5", 15360, "Nvidia"}},
	"g5":      {"A10G", 24576, gpuModel{"NVIDIA A10G", "Ampere", "8.6", 23028, "Nvidia"}},
	"g6":      {"L4", 22888, gpuModel{"NVIDIA L4", "Ada Lovelace", "8.9", 23034, "Nvidia"}},
	"gr6":     {"L4", 22888, gpuModel{"NVIDIA L4", "Ada Lovelace", "8.9", 23034, "Nvidia"}},
	"g6e":     {"L40S", 45776, gpuModel{"NVIDIA L40S", "Ada Lovelace", "8.9", 46068, "Nvidia"}},
	"g7e":     {"RTX PRO Server 6000", 97871, gpuModel{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "Blackwell", "12.0", 97280, "Nvidia"}},
	"p3":      {"V100", 16384, gpuModel{"Tesla V100-SXM2-16GB", "Volta", "7.0", 0, "Tesla"}},
	"p3dn":    {"V100", 32768, gpuModel{"Tesla V100-SXM2-32GB", "Volta", "7.0", 32768, "Tesla"}},
	"p4d":     {"A100", 40960, gpuModel{"NVIDIA A100-SXM4-40GB", "Ampere", "8.0", 40960, "Nvidia"}},
	"p4de":    {"A100", 81920, gpuModel{"NVIDIA A100-SXM4-80GB", "Ampere", "8.0", 81920, "Nvidia"}},
	"p5":      {"H100", 81920, gpuModel{"NVIDIA H100 80GB HBM3", "Hopper", "9.0", 81152, "Nvidia"}},
	"p5e":     {"H200", 144384, gpuModel{"NVIDIA H200", "Hopper", "9.0", 143360, "Nvidia"}},
	"p5en":    {"H200", 144384, gpuModel{"NVIDIA H200", "Hopper", "9.0", 143360, "Nvidia"}},
	"p6-b200": {"B200", 183359, gpuModel{"NVIDIA B200", "Blackwell", "10.0", 182784, "Nvidia"}},
}

// bareMetalGPUMiB is the GPU memory NVML reports on the bare-metal sizes
// where it differs from the virtualized ones (no memory kept back for the
// hypervisor).
var bareMetalGPUMiB = map[string]int64{"g5g": 16384}

// neuronFamilies are the Inferentia and Trainium families: EC2's name for
// their Neuron device and how many each size has.
var neuronFamilies = map[string]struct {
	ec2Name string
	devices map[string]int64
}{
	"inf1":  {"Inferentia", map[string]int64{"xlarge": 1, "2xlarge": 1, "6xlarge": 4, "24xlarge": 16}},
	"inf2":  {"Inferentia2", map[string]int64{"xlarge": 1, "8xlarge": 1, "24xlarge": 6, "48xlarge": 12}},
	"trn1":  {"Trainium", map[string]int64{"2xlarge": 1, "32xlarge": 16}},
	"trn1n": {"Trainium", map[string]int64{"32xlarge": 16}},
	"trn2":  {"Trainium2", map[string]int64{"48xlarge": 16}},
}

// Accelerators are an instance type's GPUs or Neuron devices as EC2
// describes them: model name, count and memory per device.
type Accelerators struct {
	GPUName      string `json:"-"`
	GPUMemoryMiB int64  `json:"-"`
	// GPUManufacturer: NVIDIA, AMD, Habana; only NVIDIA's GPUs have DRA
	// devices in the catalog.
	GPUManufacturer string `json:"-"`
	NeuronName      string `json:"-"`
	NeuronDevices   int64  `json:"-"`
}

// accelerators are what the catalog knows of a type's accelerators: what
// EC2 described, else the families' table.
func accelerators(s Spec) Accelerators {
	a := s.Accelerators
	family, size, _ := strings.Cut(s.Name, ".")
	if a.GPUName == "" && s.GPU > 0 {
		if f, ok := gpuFamilies[family]; ok {
			a.GPUName, a.GPUMemoryMiB, a.GPUManufacturer = f.ec2Name, f.memoryMiB, "NVIDIA"
		}
	}
	if a.NeuronDevices == 0 {
		if f, ok := neuronFamilies[family]; ok && f.devices[size] > 0 {
			a.NeuronName, a.NeuronDevices = f.ec2Name, f.devices[size]
		}
	}
	return a
}

// Devices are the devices the DRA drivers publish on a node of the type:
// the NVIDIA driver's GPUs, the Neuron driver's devices (as the catalog
// knows them: what only a running node knows is left out).
func Devices(s Spec) []scheduling.DeviceSet { return devicesOf(s, Needs{}) }

// devicesOf are the devices of a node of the type launched as the
// EC2NodeClass needs: its EFA interfaces are those the class lays out
// when it lays out network interfaces (always attached), else all the
// type's, attached when a launch asks for them.
func devicesOf(s Spec, needs Needs) []scheduling.DeviceSet {
	a := accelerators(s)
	var out []scheduling.DeviceSet
	if s.GPU > 0 && a.GPUManufacturer == "NVIDIA" {
		out = append(out, scheduling.DeviceSet{Driver: NVIDIADriver, Devices: nvidiaGPUs(s, a)})
	}
	// The fractional GPUs of g6f and gr6f (NVIDIA vGPU profiles, which
	// EC2 counts as no GPU) are not published by the driver as GPUs.
	if n, onRequest := efaOf(s, needs); n > 0 {
		out = append(out, scheduling.DeviceSet{Driver: EFADriver, Devices: efaDevices(n, !efaWithoutRDMA[s.Name]), OnRequest: onRequest})
	}
	if a.NeuronDevices > 0 {
		set := scheduling.DeviceSet{Driver: NeuronDriver}
		for i := range a.NeuronDevices {
			set.Devices = append(set.Devices, resourcev1.Device{
				Name: fmt.Sprintf("neurondevice%d", i),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
					"instanceType": {StringValue: ptr.To(s.Name)},
				},
			})
		}
		out = append(out, set)
	}
	return out
}

// nvidiaGPUs are the GPUs of a type as the NVIDIA driver publishes them,
// but for what only a running node knows (UUIDs, driver versions, PCIe
// roots).
func nvidiaGPUs(s Spec, a Accelerators) []resourcev1.Device {
	family, size, _ := strings.Cut(s.Name, ".")
	f, known := gpuFamilies[family]
	known = known && f.ec2Name == a.GPUName
	model := gpuModel{product: "NVIDIA " + a.GPUName, brand: "Nvidia"}
	if known {
		model = f.model
	}
	memoryMiB := a.GPUMemoryMiB
	if known && model.driverMiB > 0 {
		memoryMiB = model.driverMiB
	}
	if m, ok := bareMetalGPUMiB[family]; ok && known && size == "metal" {
		memoryMiB = m
	}
	out := make([]resourcev1.Device, 0, s.GPU)
	for i := range s.GPU {
		dev := resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: nvidiaAttributes(i, model)}
		if memoryMiB > 0 {
			dev.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(memoryMiB*mib, resource.BinarySI)},
			}
		}
		out = append(out, dev)
	}
	return out
}

// nvidiaAttributes are the attributes of GPU i of a model: architecture
// and compute capability only where the model is known.
func nvidiaAttributes(i int64, model gpuModel) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
		"type":        {StringValue: ptr.To("gpu")},
		"brand":       {StringValue: ptr.To(model.brand)},
		"productName": {StringValue: ptr.To(model.product)},
		"index":       {IntValue: ptr.To(i)},
		"minor":       {IntValue: ptr.To(i)},
	}
	if model.arch != "" {
		attrs["architecture"] = resourcev1.DeviceAttribute{StringValue: ptr.To(model.arch)}
		attrs["cudaComputeCapability"] = resourcev1.DeviceAttribute{VersionValue: ptr.To(model.compute + ".0")}
	}
	return attrs
}

// efaWithoutRDMA are the types whose EFA interfaces DRANET reports
// without RDMA.
var efaWithoutRDMA = map[string]bool{"g4dn.metal": true}

// efaDevices are a type's EFA interfaces as DRANET publishes them (when
// the instance is launched with them: see the launch): RDMA devices of
// Amazon's EFA; which EFA generation, NUMA node and PCIe root each is
// only the node knows.
func efaDevices(n int64, rdma bool) []resourcev1.Device {
	out := make([]resourcev1.Device, 0, n)
	for i := range n {
		out = append(out, resourcev1.Device{Name: fmt.Sprintf("efa-%d", i), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			EFADriver + "/rdma":      {BoolValue: ptr.To(rdma)},
			EFADriver + "/pciVendor": {StringValue: ptr.To("Amazon.com, Inc.")},
			EFADriver + "/pciDevice": {StringValue: ptr.To("Elastic Fabric Adapter (EFA)")},
		}})
	}
	return out
}

// efaOf is how many EFA interfaces a node of the type has, and whether
// they are attached only when a launch asks: an EC2NodeClass that lays
// out network interfaces launches with its efa-only ones (none if it
// lists none), whatever the pods ask; otherwise a launch asks for all the
// type's when its pods need them.
func efaOf(s Spec, needs Needs) (n int64, onRequest bool) {
	if len(needs.NetworkInterfaces) == 0 {
		return s.MaxEFA, true
	}
	for _, ni := range needs.NetworkInterfaces {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n++
		}
	}
	return min(n, s.MaxEFA), false
}

// deviceCounts adds the devices of the sets to r, by driver.
func deviceCounts(r scheduling.Resources, sets []scheduling.DeviceSet) scheduling.Resources {
	for _, set := range sets {
		r = r.AddDevices(set.Driver, int64(len(set.Devices)))
	}
	return r
}
