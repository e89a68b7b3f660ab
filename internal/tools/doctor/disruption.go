package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// disruptionRules report what keeps nodes from ever being disrupted: a
// PodDisruptionBudget that allows no disruption even when every pod it
// covers is healthy, and nodes that never initialize; and the unhealthy
// nodes repair replaces, or holds.
func disruptionRules(r *Report, in Input) {
	repairRules(r, in)
	rebootRules(r, in)
	bufferRules(r, in)
	for _, pdb := range in.Objects.PDBs {
		if f, ok := pdbNeverAllows(pdb, in.Objects.Pods); ok {
			r.add(f)
		}
	}
	for _, nc := range in.Objects.NodeClaims {
		reg := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRegistered)
		init := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionInitialized)
		if reg == nil || reg.Status != metav1.ConditionTrue || (init != nil && init.Status == metav1.ConditionTrue) || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		since := in.Now.Sub(reg.LastTransitionTime.Time)
		if since < in.Grace {
			continue
		}
		evidence := fmt.Sprintf("NodeClaim %s Registered=True since %s, no Initialized=True", nc.Name, reg.LastTransitionTime.UTC().Format(time.RFC3339))
		if init != nil {
			evidence = fmt.Sprintf("NodeClaim %s Initialized=%s %s: %s", nc.Name, init.Status, init.Reason, init.Message)
		}
		r.add(Finding{Code: CodeNodeNeverDisrupted, Severity: Warning, Object: "NodeClaim/" + nc.Name,
			Message: fmt.Sprintf("node %s registered %s ago and has not finished initialization: until it does, nodewright neither consolidates, drifts nor empties it, so it keeps costing whatever runs on it",
				nc.Status.NodeName, since.Round(time.Second)),
			Evidence: evidence,
			Fix:      fmt.Sprintf("fix what its Initialized condition names (the findings above say why); a node that never will can go: kubectl delete nodeclaim %s, and nodewright launches what its pods need", nc.Name)})
	}
}

// pdbNeverAllows reports a budget that allows no eviction even with all
// its pods healthy: maxUnavailable 0 or 0%, minAvailable 100% or at least
// as many as the pods it covers, or (in a cluster) a status that allows
// nothing while every expected pod is healthy.
func pdbNeverAllows(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (Finding, bool) {
	name := pdb.Namespace + "/" + pdb.Name
	evidence := neverAllowsEvidence(pdb, name, coveredPods(pdb, pods))
	if evidence == "" {
		return Finding{}, false
	}
	return Finding{Code: CodePDBNeverAllows, Severity: Warning, Object: "PodDisruptionBudget/" + name,
		Message:  fmt.Sprintf("PodDisruptionBudget %s allows no disruption even when all its pods are healthy: nodewright never consolidates or drifts the nodes that run them, their drain waits until the NodeClaim's terminationGracePeriod (forever without one), and kubectl drain hangs on them", name),
		Evidence: evidence,
		Fix:      "let one pod go at a time: set spec.maxUnavailable: 1, or a minAvailable below the number of replicas (and run more replicas than minAvailable)"}, true
}

// coveredPods counts the pods a budget selects.
func coveredPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) int {
	if pdb.Spec.Selector == nil {
		return 0
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return 0
	}
	covered := 0
	for _, p := range pods {
		if p.Namespace == pdb.Namespace && sel.Matches(labels.Set(p.Labels)) {
			covered++
		}
	}
	return covered
}

// neverAllowsEvidence is what shows a budget allows nothing, or "".
func neverAllowsEvidence(pdb *policyv1.PodDisruptionBudget, name string, covered int) string {
	mu, ma, st := pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable, pdb.Status
	switch {
	case mu != nil && isZero(*mu):
		return fmt.Sprintf("PodDisruptionBudget %s spec.maxUnavailable: %s", name, mu.String())
	case ma != nil && ma.Type == intstr.String && ma.StrVal == "100%":
		return fmt.Sprintf("PodDisruptionBudget %s spec.minAvailable: 100%%", name)
	case ma != nil && ma.Type == intstr.Int && covered > 0 && int(ma.IntVal) >= covered:
		return fmt.Sprintf("PodDisruptionBudget %s spec.minAvailable: %d, and it covers %d pod(s)", name, ma.IntVal, covered)
	case st.ObservedGeneration > 0 && st.ExpectedPods > 0 && st.DisruptionsAllowed == 0 && st.CurrentHealthy >= st.ExpectedPods:
		return fmt.Sprintf("PodDisruptionBudget %s status: disruptionsAllowed 0 with %d of %d pods healthy", name, st.CurrentHealthy, st.ExpectedPods)
	}
	return ""
}

