package scheduling

import (
	corev1 "k8s.io/api/core/v1"
)

// MaxInstanceTypes is the most instance types a NodeClaim lists.
const MaxInstanceTypes = 600

// FallbackTypes is how many instance types a NodeClaim lists at least when
// that many fit: those it was sized with, then the cheapest others that
// fit, for the launch to fall back on.
const FallbackTypes = 60

// Plan is the outcome of a scheduling decision.
type Plan struct {
	// NodeClaims to create, in creation order.
	NodeClaims []*PlannedNodeClaim
	// Existing maps existing nodes and in-flight NodeClaims to the pending
	// pods that fit on them, in node order.
	Existing []*ExistingPlacement
	// Unschedulable pods, with the reason, in placement order.
	Unschedulable []*UnschedulablePod
	// Order lists the placed pods in the order they were placed.
	Order []*corev1.Pod
	// Fallbacks are the pods placed on a new NodeClaim of a NodePool
	// after NodePools of more weight that admit them could not take
	// them (no capacity, limits reached).
	Fallbacks []*Fallback
	// PendingByZone counts the pods to place (but those Ignored) by the
	// zone their node selector, required node affinity and volumes
	// leave them: a zone's name, ZoneFlexible or ZoneNone.
	PendingByZone map[string]int
}

// Ignored counts the unschedulable pods no NodePool was tried for.
func (p *Plan) Ignored() int {
	n := 0
	for _, u := range p.Unschedulable {
		if u.Ignored {
			n++
		}
	}
	return n
}

// Fallback is a pod a NodePool of more weight admits but could not take.
type Fallback struct {
	Pod *corev1.Pod
	// NodePool took the pod; Passed are the NodePools before it that
	// admit the pod, with why they could not take it.
	NodePool string
	Passed   []PassedNodePool
}

// PassedNodePool is a NodePool a pod fell back from, and why.
type PassedNodePool struct {
	Name   string
	Weight int32
	Reason string
}

// PlannedNodeClaim is a NodeClaim the plan launches.
type PlannedNodeClaim struct {
	// Name is the planned node's placeholder hostname, unique in the plan.
	Name     string
	NodePool string
	// Requirements include the instance types, cheapest first.
	Requirements Requirements
	// InstanceTypes that fit every pod, cheapest first, at most
	// MaxInstanceTypes.
	InstanceTypes []*InstanceType
	// Requests are the pods' requests plus DaemonSet overhead.
	Requests Resources
	// DaemonOverhead is the part of Requests that DaemonSet pods take.
	DaemonOverhead Resources
	Pods           []*corev1.Pod
	// InstanceType and Offering are the cheapest choice.
	InstanceType *InstanceType
	Offering     Offering
	// MinValuesRelaxed says which keys the NodeClaim asks fewer values
	// of than its NodePool's minValues, and how many
	// (Policy.RelaxMinValues; Requirements hold them); "" when none.
	MinValuesRelaxed string
}

// ExistingPlacement lists the pending pods planned onto an existing node.
type ExistingPlacement struct {
	Node string
	Pods []*corev1.Pod
}

// UnschedulablePod is a pod the plan cannot place, and why.
type UnschedulablePod struct {
	Pod    *corev1.Pod
	Reason string
	// Refusals say, NodePool by NodePool, why none took the pod.
	Refusals []Refusal
	// Ignored: the pod itself keeps it off every node (a volume claim it
	// cannot use, a term that cannot be read), so no NodePool was tried.
	Ignored bool
	// Claims: what keeps it off every node are its resource claims (DRA).
	Claims bool
}

// Refusal is why a NodePool takes no new NodeClaim for a pod: Reason for
// people, and, when it is one of these, what stands in the way, typed.
type Refusal struct {
	NodePool string
	Reason   string
	// Conflict is a label the NodePool requires (or lacks) that the pod
	// selects otherwise.
	Conflict *Incompatibility
	// Taint is a NodePool taint the pod does not tolerate.
	Taint *corev1.Taint
	// TooLarge: no instance type the NodePool admits fits the pod with
	// its DaemonSets.
	TooLarge *Shortfall
	// NoAMI: instance types would fit, but the EC2NodeClass has no AMI
	// for them; LimitReached: the NodePool's limits; Static: a static
	// NodePool; HostPort: a DaemonSet's pods hold the pod's host port.
	NoAMI, LimitReached, Static, HostPort bool
}

// Shortfall is a pod's need (with DaemonSets) beside the most any of a
// NodePool's instance types allows, resource by resource.
type Shortfall struct {
	Need, Largest Resources
	// DaemonSets is the part of Need the NodePool's DaemonSets take.
	DaemonSets Resources
}

// Price is the hourly price of the new NodeClaims.
func (p *Plan) Price() float64 {
	total := 0.0
	for _, c := range p.NodeClaims {
		total += c.Offering.Price
	}
	return total
}
