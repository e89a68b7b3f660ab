package disruption

import (
	"fmt"
	"time"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/state/budget"
)

// BlockedReason says why a candidate is not disrupted.
type BlockedReason string

const (
	// BlockedByNode means the node itself may not go now (state.Blocker).
	BlockedByNode BlockedReason = "Blocker"
	// BlockedByBudget means the NodePool's budget allows no more now.
	BlockedByBudget BlockedReason = "Budget"
	// BlockedConsolidateAfter means consolidateAfter has not passed, or is Never.
	BlockedConsolidateAfter BlockedReason = "ConsolidateAfter"
	// BlockedPodsDoNotFit means a pod of the node would have no place.
	BlockedPodsDoNotFit BlockedReason = "PodsDoNotFit"
	// BlockedNoCheaperPlacement means the node's pods fit only on something
	// that costs as much or more.
	BlockedNoCheaperPlacement BlockedReason = "NoCheaperPlacement"
	// BlockedSpotDiversity means the only cheaper spot replacement has too few
	// instance types to stay diverse.
	BlockedSpotDiversity BlockedReason = "SpotDiversity"
	// BlockedPriceUnknown means the node's instance type or offering is not
	// among its NodePool's, so savings cannot be measured.
	BlockedPriceUnknown BlockedReason = "PriceUnknown"
	// BlockedPolicy means the NodePool's consolidationPolicy is WhenEmpty, or
	// Balanced and the savings are not worth the pods moved.
	BlockedPolicy BlockedReason = "ConsolidationPolicy"
	// BlockedInProgress means the node is already being disrupted or deleted.
	BlockedInProgress BlockedReason = "InProgress"
	// BlockedNextRound means the node could go, but another command of the same
	// method goes first this round (one command per method at a time).
	BlockedNextRound BlockedReason = "NextRound"
	// BlockedConsolidationInFlight means a consolidation is being carried out;
	// the next one is decided on the cluster it leaves.
	BlockedConsolidationInFlight BlockedReason = "ConsolidationInFlight"
	// BlockedScaleUp means pods are pending that nodewright is placing (or
	// counts as launching nodes'); consolidation waits until they run, so
	// it does not remove what they are about to use.
	BlockedScaleUp BlockedReason = "ScaleUp"
	// BlockedStatic means the node is a static NodePool's, which consolidation
	// leaves alone.
	BlockedStatic BlockedReason = "StaticNodePool"
	// BlockedNotEvaluated means single-node consolidation looked at its
	// maximum of nodes this round before this one.
	BlockedNotEvaluated BlockedReason = "NotEvaluated"
	// BlockedDriftPaused means the NodePool's drift is paused: its replacements
	// kept failing.
	BlockedDriftPaused BlockedReason = "DriftPaused"
	// BlockedDoNotRepair means the unhealthy node or its NodeClaim is
	// annotated karpenter.sh/do-not-repair=true.
	BlockedDoNotRepair BlockedReason = "DoNotRepair"
	// BlockedRepairHeld means too much of the NodePool is unhealthy at
	// once for repair to act.
	BlockedRepairHeld BlockedReason = "RepairHeld"
	// BlockedRepairUnbounded means a pod of the unhealthy node may not be
	// evicted, and neither the repair policy nor the NodeClaim's
	// terminationGracePeriod bounds how long the drain waits for it.
	BlockedRepairUnbounded BlockedReason = "RepairUnbounded"
	// BlockedStaticCannotLaunch means the node is a static NodePool's
	// whose controller cannot launch a replacement now (the NodePool or
	// its EC2NodeClass is not ready, ...): replacing the node would leave
	// the NodePool short, so it stays.
	BlockedStaticCannotLaunch BlockedReason = "StaticCannotLaunch"
	// BlockedNoNodePool means the node's NodeClaim names no NodePool (no
	// karpenter.sh/nodepool label), or one that does not exist: nothing
	// budgets or replaces it, so no method disrupts it.
	BlockedNoNodePool BlockedReason = "NoNodePool"
)

