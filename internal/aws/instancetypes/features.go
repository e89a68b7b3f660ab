package instancetypes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot/windows"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Placement group strategies.
const (
	StrategyCluster   = "cluster"
	StrategyPartition = "partition"
	StrategySpread    = "spread"
)

// Needs are what an EC2NodeClass asks of the instance types it launches.
type Needs struct {
	// NetworkInterfaces by card and device index, with their type.
	NetworkInterfaces []awsv1.NetworkInterface `json:",omitempty"`
	// NestedVirtualization enabled.
	NestedVirtualization bool `json:",omitempty"`
	// NitroEnclaves enabled.
	NitroEnclaves bool `json:",omitempty"`
	// Nitro: connection tracking is configured, which only Nitro types
	// support.
	Nitro bool `json:",omitempty"`
	// PlacementGroup nodes launch in: its strategy must be supported, and
	// instance types carry its id label (and partitions).
	PlacementGroup *awsv1.PlacementGroup `json:",omitempty"`
	// Partition is the one partition of a partition group nodes launch
	// into (0: any).
	Partition int32 `json:",omitempty"`
	// Windows: nodes run Windows (the Windows AMI families, or Custom
	// AMIs booted with PowerShell user data), of WindowsBuild when it is
	// known. Windows runs on amd64 types only; they are labelled
	// kubernetes.io/os windows (and node.kubernetes.io/windows-build), run
	// 110 pods whatever their network interfaces take, and advertise the
	// IPv4 addresses their pods can have
	// (vpc.amazonaws.com/PrivateIPv4Address).
	Windows      bool   `json:",omitempty"`
	WindowsBuild string `json:",omitempty"`
	// EphemeralStorage is the bytes of ephemeral storage nodes report,
	// from the EC2NodeClass's volumes (EphemeralStorageOf); 0: the
	// family's default volume (20Gi, Windows 50Gi).
	EphemeralStorage int64 `json:",omitempty"`
	// InstanceStorePolicy is the EC2NodeClass's (RAID0: ephemeral storage
	// is the instance store's).
	InstanceStorePolicy string `json:",omitempty"`
	// Family is the AMI family nodes boot ("": AL2023's rules).
	Family string `json:",omitempty"`
}

// NeedsOf are the needs of an EC2NodeClass, its placement group resolved.
func NeedsOf(class *awsv1.EC2NodeClass) Needs {
	n := Needs{Nitro: class.Spec.ConnectionTracking != nil}
	for _, ni := range class.Spec.NetworkInterfaces {
		if ni != nil {
			n.NetworkInterfaces = append(n.NetworkInterfaces, *ni)
		}
	}
	if o := class.Spec.CPUOptions; o != nil && o.NestedVirtualization != nil && *o.NestedVirtualization == "enabled" {
		n.NestedVirtualization = true
	}
	n.NitroEnclaves = class.Spec.EnclaveOptions != nil && class.Spec.EnclaveOptions.Enabled
	if class.Spec.PlacementGroupSelector != nil {
		n.PlacementGroup = class.Status.PlacementGroup
	}
	n.Windows, n.WindowsBuild = WindowsOf(class)
	eph := EphemeralStorageOf(class)
	n.EphemeralStorage = eph.Value()
	n.InstanceStorePolicy = ptr.Deref(class.Spec.InstanceStorePolicy, "")
	n.Family = awsv1.FamilyOf(class)
	return n
}

// Unmet says what of the needs an instance type lacks, "" when none.
func (n Needs) Unmet(s Spec) string {
	if unmet := n.unmetFeature(s); unmet != "" {
		return unmet
	}
	return n.unmetInterfaces(s)
}

// unmetFeature says which needed feature an instance type lacks: nested
// virtualization, Nitro, or the placement group's strategy.
func (n Needs) unmetFeature(s Spec) string {
	if n.Windows && s.Arch != "amd64" {
		return "Windows (amd64 only)"
	}
	if n.NestedVirtualization && !s.NestedVirtualization {
		return "nested virtualization"
	}
	if n.NitroEnclaves && !s.NitroEnclaves {
		return "Nitro Enclaves"
	}
	if n.Nitro && s.Hypervisor != "nitro" {
		return "connection tracking (Nitro only)"
	}
	if pg := n.PlacementGroup; pg != nil && !slices.Contains(s.PlacementStrategies, pg.Strategy) {
		return "the " + pg.Strategy + " placement strategy"
	}
	return ""
}

// unmetInterfaces says which of the network interfaces an instance type
// cannot take: a card or device index beyond it, or too many EFAs.
func (n Needs) unmetInterfaces(s Spec) string {
	perCard := max(1, s.MaxENIs/max(1, s.NetworkCards))
	efa := int64(0)
	for _, ni := range n.NetworkInterfaces {
		if int64(ni.NetworkCardIndex) >= s.NetworkCards {
			return fmt.Sprintf("network card %d (it has %d)", ni.NetworkCardIndex, s.NetworkCards)
		}
		if int64(ni.DeviceIndex) >= perCard {
			return fmt.Sprintf("device index %d (it takes %d interfaces per card)", ni.DeviceIndex, perCard)
		}
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			efa++
		}
	}
	if efa > s.MaxEFA {
		return fmt.Sprintf("%d EFA interfaces (it takes %d)", efa, s.MaxEFA)
	}
	return ""
}

// placementLabels are the requirements a placement group adds to the
// instance types launched in it: its id, and the partitions of a
// partition group (a NodeClaim narrowed to one launches into it).
func (n Needs) placementLabels(reqs scheduling.Requirements) {
	pg := n.PlacementGroup
	if pg == nil {
		return
	}
	reqs.Add(scheduling.NewRequirement(awsv1.LabelPlacementGroupID, corev1.NodeSelectorOpIn, pg.ID))
	switch {
	case pg.Strategy == StrategyPartition && n.Partition > 0:
		reqs.Add(scheduling.NewRequirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, strconv.Itoa(int(n.Partition))))
	case pg.Strategy == StrategyPartition && pg.PartitionCount > 0:
		partitions := make([]string, 0, pg.PartitionCount)
		for i := int32(1); i <= pg.PartitionCount; i++ {
			partitions = append(partitions, strconv.Itoa(int(i)))
		}
		reqs.Add(scheduling.NewRequirement(awsv1.LabelPlacementGroupPartition, corev1.NodeSelectorOpIn, partitions...))
	}
}

// WindowsOf says whether an EC2NodeClass's nodes run Windows, and of
// which build when that is known: a Windows family's release, or a
// Custom AMI booted with PowerShell user data whose resolved AMIs' names
// name the release (the EKS-optimized Windows names do,
// Windows_Server-2022-English-Core-EKS_Optimized-1.34-...).
func WindowsOf(class *awsv1.EC2NodeClass) (bool, string) {
	family := awsv1.FamilyOf(class)
	if awsv1.IsWindows(family) {
		return true, awsv1.WindowsBuild(family)
	}
	if family != awsv1.AMIFamilyCustom || class.Spec.UserData == nil || !windows.IsPowerShell([]byte(*class.Spec.UserData)) {
		return false, ""
	}
	builds := map[string]bool{}
	for _, ami := range class.Status.AMIs {
		for _, release := range []string{awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
			if strings.Contains(ami.Name, "Windows_Server-"+strings.TrimPrefix(release, "Windows")) {
				builds[awsv1.WindowsBuild(release)] = true
			}
		}
	}
	if len(builds) == 1 {
		for b := range builds {
			return true, b
		}
	}
	return true, ""
}
