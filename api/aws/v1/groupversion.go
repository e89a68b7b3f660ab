// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass.
//
// The group, version, kind, resource names and JSON shape match Karpenter's
// AWS provider, so its manifests mean the same thing here.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of EC2NodeClass.
const Group = "karpenter.k8s.aws"

// SchemeGroupVersion is karpenter.k8s.aws/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}

// AddToScheme registers EC2NodeClass with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &EC2NodeClass{}, &EC2NodeClassList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// Labels and well-known names of the AWS provider.
const (
	LabelEC2NodeClass = Group + "/ec2nodeclass"
	// LabelZoneID is the zone's ID (use1-az1), stable across accounts.
	LabelZoneID = "topology.k8s.aws/zone-id"
	// LabelCapacityReservationID is the capacity reservation a reserved
	// node runs in.
	LabelCapacityReservationID = Group + "/capacity-reservation-id"
	// LabelCapacityReservationInterruptible is "true" on a node launched
	// into an interruptible capacity reservation.
	LabelCapacityReservationInterruptible = Group + "/capacity-reservation-interruptible"
	// LabelPlacementGroupID is the placement group a node runs in, and
	// LabelPlacementGroupPartition its partition in a partition group.
	LabelPlacementGroupID        = Group + "/placement-group-id"
	LabelPlacementGroupPartition = Group + "/placement-group-partition"
	// TerminationFinalizer holds a deleted EC2NodeClass until its
	// NodeClaims are gone and its launch templates and managed instance
	// profile are deleted.
	TerminationFinalizer = Group + "/termination"
)
