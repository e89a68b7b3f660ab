package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlay changes what the scheduler believes of the instance types
// its requirements select: their price (a Savings Plan, a negotiated
// discount, a licence fee) and extra capacity the instances expose (an
// extended resource such as hugepages). Where several overlays select an
// instance type, each field comes from the one of highest weight; between
// equal weights, the first by name wins and the other says it conflicts.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].reason",priority=1
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeOverlaySpec `json:"spec"`
	// +optional
	Status NodeOverlayStatus `json:"status,omitzero"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec says which instance types the overlay changes and how.
//
// +kubebuilder:validation:XValidation:rule="!has(self.price) || !has(self.priceAdjustment)",message="set price or priceAdjustment, not both: price replaces the price, priceAdjustment changes it"
type NodeOverlaySpec struct {
	// Requirements select the instance types and offerings the overlay
	// applies to, by their labels (instance type, family, zone, capacity
	// type, ...), the NodePool (karpenter.sh/nodepool) or the NodePool's
	// template labels. Empty, it applies to every instance type.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.key != 'kubernetes.io/hostname'",message="kubernetes.io/hostname names one node, not an instance type",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="!self.key.matches('^([^/]*[.])?karpenter[.]sh/') || self.key in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool']",message="of the karpenter.sh labels only karpenter.sh/capacity-type and karpenter.sh/nodepool can be required",fieldPath=".key"
	// +kubebuilder:validation:items:XValidation:rule="!self.key.matches('^([^/]*[.])?karpenter[.]k8s[.]aws/') || self.key in ['karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/nitro-sandbox', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex']",message="of the karpenter.k8s.aws labels only those describing the instance type (instance-family, instance-cpu, ...) can be required",fieldPath=".key"
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// Price replaces the hourly price of the selected offerings: a decimal
	// number such as "0.10", in the pricing's currency.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+([.][0-9]+)?$')",message="price must be a decimal number of 0 or more, such as 0.10"
	// +optional
	Price *string `json:"price,omitempty"`
	// PriceAdjustment changes the hourly price of the selected offerings:
	// by an amount ("+0.05", "-0.02") or a percentage ("+10%", or "-15%"
	// down to "-100%").
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[+-]([0-9]+([.][0-9]+)?|[.][0-9]+)$') || self.matches('^[+]([0-9]+([.][0-9]+)?|[.][0-9]+)%$') || self.matches('^-(100([.]0+)?|[0-9]{1,2}([.][0-9]+)?)%$')",message="priceAdjustment must be a signed amount such as +0.05 or -0.02, or a signed percentage such as +10% or -15% (at most -100%)"
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Capacity adds extended resources (hugepages-2Mi, a device plugin's
	// resource) to the selected instance types; it cannot change cpu,
	// memory, ephemeral-storage or pods.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",message="capacity adds extended resources; cpu, memory, ephemeral-storage and pods come from the instance type"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays selecting the same instance type: each field
	// comes from the highest weight that sets it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is one requirement of an overlay.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="operators In and NotIn need at least one value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="operators Exists and DoesNotExist take no values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))",message="operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more, such as [\"4\"]"
type NodeSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="key must be a label key: an optional DNS prefix and '/', then a name of letters, digits, '-', '_' and '.'"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values.
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
}

// NodeOverlayStatus is the observed state of a NodeOverlay.
type NodeOverlayStatus struct {
	// Conditions: Ready (False with reason Conflict when an overlay of the
	// same weight sets a field differently for an instance type).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionReady is the NodeOverlay's Ready condition.
const ConditionReady = "Ready"

// Reasons of the NodeOverlay's Ready condition.
const (
	// ReasonReady means the overlay applies as written.
	ReasonReady = "Ready"
	// ReasonUnsupportedCapacity means the overlay adds capacity the
	// scheduler does not account for; the rest of it applies.
	ReasonUnsupportedCapacity = "UnsupportedCapacity"
	// ReasonConflict means an overlay of the same weight sets a field
	// differently for an instance type.
	ReasonConflict = "Conflict"
)
