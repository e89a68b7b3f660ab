package doctor

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/spelling"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// podRule runs the planning step simulate and the controller run and
// reports every pod it leaves without a place, with its reason as the
// controller would give it (one finding per workload and reason, with its
// pod count; bare pods per namespace), naming the closest NodePool and
// what to change in it or in the pods.
func podRule(r *Report, in Input) error {
	var resolver *nodeclass.Resolver
	if in.Cloud != nil {
		resolver = in.Cloud.Resolver
	}
	res, err := whatif.RunWith(in.Objects, resolver)
	if err != nil {
		return err
	}
	pools := map[string]*scheduling.NodePool{}
	for _, np := range res.Snapshot.NodePools {
		pools[np.Name] = np
	}
	objects := map[string]*v1.NodePool{}
	for _, np := range in.Objects.NodePools {
		objects[np.Name] = np
	}
	first := map[*corev1.Pod]*scheduling.UnschedulablePod{}
	for _, u := range res.Plan.Unschedulable {
		first[u.Pod] = u
	}
	reasonOf := func(u *scheduling.UnschedulablePod) string { return res.Snapshot.ReasonFor(u.Reason) }
	groups := bareByNamespace(state.GroupPods(res.Plan.Unschedulable, func(u *scheduling.UnschedulablePod) *corev1.Pod { return u.Pod }, reasonOf),
		func(p *corev1.Pod) string { return reasonOf(first[p]) })
	for _, g := range groups {
		u := first[g.Pods[0]]
		reason := reasonOf(u)
		what := describeGroup(g)
		if u.Claims {
			msg := fmt.Sprintf("%s claim devices no node can have: %s", what, reason)
			if strings.Contains(reason, state.FailsOnNodeMarker) {
				msg = fmt.Sprintf("%s cannot be scheduled by their claims: %s", what, reason)
			}
			r.add(Finding{Code: CodeClaimsUnsatisfiable, Severity: Error, Object: groupObject(g), Message: msg,
				Evidence: podNames(g) + ": " + reason, Fix: claimsFix(reason)})
			continue
		}
		msg := fmt.Sprintf("%s fit no NodePool: %s", what, reason)
		fix := noPoolFix(in, res.Snapshot)
		if closest, ok := closestRefusal(u.Refusals); ok {
			msg = fmt.Sprintf("%s fit no NodePool; the closest is NodePool %s: %s", what, closest.NodePool, closest.Reason)
			fix = fixFor(closest, pools[closest.NodePool], objects[closest.NodePool], g, in)
		}
		if why, volumeFix, ok := volumesApart(in.Objects, g.Pods[0]); ok {
			msg = fmt.Sprintf("%s fit no node anywhere: %s", what, why)
			fix = volumeFix
		}
		r.add(Finding{Code: CodePodIncompatible, Severity: Error, Object: groupObject(g), Message: msg,
			Evidence: podNames(g) + ": " + reason, Fix: fix})
	}
	draDriverRule(r, in, res)
	windowsPlacementRule(r, res.Plan)
	windowsDaemonSetRule(r, in, res.Snapshot.NodePools)
	return nil
}

// bareByNamespace joins the groups of bare pods (no workload) of one
// namespace with the same reason: thousands of them are one finding,
// not thousands. A joined group's Workload is named "".
func bareByNamespace(groups []state.PodGroup, reason func(*corev1.Pod) string) []state.PodGroup {
	out := make([]state.PodGroup, 0, len(groups))
	index := map[string]int{}
	for _, g := range groups {
		if g.Workload.Kind != "Pod" {
			out = append(out, g)
			continue
		}
		key := g.Workload.Namespace + "\x00" + reason(g.Pods[0])
		i, ok := index[key]
		if !ok {
			index[key] = len(out)
			out = append(out, g)
			continue
		}
		out[i].Workload.Name = ""
		out[i].Pods = append(out[i].Pods, g.Pods...)
	}
	return out
}

// describeGroup names a group of pods for a message.
func describeGroup(g state.PodGroup) string {
	if g.Workload.Kind == "Pod" && g.Workload.Name == "" {
		return fmt.Sprintf("%d bare pods (of no workload) in namespace %s", len(g.Pods), g.Workload.Namespace)
	}
	return g.Describe()
}

// groupObject is the object a group's finding is about: its workload,
// or, for bare pods joined by namespace, the namespace.
func groupObject(g state.PodGroup) string {
	if g.Workload.Kind == "Pod" && g.Workload.Name == "" {
		return "Namespace/" + g.Workload.Namespace
	}
	return g.Workload.Object()
}

