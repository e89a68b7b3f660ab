package instancetypes

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// What an instance type is, from its DescribeInstanceTypes record, as the
// reference's AWS provider works it out: the well-known labels (each only
// where EC2 describes what it says), the capacity a node of it reports
// and the overhead its kubelet reserves, under the EC2NodeClass's
// settings and the controller's.

// DefaultVMMemoryOverheadPercent is the share of an instance's memory the
// hypervisor and the kernel keep from the node, by default
// (--vm-memory-overhead-percent).
const DefaultVMMemoryOverheadPercent = 0.075

// Labels of the instance types, beside the API's.
const (
	LabelCPUManufacturer     = awsv1.Group + "/instance-cpu-manufacturer"
	LabelCPUClockSpeedMhz    = awsv1.Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelLocalNVMe           = awsv1.Group + "/instance-local-nvme"
	LabelEBSBandwidth        = awsv1.Group + "/instance-ebs-bandwidth"
	LabelNetworkBandwidth    = awsv1.Group + "/instance-network-bandwidth"
	LabelGPUName             = awsv1.Group + "/instance-gpu-name"
	LabelGPUManufacturer     = awsv1.Group + "/instance-gpu-manufacturer"
	LabelGPUCount            = awsv1.Group + "/instance-gpu-count"
	LabelGPUMemory           = awsv1.Group + "/instance-gpu-memory"
	LabelAcceleratorName     = awsv1.Group + "/instance-accelerator-name"
	LabelAcceleratorMaker    = awsv1.Group + "/instance-accelerator-manufacturer"
	LabelAcceleratorCount    = awsv1.Group + "/instance-accelerator-count"
	LabelEncryptionInTransit = awsv1.Group + "/instance-encryption-in-transit-supported"
	LabelCapabilityFlex      = awsv1.Group + "/instance-capability-flex"
	LabelTenancy             = awsv1.Group + "/instance-tenancy"
	LabelZoneID              = "topology.k8s.aws/zone-id"
)

// typeName splits an instance type's name: category, an optional
// "-NUMBERtb" (u-6tb1), the generation, and anything up to the dot.
var typeName = regexp.MustCompile(`(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`)

// requirementsOf are the type's requirements: its labels, each with the
// one value EC2's record gives it (absent where the record says nothing).
func requirementsOf(info ec2types.InstanceTypeInfo, opts Options) scheduling.Requirements {
	return scheduling.LabelRequirements(labelsOf(info, opts))
}

