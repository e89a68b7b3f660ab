package state

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
)

// SkipReason says why a NodePool launches nothing now.
type SkipReason string

// Why a NodePool launches nothing now: it is being deleted, names no node
// class or one that does not exist or is not ready, backs off after
// registration timeouts, or is not ready for a cause of its own.
const (
	SkipDeleting            SkipReason = "Deleting"
	SkipNoNodeClassRef      SkipReason = "NoNodeClassRef"
	SkipNodeClassNotFound   SkipReason = "NodeClassNotFound"
	SkipNodeClassNotReady   SkipReason = "NodeClassNotReady"
	SkipRegistrationBackoff SkipReason = "RegistrationBackoff"
	SkipNotReady            SkipReason = "NotReady"
	SkipValidationFailed    SkipReason = "ValidationFailed"
)

// SkippedNodePool is a NodePool that launches nothing now, and why.
type SkippedNodePool struct {
	NodePool string
	// NodeClassKind and NodeClass are the NodePool's nodeClassRef.
	NodeClassKind, NodeClass string
	Reason                   SkipReason
	// Detail is the class's own account of why it is not ready, and
	// Condition and ConditionReason the status condition that gives it.
	Detail                     string
	Condition, ConditionReason string
	// Until and Failures describe a registration backoff.
	Until    time.Time
	Failures int
}

func (s SkippedNodePool) String() string {
	switch s.Reason {
	case SkipDeleting:
		return fmt.Sprintf("NodePool %s is being deleted", s.NodePool)
	case SkipNoNodeClassRef:
		return fmt.Sprintf("NodePool %s has no nodeClassRef; it launches nothing", s.NodePool)
	case SkipNodeClassNotFound:
		return fmt.Sprintf("NodePool %s: %s %s does not exist", s.NodePool, s.NodeClassKind, s.NodeClass)
	case SkipNodeClassNotReady:
		if s.Condition != "" {
			// Its status says why at length, once: point at it.
			return fmt.Sprintf("NodePool %s: %s %s is not ready (%s=False, %s; kubectl describe %s %s says why and how to fix it)",
				s.NodePool, s.NodeClassKind, s.NodeClass, s.Condition, s.ConditionReason, strings.ToLower(s.NodeClassKind), s.NodeClass)
		}
		return fmt.Sprintf("NodePool %s: %s %s %s", s.NodePool, s.NodeClassKind, s.NodeClass, s.Detail)
	case SkipNotReady:
		return fmt.Sprintf("NodePool %s is not ready (%s)", s.NodePool, s.Detail)
	case SkipValidationFailed:
		return fmt.Sprintf("NodePool %s is invalid (ValidationSucceeded=False): %s", s.NodePool, s.Detail)
	case SkipRegistrationBackoff:
		return fmt.Sprintf("NodePool %s: launches back off until %s after %d registration timeout(s) in a row (see its NodeRegistrationHealthy condition)",
			s.NodePool, s.Until.UTC().Format(time.RFC3339), s.Failures)
	}
	return fmt.Sprintf("NodePool %s: %s", s.NodePool, s.Reason)
}

// ReasonFor is why a pod the plan left without a place has none, as its
// event says: the planner's reason, then why NodePools launch nothing (in
// place of the planner's when no NodePool could be tried at all). The
// controller, simulate and doctor all say it this way.
func (s *Snapshot) ReasonFor(planned string) string {
	skipped := s.SkippedSummary()
	switch {
	case skipped != "" && len(s.NodePools) == 0:
		return skipped
	case skipped != "":
		return planned + "; " + skipped
	}
	return planned
}

// SkippedSummary joins why NodePools launch nothing, for a pod's event.
func (s *Snapshot) SkippedSummary() string {
	parts := make([]string, 0, len(s.Skipped))
	for _, sk := range s.Skipped {
		parts = append(parts, sk.String())
	}
	return strings.Join(parts, "; ")
}

// launchable returns the NodePool's resolved class, or why it launches
// nothing now.
func launchable(np *v1.NodePool, opts Options) (*SkippedNodePool, *cloudprovider.NodeClass) {
	skip := func(r SkipReason, class, detail string) (*SkippedNodePool, *cloudprovider.NodeClass) {
		sk := &SkippedNodePool{NodePool: np.Name, NodeClass: class, Reason: r, Detail: detail}
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			sk.NodeClassKind = ref.Kind
		}
		return sk, nil
	}
	if !np.DeletionTimestamp.IsZero() {
		return skip(SkipDeleting, "", "")
	}
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return skip(SkipNoNodeClassRef, "", "")
	}
	if err := np.RuntimeValidate(); err != nil {
		return skip(SkipValidationFailed, ref.Name, err.Error())
	}
	b, known := opts.Backoff[np.Name]
	if rb := np.Status.RegistrationBackoff; !known && rb != nil {
		// Recorded before this process started.
		b = Backoff{Until: rb.Until.Time, Failures: int(rb.Failures)}
	}
	if opts.Now.Before(b.Until) {
		return &SkippedNodePool{NodePool: np.Name, NodeClassKind: ref.Kind, NodeClass: ref.Name, Reason: SkipRegistrationBackoff, Until: b.Until, Failures: b.Failures}, nil
	}
	class, ok := opts.NodeClasses[ref.Name]
	if !ok || (class.Kind != "" && ref.Kind != class.Kind) {
		return skip(SkipNodeClassNotFound, ref.Name, "")
	}
	if nr := class.NotReady; nr != nil {
		return &SkippedNodePool{NodePool: np.Name, NodeClassKind: ref.Kind, NodeClass: ref.Name, Reason: SkipNodeClassNotReady, Detail: nr.Message,
			Condition: nr.Condition, ConditionReason: nr.Reason}, nil
	}
	// Its status says Ready=False for a cause of its own (no status yet,
	// as for manifests, is not a cause).
	if c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse && c.Reason != v1.ReasonNodeClassNotReady {
		return skip(SkipNotReady, ref.Name, c.Reason+": "+c.Message)
	}
	return nil, class
}

// NodeClassesUsed are the names of the EC2NodeClasses the NodePools
// refer to: the ones worth resolving.
func NodeClassesUsed(pools []*v1.NodePool) map[string]bool {
	used := map[string]bool{}
	for _, np := range pools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			used[ref.Name] = true
		}
	}
	return used
}
