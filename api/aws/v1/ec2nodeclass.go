package v1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass is the AWS configuration of nodes: which AMI, subnets and
// security groups they use, their IAM identity, user data, kubelet settings
// and disks.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec EC2NodeClassSpec `json:"spec,omitempty"`
	// +optional
	Status EC2NodeClassStatus `json:"status,omitzero"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// EC2NodeClassSpec is the desired AWS configuration of nodes.
//
// +kubebuilder:validation:XValidation:rule="(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))",message="set exactly one of role (the node IAM role; nodewright manages an instance profile for it) or instanceProfile (an existing instance profile)"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'al2') ? (self.amiFamily == 'Custom' || self.amiFamily == 'AL2') : true)",message="with an al2@ alias, amiFamily must be AL2 or Custom (or left out: the alias gives it)"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'al2023') ? (self.amiFamily == 'Custom' || self.amiFamily == 'AL2023') : true)",message="with an al2023@ alias, amiFamily must be AL2023 or Custom (or left out: the alias gives it)"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'bottlerocket') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Bottlerocket') : true)",message="with a bottlerocket@ alias, amiFamily must be Bottlerocket or Custom (or left out: the alias gives it)"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'windows2019') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Windows2019') : true)",message="with a windows2019@ alias, amiFamily must be Windows2019 or Custom (or left out: the alias gives it)"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'windows2022') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Windows2022') : true)",message="with a windows2022@ alias, amiFamily must be Windows2022 or Custom (or left out: the alias gives it)"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.find('^[^@]+') == 'windows2025') ? (self.amiFamily == 'Custom' || self.amiFamily == 'Windows2025') : true)",message="with a windows2025@ alias, amiFamily must be Windows2025 or Custom (or left out: the alias gives it)"
// +kubebuilder:validation:XValidation:rule="self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",message="amiFamily is required unless amiSelectorTerms uses an alias such as al2023@latest; set it to AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022 or Windows2025"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets nodes launch into. Terms are
	// ORed; the fields of one term are ANDed.
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="subnetSelectorTerms cannot be empty: select the subnets nodes launch into, by tags or id"
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id))",message="each subnetSelectorTerm needs tags or id"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.id) && has(x.tags))",message="id selects one subnet and cannot be combined with tags in the same term; put them in separate terms"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms select the security groups of nodes. Terms
	// are ORed; the fields of one term are ANDed.
	// +kubebuilder:validation:XValidation:rule="self.size() != 0",message="securityGroupSelectorTerms cannot be empty: select the nodes' security groups by tags, id or name"
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id) || has(x.name))",message="each securityGroupSelectorTerm needs tags, id or name"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))",message="id selects one security group and cannot be combined with tags or name in the same term; put them in separate terms"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))",message="name selects security groups by group name and cannot be combined with tags or id in the same term; put them in separate terms"
	// +kubebuilder:validation:MaxItems=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// CapacityReservationSelectorTerms select On-Demand Capacity
	// Reservations nodes may launch into.
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))",message="each capacityReservationSelectorTerm needs tags, id or instanceMatchCriteria"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))",message="id selects one capacity reservation and cannot be combined with other fields in the same term"
	// +kubebuilder:validation:MaxItems=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// PlacementGroupSelector names the placement group (by name or id)
	// nodes launch into: cluster, partition or spread. Only instance
	// types the group's strategy supports are used; nodes carry the
	// karpenter.k8s.aws/placement-group-id label (and, in a partition
	// group, karpenter.k8s.aws/placement-group-partition, the partition
	// EC2 put them in).
	// +kubebuilder:validation:XValidation:rule="has(self.name) || has(self.id)",message="placementGroupSelector needs name or id"
	// +kubebuilder:validation:XValidation:rule="!(has(self.name) && has(self.id))",message="placementGroupSelector takes name or id, not both"
	// +optional
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	// AssociatePublicIPAddress overrides the subnet's public IP setting
	// for the primary network interface.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// IPPrefixCount is the number of IPv4 /28 prefixes assigned to each
	// network interface nodewright launches (not EFA-only ones).
	// +kubebuilder:validation:Minimum=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`
	// AMISelectorTerms select the AMIs nodes boot from: an alias for the
	// EKS-optimized AMIs (al2023@latest), or ids, names, tags or SSM
	// parameters. Terms are ORed.
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))",message="each amiSelectorTerm needs one of alias, id, name, tags or ssmParameter"
	// +kubebuilder:validation:XValidation:rule="!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))",message="id selects one AMI and cannot be combined with other fields in the same term; put other selectors in a separate term"
	// +kubebuilder:validation:XValidation:rule="!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || has(x.owner)))",message="alias cannot be combined with other fields in the same term"
	// +kubebuilder:validation:XValidation:rule="!(self.exists(x, has(x.alias)) && self.size() != 1)",message="an alias term must be the only amiSelectorTerm: the alias already selects an AMI for every architecture"
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// AMIFamily decides the user data format and default disks. Taken from
	// the alias when one is used.
	// +kubebuilder:validation:Enum=AL2;AL2023;Bottlerocket;Custom;Windows2019;Windows2022;Windows2025
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// UserData is merged with the user data nodewright generates (or, for
	// Custom, used as it is).
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Role is the node IAM role; nodewright creates and manages an instance
	// profile for it. Exclusive with instanceProfile.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="role cannot be empty; name the node IAM role, such as KarpenterNodeRole-<cluster>"
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is an existing instance profile whose role nodes use.
	// Exclusive with role.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="instanceProfile cannot be empty"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// Tags are applied to instances, volumes, network interfaces and launch
	// templates.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="tag keys cannot be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k !='eks:eks-cluster-name')",message="the tag eks:eks-cluster-name is set by nodewright; remove it from spec.tags"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('kubernetes.io/cluster') )",message="tags kubernetes.io/cluster/* are set by nodewright to find its own instances; remove them from spec.tags"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodepool')",message="the tag karpenter.sh/nodepool is set by nodewright to find its own instances; remove it from spec.tags"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k !='karpenter.sh/nodeclaim')",message="the tag karpenter.sh/nodeclaim is set by nodewright to find its own instances; remove it from spec.tags"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')",message="the tag karpenter.k8s.aws/ec2nodeclass is set by nodewright to find its own instances; remove it from spec.tags"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet is the nodes' kubelet configuration (see
	// KubeletConfiguration).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Kubelet KubeletConfiguration `json:"kubelet,omitempty"`
	// BlockDeviceMappings are the nodes' disks; the AMI family's defaults
	// apply when empty.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",message="at most one block device mapping can be the rootVolume"
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// InstanceStorePolicy RAID0 combines instance-store disks into one
	// array used for the kubelet and containers.
	// +kubebuilder:validation:Enum=RAID0
	// +optional
	InstanceStorePolicy *string `json:"instanceStorePolicy,omitempty"`
	// NetworkInterfaces are the network interfaces nodes launch with, by
	// network card and device index: the primary (card 0, device 0, type
	// interface) and any more, such as EFA-only interfaces. Only instance
	// types with those network cards, device indexes and EFA interfaces
	// are used.
	// +kubebuilder:validation:MaxItems=150
	// +kubebuilder:validation:XValidation:rule="self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')",message="networkInterfaces must include the primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface"
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))",message="networkInterfaces cannot repeat a networkCardIndex and deviceIndex pair, and can have at most one efa-only interface per network card"
	// +optional
	NetworkInterfaces []*NetworkInterface `json:"networkInterfaces,omitempty"`
	// DetailedMonitoring enables one-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// MetadataOptions configure the instance metadata service.
	// +kubebuilder:default:={httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// ConnectionTracking sets the idle connection tracking timeouts of the
	// network interfaces nodewright launches (not EFA-only ones). Only
	// Nitro instance types support it, so only they are used.
	// +kubebuilder:validation:XValidation:rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",message="connectionTracking needs at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout"
	// +optional
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
	// Context is passed to CreateFleet (reserved for EC2 use).
	// +optional
	Context *string `json:"context,omitempty"`
	// CPUOptions are the CPU options nodes launch with.
	// +optional
	CPUOptions *CPUOptions `json:"cpuOptions,omitempty"`
	// EnclaveOptions enabled launches nodes with AWS Nitro Enclaves, on
	// the instance types that support them only.
	// +optional
	EnclaveOptions *EnclaveOptions `json:"enclaveOptions,omitempty"`
}