// labelsOf are the well-known labels of a node of the type.
func labelsOf(info ec2types.InstanceTypeInfo, opts Options) map[string]string {
	name := string(info.InstanceType)
	g := awsv1.Group
	labels := map[string]string{
		scheduling.LabelInstanceType: name,
		scheduling.LabelArch:         architectureOf(info),
		scheduling.LabelOS:           string(corev1.Linux),
		g + "/instance-hypervisor":   string(info.Hypervisor),
		// Nodes launch with the default (shared) tenancy: dedicated
		// instances are not launched.
		LabelTenancy: string(ec2types.TenancyDefault),
	}
	if info.VCpuInfo != nil {
		labels[g+"/instance-cpu"] = fmt.Sprint(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		labels[g+"/instance-memory"] = fmt.Sprint(aws.ToInt64(info.MemoryInfo.SizeInMiB))
	}
	if info.NetworkInfo != nil {
		labels[LabelEncryptionInTransit] = strconv.FormatBool(aws.ToBool(info.NetworkInfo.EncryptionInTransitSupported))
	}
	if opts.Needs.Windows {
		labels[scheduling.LabelOS] = string(corev1.Windows)
		if opts.Needs.WindowsBuild != "" {
			labels[corev1.LabelWindowsBuild] = opts.Needs.WindowsBuild
		}
	}
	if m := typeName.FindStringSubmatch(name); len(m) == 4 {
		labels[g+"/instance-category"], labels[g+"/instance-generation"] = m[1], m[3]
	}
	family, size, _ := strings.Cut(name, ".")
	if parts := strings.Split(name, "."); len(parts) == 2 {
		labels[g+"/instance-family"], labels[g+"/instance-size"] = family, size
	}
	labels[LabelCapabilityFlex] = strconv.FormatBool(strings.Contains(family, "-flex"))
	if st := info.InstanceStorageInfo; st != nil && st.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && st.TotalSizeInGB != nil {
		labels[LabelLocalNVMe] = fmt.Sprint(*st.TotalSizeInGB)
	}
	if bw, ok := network().BandwidthMbps[name]; ok {
		labels[LabelNetworkBandwidth] = fmt.Sprint(bw)
	}
	acceleratorLabels(info, labels)
	if p := info.ProcessorInfo; p != nil {
		labels[LabelCPUManufacturer] = kebab(aws.ToString(p.Manufacturer))
		labels[LabelCPUClockSpeedMhz] = fmt.Sprint(int(math.Round(aws.ToFloat64(p.SustainedClockSpeedInGhz) * 1000)))
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedInfo != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault {
		labels[LabelEBSBandwidth] = fmt.Sprint(aws.ToInt32(e.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	return labels
}

// acceleratorLabels label a type with one model of GPU, of inference
// accelerator (Neuron devices taking their place when EC2 describes
// them).
func acceleratorLabels(info ec2types.InstanceTypeInfo, labels map[string]string) {
	if gi := info.GpuInfo; gi != nil && len(gi.Gpus) == 1 {
		gpu := gi.Gpus[0]
		labels[LabelGPUName] = kebab(aws.ToString(gpu.Name))
		labels[LabelGPUManufacturer] = kebab(aws.ToString(gpu.Manufacturer))
		labels[LabelGPUCount] = fmt.Sprint(aws.ToInt32(gpu.Count))
		if gpu.MemoryInfo != nil {
			labels[LabelGPUMemory] = fmt.Sprint(aws.ToInt32(gpu.MemoryInfo.SizeInMiB))
		}
	}
	if ai := info.InferenceAcceleratorInfo; ai != nil && len(ai.Accelerators) == 1 && info.NeuronInfo == nil {
		a := ai.Accelerators[0]
		labels[LabelAcceleratorName] = kebab(aws.ToString(a.Name))
		labels[LabelAcceleratorMaker] = kebab(aws.ToString(a.Manufacturer))
		labels[LabelAcceleratorCount] = fmt.Sprint(aws.ToInt32(a.Count))
	}
	if ni := info.NeuronInfo; ni != nil && len(ni.NeuronDevices) == 1 {
		d := ni.NeuronDevices[0]
		labels[LabelAcceleratorName] = kebab(aws.ToString(d.Name))
		labels[LabelAcceleratorMaker] = "aws"
		labels[LabelAcceleratorCount] = fmt.Sprint(aws.ToInt32(d.Count))
	}
}

// kebab is a name as a label value: lower case, spaces as dashes
// ("Radeon Pro V520" is radeon-pro-v520).
func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

// architectureOf is the Kubernetes architecture of the first of the
// type's architectures Kubernetes names.
func architectureOf(info ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo == nil {
		return ""
	}
	for _, a := range info.ProcessorInfo.SupportedArchitectures {
		switch a {
		case ec2types.ArchitectureTypeX8664:
			return "amd64"
		case ec2types.ArchitectureTypeArm64:
			return "arm64"
		}
	}
	return fmt.Sprint(info.ProcessorInfo.SupportedArchitectures)
}

// capacityOf is what a node of the type reports: its vCPUs; its memory
// less the VM overhead (Gravitons keep 64Mi more); its pod limit; the
// ephemeral storage of the EC2NodeClass's volume for the kubelet (or of
// its instance store, under RAID0); its GPUs and accelerators by maker;
// its EFA interfaces; security groups for pods' branch interfaces; and on
// Windows the IPv4 addresses its pods can have.
func capacityOf(s Spec, info ec2types.InstanceTypeInfo, opts Options) scheduling.Resources {
	list := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           memoryOf(info, opts),
		corev1.ResourcePods:             *resource.NewQuantity(pods(info, opts), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: ephemeralStorageOf(info, opts.Needs),
	}
	for maker, name := range gpuResources {
		if n := gpusBy(info, maker); n > 0 {
			list[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	if ni := info.NeuronInfo; ni != nil && len(ni.NeuronDevices) > 0 {
		devices := int64(0)
		for _, d := range ni.NeuronDevices {
			devices += int64(aws.ToInt32(d.Count))
		}
		list[NeuronResource] = *resource.NewQuantity(devices, resource.DecimalSI)
		if first := ni.NeuronDevices[0]; first.CoreInfo != nil {
			list[NeuronCoreResource] = *resource.NewQuantity(int64(aws.ToInt32(first.Count))*int64(aws.ToInt32(first.CoreInfo.Count)), resource.DecimalSI)
		}
	}
	if efa, _ := efaOf(s, opts.Needs); efa > 0 {
		list[EFAResource] = *resource.NewQuantity(efa, resource.DecimalSI)
	}
	if l, ok := network().Limits[s.Name]; ok && l.Trunking && l.BranchInterfaces > 0 {
		list[PodENIResource] = *resource.NewQuantity(l.BranchInterfaces, resource.DecimalSI)
	}
	if opts.Needs.Windows {
		ips := s.IPv4PerENI
		if l, ok := network().Limits[s.Name]; ok {
			ips = l.IPv4PerInterface
		}
		list[PrivateIPv4Address] = *resource.NewQuantity(max(ips-1, 0), resource.DecimalSI)
	}
	r, _ := scheduling.ParseResources(list)
	return deviceCounts(r, devicesOf(s, opts.Needs))
}

// Extended resources of instance types.
const (
	// EFAResource is the extended resource the EFA device plugin
	// advertises a node's EFA interfaces as (attached when the launch
	// asks: see the launch).
	EFAResource corev1.ResourceName = "vpc.amazonaws.com/efa"
	// NeuronResource and NeuronCoreResource are the Neuron device
	// plugin's: devices, and their cores.
	NeuronResource     corev1.ResourceName = "aws.amazon.com/neuron"
	NeuronCoreResource corev1.ResourceName = "aws.amazon.com/neuroncore"
	// PodENIResource is the branch interfaces security groups for pods
	// hands out (the VPC resource controller advertises them).
	PodENIResource corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	// PrivateIPv4Address is the resource Windows nodes advertise their
	// pods' IPv4 addresses as (the VPC resource controller adds a request
	// of one to each Windows pod).
	PrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"
)

// gpuResources are the extended resources each maker's device plugin
// advertises GPUs as.
var gpuResources = map[string]corev1.ResourceName{"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu", "Habana": "habana.ai/gaudi"}

// GPUResource is the extended resource a type's GPUs are advertised as
// ("" when it has none).
func GPUResource(s Spec) corev1.ResourceName {
	info := s.Record()
	for maker, name := range gpuResources {
		if gpusBy(info, maker) > 0 {
			return name
		}
	}
	return ""
}

// gpusBy counts a type's GPUs of a maker.
func gpusBy(info ec2types.InstanceTypeInfo, maker string) int64 {
	n := int64(0)
	if info.GpuInfo != nil {
		for _, g := range info.GpuInfo.Gpus {
			if aws.ToString(g.Manufacturer) == maker {
				n += int64(aws.ToInt32(g.Count))
			}
		}
	}
	return n
}

const mib = 1 << 20

// InstanceStorePolicyRAID0 is the policy under which the instance store
// disks are one RAID0 array, the kubelet's and the containers' storage.
const InstanceStorePolicyRAID0 = "RAID0"

// memoryOf is the memory a node reports: the type's (less 64Mi a
// Graviton keeps) less the VM overhead share, rounded up to a MiB.
func memoryOf(info ec2types.InstanceTypeInfo, opts Options) resource.Quantity {
	if info.MemoryInfo == nil {
		return resource.Quantity{}
	}
	sizeMiB := aws.ToInt64(info.MemoryInfo.SizeInMiB)
	if p := info.ProcessorInfo; p != nil && len(p.SupportedArchitectures) > 0 && p.SupportedArchitectures[0] == ec2types.ArchitectureTypeArm64 {
		sizeMiB -= 64
	}
	share := DefaultVMMemoryOverheadPercent
	if opts.VMMemoryOverheadPercent != nil {
		share = *opts.VMMemoryOverheadPercent
	}
	overhead := int64(math.Ceil(float64(sizeMiB) * share))
	return *resource.NewQuantity((sizeMiB-overhead)*mib, resource.BinarySI)
}

// ephemeralStorageOf is the node's ephemeral storage: its instance store
// in decimal gigabytes under the RAID0 policy, else the volume the
// EC2NodeClass gives the kubelet.
func ephemeralStorageOf(info ec2types.InstanceTypeInfo, needs Needs) resource.Quantity {
	if needs.InstanceStorePolicy == InstanceStorePolicyRAID0 {
		if st := info.InstanceStorageInfo; st != nil && st.TotalSizeInGB != nil {
			return *resource.NewQuantity(*st.TotalSizeInGB*1_000_000_000, resource.DecimalSI)
		}
	}
	if needs.EphemeralStorage > 0 {
		return *resource.NewQuantity(needs.EphemeralStorage, resource.BinarySI)
	}
	if needs.Windows {
		return resource.MustParse("50Gi") // the Windows root volume
	}
	return resource.MustParse(DefaultVolume)
}

// eniLimits are the network interfaces of the type's default network card
// and the IPv4 addresses each takes (0, 0 when EC2 does not say).
func eniLimits(info ec2types.InstanceTypeInfo) (enis, ipsPerENI int64) {
	ni := info.NetworkInfo
	if ni == nil {
		return 0, 0
	}
	card := int(aws.ToInt32(ni.DefaultNetworkCardIndex))
	if card < len(ni.NetworkCards) {
		enis = int64(aws.ToInt32(ni.NetworkCards[card].MaximumNetworkInterfaces))
	} else {
		enis = int64(aws.ToInt32(ni.MaximumNetworkInterfaces))
	}
	return enis, int64(aws.ToInt32(ni.Ipv4AddressesPerInterface))
}

// eniLimitedPods is the VPC CNI's pod limit: the default card's
// interfaces, less those reserved and the EFA-only ones on it, each with
// its addresses but one, plus two host-network pods (110 where EC2 does
// not describe the network).
func eniLimitedPods(info ec2types.InstanceTypeInfo, reserved int, needs Needs) int64 {
	enis, ips := eniLimits(info)
	if enis == 0 || ips == 0 {
		return defaultPods
	}
	efaOnly := 0
	for _, ni := range needs.NetworkInterfaces {
		if ni.NetworkCardIndex == 0 && ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			efaOnly++
		}
	}
	usable := max(enis-int64(reserved)-int64(efaOnly), 0)
	if usable == 0 {
		return 0
	}
	return usable*(ips-1) + 2
}

// familyOf is the AMI family whose rules apply: Windows' for Windows
// nodes, else the EC2NodeClass's (AL2023's when not known).
func familyOf(needs Needs) string {
	switch {
	case needs.Windows && !awsv1.IsWindows(needs.Family):
		// A Custom AMI booting Windows: its kubelet reserves as Windows'.
		return awsv1.AMIFamilyWindows2022
	case needs.Family != "":
		return needs.Family
	}
	return awsv1.AMIFamilyAL2023
}

// pods is the pod limit: spec.kubelet.maxPods, else the VPC CNI's limit
// (110 on Windows, whose pods' addresses are counted apart), capped by
// podsPerCore where the family applies it (not Bottlerocket).
func pods(info ec2types.InstanceTypeInfo, opts Options) int64 {
	family := familyOf(opts.Needs)
	kubelet := opts.Kubelet
	var n int64
	switch {
	case kubelet != nil && kubelet.MaxPods != nil:
		n = int64(*kubelet.MaxPods)
	case awsv1.IsWindows(family) || opts.Needs.Windows:
		n = defaultPods
	default:
		n = eniLimitedPods(info, opts.ReservedENIs, opts.Needs)
	}
	if kubelet != nil && kubelet.PodsPerCore != nil && *kubelet.PodsPerCore > 0 && family != awsv1.AMIFamilyBottlerocket && info.VCpuInfo != nil {
		n = min(n, int64(*kubelet.PodsPerCore)*int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus)))
	}
	return n
}

// overhead is kube-reserved, system-reserved and the hard eviction
// thresholds. kube-reserved memory is 11Mi a pod and 255Mi: on AL2, AL2023
// and Custom AMIs for the VPC CNI's pod limit whatever maxPods says (the
// EKS images' own figure), on Bottlerocket and Windows for the pod limit.
func overhead(info ec2types.InstanceTypeInfo, capacity scheduling.Resources, opts Options) scheduling.Resources {
	family := familyOf(opts.Needs)
	reservedPods := capacity.Pods()
	if family == awsv1.AMIFamilyAL2 || family == awsv1.AMIFamilyAL2023 || family == awsv1.AMIFamilyCustom {
		reservedPods = eniLimitedPods(info, 0, opts.Needs)
	}
	vcpus := int64(0)
	if info.VCpuInfo != nil {
		vcpus = int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	kubeReserved := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(kubeReservedCPU(vcpus), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*reservedPods+255)*mib, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	systemReserved := corev1.ResourceList{}
	storage := capacity[3]
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(math.Ceil(float64(storage)/100*10)), resource.BinarySI),
	}
	if k := opts.Kubelet; k != nil {
		override(kubeReserved, k.KubeReserved)
		override(systemReserved, k.SystemReserved)
		if v, ok := k.EvictionHard["memory.available"]; ok {
			eviction[corev1.ResourceMemory] = thresholdOf(v, capacity.Memory())
		}
		if v, ok := k.EvictionHard["nodefs.available"]; ok {
			eviction[corev1.ResourceEphemeralStorage] = thresholdOf(v, storage)
		}
	}
	total := scheduling.Resources{}
	for _, list := range []corev1.ResourceList{kubeReserved, systemReserved, eviction} {
		r, _ := scheduling.ParseResources(list)
		total = total.Add(r)
	}
	return total
}

// kubeReservedCPU is the kubelet's CPU reservation, in millicores: 6% of
// the first core, 1% of the second, 0.5% of the next two and 0.25% of
// the rest, each share rounded down.
func kubeReservedCPU(vcpus int64) int64 {
	milli := vcpus * 1000
	total := int64(0)
	for _, r := range []struct {
		from, to int64
		share    float64
	}{{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, 1 << 31, 0.0025}} {
		if milli < r.from {
			break
		}
		total += int64(float64(min(milli, r.to)-r.from) * r.share)
	}
	return total
}

func override(list corev1.ResourceList, values map[string]string) {
	for k, v := range values {
		if q, err := resource.ParseQuantity(v); err == nil {
			list[corev1.ResourceName(k)] = q
		}
	}
}

// thresholdOf reads an eviction threshold: a quantity, or a percentage
// of capacity (100% disables it).
func thresholdOf(v string, capacity int64) resource.Quantity {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return resource.Quantity{}
		}
		if f == 100 {
			f = 0
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity)/100*f)), resource.BinarySI)
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return resource.Quantity{}
	}
	return q
}
