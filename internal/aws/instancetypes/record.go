package instancetypes

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Record is the type's DescribeInstanceTypes record: EC2's, or for a Spec
// made by hand one made from its fields.
func (s Spec) Record() ec2types.InstanceTypeInfo {
	if s.Info != nil {
		return *s.Info
	}
	arch := ec2types.ArchitectureTypeX8664
	if s.Arch == "arm64" {
		arch = ec2types.ArchitectureTypeArm64
	}
	info := ec2types.InstanceTypeInfo{
		InstanceType:  ec2types.InstanceType(s.Name),
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(int32(s.VCPU))}, //nolint:gosec // catalog sizes are small
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(s.MemoryMiB)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{arch}},
		BareMetal:     aws.Bool(s.BareMetal),
		Hypervisor:    ec2types.InstanceTypeHypervisor(s.Hypervisor),
	}
	info.NitroEnclavesSupport = ec2types.NitroEnclavesSupportUnsupported
	if s.NitroEnclaves {
		info.NitroEnclavesSupport = ec2types.NitroEnclavesSupportSupported
	}
	if s.NestedVirtualization {
		info.ProcessorInfo.SupportedFeatures = []ec2types.SupportedAdditionalProcessorFeature{ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization}
	}
	info.NetworkInfo = networkInfo(s)
	info.PlacementGroupInfo = &ec2types.PlacementGroupInfo{}
	for _, st := range s.PlacementStrategies {
		info.PlacementGroupInfo.SupportedStrategies = append(info.PlacementGroupInfo.SupportedStrategies, ec2types.PlacementGroupStrategy(st))
	}
	if s.GPU > 0 {
		info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Count: aws.Int32(int32(s.GPU)), Manufacturer: aws.String(gpuMaker(s.Name))}}} //nolint:gosec // small
	}
	if s.OnDemand > 0 {
		info.SupportedUsageClasses = []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand, ec2types.UsageClassTypeSpot}
	}
	return info
}

// networkInfo is what an instance type offers of network interfaces, cards
// and EFA; nil when the catalog does not say.
func networkInfo(s Spec) *ec2types.NetworkInfo {
	if s.MaxENIs <= 0 && s.MaxEFA <= 0 {
		return nil
	}
	ni := &ec2types.NetworkInfo{
		MaximumNetworkCards: aws.Int32(int32(s.NetworkCards)), //nolint:gosec // small
		EfaSupported:        aws.Bool(s.MaxEFA > 0),
	}
	if s.MaxENIs > 0 {
		ni.MaximumNetworkInterfaces, ni.Ipv4AddressesPerInterface = aws.Int32(int32(s.MaxENIs)), aws.Int32(int32(s.IPv4PerENI)) //nolint:gosec // small
	}
	perCard := max(1, s.MaxENIs/max(1, s.NetworkCards))
	for card := range s.NetworkCards {
		ni.NetworkCards = append(ni.NetworkCards, ec2types.NetworkCardInfo{
			NetworkCardIndex: aws.Int32(int32(card)), MaximumNetworkInterfaces: aws.Int32(int32(perCard)), //nolint:gosec // small
		})
	}
	if s.MaxEFA > 0 {
		ni.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(int32(s.MaxEFA))} //nolint:gosec // small
	}
	return ni
}

func gpuMaker(name string) string {
	switch {
	case strings.HasPrefix(name, "g4ad"):
		return "AMD"
	case strings.HasPrefix(name, "dl1"):
		return "Habana"
	}
	return "NVIDIA"
}
