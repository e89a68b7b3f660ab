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
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are expected on the node while it starts and are removed
	// by another component (a CNI or device plugin, for example) once it is
	// ready. Pods need not tolerate them to be scheduled onto new capacity.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node's labels: instance type, zone,
	// capacity type, architecture and any other label.
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",message="a requirement with operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",message="operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more, such as [\"4\"]"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)",message="minValues cannot be larger than the number of values the requirement lists"
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
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
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
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
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
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
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
	// Kind of the node class, such as EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind must name the node class's kind, such as EC2NodeClass"
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name must name an existing node class"
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
	// ConditionDisruptionReason is True while a disruption command holds
	// the NodeClaim's node (tainted karpenter.sh/disrupted), its reason
	// the command's (Underutilized, Empty, Drifted, Expired, Unhealthy);
	// absent otherwise.
	ConditionDisruptionReason = "DisruptionReason"
	// ConditionInstanceTerminating True says the NodeClaim's instance is
	// being terminated (Karpenter's termination writes it once it asked
	// the cloud to): the node is going, as one being deleted is.
	ConditionInstanceTerminating = "InstanceTerminating"
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
	// ReasonValidationFailed: a NodePool the API server admitted holds a
	// label, requirement or taint no node can carry.
	ReasonValidationFailed = "ValidationFailed"
	ReasonLaunchFailed     = "LaunchFailed"
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
	// ReasonDRADriverPoolsNotPublished: a DRA driver the NodeClaim was
	// launched for has not published its node's devices (a complete pool
	// of ResourceSlices) yet; Initialized is Unknown.
	ReasonDRADriverPoolsNotPublished = "DRADriverPoolsNotPublished"
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
// node class no longer offers its instance type where it runs, or its
// node class changed (the class's hash stamped on it differs). The
// strings are Karpenter's, so alerts written for it match.
const (
	ReasonNodePoolDrifted      = "NodePoolDrifted"
	ReasonRequirementsDrifted  = "RequirementsDrifted"
	ReasonInstanceTypeNotFound = "InstanceTypeNotFound"
	ReasonNodeClassDrifted     = "NodeClassDrift"
)

// StatusConditions are the NodeClaim's status conditions.
func (in *NodeClaim) StatusConditions() []metav1.Condition { return in.Status.Conditions }
