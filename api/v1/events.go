package v1

// Reasons of the events recorded on NodeClaims as they launch and live,
// besides the reasons of their conditions.
const (
	// ReasonInsufficientCapacity means no offering of the NodeClaim had
	// capacity; it is deleted so that the provisioner looks elsewhere.
	ReasonInsufficientCapacity = "InsufficientCapacity"
	// ReasonLaunchTimeout means the NodeClaim was not launched in time;
	// it is deleted.
	ReasonLaunchTimeout = "LaunchTimeout"
	// ReasonInstanceTerminated means the NodeClaim's instance no longer
	// exists; it is deleted.
	ReasonInstanceTerminated = "InstanceTerminated"
)

// Reasons of the events recorded on pending pods.
const (
	// ReasonNominated means the pod should schedule on a node, or on a
	// NodeClaim that is launching.
	ReasonNominated = "Nominated"
	// ReasonFailedScheduling means no NodePool can launch a node for the
	// pod.
	ReasonFailedScheduling = "FailedScheduling"
	// ReasonNodePoolFallback means the pod goes to a NodePool of less
	// weight because those of more weight cannot take it now.
	ReasonNodePoolFallback = "NodePoolFallback"
)

// Reasons of the events recorded while a node drains, on its NodeClaim
// (on the node when it has none), and when it is gone.
const (
	// ReasonDrainWaiting means a pod marked karpenter.sh/do-not-disrupt
	// is not evicted before the terminationGracePeriod deadline.
	ReasonDrainWaiting = "DrainWaiting"
	// ReasonDrainBlocked means a PodDisruptionBudget forbids evicting a
	// pod now; the eviction is retried.
	ReasonDrainBlocked = "DrainBlocked"
	// ReasonNodeDeleted means the node was deleted and drained; its
	// NodeClaim is deleted.
	ReasonNodeDeleted = "NodeDeleted"
)

// Reasons of the events of disruption, recorded on the NodeClaims and
// nodes it concerns.
const (
	// ReasonDisruptionBlocked says why a candidate is not disrupted.
	ReasonDisruptionBlocked = "DisruptionBlocked"
	// ReasonDisruptionLaunching means the node is tainted and its
	// replacements launch.
	ReasonDisruptionLaunching = "DisruptionLaunching"
	// ReasonDisruptionReplacement, on a NodeClaim, names the nodes it
	// replaces.
	ReasonDisruptionReplacement = "DisruptionReplacement"
	// ReasonDisruptionTerminating means the node is being terminated.
	ReasonDisruptionTerminating = "DisruptionTerminating"
	// ReasonDisruptionCancelled means the disruption no longer held when
	// it was checked again; nothing was done.
	ReasonDisruptionCancelled = "DisruptionCancelled"
	// ReasonDisruptionRolledBack means the disruption was undone and the
	// node stays.
	ReasonDisruptionRolledBack = "DisruptionRolledBack"
)

// Reasons of the events of node repair, recorded on an unhealthy node and
// its NodeClaim.
const (
	// ReasonNodeUnhealthy means the node is unhealthy and is replaced
	// unless it recovers in time.
	ReasonNodeUnhealthy = "NodeUnhealthy"
	// ReasonNodeRepairBlocked means the node is due for replacement but
	// too many of its NodePool's nodes are unhealthy.
	ReasonNodeRepairBlocked = "NodeRepairBlocked"
	// ReasonNodeRepair means the node is being replaced, or rebooted.
	ReasonNodeRepair = "NodeRepair"
	// ReasonConsolidationApproved, on a node and its NodeClaim (a command
	// of one node) or on a NodePool (of several), gives the score by which
	// the Balanced policy approved a consolidation.
	ReasonConsolidationApproved = "ConsolidationApproved"
	// ReasonNodeRebooting, ReasonNodeRebooted and ReasonNodeRebootFailed
	// tell how a reboot node repair chose goes.
	ReasonNodeRebooting    = "NodeRebooting"
	ReasonNodeRebooted     = "NodeRebooted"
	ReasonNodeRebootFailed = "NodeRebootFailed"
)

// Reasons of the events recorded on static NodePools (spec.replicas) and
// their NodeClaims.
const (
	// ReasonStaticScaledUp means NodeClaims are launched to reach the
	// replicas.
	ReasonStaticScaledUp = "StaticScaledUp"
	// ReasonStaticScaledDown means NodeClaims are deleted to come down to
	// the replicas.
	ReasonStaticScaledDown = "StaticScaledDown"
	// ReasonStaticReplicasShort means the NodePool has fewer NodeClaims
	// than its replicas and cannot launch more now.
	ReasonStaticReplicasShort = "StaticReplicasShort"
)
