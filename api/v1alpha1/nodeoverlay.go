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
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)",message="a requirement with operator NotIn needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",message="a requirement with operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",message="operators Gt, Lt, Gte and Lte take exactly one whole number of 0 or more, such as [\"4\"]"
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// Price replaces the hourly price of the selected offerings: a decimal
	// number such as "0.10", in the pricing's currency.
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// PriceAdjustment changes the hourly price of the selected offerings:
	// by an amount ("+0.05", "-0.02") or a percentage ("+10%", or "-15%"
	// down to "-100%").
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Capacity adds extended resources (hugepages-2Mi, a device plugin's
	// resource) to the selected instance types; it cannot change cpu,
	// memory, ephemeral-storage or pods.
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",message="capacity adds extended resources; cpu, memory, ephemeral-storage and pods come from the instance type"
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
type NodeSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values for In and NotIn (any number), Gt, Lt, Gte and Lte (one
	// integer).
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
