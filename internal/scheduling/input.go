package scheduling

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Input is everything a scheduling decision depends on.
type Input struct {
	NodePools []*NodePool
	// Nodes are the existing nodes and the in-flight NodeClaims, with the
	// pods bound to them.
	Nodes []*Node
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// DaemonSets add their pods' requests to every new node they would
	// run on.
	DaemonSets []*appsv1.DaemonSet
	// Namespaces are the cluster's namespaces with their labels (each has
	// kubernetes.io/metadata.name): pod affinity terms' namespace
	// selectors select among them.
	Namespaces map[string]map[string]string
	// Volumes are what the volumes of pods (pending or moving) require of
	// their node.
	Volumes map[*corev1.Pod]*VolumeTopology
	// Devices are what the resource claims of pods (pending or moving)
	// require of their node.
	Devices map[*corev1.Pod]*DeviceDemand
	// DefaultSpread are the constraints pods that set none are spread by.
	DefaultSpread SpreadDefaults
	// Policy is how strictly NodePools' minValues and pods' preferences
	// are read.
	Policy Policy
}

// Policy is how strictly a decision reads what NodePools and pods ask
// for beyond their requirements: Karpenter's --min-values-policy and
// --preference-policy. The zero value is their defaults (Strict,
// Respect).
type Policy struct {
	// RelaxMinValues (BestEffort) opens a NodeClaim on the instance types
	// that fit when fewer distinct values remain than a NodePool's
	// minValues asks, its minValues lowered to what they offer; Strict
	// opens none.
	RelaxMinValues bool
	// IgnorePreferences (Ignore) reads pods by their required terms
	// alone: preferred node affinity, preferred pod (anti-)affinity and
	// spread constraints that are not DoNotSchedule do not count, nor do
	// other pods' preferred anti-affinity.
	IgnorePreferences bool
}

// Policy names, as Karpenter's settings spell them.
const (
	MinValuesStrict     = "Strict"
	MinValuesBestEffort = "BestEffort"
	PreferencesRespect  = "Respect"
	PreferencesIgnore   = "Ignore"
)

// ParsePolicy reads the two settings as Karpenter spells them; "" is
// the default.
func ParsePolicy(minValues, preferences string) (Policy, error) {
	var p Policy
	switch minValues {
	case "", MinValuesStrict:
	case MinValuesBestEffort:
		p.RelaxMinValues = true
	default:
		return p, fmt.Errorf("min values policy %q: want %s or %s", minValues, MinValuesStrict, MinValuesBestEffort)
	}
	switch preferences {
	case "", PreferencesRespect:
	case PreferencesIgnore:
		p.IgnorePreferences = true
	default:
		return p, fmt.Errorf("preference policy %q: want %s or %s", preferences, PreferencesRespect, PreferencesIgnore)
	}
	return p, nil
}

// Names are the policy's settings as Karpenter spells them.
func (p Policy) Names() (minValues, preferences string) {
	minValues, preferences = MinValuesStrict, PreferencesRespect
	if p.RelaxMinValues {
		minValues = MinValuesBestEffort
	}
	if p.IgnorePreferences {
		preferences = PreferencesIgnore
	}
	return minValues, preferences
}

// VolumeTopology is what a pod's persistent volumes require of its node:
// the topology of the volumes it is bound to, and where the volumes it
// has not got yet can be provisioned.
type VolumeTopology struct {
	// Terms has one list of alternatives per volume: the node must meet
	// one alternative of each.
	Terms [][]Requirements
	// Refused says why the pod cannot be placed at all (a claim that does
	// not exist, a volume no node can reach); empty otherwise.
	Refused string
	// Attach are the volumes the pod attaches to its node, by CSI driver:
	// they count against the node's attach limit for the driver.
	Attach map[string][]string
}

// NodePool is a NodePool as the solver sees it.
type NodePool struct {
	Name   string
	Weight int32
	// Static marks a static NodePool (spec.replicas): pods use its nodes,
	// but it opens no NodeClaim for them (Static opens its replicas).
	Static bool
	// Requirements are the template's requirements and labels.
	Requirements  Requirements
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// UserDataTaints are those of Taints the node class's user data
	// registers every node with (for messages).
	UserDataTaints []corev1.Taint
	// Limits cap the pool's total capacity ("nodes" counts nodes); nil
	// means unlimited.
	Limits corev1.ResourceList
	// Usage is the capacity of the pool's existing nodes, with "nodes"
	// their count.
	Usage corev1.ResourceList
	// NodeClass names the EC2NodeClass, for messages.
	NodeClass string
	// InstanceTypes the pool may launch, before AMI filtering.
	InstanceTypes []*InstanceType
	// AMIs of the node class; an instance type needs one whose
	// requirements it meets.
	AMIs []AMI
}

// AMI is a machine image and the nodes it can boot.
type AMI struct {
	ID           string
	Requirements Requirements
}

// Node is an existing node, or an in-flight NodeClaim not yet registered.
type Node struct {
	Name string
	// Requirements describe its labels: one value each for a node, the
	// NodeClaim's requirements for an in-flight claim.
	Requirements Requirements
	Taints       []corev1.Taint
	Allocatable  Resources
	Pods         []*corev1.Pod
	// Launching marks a NodeClaim whose instance is not launched yet: if
	// it is pinned to reserved capacity, it will take a place in a
	// reservation that the reservation's count does not show yet.
	Launching bool
	// Starting orders nodes that do not run pods yet after those that do:
	// 1 for a node still initializing, 2 for a NodeClaim not yet a node.
	// Pods fill nodes in this order (then by name): the sooner a pod's
	// node is ready, the sooner it runs.
	Starting int
	// VolumeLimits are how many volumes of each CSI driver the node can
	// attach (its CSINode's allocatable count), and Attached the volumes
	// of each its pods use now. A pod whose volumes would pass a limit
	// does not go to the node.
	VolumeLimits map[string]int
	Attached     map[string][]string
	// DevicesAllocated are the devices the resource claims allocated on
	// the node take (Allocatable counts the devices its DRA drivers
	// publish).
	DevicesAllocated Resources
}

// NodeFromObject converts a Node object and the pods bound to it.
func NodeFromObject(node *corev1.Node, pods []*corev1.Pod) *Node {
	alloc, _ := ParseResources(node.Status.Allocatable)
	labels := map[string]string{LabelHostname: node.Name}
	for k, v := range node.Labels {
		labels[k] = v
	}
	return &Node{
		Name:         node.Name,
		Requirements: LabelRequirements(labels),
		Taints:       node.Spec.Taints,
		Allocatable:  alloc,
		Pods:         pods,
	}
}