func isZero(v intstr.IntOrString) bool {
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	return v.StrVal == "0%" || v.StrVal == "0"
}

// repairRules report the nodes that fail a repair policy (at the
// controller's default tolerations): when nodewright replaces each, or,
// while more than a fifth of their NodePool fails, that it replaces none.
func repairRules(r *Report, in Input) {
	pools := nodepoolhealth.Assess(in.Objects.NodeClaims, in.Objects.Nodes, nodepoolhealth.DefaultTolerations().Policies(), in.Now)
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		p := pools[name]
		if len(p.Unhealthy) == 0 {
			continue
		}
		evidence, claims := make([]string, 0, len(p.Unhealthy)), make([]string, 0, len(p.Unhealthy))
		for _, u := range p.Unhealthy {
			evidence = append(evidence, u.Describe())
			claims = append(claims, u.NodeClaim.Name)
		}
		if p.Held() {
			r.add(Finding{Code: CodeNodeRepairHeld, Severity: Error, Object: "NodePool/" + p.Name,
				Message:  p.HeldReason() + ", and their pods wait",
				Evidence: strings.Join(evidence, "; "),
				Fix: fmt.Sprintf("find what the failing nodes share (a zone, an AMI, a DaemonSet, the network) and mend it; repair resumes once at most %d of them fail. "+
					"To replace one now: kubectl delete nodeclaim %s", p.Allowed, claims[0])})
			continue
		}
		for _, u := range p.Unhealthy {
			when := "it is replaced now"
			if u.Eligible && u.Action == nodepoolhealth.Reboot {
				when = "it is rebooted now"
			}
			if !u.Eligible {
				when = fmt.Sprintf("nodewright replaces it at %s (in %s) unless it recovers", u.Due.UTC().Format(time.RFC3339), u.Due.Sub(in.Now).Round(time.Second))
			}
			r.add(Finding{Code: CodeNodeUnhealthy, Severity: Warning, Object: "NodeClaim/" + u.NodeClaim.Name,
				Message:  u.Describe() + ": " + when + "; its pods do not run meanwhile",
				Evidence: fmt.Sprintf("Node %s status.conditions %s=%s %s: %s", u.Node.Name, u.Condition.Type, u.Condition.Status, u.Condition.Reason, u.Condition.Message),
				Fix:      fmt.Sprintf("kubectl describe node %s (the kubelet's or the node monitoring agent's reason); to replace it at once: kubectl delete nodeclaim %s", u.Node.Name, u.NodeClaim.Name)})
		}
	}
}

// rebootRules report the reboots node repair asked for that failed and
// left the node as it was (a reboot that failed otherwise replaced it).
func rebootRules(r *Report, in Input) {
	for _, nc := range in.Objects.NodeClaims {
		c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonRebootFailed || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		r.add(Finding{Code: CodeNodeRebootFailed, Severity: Warning, Object: "NodeClaim/" + nc.Name,
			Message:  "node repair's reboot of this node failed and the node was kept: " + c.Message,
			Evidence: fmt.Sprintf("NodeClaim %s status.conditions Rebooting=False %s at %s", nc.Name, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339)),
			Fix: fmt.Sprintf("if the node still fails, replace it: kubectl delete nodeclaim %s; an instance nodewright did not launch is never rebooted, "+
				"and %s must be a duration such as 5m", nc.Name, v1.AnnotationRebootTerminationGracePeriod)})
	}
}

// bufferRules report the CapacityBuffers that keep no room: their pod
// template or workload cannot be resolved.
func bufferRules(r *Report, in Input) {
	for _, b := range in.Objects.CapacityBuffers {
		c := meta.FindStatusCondition(b.Status.Conditions, v1beta1.ConditionReadyForProvisioning)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		fix := "fix spec.podTemplateRef or spec.scalableRef to name an object of namespace " + b.Namespace
		switch c.Reason {
		case v1beta1.ReasonPodTemplateNotFound:
			fix = fmt.Sprintf("create the PodTemplate in namespace %s (kubectl create -f) or point spec.podTemplateRef at one", b.Namespace)
		case v1beta1.ReasonScalableRefNotFound:
			fix = fmt.Sprintf("point spec.scalableRef at a Deployment, StatefulSet or ReplicaSet of namespace %s", b.Namespace)
		}
		r.add(Finding{Code: CodeCapacityBufferNotReady, Severity: Warning, Object: "CapacityBuffer/" + b.Namespace + "/" + b.Name,
			Message:  "the buffer keeps no room: " + c.Message,
			Evidence: fmt.Sprintf("CapacityBuffer %s/%s status.conditions ReadyForProvisioning=False %s", b.Namespace, b.Name, c.Reason),
			Fix:      fix})
	}
}
