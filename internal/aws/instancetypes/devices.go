package instancetypes

import (
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// The DRA drivers whose devices the catalog describes.
const (
	// NVIDIADriver is the NVIDIA GPU DRA driver: devices gpu-0, gpu-1, …
	NVIDIADriver = "gpu.nvidia.com"
	// NeuronDriver is the AWS Neuron DRA driver: devices neurondevice0, …
	NeuronDriver = "neuron.aws.com"
)

// gpuModel is what the NVIDIA driver says of a GPU model: the product
// name NVML reports, its architecture and CUDA compute capability.
type gpuModel struct {
	product, arch, compute string
}

// gpuFamilies are the GPU instance families: the GPU each has (by EC2's
// name for it), its memory as DescribeInstanceTypes reports it, and the
// driver's view of it. Fractional GPUs (g6f, gr6f) are not described.
var gpuFamilies = map[string]struct {
	ec2Name   string
	memoryMiB int64
	model     gpuModel
}{
	"g4dn":    {"T4", 16384, gpuModel{"Tesla T4", "Turing", "7.5"}},
	"g5g":     {"T4g", 16384, gpuModel{"NVIDIA T4G", "Turing", "7.5"}},
	"g5":      {"A10G", 24576, gpuModel{"NVIDIA A10G", "Ampere", "8.6"}},
	"g6":      {"L4", 22888, gpuModel{"NVIDIA L4", "Ada Lovelace", "8.9"}},
	"gr6":     {"L4", 22888, gpuModel{"NVIDIA L4", "Ada Lovelace", "8.9"}},
	"g6e":     {"L40S", 45776, gpuModel{"NVIDIA L40S", "Ada Lovelace", "8.9"}},
	"g7e":     {"RTX PRO 6000", 97871, gpuModel{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "Blackwell", "12.0"}},
	"p3":      {"V100", 16384, gpuModel{"Tesla V100-SXM2-16GB", "Volta", "7.0"}},
	"p3dn":    {"V100", 32768, gpuModel{"Tesla V100-SXM2-32GB", "Volta", "7.0"}},
	"p4d":     {"A100", 40960, gpuModel{"NVIDIA A100-SXM4-40GB", "Ampere", "8.0"}},
	"p4de":    {"A100", 81920, gpuModel{"NVIDIA A100-SXM4-80GB", "Ampere", "8.0"}},
	"p5":      {"H100", 81920, gpuModel{"NVIDIA H100 80GB HBM3", "Hopper", "9.0"}},
	"p5e":     {"H200", 144384, gpuModel{"NVIDIA H200", "Hopper", "9.0"}},
	"p5en":    {"H200", 144384, gpuModel{"NVIDIA H200", "Hopper", "9.0"}},
	"p6-b200": {"B200", 183359, gpuModel{"NVIDIA B200", "Blackwell", "10.0"}},
}

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
func Devices(s Spec) []scheduling.DeviceSet { return devicesOf(s) }

func devicesOf(s Spec) []scheduling.DeviceSet {
	a := accelerators(s)
	var out []scheduling.DeviceSet
	if s.GPU > 0 && a.GPUManufacturer == "NVIDIA" {
		out = append(out, scheduling.DeviceSet{Driver: NVIDIADriver, Devices: nvidiaGPUs(s, a)})
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
// but for what only a running node knows (UUIDs, driver versions).
func nvidiaGPUs(s Spec, a Accelerators) []resourcev1.Device {
	family, _, _ := strings.Cut(s.Name, ".")
	model, known := gpuFamilies[family]
	product := "NVIDIA " + a.GPUName
	if known && model.ec2Name == a.GPUName {
		product = model.model.product
	}
	out := make([]resourcev1.Device, 0, s.GPU)
	for i := range s.GPU {
		attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"type":        {StringValue: ptr.To("gpu")},
			"productName": {StringValue: ptr.To(product)},
			"index":       {IntValue: ptr.To(i)},
			"minor":       {IntValue: ptr.To(i)},
		}
		if known && model.ec2Name == a.GPUName {
			attrs["architecture"] = resourcev1.DeviceAttribute{StringValue: ptr.To(model.model.arch)}
			attrs["cudaComputeCapability"] = resourcev1.DeviceAttribute{VersionValue: ptr.To(model.model.compute + ".0")}
		}
		dev := resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: attrs}
		if a.GPUMemoryMiB > 0 {
			dev.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(a.GPUMemoryMiB*mib, resource.BinarySI)},
			}
		}
		out = append(out, dev)
	}
	return out
}

// deviceCounts adds the devices of the sets to r, by driver.
func deviceCounts(r scheduling.Resources, sets []scheduling.DeviceSet) scheduling.Resources {
	for _, set := range sets {
		r = r.AddDevices(set.Driver, int64(len(set.Devices)))
	}
	return r
}