// noPoolFix is what to do when no NodePool was tried at all: each
// NodePool says why it launches nothing.
func noPoolFix(in Input, snap *state.Snapshot) string {
	if len(in.Objects.NodePools) == 0 {
		return "create a NodePool (karpenter.sh/v1) whose requirements, taints and limits admit the pods, with a nodeClassRef to an EC2NodeClass"
	}
	if len(snap.Skipped) > 0 {
		return "make the NodePools launch again: the findings on each NodePool and EC2NodeClass named above say what to change (" + snap.SkippedSummary() + ")"
	}
	return "create a NodePool whose requirements, taints and limits admit the pod"
}

// podNames lists up to three of a group's pods.
func podNames(g state.PodGroup) string {
	names := make([]string, 0, 3)
	for _, p := range g.Pods[:min(3, len(g.Pods))] {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	if len(g.Pods) > 3 {
		names = append(names, fmt.Sprintf("and %d more", len(g.Pods)-3))
	}
	return "pods " + strings.Join(names, ", ")
}

// closestRefusal picks the NodePool that is the smallest change away: a
// label whose value differs (nearest by edit distance) before a label
// the NodePool lacks, before a taint, before size, before the rest. A
// NodePool blocked only by a missing AMI comes first: it would fit.
func closestRefusal(refusals []scheduling.Refusal) (scheduling.Refusal, bool) {
	best, bestScore := scheduling.Refusal{}, 1<<30
	for _, r := range refusals {
		score := 1000
		switch {
		case r.NoAMI:
			score = -1
		case r.Conflict != nil && r.Conflict.Node != nil && len(r.Conflict.Node.Values()) > 0 && len(r.Conflict.Pod.Values()) > 0:
			score = spelling.Distance(strings.Join(r.Conflict.Node.Values(), ","), strings.Join(r.Conflict.Pod.Values(), ","))
		case r.Conflict != nil:
			score = 500
		case r.Taint != nil:
			score = 600
		case r.TooLarge != nil:
			score = 700
		case r.LimitReached:
			score = 800
		}
		if score < bestScore {
			best, bestScore = r, score
		}
	}
	return best, bestScore < 1<<30
}

// fixFor is what to change so that the NodePool takes the group's pods:
// the object, the field and a value that works.
func fixFor(r scheduling.Refusal, pool *scheduling.NodePool, np *v1.NodePool, g state.PodGroup, in Input) string {
	pods := g.Workload.String()
	switch {
	case g.Workload.Kind == "Pod" && g.Workload.Name == "":
		pods = "each bare pod"
	case g.Workload.Kind != "Pod":
		pods += "'s pod template"
	}
	switch {
	case r.NoAMI:
		return noAMIFix(r, np, in)
	case r.Conflict != nil:
		c := r.Conflict
		podWants := strings.Join(c.Pod.Values(), ", ")
		if c.Node == nil {
			return missingLabelFix(r.NodePool, c.Key, firstOr(c.Pod.Values(), "VALUE"), pods)
		}
		field := "spec.template.spec.requirements (key " + c.Key + ")"
		if np != nil {
			if _, ok := np.Spec.Template.ObjectMeta.Labels[c.Key]; ok {
				field = "spec.template.metadata.labels." + c.Key
			}
		}
		if podWants == "" {
			podWants = c.Pod.String()
		}
		if provides := c.Node.Values(); len(provides) > 0 {
			return fmt.Sprintf("set %s's %s selector (spec.nodeSelector or spec.affinity) to %s, which NodePool %s provides; or change NodePool %s's %s to admit %s",
				pods, c.Key, strings.Join(provides, " or "), r.NodePool, r.NodePool, field, podWants)
		}
		return fmt.Sprintf("change NodePool %s's %s, now %s, to admit %s; or select, in %s's spec.nodeSelector or spec.affinity, a %s that %s admits",
			r.NodePool, field, c.Node, podWants, pods, c.Key, c.Node)
	case r.Taint != nil:
		t := r.Taint
		tol := fmt.Sprintf("{key: %s, operator: Equal, value: %q, effect: %s}", t.Key, t.Value, t.Effect)
		if t.Value == "" {
			tol = fmt.Sprintf("{key: %s, operator: Exists, effect: %s}", t.Key, t.Effect)
		}
		return fmt.Sprintf("add the toleration %s to %s's spec.tolerations, or remove the taint from NodePool %s's spec.template.spec.taints", tol, pods, r.NodePool)
	case r.TooLarge != nil && pool != nil:
		return sizeFix(r, pool, pods)
	case r.LimitReached:
		return limitFix(r, pods)
	case r.Static:
		return fmt.Sprintf("NodePool %s is static (spec.replicas): raise spec.replicas for room on its nodes, or let a NodePool without replicas take %s", r.NodePool, pods)
	case r.HostPort:
		return fmt.Sprintf("change the hostPort in %s's containers: a DaemonSet's pods hold it on every node of NodePool %s", pods, r.NodePool)
	}
	if pool != nil {
		if fix := constraintFix(r, pool, g.Pods[0], pods); fix != "" {
			return fix
		}
	}
	return fmt.Sprintf("change NodePool %s's spec.template.spec.requirements (now %s) or %s's spec.nodeSelector/affinity so that some instance type meets both",
		r.NodePool, describePoolRequirements(pool), pods)
}

// noAMIFix: the NodePool's instance types that would take the pods have
// no AMI in its EC2NodeClass.
func noAMIFix(r scheduling.Refusal, np *v1.NodePool, in Input) string {
	if np == nil || np.Spec.Template.Spec.NodeClassRef == nil {
		return "add an AMI of the instance types' architecture to the EC2NodeClass's spec.amiSelectorTerms"
	}
	class := np.Spec.Template.Spec.NodeClassRef.Name
	var nc *awsv1.EC2NodeClass
	for _, c := range in.Objects.EC2NodeClasses {
		if c.Name == class {
			nc = c
		}
	}
	archs := []string{}
	for _, a := range []string{"amd64", "arm64"} {
		if strings.Contains(r.Reason, a) {
			archs = append(archs, a)
		}
	}
	if nc == nil || len(archs) == 0 {
		return fmt.Sprintf("add an AMI of the instance types' architecture to EC2NodeClass %s's spec.amiSelectorTerms", class)
	}
	return fmt.Sprintf("add an AMI for %s to EC2NodeClass %s's spec.amiSelectorTerms: %s", strings.Join(archs, " and "), class, amiTermFor(nc, archs))
}

// constraintFix: no instance type meets both the NodePool's requirements
// and the pod's selectors. It names the catalog's types the pod's own
// selectors admit and the NodePool requirement that keeps them out, with
// the values that would let them in.
func constraintFix(r scheduling.Refusal, pool *scheduling.NodePool, pod *corev1.Pod, pods string) string {
	catalog, err := catalogTypes()
	if err != nil {
		return ""
	}
	podReqs := podRequirements(pod)
	delete(podReqs, corev1.LabelTopologyZone)
	var fitting []*scheduling.InstanceType
	for _, it := range catalog {
		if it.Compatible(podReqs) {
			fitting = append(fitting, it)
		}
	}
	if len(fitting) == 0 {
		return fmt.Sprintf("no instance type of the catalog meets %s's own spec.nodeSelector/affinity (%s): correct them", pods, describeReqs(podReqs))
	}
	req, admitted, ok := excludingRequirement(pool, fitting)
	if !ok {
		return ""
	}
	return fmt.Sprintf("in NodePool %s's spec.template.spec.requirements, %s admits none of the instance types %s's spec.nodeSelector/affinity asks for (%s): add %s to its values, "+
		"or give these pods a NodePool of their own; or change %s's selectors to what NodePool %s provides", r.NodePool, req, pods, fitting[0].Name,
		strings.Join(admitted[:min(4, len(admitted))], ", "), pods, r.NodePool)
}

// excludingRequirement is the first of a NodePool's requirements that
// admits none of the instance types given, with the values they have for
// its key, sorted; false when every requirement admits one of them.
func excludingRequirement(pool *scheduling.NodePool, fitting []*scheduling.InstanceType) (*scheduling.Requirement, []string, bool) {
	for _, key := range pool.Requirements.Keys() {
		req := pool.Requirements[key]
		var admitted []string
		keeps := false
		for _, it := range fitting {
			v, ok := it.Requirements[key].Single()
			if !ok {
				continue
			}
			if req.Has(v) {
				keeps = true
				break
			}
			admitted = append(admitted, v)
		}
		if !keeps && len(admitted) > 0 {
			return req, uniqueSorted(admitted), true
		}
	}
	return nil, nil, false
}

// podRequirements are a pod's node selector and its first required node
// affinity term, as requirements.
func podRequirements(pod *corev1.Pod) scheduling.Requirements {
	reqs := scheduling.LabelRequirements(pod.Spec.NodeSelector)
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) > 0 {
			reqs.AddAll(scheduling.NewRequirements(terms[0].MatchExpressions...))
		}
	}
	return reqs
}

