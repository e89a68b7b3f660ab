package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is the request for, and then the record of, one node: what it
// must satisfy (spec, immutable) and what was launched (status).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].reason",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a NodeClaim records one launched node; delete it and create a new NodeClaim instead"
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// +optional
	Status NodeClaimStatus `json:"status,omitzero"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec is what the launched node must satisfy.
type NodeClaimSpec struct {
	// Taints the node carries for its whole life.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute",fieldPath=".effect"
	// +kubebuilder:validation:items:XValidation:rule="size(self.key) <= 316 && self.key.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="taint key must be an optional DNS prefix and '/', then a name of letters, digits, '-', '_' and '.', such as example.com/dedicated",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63 && self.value.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')",message="taint value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",fieldPath=".value"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are expected on the node while it starts and are removed
	// by another component (a CNI or device plugin, for example) once it is
	// ready. Pods need not tolerate them to be scheduled onto new capacity.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute",fieldPath=".effect"
	// +kubebuilder:validation:items:XValidation:rule="size(self.key) <= 316 && self.key.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="taint key must be an optional DNS prefix and '/', then a name of letters, digits, '-', '_' and '.', such as example.com/dedicated",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63 && self.value.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')",message="taint value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",fieldPath=".value"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node's labels: instance type, zone,
	// capacity type, architecture and any other label.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="!self.key.matches('^([^/]*[.])?karpenter[.]sh/') || self.key in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool']",message="of the karpenter.sh labels only karpenter.sh/capacity-type and karpenter.sh/nodepool can be required",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="!self.key.matches('^([^/]*[.])?karpenter[.]k8s[.]aws/') || self.key in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/capacity-reservation-interruptible', 'karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/nitro-sandbox', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex', 'karpenter.k8s.aws/placement-group-id', 'karpenter.k8s.aws/placement-group-partition']",message="of the karpenter.k8s.aws labels only the well-known ones (instance-family, instance-size, instance-cpu, ...) can be required",fieldPath=".key"
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources the node must have room for.
	// +optional
	Resources ResourceRequirements `json:"resources,omitzero"`
	// NodeClassRef names the provider-specific configuration (EC2NodeClass).
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long draining the node may take;
	// pods still running at the deadline are deleted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(s|m|h))+$')",message="must be a duration such as 30s, 10m or 48h"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long after creation the node is replaced, or Never.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim must provide.
type ResourceRequirements struct {
	// Requests is the sum of the requests of the pods planned onto the node,
	// including DaemonSet overhead.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeSelectorRequirementWithMinValues is a node selector requirement that
// may also demand a minimum number of distinct values (for example at least
// five instance types) among the candidates.
//
// +kubebuilder:validation:XValidation:rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",message="operator In needs at least one value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="operators Exists and DoesNotExist take no values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))",message="operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more, such as [\"4\"]"
// +kubebuilder:validation:XValidation:rule="!has(self.minValues) || self.operator != 'In' || (has(self.values) && self.minValues <= size(self.values))",message="minValues cannot be larger than the number of values the requirement lists"
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="key must be a label key: an optional DNS prefix and '/', then a name of letters, digits, '-', '_' and '.'"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists,
	// DoesNotExist, or the integer comparisons Gt, Lt, Gte (at least) and
	// Lte (at most).
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values for In and NotIn (any number), Gt, Lt, Gte and Lte (one
	// integer).
	// +kubebuilder:validation:MaxItems=2000
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the minimum number of distinct values of this key that
	// the candidate instance types must cover.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorRequirement returns the requirement without minValues.
func (r NodeSelectorRequirementWithMinValues) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
}

// NodeClassReference names the node class that configures the cloud
// resources of a node.
type NodeClassReference struct {
	// Group of the node class, karpenter.k8s.aws for EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group must name the node class's API group, such as karpenter.k8s.aws"
	// +kubebuilder:validation:XValidation:rule="!self.contains('/')",message="group is an API group without a version, such as karpenter.k8s.aws (not karpenter.k8s.aws/v1)"
	// +kubebuilder:validation:MaxLength=253
	// +required
	Group string `json:"group"`
	// Kind of the node class, such as EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind must name the node class's kind, such as EC2NodeClass"
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name must name an existing node class"
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// NodeClaimStatus records what was launched for a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node that registered for this NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud's identifier of the instance,
	// aws:///<zone>/<instance-id> on AWS.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the machine image the instance was launched from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is what the instance provides.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is what pods can use: capacity less the kubelet's
	// reservations and eviction thresholds.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions: Launched, Registered, Initialized and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod was last bound to or removed from the node.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitzero"`
}

