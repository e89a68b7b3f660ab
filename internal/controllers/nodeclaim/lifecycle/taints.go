package lifecycle

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state"
)

// ephemeralOwner says who removes a known ephemeral taint: nodewright
// waits for these and never copies or re-adds them.
func ephemeralOwner(key string) (string, bool) { return state.EphemeralTaintOwner(key) }

func hasTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) bool {
	for _, t := range taints {
		if t.Key == key && (effect == "" || t.Effect == effect) {
			return true
		}
	}
	return false
}

// mergeTaints adds the wanted taints the node lacks (matched by key and
// effect), skipping ephemeral ones, and drops karpenter.sh/unregistered.
func mergeTaints(have, want []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(have)+len(want))
	for _, t := range have {
		if t.Key != v1.TaintKeyUnregistered {
			out = append(out, t)
		}
	}
	for _, t := range want {
		if _, ephemeral := ephemeralOwner(t.Key); ephemeral || hasTaint(out, t.Key, t.Effect) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func taintList(taints []corev1.Taint) string {
	if len(taints) == 0 {
		return "no taints"
	}
	parts := make([]string, len(taints))
	for i, t := range taints {
		parts[i] = t.ToString()
	}
	return strings.Join(parts, ", ")
}

func describeNode(node *corev1.Node) string { return fmt.Sprintf("node %s", node.Name) }