// Blocked is why a candidate node stays.
type Blocked struct {
	Node   string
	Reason BlockedReason
	// Method is the disruption that was held back.
	Method    v1.DisruptionReason
	Blocker   state.Blocker
	Allowance budget.Allowance
	// Until consolidateAfter passes; Never when it is Never.
	Until time.Time
	Never bool
	Err   error
	Pod   *scheduling.UnschedulablePod
	// Now and Replacement are hourly prices; Types the cheaper spot types.
	Now, Replacement float64
	Types, MinTypes  int
	Policy           v1.ConsolidationPolicy
	Score            float64
	// Pods counts the pending pods of a scale-up.
	Pods int
	// Limit is how many nodes single-node consolidation looks at a round.
	Limit int
	// Message is why drift is paused, what node repair found, or what a
	// cheaper replacement lacks of its minValues.
	Message string
}

func (b Blocked) String() string {
	if say, ok := blockedSays[b.Reason]; ok {
		return say(b)
	}
	return string(b.Reason)
}

// blockedSays say each reason a node stays, with its details.
var blockedSays = map[BlockedReason]func(Blocked) string{
	BlockedByNode:           func(b Blocked) string { return b.Blocker.String() },
	BlockedByBudget:         func(b Blocked) string { return b.Allowance.String() },
	BlockedConsolidateAfter: Blocked.consolidateAfter,
	BlockedPodsDoNotFit: func(b Blocked) string {
		return fmt.Sprintf("pod %s/%s would have no place: %s", b.Pod.Pod.Namespace, b.Pod.Pod.Name, b.Pod.Reason)
	},
	BlockedNoCheaperPlacement: func(b Blocked) string {
		if b.Message != "" {
			return fmt.Sprintf("no cheaper placement: the instance types cheaper than the node's $%.4f/h are fewer than minValues requires: %s", b.Now, b.Message)
		}
		if b.Replacement == 0 {
			return fmt.Sprintf("no cheaper placement: its pods need a new node, and none is cheaper than the node's $%.4f/h", b.Now)
		}
		return fmt.Sprintf("no cheaper placement: cheapest replacement $%.4f/h, now $%.4f/h", b.Replacement, b.Now)
	},
	BlockedSpotDiversity: func(b Blocked) string {
		if b.MinTypes == 0 {
			return "replacing spot nodes with cheaper spot nodes needs the SpotToSpotConsolidation feature gate (--feature-gates SpotToSpotConsolidation=true); without it a spot node is only deleted, when its pods fit elsewhere"
		}
		return fmt.Sprintf("a spot replacement would have %d cheaper spot instance types, fewer than the %d that keep it diverse", b.Types, b.MinTypes)
	},
	BlockedPriceUnknown: func(Blocked) string {
		return "the node's instance type or offering is not among its NodePool's, so savings cannot be measured"
	},
	BlockedInProgress: func(Blocked) string { return "the node is already being disrupted or deleted" },
	BlockedNoNodePool: func(b Blocked) string {
		if b.Message == "" {
			return "the node has no " + v1.LabelNodePool + " label: it is no NodePool's, so nothing repairs, replaces or consolidates it (no budget holds it, no template replaces it)"
		}
		return "its NodePool " + b.Message + " does not exist: nothing repairs, replaces or consolidates the node (no budget holds it, no template replaces it); restore the NodePool, or delete the NodeClaim"
	},
	BlockedDriftPaused: func(b Blocked) string {
		return "drift of its NodePool is paused: " + b.Message + " (see the NodePool's DriftAllowed condition)"
	},
	BlockedDoNotRepair: func(b Blocked) string {
		return b.Message + "; it is annotated " + v1.AnnotationDoNotRepair + "=true, so it is not repaired"
	},
	BlockedRepairHeld: func(b Blocked) string { return b.Message },
	BlockedRepairUnbounded: func(b Blocked) string {
		return fmt.Sprintf("%s; it is not repaired: %s, and nothing bounds how long its drain would wait (set the NodePool's spec.template.spec.terminationGracePeriod)",
			b.Message, b.Blocker)
	},
	BlockedNextRound: func(b Blocked) string {
		return fmt.Sprintf("it could go (%s), but another %s command goes first; it is considered again next round", b.Method, b.Method)
	},
	BlockedConsolidationInFlight: func(Blocked) string {
		return "a consolidation is being carried out; consolidation looks at this node again once it is done"
	},
	BlockedScaleUp: func(b Blocked) string {
		return fmt.Sprintf("%d pending pods are being placed; consolidation waits until they run", b.Pods)
	},
	BlockedStatic: func(Blocked) string {
		return "its NodePool is static (spec.replicas): consolidation leaves its nodes alone; they are replaced when drifted or expired, and removed when replicas is lowered"
	},
	BlockedStaticCannotLaunch: func(b Blocked) string {
		return fmt.Sprintf("it is not replaced (%s): its static NodePool cannot launch a replacement now (%s); it stays until the NodePool can", b.Method, b.Message)
	},
	BlockedNotEvaluated: func(b Blocked) string {
		return fmt.Sprintf("not evaluated this round: single-node consolidation looks at %d nodes a round, the cheapest to disrupt first", b.Limit)
	},
	BlockedPolicy: func(b Blocked) string {
		if b.Policy == v1.ConsolidationPolicyWhenEmpty {
			return "consolidationPolicy is WhenEmpty: only empty nodes are removed"
		}
		return fmt.Sprintf("consolidationPolicy is Balanced and the command scores %.2f (share of the NodePool's cost saved over share of its disruption cost taken: its nodes and pods moved; it needs %.2f)", b.Score, BalancedThreshold)
	},
}

