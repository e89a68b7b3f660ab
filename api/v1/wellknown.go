package v1

import corev1 "k8s.io/api/core/v1"

// Labels nodewright sets or reads on nodes and NodeClaims.
const (
	LabelNodePool        = Group + "/nodepool"
	LabelCapacityType    = Group + "/capacity-type"
	LabelRegistered      = Group + "/registered"
	LabelInitialized     = Group + "/initialized"
	LabelDoNotSyncTaints = Group + "/do-not-sync-taints"
)

// Capacity types, the values of LabelCapacityType.
const (
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeSpot     = "spot"
	CapacityTypeReserved = "reserved"
)

// Taints nodewright manages.
const (
	// TaintKeyUnregistered must be on every launched node when it registers;
	// it is removed once the node is matched to its NodeClaim.
	TaintKeyUnregistered = Group + "/unregistered"
	// TaintKeyDisrupted marks a node that is being disrupted or drained.
	TaintKeyDisrupted = Group + "/disrupted"
	// TaintKeyRebooting fences a node node repair reboots, from the
	// drain before the reboot until the node has booted again.
	TaintKeyRebooting = Group + "/rebooting"
)

// Annotations and the finalizer.
const (
	AnnotationDoNotDisrupt = Group + "/do-not-disrupt"
	// AnnotationRequestedDRADrivers lists, comma-separated, the DRA
	// drivers whose devices a NodeClaim was launched for: it is not
	// initialized before each has published its node's devices.
	AnnotationRequestedDRADrivers = Group + "/requested-dra-drivers"
	// AnnotationMinValuesRelaxed is "true" on a NodeClaim opened with
	// fewer instance-type values than its NodePool's minValues asks
	// (--min-values-policy=BestEffort), "false" on the others.
	AnnotationMinValuesRelaxed = Group + "/nodeclaim-min-values-relaxed"
	// AnnotationDoNotRepair "true" on a Node or its NodeClaim keeps node
	// repair from replacing it, however long it is unhealthy.
	AnnotationDoNotRepair = Group + "/do-not-repair"
	// AnnotationDisruptionCost on a pod weighs how much moving it costs
	// (an int32; higher keeps its node longer).
	AnnotationDisruptionCost = Group + "/disruption-cost"
	// AnnotationPodDeletionCost is the ReplicaSet controller's annotation:
	// a ReplicaSet scaling down deletes its pods of lowest cost first.
	AnnotationPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost"
	// AnnotationTerminationTimestamp on a NodeClaim (RFC 3339) is when the
	// drain of its node stops waiting for pods: node repair sets it to a
	// time past, so a node whose pods cannot run is not held by them.
	AnnotationTerminationTimestamp = Group + "/nodeclaim-termination-timestamp"
	TerminationFinalizer           = Group + "/termination"
	// AnnotationRebootTerminationGracePeriod on a NodeClaim node repair
	// reboots (a Go duration) bounds the drain before the reboot: pods
	// still there once it passes ride the reboot out. Without it the drain
	// waits for every pod.
	AnnotationRebootTerminationGracePeriod = Group + "/reboot-termination-grace-period"
	// AnnotationRebootPreBootID on a NodeClaim is its node's boot ID
	// before the reboot, written before the reboot is issued: a changed
	// boot ID means the reboot happened, and it is not issued again.
	AnnotationRebootPreBootID = Group + "/reboot-pre-boot-id"
	// AnnotationReboots on a NodeClaim are the times (RFC 3339, comma
	// separated) node repair requested a reboot of its node within the
	// last day: the history that makes repair replace a node it rebooted
	// twice that day, kept on the NodeClaim so a restart keeps it.
	AnnotationReboots = "nodewright.dev/reboots"
)

// Requirement operators beyond Kubernetes' own: the integer value is at
// least (Gte) or at most (Lte) the one given. NodePools and NodeClaims
// accept them; pods cannot use them.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)
