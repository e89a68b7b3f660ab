// Package cloudprovider is the boundary between nodewright's controllers
// and a cloud: the instance a NodeClaim becomes, and the typed errors the
// controllers act on. Cloud SDK errors are translated into these only at
// the provider.
package cloudprovider

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Instance is what the cloud launched for a NodeClaim.
type Instance struct {
	// ProviderID is the node's spec.providerID: aws:///<zone>/<instance-id>.
	ProviderID   string
	InstanceID   string
	InstanceType string
	Zone         string
	CapacityType string
	ImageID      string
	// State is the cloud's instance state (running, terminated, ...).
	State       string
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	// Labels the node will carry: instance type, zone, capacity type and
	// the instance type's labels.
	Labels map[string]string
	// NodeClaim and NodePool are read from the instance's tags; NodeClaim
	// is "" for an instance of a launch batch whose tag does not name
	// its NodeClaim yet.
	NodeClaim, NodePool string
	// Name is the instance's Name tag.
	Name string
	// LaunchBatch is the launch batch the instance was launched in
	// (AnnotationLaunchBatch's ID), if any.
	LaunchBatch string
	LaunchTime  time.Time
	// SubnetID and SecurityGroupIDs are the instance's network placement.
	SubnetID         string
	SecurityGroupIDs []string
	// CapacityReservationID is the reservation the instance runs in; ""
	// when none.
	CapacityReservationID string
	// Foreign says the instance lacks the provider's ownership tags:
	// nodewright did not launch it, and acts on neither it nor its node.
	Foreign bool
}

// InsufficientCapacityError says no offering the NodeClaim allows has
// capacity now; the NodeClaim is deleted and the scheduler tries others.
type InsufficientCapacityError struct{ Message string }

func (e *InsufficientCapacityError) Error() string { return "insufficient capacity: " + e.Message }

// IsInsufficientCapacity reports an InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// NotFoundError says the instance does not exist (or is terminated).
type NotFoundError struct{ Message string }

func (e *NotFoundError) Error() string { return "not found: " + e.Message }

// IsNotFound reports a NotFoundError.
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}

// NodeClassNotReadyError says the node class cannot launch yet, and why.
type NodeClassNotReadyError struct{ Message string }

func (e *NodeClassNotReadyError) Error() string { return "node class not ready: " + e.Message }

// IsNodeClassNotReady reports a NodeClassNotReadyError.
func IsNodeClassNotReady(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// RetryLaterError says the call waits for the provider's own request
// budget (nothing was sent): the caller tries again After, without
// counting it a failure.
type RetryLaterError struct {
	Message string
	After   time.Duration
}

func (e *RetryLaterError) Error() string { return "retry later: " + e.Message }

// IsRetryLater reports a RetryLaterError.
func IsRetryLater(err error) bool {
	_, ok := RetryAfter(err)
	return ok
}

// RetryAfter is when a RetryLaterError says to try again; false for any
// other error.
func RetryAfter(err error) (time.Duration, bool) {
	var e *RetryLaterError
	if errors.As(err, &e) {
		return e.After, true
	}
	return 0, false
}

// NotOwnedError says the instance is not one the provider launched (it
// lacks the provider's ownership tags); it is left alone.
type NotOwnedError struct{ Message string }

func (e *NotOwnedError) Error() string { return "not nodewright's: " + e.Message }

// IsNotOwned reports a NotOwnedError.
func IsNotOwned(err error) bool {
	var e *NotOwnedError
	return errors.As(err, &e)
}