func describeReqs(reqs scheduling.Requirements) string {
	keys := reqs.Keys()
	parts := make([]string, 0, len(keys))
	for _, key := range keys {
		parts = append(parts, reqs[key].String())
	}
	return strings.Join(parts, "; ")
}

func describePoolRequirements(pool *scheduling.NodePool) string {
	if pool == nil {
		return "unknown"
	}
	parts := []string{}
	for _, key := range pool.Requirements.Keys() {
		if key != v1.LabelNodePool {
			parts = append(parts, pool.Requirements[key].String())
		}
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// sizeFix: the pods ask for more than any of the NodePool's instance
// types has. It names the resources none of them has at all, the
// requirement that keeps out the catalog's types that would fit with the
// values that admit them, or else the requests to lower.
func sizeFix(r scheduling.Refusal, pool *scheduling.NodePool, pods string) string {
	need, largest := r.TooLarge.Need, r.TooLarge.Largest
	var fitting []*scheduling.InstanceType
	for _, it := range pool.InstanceTypes {
		if need.Fits(it.Allocatable) {
			fitting = append(fitting, it)
		}
	}
	missing := need.Missing(largest)
	lacks := ""
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = string(m)
		}
		lacks = fmt.Sprintf("none of NodePool %s's instance types has %s; ", r.NodePool, strings.Join(names, ", "))
	}
	room := largest.Sub(r.TooLarge.DaemonSets).WithPods(0)
	if len(fitting) == 0 {
		return fmt.Sprintf("%slower %s's resources.requests: the most one of NodePool %s's instance types leaves for a pod beside its DaemonSets is %s", lacks, pods, r.NodePool, room)
	}
	if req, admitted, ok := excludingRequirement(pool, fitting); ok {
		names := make([]string, 0, 4)
		for _, it := range fitting[:min(4, len(fitting))] {
			names = append(names, it.Name)
		}
		change := fmt.Sprintf("replace it with %s In [%s]", req.Key, strings.Join(admitted[:min(4, len(admitted))], ", "))
		if current := req.Values(); len(current) > 0 {
			change = fmt.Sprintf("set its values to [%s]", strings.Join(uniqueSorted(append(slices.Clone(current), admitted[:min(4, len(admitted))]...)), ", "))
		}
		return fmt.Sprintf("%sin NodePool %s's spec.template.spec.requirements, %s admits none of the %d instance types that fit (%s, ...): %s, or give these pods a NodePool of their own; or lower %s's resources.requests",
			lacks, r.NodePool, req, len(fitting), strings.Join(names, ", "), change, pods)
	}
	return fmt.Sprintf("%slower %s's resources.requests to fit %s (at most %s beside its DaemonSets), or let NodePool %s launch %s", lacks, pods, r.NodePool, room, r.NodePool, fitting[0].Name)
}

