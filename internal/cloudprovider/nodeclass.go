package cloudprovider

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// NodeClass is a NodePool's node class as the cloud resolved it: what a
// NodePool using it launches, or why it cannot launch now; the stamp its
// NodeClaims carry; and the cloud's own rules for when one of them has
// drifted. Every decision and every tool reads node classes this way, so
// nothing above the cloud reads the cloud's node class kind.
type NodeClass struct {
	// Kind is the kind of the node class object (a NodePool's
	// nodeClassRef names it), Name its name.
	Kind, Name string
	// Generation is the node class object's metadata.generation.
	Generation    int64
	InstanceTypes []*scheduling.InstanceType
	AMIs          []scheduling.AMI
	// NotReady is why the class cannot launch now (from its status); nil
	// when it can.
	NotReady *NotReady
	// Stamp is what each NodeClaim made from the class carries, to tell
	// later whether the class changed since; zero: nothing.
	Stamp Stamp
	// Drift are the cloud's drift rules for the class's NodeClaims; nil:
	// none beyond the stamp.
	Drift Drifter
	// RegistrationTaints are taints every node of the class registers with
	// beyond its NodePool's (its user data asks for them, and nothing
	// removes them): its nodes are planned with them.
	RegistrationTaints []corev1.Taint
}

// NotReady is why a node class cannot launch: the condition that says so
// and its reason, and the whole account (the condition's message).
type NotReady struct {
	Condition, Reason, Message string
}

// Stamp is a hash of what a node class's instances are made from, in an
// annotation, with the version of the hashing in another: a NodeClaim
// whose hash differs from the class's, by the same hashing, has drifted.
type Stamp struct {
	HashAnnotation, VersionAnnotation string
	Hash, Version                     string
}

// Drift says why a NodeClaim no longer matches what it would be made as
// now; the zero Drift: it matches.
type Drift struct {
	// Reason is a constant of the API (v1.Reason*Drifted, or the cloud's
	// own), the reason of the NodeClaim's Drifted condition.
	Reason  string
	Message string
}

// Drifted reports a drift.
func (d Drift) Drifted() bool { return d.Reason != "" }

// Drifter holds a cloud's drift rules for the NodeClaims of a node class.
type Drifter interface {
	// Drifted compares a NodeClaim (nil for a node without one), its
	// node's labels and its instance (nil when not known: offline, or
	// before it is read) with what the class selects now.
	Drifted(claim *v1.NodeClaim, labels map[string]string, inst *Instance) Drift
}

// Stamped reports whether a NodeClaim carries the stamp's hash by the
// same hashing, and whether that hash is the stamp's.
func (s Stamp) Stamped(claim *v1.NodeClaim) (sameHashing, same bool) {
	if s.HashAnnotation == "" || claim == nil || claim.Annotations[s.VersionAnnotation] != s.Version {
		return false, false
	}
	return true, claim.Annotations[s.HashAnnotation] == s.Hash
}
