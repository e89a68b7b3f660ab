package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	// DynamicResources declares the devices DRA drivers publish on nodes
	// of the selected instance types, for drivers or types the built-in
	// catalog does not describe (or describes otherwise): per driver,
	// the overlay of highest weight replaces what the catalog says. The
	// shape of the NodeOverlay DRA proposal; the reference's published
	// v1alpha1 NodeOverlay does not have this field yet.
	// +optional
	DynamicResources *DynamicResources `json:"dynamicResources,omitempty"`
	// Weight orders overlays selecting the same instance type: each field
	// comes from the highest weight that sets it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// DynamicResources are the devices DRA drivers publish on a node: one
// ResourceSlice template per driver, and attributes devices share
// although their values are known only on the node.
type DynamicResources struct {
	// ResourceSliceTemplates are the slices the drivers publish, one per
	// driver.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.spec.driver == x.spec.driver))",message="one template per driver: put a driver's devices in one template"
	// +listType=atomic
	// +required
	ResourceSliceTemplates []ResourceSliceTemplate `json:"resourceSliceTemplates"`
	// AttributeBindings name devices that will have the same value of
	// attributes (a PCIe root, a NUMA node) whatever the value is, so
	// that claims constraining them to match (matchAttribute) are planned
	// on these types.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	AttributeBindings []AttributeBinding `json:"attributeBindings,omitempty"`
}

// ResourceSliceTemplate is what one DRA driver publishes on a node.
type ResourceSliceTemplate struct {
	// Metadata names the template, for attributeBindings.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitzero"`
	// Spec is the slice's driver and devices, as a ResourceSlice's.
	// +required
	Spec ResourceSliceTemplateSpec `json:"spec"`
}

// TemplateMetadata names a ResourceSliceTemplate.
type TemplateMetadata struct {
	// Name of the template, unique in the overlay.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
}

// ResourceSliceTemplateSpec is a driver and the devices it publishes on
// the node (devices reachable only from the node itself).
type ResourceSliceTemplateSpec struct {
	// Driver is the DRA driver's name, as its DeviceClasses select it
	// (device.driver).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Driver string `json:"driver"`
	// Devices the driver publishes on the node.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +required
	Devices []TemplateDevice `json:"devices"`
}

// TemplateDevice is one device of a ResourceSliceTemplate, as a
// ResourceSlice's device.
type TemplateDevice struct {
	// Name of the device, a DNS label unique in the template.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Attributes of the device, which claims' selectors read.
	// +optional
	Attributes map[resourcev1.QualifiedName]resourcev1.DeviceAttribute `json:"attributes,omitempty"`
	// Capacity of the device, which claims' selectors read.
	// +optional
	Capacity map[resourcev1.QualifiedName]DeviceCapacity `json:"capacity,omitempty"`
}

// DeviceCapacity is how much of a capacity a device has.
type DeviceCapacity struct {
	// Value of the capacity.
	// +required
	Value resource.Quantity `json:"value"`
}

// AttributeBinding says that devices share the values of attributes.
type AttributeBinding struct {
	// Attributes whose values the devices share, as claims name them in
	// matchAttribute (domain/name).
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	// +required
	Attributes []resourcev1.FullyQualifiedName `json:"attributes"`
	// DeviceSelectors are the devices, by template and device name.
	// +kubebuilder:validation:MinItems=2
	// +listType=atomic
	// +required
	DeviceSelectors []DeviceSelector `json:"deviceSelectors"`
}

// DeviceSelector names a device of a ResourceSliceTemplate.
type DeviceSelector struct {
	// ResourceSliceTemplate is the template's metadata.name.
	// +required
	ResourceSliceTemplate string `json:"resourceSliceTemplate"`
	// Device is the device's name in the template.
	// +required
	Device string `json:"device"`
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
	// ReasonInvalidDynamicResources means the overlay's dynamicResources
	// break a rule the API cannot check (a binding naming no device, an
	// attribute with two values); they do not apply, the rest does.
	ReasonInvalidDynamicResources = "InvalidDynamicResources"
)