// Passing reports the reasons a node passes through as a matter of course, not
// reported on it. Its own events tell how a disruption in progress goes;
// every node of a scale-up is not initialized for a while (its
// NodeClaim's Initialized condition says why) and single-node
// consolidation leaves most nodes for a later round. Told on each
// NodeClaim, these were most of nodewright's events in a scale-up and
// said nothing the user could act on.
func (b Blocked) Passing() bool {
	return b.Reason == BlockedInProgress || b.Reason == BlockedNotEvaluated ||
		b.Reason == BlockedByNode && b.Blocker.Reason == state.BlockNotInitialized
}

// SameAs is what a node's report is told apart by: its message, but
// for the reasons whose details move while nothing changes for the node
// (consolidateAfter's deadline with every pod event, the pending pods of
// a scale-up or nominated to the node, a budget's or a
// PodDisruptionBudget's count), only the reason: each node is told once
// that it waits for them, not once a round.
func (b Blocked) SameAs(msg string) string {
	switch {
	case b.Reason == BlockedConsolidateAfter:
		return fmt.Sprint(b.Reason, b.Never, b.Err != nil)
	case b.Reason == BlockedScaleUp:
		return string(b.Reason)
	case b.Reason == BlockedByBudget:
		return string(b.Reason) + string(b.Method)
	case b.Reason == BlockedByNode && (b.Blocker.Reason == state.BlockNominated || b.Blocker.Reason == state.BlockPDB):
		return string(b.Reason) + string(b.Blocker.Reason) + b.Blocker.PDB
	}
	return msg
}

func (b Blocked) consolidateAfter() string {
	switch {
	case b.Err != nil:
		return fmt.Sprintf("consolidateAfter cannot be read: %v", b.Err)
	case b.Never:
		return "consolidateAfter is Never: consolidation is off"
	}
	return fmt.Sprintf("consolidateAfter has not passed since the node's last pod event or initialization (until %s)", b.Until.UTC().Format(time.RFC3339))
}
