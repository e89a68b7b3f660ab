package doctor

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// startupTaintRule finds NodePools' startup taints that no DaemonSet
// tolerates: the agent that removes a startup taint runs on the node as
// a DaemonSet pod, and a taint none tolerates keeps every such pod off
// the node, so the taint stays, the node never initializes (nor is it
// ever consolidated) and its pods never land. Without any DaemonSet in
// the input (manifests, not a cluster) it is a warning.
func startupTaintRule(r *Report, o *whatif.Objects) {
	for _, np := range o.NodePools {
		for _, taint := range np.Spec.Template.Spec.StartupTaints {
			if taint.Key == v1.TaintKeyUnregistered {
				r.add(Finding{Code: CodeRegistrationStartupTaint, Severity: Warning, Object: "NodePool/" + np.Name,
					Message: fmt.Sprintf("NodePool %s lists %s in spec.template.spec.startupTaints, where it does nothing: it is the taint every node registers with, and the controller removes it itself when the node registers (no agent does)",
						np.Name, taintText(taint)),
					Evidence: fmt.Sprintf("spec.template.spec.startupTaints: %s", taintText(taint)),
					Fix:      fmt.Sprintf("remove %s from NodePool %s's spec.template.spec.startupTaints; list there only the taints an agent of yours removes (a CNI's, such as node.cilium.io/agent-not-ready)", v1.TaintKeyUnregistered, np.Name)})
				continue
			}
			if slices.ContainsFunc(o.DaemonSets, func(ds *appsv1.DaemonSet) bool { return tolerates(ds.Spec.Template.Spec.Tolerations, taint) }) {
				continue
			}
			if len(o.DaemonSets) == 0 {
				// Nothing is known of the agents: say what was not checked.
				r.add(Finding{Code: CodeNotChecked, Severity: Info, Object: "NodePool/" + np.Name,
					Message: fmt.Sprintf("whether an agent removes NodePool %s's startup taint %s is not checked: the input has no DaemonSets, and an agent runs on a node as a DaemonSet pod that tolerates the taint; if none does, the node never initializes",
						np.Name, taintText(taint)),
					Evidence: fmt.Sprintf("spec.template.spec.startupTaints: %s; no DaemonSet among the inputs", taintText(taint)),
					Fix:      "run nodewright doctor against the cluster, or add the agent's DaemonSet manifest with -f (kubectl get daemonsets -A -o yaml | nodewright doctor -f - -f ...)"})
				continue
			}
			r.add(Finding{Code: CodeStartupTaintNeverRemoved, Severity: Error, Object: "NodePool/" + np.Name,
				Message: fmt.Sprintf("NodePool %s's startup taint %s is removed by nothing: no DaemonSet pod tolerates it, so no agent runs on a new node to remove it; the node never initializes, is never consolidated, and pods wait for it",
					np.Name, taintText(taint)),
				Evidence: fmt.Sprintf("spec.template.spec.startupTaints: %s; none of the %d DaemonSets tolerates it", taintText(taint), len(o.DaemonSets)),
				Fix: fmt.Sprintf("install the agent that removes %s (its DaemonSet must tolerate the taint), or, if it is meant to stay, move it from NodePool %s's spec.template.spec.startupTaints to spec.template.spec.taints",
					taint.Key, np.Name)})
		}
	}
}

func tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	return slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool { return t.ToleratesTaint(&taint) })
}

func taintText(t corev1.Taint) string {
	var b strings.Builder
	b.WriteString(t.Key)
	if t.Value != "" {
		b.WriteString("=" + t.Value)
	}
	b.WriteString(":" + string(t.Effect))
	return b.String()
}
