// Package v1beta1 holds the autoscaling.x-k8s.io/v1beta1 API:
// CapacityBuffer, the Kubernetes autoscalers' shared way to ask for spare
// capacity ahead of pods.
//
// The group, version, kind, resource name and JSON shape match the
// CapacityBuffer that cluster-autoscaler defines and Karpenter v1.15
// reads, so buffers written for either mean the same thing here.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of CapacityBuffers.
const Group = "autoscaling.x-k8s.io"

// SchemeGroupVersion is autoscaling.x-k8s.io/v1beta1.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1beta1"}

// AddToScheme registers CapacityBuffer with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &CapacityBuffer{}, &CapacityBufferList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