// NodeClaim condition types.
const (
	ConditionLaunched    = "Launched"
	ConditionRegistered  = "Registered"
	ConditionInitialized = "Initialized"
	ConditionReady       = "Ready"
	// ConditionDrifted is True, with the reason, while the NodeClaim no
	// longer matches its NodePool or EC2NodeClass; absent otherwise.
	ConditionDrifted = "Drifted"
	// ConditionRebooting is True while node repair reboots the node
	// (reason RebootRequested, then RebootIssued), and False once it is
	// over (RebootSucceeded or RebootFailed); absent before any reboot.
	ConditionRebooting = "Rebooting"
)

// Reasons of the Rebooting condition.
const (
	// ReasonRebootRequested: node repair chose to reboot the node; it is
	// fenced and drained.
	ReasonRebootRequested = "RebootRequested"
	// ReasonRebootIssued: the instance was told to reboot; nodewright
	// waits for a new boot ID and Ready.
	ReasonRebootIssued = "RebootIssued"
	// ReasonRebootSucceeded: the node booted again and is Ready.
	ReasonRebootSucceeded = "RebootSucceeded"
	// ReasonRebootFailed: the reboot could not be issued, or the node did
	// not come back Ready in time; the NodeClaim is replaced.
	ReasonRebootFailed = "RebootFailed"
)

// Condition reasons of NodeClaims.
const (
	ReasonLaunched = "Launched"
	// ReasonNodeClassNotReady: the EC2NodeClass a NodePool or NodeClaim
	// refers to is not ready.
	ReasonNodeClassNotReady = "NodeClassNotReady"
	ReasonLaunchFailed      = "LaunchFailed"
	// ReasonLaunchWaiting: the launch waits for the provider's own request
	// budget (nothing was sent yet) and is tried again shortly.
	ReasonLaunchWaiting            = "LaunchWaiting"
	ReasonRegistered               = "Registered"
	ReasonNodeNotFound             = "NodeNotFound"
	ReasonMultipleNodesFound       = "MultipleNodesFound"
	ReasonUnregisteredTaintMissing = "UnregisteredTaintMissing"
	ReasonInitialized              = "Initialized"
	ReasonNodeNotReady             = "NodeNotReady"
	ReasonStartupTaintsExist       = "StartupTaintsExist"
	ReasonEphemeralTaintsExist     = "KnownEphemeralTaintsExist"
	ReasonResourceNotRegistered    = "ResourceNotRegistered"
	// ReasonNotLaunched, ReasonNotRegistered and ReasonNotInitialized:
	// Ready is False because that condition has not been determined yet.
	ReasonNotLaunched    = "NotLaunched"
	ReasonNotRegistered  = "NotRegistered"
	ReasonNotInitialized = "NotInitialized"
	ReasonReady          = "Ready"
	// ReasonInstanceNotOwned means the NodeClaim's (or the node's)
	// instance is not one nodewright launched; neither it nor its node is
	// acted on. It is the reason of Registered=False and of the events
	// that say so.
	ReasonInstanceNotOwned = "InstanceNotOwned"
)

// Drift reasons, the reasons of a NodeClaim's Drifted condition that do
// not depend on the cloud: its NodePool's template changed since it was
// made, or the NodePool's requirements no longer admit its labels, or its
// node class changed (the class's hash stamped on it differs).
const (
	ReasonNodePoolDrifted     = "NodePoolDrifted"
	ReasonRequirementsDrifted = "RequirementsDrifted"
	ReasonNodeClassDrifted    = "NodeClassDrifted"
)

// StatusConditions are the NodeClaim's status conditions.
func (in *NodeClaim) StatusConditions() []metav1.Condition { return in.Status.Conditions }