func firstOr(values []string, otherwise string) string {
	if len(values) > 0 {
		return values[0]
	}
	return otherwise
}

func uniqueSorted(in []string) []string {
	sort.Strings(in)
	return slices.Compact(in)
}

// limitFix is what to change when a NodePool's limits admit no node.
func limitFix(r scheduling.Refusal, pods string) string {
	if strings.Contains(r.Reason, "below zero") {
		return fmt.Sprintf("set NodePool %s's spec.limits to 0 or more (a limit below zero admits no node), or remove the limit", r.NodePool)
	}
	return fmt.Sprintf("raise NodePool %s's spec.limits (its nodes use all it allows), or let another NodePool take %s", r.NodePool, pods)
}

// missingLabelFix is how pods that select a label a NodePool's nodes
// lack get a node: the label on the NodePool, unless it is the
// autoscaler's own (karpenter.sh/..., which a NodePool cannot set), or
// v1alpha5's karpenter.sh/provisioner-name, which v1beta1 renamed.
func missingLabelFix(pool, key, value, pods string) string {
	switch {
	case key == "karpenter.sh/provisioner-name":
		return fmt.Sprintf("change %s's spec.nodeSelector/affinity from karpenter.sh/provisioner-name to karpenter.sh/nodepool (value %s): v0.32 renamed the label, and NodePool %s's nodes carry karpenter.sh/nodepool", pods, value, pool)
	case strings.HasPrefix(key, "karpenter.sh/") || strings.HasPrefix(key, "karpenter.k8s.aws/"):
		return fmt.Sprintf("remove %s from %s's spec.nodeSelector/affinity: the autoscaler sets the labels of its domain itself, and NodePool %s cannot add it", key, pods, pool)
	}
	return fmt.Sprintf("NodePool %s's nodes have no %s label: add %s: %q to its spec.template.metadata.labels, or remove %s from %s's spec.nodeSelector/affinity",
		pool, key, key, value, key, pods)
}
