package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBuffer asks for room for a number of pods that do not exist
// yet: nodewright keeps enough nodes for that many copies of a pod
// template (or of a workload's pods) as if they were pending, so pods
// that come later start at once on nodes already there. Real pods use the
// room first; the buffer is refilled behind them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,categories=autoscaling,shortName=cb
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="The provisioning strategy."
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The PodTemplate the buffer's pods are made from."
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="How many pods' room the buffer keeps."
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="The types of the buffer's conditions."
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="Their statuses."
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="Their reasons."
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="How long ago the buffer was created."
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// +optional
	Status CapacityBufferStatus `json:"status,omitzero"`
}

// CapacityBufferList is a list of CapacityBuffers.
//
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}

// ProvisioningStrategyActiveCapacity keeps the buffer's room on running
// nodes; the only strategy served.
const ProvisioningStrategyActiveCapacity = "buffer.x-k8s.io/active-capacity"

// CapacityBufferSpec says what room to keep: copies of a PodTemplate
// (with replicas or limits), or of a workload's pods (a number of them, a
// share of the workload's replicas, or both).
//
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="If podTemplateRef is set, replicas or limits must also be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="You must define either PodTemplateRef or ScalableRef, but not both"
type CapacityBufferSpec struct {
	// ProvisioningStrategy is how the room is kept.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// PodTemplateRef names a PodTemplate of the buffer's namespace: the
	// pod the buffer keeps room for.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// ScalableRef names a Deployment, StatefulSet or ReplicaSet of the
	// buffer's namespace: the buffer keeps room for more of its pods.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// Replicas is how many pods the buffer keeps room for.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Percentage of the scalable workload's replicas the buffer keeps
	// room for (rounded up, at least one); with replicas, the larger.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Limits cap the resources the buffer's pods request together: no
	// more pods than fit in them.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// LocalObjectRef names an object of the buffer's namespace.
type LocalObjectRef struct {
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ScalableRef names a workload of the buffer's namespace.
type ScalableRef struct {
	// APIGroup of the workload: apps.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind of the workload: Deployment, StatefulSet or ReplicaSet.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CapacityBufferStatus is what the buffer was resolved to.
type CapacityBufferStatus struct {
	// PodTemplateRef names the PodTemplate whose pods the buffer keeps
	// room for (for a scalableRef, one nodewright keeps in step with the
	// workload's template).
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is how many pods the buffer keeps room for.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the generation of the PodTemplate resolved.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// ProvisioningStrategy is the strategy in effect.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of CapacityBuffers.
const (
	// ConditionReadyForProvisioning is True once the buffer's pod and
	// replicas are resolved.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning says whether the buffer's pods fit the nodes
	// there, or needed new ones.
	ConditionProvisioning = "Provisioning"
)

// Condition reasons of CapacityBuffers.
const (
	ReasonResolved            = "Resolved"
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	ReasonScalableRefNotFound = "ScalableRefNotFound"
	ReasonResolutionFailed    = "ResolutionFailed"
	ReasonFitsExisting        = "FitsExistingCapacity"
	ReasonRequiresNew         = "RequiresNewCapacity"
	ReasonNotReady            = "NotReadyForProvisioning"
	ReasonBufferEmpty         = "BufferEmpty"
)

// Annotations of the pods that stand for a buffer's room in decisions
// (never created in the cluster).
const (
	AnnotationVirtualPod      = "karpenter.sh/capacity-buffer-fake-pod"
	AnnotationBufferName      = "karpenter.sh/capacity-buffer-name"
	AnnotationBufferNamespace = "karpenter.sh/capacity-buffer-namespace"
)
