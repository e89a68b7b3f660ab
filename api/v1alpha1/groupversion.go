// Package v1alpha1 holds the karpenter.sh/v1alpha1 API: NodeOverlay.
//
// The group, version, kind, resource name and JSON shape match Karpenter's
// v1alpha1 NodeOverlay, so overlays written for Karpenter mean the same
// thing here.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is karpenter.sh/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: "karpenter.sh", Version: "v1alpha1"}

// AddToScheme registers NodeOverlay with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &NodeOverlay{}, &NodeOverlayList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