// PlacementGroupSelector names a placement group.
type PlacementGroupSelector struct {
	// Name is the placement group's name.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Name *string `json:"name,omitempty"`
	// ID is the placement group's id, such as pg-0123abcd (a group
	// shared from another account is named by id).
	// +kubebuilder:validation:Pattern="^pg-[0-9a-z]+$"
	// +optional
	ID *string `json:"id,omitempty"`
}

// NetworkInterface is one network interface of a node.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to.
	// +kubebuilder:validation:Minimum=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's device index on its card.
	// +kubebuilder:validation:Minimum=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is interface (an ENA interface) or efa-only (an
	// Elastic Fabric Adapter without IP networking).
	// +kubebuilder:validation:Enum=interface;efa-only
	// +required
	InterfaceType string `json:"interfaceType"`
}

// Network interface types.
const (
	InterfaceTypeInterface = "interface"
	InterfaceTypeEFAOnly   = "efa-only"
)

// ConnectionTracking are idle connection tracking timeouts, in seconds.
type ConnectionTracking struct {
	// TCPEstablishedTimeout for idle established TCP connections, 60 to
	// 432000 (EC2's default: 432000, 350 on Nitro v6 types).
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout for idle UDP flows that saw more than one
	// request-response, 60 to 180 (EC2's default: 180).
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout for idle UDP flows in one direction or of a single
	// request-response, 30 to 60 (EC2's default: 30).
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions are CPU options of nodes.
type CPUOptions struct {
	// NestedVirtualization enabled lets nodes run virtual machines (such
	// as Kata Containers or Firecracker) without being bare metal; only
	// instance types that support it are used.
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// EnclaveOptions are the Nitro Enclaves settings of nodes.
type EnclaveOptions struct {
	// Enabled launches nodes with Nitro Enclaves enabled.
	// +required
	Enabled bool `json:"enabled"`
}

// SubnetSelectorTerm selects subnets by tags or by id.
type SubnetSelectorTerm struct {
	// Tags the subnet must carry; the value "*" matches any value.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="tag keys and values cannot be empty; use \"*\" to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID is a subnet id such as subnet-0123abcd.
	// +kubebuilder:validation:Pattern="subnet-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name.
type SecurityGroupSelectorTerm struct {
	// Tags the security group must carry; the value "*" matches any value.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="tag keys and values cannot be empty; use \"*\" to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID is a security group id such as sg-0123abcd.
	// +kubebuilder:validation:Pattern="sg-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name is the security group's group name (not its Name tag).
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by tags,
// id or instance match criteria.
type CapacityReservationSelectorTerm struct {
	// Tags the reservation must carry.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="tag keys and values cannot be empty"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID is a capacity reservation id such as cr-0123abcd.
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria selects reservations that are open (any
	// matching instance may use them) or targeted (only launches that name
	// them).
	// +kubebuilder:validation:Enum=open;targeted
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// AMISelectorTerm selects AMIs by alias, id, name (and owner), tags or an
// SSM parameter.
type AMISelectorTerm struct {
	// Alias selects the EKS-optimized AMIs of a family: family@version,
	// such as al2023@latest, al2@v20240807 or bottlerocket@v1.20.0.
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9]+@.+$')",message="alias must be family@version, such as al2023@latest or bottlerocket@v1.20.0"
	// +kubebuilder:validation:XValidation:rule="self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']",message="unknown alias family; use al2, al2023, bottlerocket, windows2019, windows2022 or windows2025"
	// +kubebuilder:validation:XValidation:rule="self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true",message="Windows aliases can only use the version latest"
	// +optional
	Alias string `json:"alias,omitempty"`
	// ID is an AMI id such as ami-0123abcd.
	// +kubebuilder:validation:Pattern="ami-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// Name is the AMI name (not its Name tag); wildcards are allowed.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner restricts name and tag matches to an account id, self, amazon
	// or aws-marketplace.
	// +optional
	Owner string `json:"owner,omitempty"`
	// Tags the AMI must carry; the value "*" matches any value.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="tag keys and values cannot be empty; use \"*\" to match any value"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// SSMParameter names an SSM parameter whose value is an AMI id.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// KubeletConfiguration is the nodes' kubelet configuration: any field of
// the kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1), by
// its name there, such as maxPods, kubeReserved, evictionHard or
// serializeImagePulls. The API server stores it as given; nodewright
// checks it (a field the kubelet does not have, or a value it would
// refuse, sets ValidationSucceeded=False with reason
// InvalidKubeletConfiguration). AL2023 applies every field; the other AMI
// families apply clusterDNS (one address), maxPods, podsPerCore (not
// Bottlerocket), systemReserved, kubeReserved, evictionHard, evictionSoft,
// evictionSoftGracePeriod, evictionMaxPodGracePeriod,
// imageGCHighThresholdPercent, imageGCLowThresholdPercent and cpuCFSQuota,
// and any other field sets ValidationSucceeded=False with reason
// UnsupportedKubeletConfiguration rather than being dropped.
//
// +kubebuilder:pruning:PreserveUnknownFields
type KubeletConfiguration map[string]apiextensionsv1.JSON

// BlockDeviceMapping is one disk of a node.
type BlockDeviceMapping struct {
	// DeviceName is the device, such as /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS configures the EBS volume of the device.
	// +kubebuilder:validation:XValidation:rule="has(self.snapshotID) || has(self.volumeSize)",message="an EBS volume needs volumeSize or snapshotID"
	// +kubebuilder:validation:XValidation:rule="!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')",message="volumeInitializationRate needs snapshotID: it is how fast a volume is filled from its snapshot"
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume mounts this device as the kubelet's root directory; at
	// most one mapping may set it.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume with the instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS for io1, io2 and gp3 volumes.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the KMS key (ARN) used for encryption.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the EBS snapshot the volume is created from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput in MiB/s for gp3 volumes.
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeSize such as 20Gi, 100G or 1Ti.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
	// +optional
	VolumeSize *string `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum=standard;io1;io2;gp2;sc1;st1;gp3
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
	// VolumeInitializationRate is how fast, in MiB/s, a volume created
	// from snapshotID is filled from the snapshot (EBS provisioned rate
	// for volume initialization, 100 to 300); unset, EBS fills it lazily.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
}

// MetadataOptions configure the instance metadata service (IMDS).
type MetadataOptions struct {
	// HTTPEndpoint enables or disables IMDS.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 enables the IPv6 IMDS endpoint.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is the hop limit of IMDS responses; 1 keeps
	// them from reaching pods that do not use the host network.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens "required" enforces IMDSv2 session tokens.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum=required;optional
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// EC2NodeClassStatus is what was resolved from the selectors.
type EC2NodeClassStatus struct {
	// Subnets resolved from subnetSelectorTerms.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups resolved from securityGroupSelectorTerms.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// AMIs resolved from amiSelectorTerms, each with the node requirements
	// (architecture, GPU) it can serve.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile nodes are launched with.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// CapacityReservations resolved from capacityReservationSelectorTerms:
	// the active On-Demand Capacity Reservations and Capacity Blocks nodes
	// may launch into.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// PlacementGroup resolved from placementGroupSelector.
	// +optional
	PlacementGroup *PlacementGroup `json:"placementGroup,omitempty"`
	// Conditions: Ready, AMIsReady, SubnetsReady, SecurityGroupsReady,
	// InstanceProfileReady, PlacementGroupReady, ValidationSucceeded, and
	// CapacityReservationsReady and PricesCurrent (which Ready does not
	// include: without a reservation nodes launch as spot or on-demand,
	// without the Pricing API with built-in or last known prices).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// +required
	ID string `json:"id"`
	// +required
	Zone string `json:"zone"`
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// +required
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +required
	ID string `json:"id"`
	// +required
	InstanceType string `json:"instanceType"`
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +required
	OwnerID string `json:"ownerID"`
	// InstanceMatchCriteria is open (any matching instance uses it) or
	// targeted (only launches that name it).
	// +kubebuilder:validation:Enum=open;targeted
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
	// ReservationType is default (an On-Demand Capacity Reservation) or
	// capacity-block (a Capacity Block for ML).
	// +kubebuilder:validation:Enum=default;capacity-block
	// +kubebuilder:default=default
	// +optional
	ReservationType string `json:"reservationType,omitempty"`
	// State is active, or expiring when it ends within ten minutes.
	// +kubebuilder:validation:Enum=active;expiring
	// +kubebuilder:default=active
	// +optional
	State string `json:"state,omitempty"`
	// EndTime is when the reservation ends, if it does.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Interruptible reservations lend their owner's unused capacity:
	// instances in them can be reclaimed.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
}

// PlacementGroup is the resolved placement group.
type PlacementGroup struct {
	// +required
	ID string `json:"id"`
	// +required
	Name string `json:"name"`
	// Strategy is cluster, partition or spread.
	// +kubebuilder:validation:Enum=cluster;partition;spread
	// +required
	Strategy string `json:"strategy"`
	// PartitionCount is the number of partitions of a partition group.
	// +optional
	PartitionCount int32 `json:"partitionCount,omitempty"`
}

// AMI is a resolved AMI.
type AMI struct {
	// +required
	ID string `json:"id"`
	// +optional
	Name string `json:"name,omitempty"`
	// Deprecated is true for an AMI past its deprecation time.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
	// Requirements of the nodes this AMI can boot, such as
	// kubernetes.io/arch In [arm64].
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// AMI families.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyCustom       = "Custom"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
)

// EC2NodeClass condition types.
const (
	ConditionReady                = "Ready"
	ConditionAMIsReady            = "AMIsReady"
	ConditionSubnetsReady         = "SubnetsReady"
	ConditionSecurityGroupsReady  = "SecurityGroupsReady"
	ConditionInstanceProfileReady = "InstanceProfileReady"
	ConditionValidationSucceeded  = "ValidationSucceeded"
	ConditionPlacementGroupReady  = "PlacementGroupReady"
	// ConditionCapacityReservationsReady is not part of Ready.
	ConditionCapacityReservationsReady = "CapacityReservationsReady"
	// ConditionPricesCurrent says whether launches are priced by the
	// Pricing API and the spot price history; it is not part of Ready.
	ConditionPricesCurrent = "PricesCurrent"
)

// EC2NodeClass condition reasons. A condition other than Ready that
// turns False is recorded as an event with its reason too.
const (
	// ReasonResolved means what the condition is about was found.
	ReasonResolved = "Resolved"
	// ReasonResolutionFailed means the AWS API could not be asked; the
	// message has its error.
	ReasonResolutionFailed        = "ResolutionFailed"
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMIsNotFound            = "AMINotFound"
	ReasonInstanceProfileNotReady = "InstanceProfileNotReady"
	ReasonReservationsNotFound    = "CapacityReservationsNotFound"
	// ReasonPlacementGroupNotFound means placementGroupSelector names no
	// available placement group.
	ReasonPlacementGroupNotFound = "PlacementGroupNotFound"
	// ReasonValid and ReasonUserDataInvalid are the reasons of
	// ValidationSucceeded.
	ReasonValid           = "Valid"
	ReasonUserDataInvalid = "UserDataInvalid"
	// ReasonInvalidKubeletConfiguration: spec.kubelet has a field the
	// kubelet does not have, or a value it would refuse.
	ReasonInvalidKubeletConfiguration = "InvalidKubeletConfiguration"
	// ReasonUnsupportedKubeletConfiguration: spec.kubelet has fields the
	// AMI family would not apply.
	ReasonUnsupportedKubeletConfiguration = "UnsupportedKubeletConfiguration"
	// ReasonKubeletExpressionsDisabled: spec.kubelet has CEL expressions
	// and the NodeClassCEL feature gate is off.
	ReasonKubeletExpressionsDisabled = "KubeletExpressionsDisabled"
	// ReasonKubeletExpressionInvalid: an expression does not compile or
	// does not give a number.
	ReasonKubeletExpressionInvalid = "KubeletExpressionInvalid"
	// ReasonKubeletExpressionEvaluationFailed: an expression fails for an
	// instance type.
	ReasonKubeletExpressionEvaluationFailed = "KubeletExpressionEvaluationFailed"
	// ReasonReady and ReasonNotReady are the reasons of Ready.
	ReasonReady    = "Ready"
	ReasonNotReady = "NotReady"
)

// Reasons of the PricesCurrent condition: where the prices launches are
// chosen by come from.
const (
	// ReasonPricingAPI means the Pricing API and the spot price history.
	ReasonPricingAPI = "PricingAPI"
	// ReasonLastKnownPrices means their last answer, which cannot be read
	// again now.
	ReasonLastKnownPrices = "LastKnownPrices"
	// ReasonBuiltInPrices means the built-in table, or on-demand prices
	// for spot offerings.
	ReasonBuiltInPrices = "BuiltInPrices"
)

// Drift reasons of an EC2NodeClass's NodeClaims: what the instance has
// is no longer what the EC2NodeClass selects. The strings are Karpenter's
// AWS provider's.
const (
	ReasonAMIDrifted                 = "AMIDrift"
	ReasonSubnetDrifted              = "SubnetDrift"
	ReasonSecurityGroupsDrifted      = "SecurityGroupDrift"
	ReasonCapacityReservationDrifted = "CapacityReservationDrift"
	ReasonPlacementGroupDrifted      = "PlacementGroupDrift"
)

// StatusConditions are the EC2NodeClass's status conditions.
func (in *EC2NodeClass) StatusConditions() []metav1.Condition { return in.Status.Conditions }
