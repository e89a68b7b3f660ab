package state_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func pod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}}}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func unschedulable(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
}

func on(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = node, corev1.PodRunning }
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
}

func annotate(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { metav1.SetMetaDataAnnotation(&p.ObjectMeta, k, v) }
}

func TestPending(t *testing.T) {
	deleting := metav1.NewTime(now)
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"a manifest's pod (no status)":           {pod("a"), true},
		"marked unschedulable by kube-scheduler": {pod("a", unschedulable), true},
		"not yet looked at by kube-scheduler":    {pod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), true},
		"for another scheduler, not looked at": {pod("a", func(p *corev1.Pod) {
			p.Status.Phase, p.Spec.SchedulerName = corev1.PodPending, "volcano"
		}), false},
		"scheduled, not bound yet": {pod("a", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}), false},
		"bound":                     {pod("a", on("n")), false},
		"a DaemonSet's":             {pod("a", unschedulable, daemon), false},
		"succeeded":                 {pod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		"failed":                    {pod("a", unschedulable, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		"being deleted":             {pod("a", unschedulable, func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }), false},
		"held by a scheduling gate": {pod("a", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} }), false},
		"unschedulable for another reason (gated)": {pod("a", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
		}), false},
	} {
		if got := state.Pending(tc.pod); got != tc.want {
			t.Errorf("%s: Pending = %v, want %v", name, got, tc.want)
		}
	}
}

func nodePool(name, class string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}
	return np
}

func node(name, pool string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Labels: map[string]string{}}}
	if pool != "" {
		n.Labels[v1.LabelNodePool] = pool
	}
	n.Spec.ProviderID = "aws:///us-east-1a/i-" + name
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("20")}
	n.Status.Allocatable = n.Status.Capacity
	for _, m := range mutate {
		m(n)
	}
	return n
}

func claim(name, pool string, mutate ...func(*v1.NodeClaim)) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: pool}}}
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("20")}
	nc.Status.Allocatable = nc.Status.Capacity
	for _, m := range mutate {
		m(nc)
	}
	return nc
}

// launchedAs gives a NodeClaim the provider ID of node name.
func launchedAs(name string) func(*v1.NodeClaim) {
	return func(nc *v1.NodeClaim) { nc.Status.ProviderID = "aws:///us-east-1a/i-" + name }
}

func initialized(at time.Time) func(*v1.NodeClaim) {
	return func(nc *v1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)})
	}
}

func names(nodes []*scheduling.Node) []string {
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

func podNames(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func ready() map[string]*cloudprovider.NodeClass {
	return map[string]*cloudprovider.NodeClass{"default": {Kind: "EC2NodeClass", Name: "default", InstanceTypes: []*scheduling.InstanceType{{Name: "m5.large"}}}}
}

// Nodes pair with their NodeClaims by provider ID (or, in manifests, the
// NodeClaim's node name); NodeClaims without a node are in flight; nodes
// of a NodePool without a NodeClaim still count.
func TestNodesAndUsage(t *testing.T) {
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	gone := metav1.NewTime(now)
	o := state.Objects{
		NodePools: []*v1.NodePool{nodePool("default", "default")},
		NodeClaims: []*v1.NodeClaim{
			claim("default-a", "default", launchedAs("ip-a"), initialized(now.Add(-time.Hour))),
			claim("default-b", "default", func(nc *v1.NodeClaim) { nc.Status.NodeName = "ip-b" }),
			claim("default-flight", "default", launchedAs("ip-none")),
			claim("default-deleting", "default", launchedAs("ip-d"), func(nc *v1.NodeClaim) { nc.DeletionTimestamp = &gone; nc.Finalizers = []string{"f"} }),
		},
		Nodes: []*corev1.Node{
			node("ip-a", "default"), node("ip-b", "default", func(n *corev1.Node) { n.Spec.ProviderID = "" }),
			node("ip-d", "default"), node("ip-orphan", "default"), node("ip-cordoned", "default", cordoned), node("ip-other", ""),
		},
		Pods: []*corev1.Pod{pod("p1", on("ip-a")), pod("p2", on("ip-a"), daemon), pod("p3", on("ip-a"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
	}
	s := state.Build(o, state.Options{Now: now, NodeClasses: ready()})
	got := map[string]string{}
	for _, n := range s.Nodes {
		claimName := ""
		if n.NodeClaim != nil {
			claimName = n.NodeClaim.Name
		}
		got[n.Name] = claimName
	}
	want := map[string]string{"ip-a": "default-a", "ip-b": "default-b", "default-flight": "default-flight", "ip-d": "default-deleting",
		"ip-orphan": "", "ip-cordoned": "", "ip-other": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pairs (-want +got):\n%s", d)
	}
	nodes := s.Usage["default"]["nodes"]
	if nodes.Value() != 6 {
		t.Errorf("NodePool default counts %d nodes, want 6 (4 NodeClaims, 2 nodes without one): %v", nodes.Value(), s.Usage)
	}
	// The scheduler sees every node pods can use: not the cordoned one,
	// not the one being deleted.
	if d := cmp.Diff([]string{"default-flight", "ip-a", "ip-b", "ip-orphan", "ip-other"}, names(s.Input(nil).Nodes)); d != "" {
		t.Errorf("scheduler nodes (-want +got):\n%s", d)
	}
	for _, n := range s.Nodes {
		if n.Name == "ip-a" && len(n.Pods) != 2 {
			t.Errorf("ip-a holds %v; the finished pod must not count", podNames(n.Pods))
		}
		if n.Name == "ip-a" && !slices.Equal(podNames(n.Reschedulable()), []string{"p1"}) {
			t.Errorf("ip-a reschedules %v; DaemonSet pods stay with their DaemonSet", podNames(n.Reschedulable()))
		}
	}
	// Leaving ip-a out makes its pod pending, not its DaemonSet pod.
	in := s.Input(map[string]bool{"ip-a": true})
	if slices.Contains(names(in.Nodes), "ip-a") || !slices.Equal(podNames(in.Pods), []string{"p1"}) {
		t.Errorf("without ip-a: nodes %v, pods %v", names(in.Nodes), podNames(in.Pods))
	}
	// Candidates: registered nodes of the NodePool with their NodeClaim; a
	// live node without one is not nodewright's to disrupt.
	var candidates []string
	for _, n := range s.Candidates() {
		candidates = append(candidates, n.Name)
	}
	if d := cmp.Diff([]string{"ip-a", "ip-b", "ip-d"}, candidates); d != "" {
		t.Errorf("candidates (-want +got):\n%s", d)
	}
	// In a dump, which may leave NodeClaims out, a node stands for its own.
	candidates = nil
	for _, n := range state.Build(o, state.Options{Now: now, NodeClasses: ready(), NodesWithoutClaims: true}).Candidates() {
		candidates = append(candidates, n.Name)
	}
	if d := cmp.Diff([]string{"ip-a", "ip-b", "ip-cordoned", "ip-d", "ip-orphan"}, candidates); d != "" {
		t.Errorf("candidates of a dump (-want +got):\n%s", d)
	}
	if d := cmp.Diff(state.Usage(o.NodeClaims, o.Nodes), s.Usage); d != "" {
		t.Errorf("Usage and the snapshot disagree:\n%s", d)
	}
}

// A node still initializing offers room to pending pods: its startup and
// known ephemeral taints do not keep them off; its other taints do. An
// initialized node that is not ready for now (its NoSchedule not-ready
// and uninitialized taints) is planned onto as well; its startup taints,
// back again, keep pods off.
func TestInitializingNodeIsCapacity(t *testing.T) {
	startup := corev1.Taint{Key: "cni.example.com/not-ready", Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	taints := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{startup, dedicated, {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, {Key: state.CloudProviderTaint, Effect: corev1.TaintEffectNoSchedule}}
	}
	for name, tc := range map[string]struct {
		claim *v1.NodeClaim
		want  []corev1.Taint
	}{
		"initializing": {claim("c", "default", launchedAs("n"), func(nc *v1.NodeClaim) { nc.Spec.StartupTaints = []corev1.Taint{startup} }), []corev1.Taint{dedicated}},
		"initialized": {claim("c", "default", launchedAs("n"), initialized(now), func(nc *v1.NodeClaim) { nc.Spec.StartupTaints = []corev1.Taint{startup} }),
			[]corev1.Taint{startup, dedicated}},
	} {
		s := state.Build(state.Objects{NodeClaims: []*v1.NodeClaim{tc.claim}, Nodes: []*corev1.Node{node("n", "default", taints)}}, state.Options{Now: now})
		if d := cmp.Diff(tc.want, s.Input(nil).Nodes[0].Taints); d != "" {
			t.Errorf("%s: taints the scheduler sees (-want +got):\n%s", name, d)
		}
		// Pods evicted now do not go to a node that is not ready.
		if n := len(s.Reschedule(nil).Nodes); n != 0 {
			t.Errorf("%s: disruption would move pods onto the not-ready node", name)
		}
	}
}

// A NodeClaim in flight offers its status's allocatable, else the least
// that the instance types it lists offer, else nothing (and says so).
func TestInFlightNodeClaimSize(t *testing.T) {
	small := &scheduling.InstanceType{Name: "small", Allocatable: scheduling.MustParseResources("cpu=1,memory=2Gi,pods=10")}
	big := &scheduling.InstanceType{Name: "big", Allocatable: scheduling.MustParseResources("cpu=4,memory=1Gi,pods=50")}
	unlaunched := func(types ...string) *v1.NodeClaim {
		return claim("c", "default", func(nc *v1.NodeClaim) {
			nc.Status = v1.NodeClaimStatus{}
			if len(types) > 0 {
				nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: types}}
			}
		})
	}
	s := state.Build(state.Objects{NodeClaims: []*v1.NodeClaim{unlaunched("small", "big")}}, state.Options{Now: now, Catalog: []*scheduling.InstanceType{small, big}})
	if got, want := s.Input(nil).Nodes[0].Allocatable, scheduling.MustParseResources("cpu=1,memory=1Gi,pods=10"); got != want {
		t.Errorf("allocatable %s, want the least of each: %s", got, want)
	}
	s = state.Build(state.Objects{NodeClaims: []*v1.NodeClaim{unlaunched()}}, state.Options{Now: now})
	if len(s.Input(nil).Nodes) != 0 || !s.Nodes[0].Unsized {
		t.Errorf("a NodeClaim of unknown size is capacity: %+v", s.Nodes[0])
	}
	s = state.Build(state.Objects{NodeClaims: []*v1.NodeClaim{claim("c", "default")}}, state.Options{Now: now})
	if got := s.Input(nil).Nodes[0].Allocatable; got.CPU() != 2000 {
		t.Errorf("allocatable %s, want the status's", got)
	}
}

func TestSkippedNodePools(t *testing.T) {
	deleting := nodePool("deleting", "default")
	gone := metav1.NewTime(now)
	deleting.DeletionTimestamp, deleting.Finalizers = &gone, []string{"f"}
	noRef := nodePool("noref", "")
	noRef.Spec.Template.Spec.NodeClassRef = nil
	classes := ready()
	classes["broken"] = &cloudprovider.NodeClass{NotReady: &cloudprovider.NotReady{Condition: "SubnetsReady", Reason: "SubnetsNotFound", Message: "is not ready (SubnetsNotFound: no subnet matches)"}}
	// A backoff recorded in status before a restart holds; one the
	// controller knows to be over since does not.
	restarted, recovered := nodePool("restarted", "default"), nodePool("recovered", "default")
	for _, np := range []*v1.NodePool{restarted, recovered} {
		np.Status.RegistrationBackoff = &v1.RegistrationBackoff{Failures: 3, Until: metav1.NewTime(now.Add(time.Minute))}
	}
	s := state.Build(state.Objects{NodePools: []*v1.NodePool{
		nodePool("ok", "default"), deleting, noRef, nodePool("missing", "nope"), nodePool("broken", "broken"), nodePool("backoff", "default"), restarted, recovered,
	}}, state.Options{Now: now, NodeClasses: classes, Backoff: map[string]state.Backoff{"backoff": {Until: now.Add(time.Minute), Failures: 2}, "ok": {Until: now.Add(-time.Second), Failures: 1},
		"recovered": {}}})
	if len(s.NodePools) != 2 || s.NodePools[0].Name != "ok" || s.NodePools[1].Name != "recovered" {
		t.Errorf("launchable NodePools: %v", s.NodePools)
	}
	got := map[string]state.SkipReason{}
	for _, sk := range s.Skipped {
		got[sk.NodePool] = sk.Reason
	}
	want := map[string]state.SkipReason{"deleting": state.SkipDeleting, "noref": state.SkipNoNodeClassRef, "missing": state.SkipNodeClassNotFound,
		"broken": state.SkipNodeClassNotReady, "backoff": state.SkipRegistrationBackoff, "restarted": state.SkipRegistrationBackoff}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}
	summary := s.SkippedSummary()
	if strings.Contains(summary, "no subnet matches") {
		t.Errorf("the pods' summary repeats the EC2NodeClass's message instead of pointing at it: %s", summary)
	}
	for _, want := range []string{"EC2NodeClass nope does not exist", "NodePool broken: EC2NodeClass broken is not ready (SubnetsReady=False, SubnetsNotFound; kubectl describe ec2nodeclass broken says why", "back off until 2026-11-23T12:01:00Z after 2 registration timeout(s)"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
}

func pdb(name string, allowed int32, selector *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector, MinAvailable: &one}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
}

// alwaysAllow sets a budget's unhealthyPodEvictionPolicy to AlwaysAllow.
func alwaysAllow(b *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	policy := policyv1.AlwaysAllow
	b.Spec.UnhealthyPodEvictionPolicy = &policy
	return b
}

// podReady sets a pod's Ready condition.
func podReady(status corev1.ConditionStatus) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status})
	}
}

func TestBlockers(t *testing.T) {
	started := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { s := metav1.NewTime(now.Add(-ago)); p.Status.StartTime = &s }
	}
	app := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
	}
	for name, tc := range map[string]struct {
		claim  *v1.NodeClaim
		node   func(*corev1.Node)
		pods   []*corev1.Pod
		pdbs   []*policyv1.PodDisruptionBudget
		want   []state.BlockReason
		string string
	}{
		"free":            {pods: []*corev1.Pod{pod("web", on("n"))}},
		"not initialized": {claim: claim("c", "default", launchedAs("n")), want: []state.BlockReason{state.BlockNotInitialized}, string: "not finished initialization"},
		"node annotated": {node: func(n *corev1.Node) { n.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} },
			want: []state.BlockReason{state.BlockNodeDoNotDisrupt}, string: "the node is annotated karpenter.sh/do-not-disrupt=true"},
		"pod annotated": {pods: []*corev1.Pod{pod("db", on("n"), annotate(v1.AnnotationDoNotDisrupt, "true"))},
			want: []state.BlockReason{state.BlockPodDoNotDisrupt}, string: "pod default/db is annotated karpenter.sh/do-not-disrupt=true"},
		"pod annotated for a time not over": {pods: []*corev1.Pod{pod("job", on("n"), started(10*time.Minute), annotate(v1.AnnotationDoNotDisrupt, "1h"))},
			want: []state.BlockReason{state.BlockPodDoNotDisrupt}, string: "until 2026-11-23T12:50:00Z"},
		"pod annotated for a time that is over": {pods: []*corev1.Pod{pod("job", on("n"), started(2*time.Hour), annotate(v1.AnnotationDoNotDisrupt, "1h"))}},
		"pod annotated false":                   {pods: []*corev1.Pod{pod("job", on("n"), annotate(v1.AnnotationDoNotDisrupt, "false"))}},
		"static pods are not evicted": {pods: []*corev1.Pod{pod("static", on("n"), annotate(corev1.MirrorPodAnnotationKey, "x"))},
			pdbs: []*policyv1.PodDisruptionBudget{pdb("all", 0, &metav1.LabelSelector{})}},
		"a static pod asks to keep its node": {pods: []*corev1.Pod{pod("static", on("n"), annotate(corev1.MirrorPodAnnotationKey, "x"), annotate(v1.AnnotationDoNotDisrupt, "true"))},
			want: []state.BlockReason{state.BlockPodDoNotDisrupt}, string: "pod default/static is annotated karpenter.sh/do-not-disrupt=true"},
		"PDB allows none, an unready pod it always lets go": {pods: []*corev1.Pod{pod("web", on("n"), podReady(corev1.ConditionFalse))},
			pdbs: []*policyv1.PodDisruptionBudget{alwaysAllow(pdb("web", 0, app("web")))}},
		"PDB allows none, a ready pod it always lets go when unready": {pods: []*corev1.Pod{pod("web", on("n"), podReady(corev1.ConditionTrue))},
			pdbs: []*policyv1.PodDisruptionBudget{alwaysAllow(pdb("web", 0, app("web")))}, want: []state.BlockReason{state.BlockPDB}},
		"PDB allows none, an unready pod only if the budget is healthy": {pods: []*corev1.Pod{pod("web", on("n"), podReady(corev1.ConditionFalse))},
			pdbs: []*policyv1.PodDisruptionBudget{pdb("web", 0, app("web"))}, want: []state.BlockReason{state.BlockPDB}},
		"PDB allows none": {pods: []*corev1.Pod{pod("web", on("n"))}, pdbs: []*policyv1.PodDisruptionBudget{pdb("web", 0, app("web")), pdb("other", 0, app("other"))},
			want: []state.BlockReason{state.BlockPDB}, string: "PodDisruptionBudget default/web allows 0 disruptions now (pod default/web)"},
		"PDB allows one":   {pods: []*corev1.Pod{pod("web", on("n"))}, pdbs: []*policyv1.PodDisruptionBudget{pdb("web", 1, app("web"))}},
		"empty selector":   {pods: []*corev1.Pod{pod("web", on("n"))}, pdbs: []*policyv1.PodDisruptionBudget{pdb("all", 0, &metav1.LabelSelector{})}, want: []state.BlockReason{state.BlockPDB}},
		"missing selector": {pods: []*corev1.Pod{pod("web", on("n"))}, pdbs: []*policyv1.PodDisruptionBudget{pdb("none", 0, nil)}},
		"several PDBs": {pods: []*corev1.Pod{pod("web", on("n"))}, pdbs: []*policyv1.PodDisruptionBudget{pdb("a", 1, app("web")), pdb("b", 1, &metav1.LabelSelector{})},
			want: []state.BlockReason{state.BlockPDB}, string: "covered by several PodDisruptionBudgets (default/a, default/b)"},
		"nominated": {pods: []*corev1.Pod{pod("waiting", unschedulable, func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" })},
			want: []state.BlockReason{state.BlockNominated}, string: "1 pending pod(s) are nominated to the node"},
	} {
		nc := tc.claim
		if nc == nil {
			nc = claim("c", "default", launchedAs("n"), initialized(now.Add(-time.Hour)))
		}
		n := node("n", "default")
		if tc.node != nil {
			tc.node(n)
		}
		s := state.Build(state.Objects{NodePools: []*v1.NodePool{nodePool("default", "default")}, NodeClaims: []*v1.NodeClaim{nc}, Nodes: []*corev1.Node{n},
			Pods: tc.pods, PDBs: tc.pdbs, DaemonSets: []*appsv1.DaemonSet{}}, state.Options{Now: now, NodeClasses: ready()})
		var got []state.BlockReason
		text := ""
		for _, b := range s.Candidates()[0].Blockers() {
			got = append(got, b.Reason)
			text += b.String() + "; "
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: blockers (-want +got):\n%s", name, d)
		}
		if !strings.Contains(text, tc.string) {
			t.Errorf("%s: %q does not say %q", name, text, tc.string)
		}
	}
}

// The hashes change with what shapes a node and not with the rest: as
// the reference's template hash, expireAfter and terminationGracePeriod
// take part, requirements and disruption settings do not.
func TestHashes(t *testing.T) {
	np := nodePool("default", "default")
	base := state.NodePoolHash(np)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "a", Operator: corev1.NodeSelectorOpExists}}
	np.Spec.Disruption.ConsolidateAfter = "1m"
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
	if state.NodePoolHash(np) != base {
		t.Error("requirements or disruption settings changed the NodePool hash")
	}
	for name, change := range map[string]func(*v1.NodePool){
		"a template label": func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a"} },
		"expireAfter":      func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = "1h" },
		"terminationGracePeriod": func(np *v1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		},
	} {
		changed := np.DeepCopy()
		change(changed)
		if state.NodePoolHash(changed) == base {
			t.Errorf("%s did not change the NodePool hash", name)
		}
	}
}

// Pods planned onto a NodeClaim still launching, or nominated to a node
// still initializing, take its room and are not planned again; once the
// node has been initialized for the grace period they are pending again.
func TestPlannedPodsStayPlanned(t *testing.T) {
	waiting := pod("planned", unschedulable)
	nominated := pod("nominated", unschedulable, func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" })
	free := pod("free", unschedulable)
	objs := state.Objects{
		NodePools:  []*v1.NodePool{nodePool("default", "default")},
		NodeClaims: []*v1.NodeClaim{claim("flight", "default"), claim("c", "default", launchedAs("n"))},
		Nodes:      []*corev1.Node{node("n", "default")},
		Pods:       []*corev1.Pod{waiting, nominated, free},
	}
	opts := state.Options{Now: now, Planned: map[types.NamespacedName]string{{Namespace: "default", Name: "planned"}: "flight"}, NominationGrace: time.Minute}
	s := state.Build(objs, opts)
	if got := podNames(s.Pending); !slices.Equal(got, []string{"free"}) {
		t.Errorf("pending %v, want only the pod planned nowhere", got)
	}
	for _, n := range s.Input(nil).Nodes {
		want := map[string]string{"flight": "planned", "n": "nominated"}[n.Name]
		if len(n.Pods) != 1 || n.Pods[0].Name != want {
			t.Errorf("node %s holds %v, want %s", n.Name, podNames(n.Pods), want)
		}
	}
	if s.Candidates()[0].Blockers()[0].Reason != state.BlockNotInitialized {
		t.Errorf("blockers %v", s.Candidates()[0].Blockers())
	}
	// Initialized two minutes ago: the nominated pod is pending again.
	initialized(now.Add(-2 * time.Minute))(objs.NodeClaims[1])
	s = state.Build(objs, opts)
	if got := podNames(s.Pending); !slices.Equal(got, []string{"free", "nominated"}) {
		t.Errorf("pending %v after the grace", got)
	}
	if b := s.Candidates()[0].Blockers(); len(b) != 1 || b[0].Reason != state.BlockNominated {
		t.Errorf("a node pods are nominated to is not disrupted: %v", b)
	}
}

// A pod kube-scheduler has not tried yet stays the node's it was planned
// onto after the node initialized, for as long as kube-scheduler takes to
// get to it: only its finding no room makes the pod pending again, and
// only then does a decision need to look again after a time.
func TestUntriedPodsWaitForKubeScheduler(t *testing.T) {
	untried := pod("untried", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	objs := state.Objects{
		NodePools:  []*v1.NodePool{nodePool("default", "default")},
		NodeClaims: []*v1.NodeClaim{claim("c", "default", launchedAs("n"), initialized(now.Add(-time.Hour)))},
		Nodes:      []*corev1.Node{node("n", "default")},
		Pods:       []*corev1.Pod{untried},
	}
	opts := state.Options{Now: now, Planned: map[types.NamespacedName]string{{Namespace: "default", Name: "untried"}: "c"}, NominationGrace: time.Minute}
	s := state.Build(objs, opts)
	if len(s.Pending) != 0 || s.Expecting() != 1 || s.Rechecks() != 0 {
		t.Errorf("pending %v, expecting %d, rechecks %d; want the untried pod waiting on its node an hour after it initialized, with nothing to look at again",
			podNames(s.Pending), s.Expecting(), s.Rechecks())
	}
	unschedulable(untried)
	s = state.Build(objs, opts)
	if got := podNames(s.Pending); !slices.Equal(got, []string{"untried"}) {
		t.Errorf("pending %v once kube-scheduler found no room for it, want it planned again", got)
	}
	objs.NodeClaims[0].Status.Conditions = nil
	initialized(now.Add(-time.Second))(objs.NodeClaims[0])
	if s = state.Build(objs, opts); len(s.Pending) != 0 || s.Rechecks() != 1 {
		t.Errorf("pending %v, rechecks %d within the grace; want it waiting and looked at again", podNames(s.Pending), s.Rechecks())
	}
}

// Pods planned onto a NodeClaim created a moment ago that the cache does
// not show yet wait for it (a loaded machine's cache can lag) rather than
// being planned again, for UnseenGrace; after that, or when it was never
// planned, they are pending.
func TestPlannedOntoAnUnseenNodeClaim(t *testing.T) {
	waiting := pod("planned", unschedulable)
	objs := state.Objects{NodePools: []*v1.NodePool{nodePool("default", "default")}, Pods: []*corev1.Pod{waiting, pod("free", unschedulable)}}
	opts := state.Options{Now: now, Planned: map[types.NamespacedName]string{{Namespace: "default", Name: "planned"}: "just-made"},
		PlannedAt: map[string]time.Time{"just-made": now.Add(-5 * time.Second)}, UnseenGrace: time.Minute, NominationGrace: time.Minute}
	s := state.Build(objs, opts)
	if got := podNames(s.Pending); !slices.Equal(got, []string{"free"}) || s.Expecting() != 1 {
		t.Errorf("pending %v, expecting %d; want the planned pod waiting for its NodeClaim", got, s.Expecting())
	}
	opts.PlannedAt["just-made"] = now.Add(-2 * time.Minute)
	if got := podNames(state.Build(objs, opts).Pending); !slices.Equal(got, []string{"free", "planned"}) {
		t.Errorf("pending %v a minute past the grace", got)
	}
}

// The pods of a node being deleted need room elsewhere, except those the
// drain will not evict; a termination deadline moves them all.
func TestLeavingPods(t *testing.T) {
	full := intstr.FromString("100%")
	never := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, MinAvailable: &full}}
	gone := metav1.NewTime(now)
	terminatingSet := func(p *corev1.Pod) {
		p.DeletionTimestamp = &gone
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "set"}}
	}
	terminatingReplica := func(p *corev1.Pod) {
		p.DeletionTimestamp = &gone
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}}
	}
	pods := []*corev1.Pod{
		pod("web", on("n")), pod("ds", on("n"), daemon), pod("db", on("n")), pod("pinned", on("n"), annotate(v1.AnnotationDoNotDisrupt, "true")),
		pod("set-0", on("n"), terminatingSet), pod("rs-x", on("n"), terminatingReplica), pod("elsewhere", on("other")),
	}
	for name, tc := range map[string]struct {
		claim []func(*v1.NodeClaim)
		want  []string
	}{
		"not deleting": {want: []string{}},
		"deleting":     {claim: []func(*v1.NodeClaim){deletingClaim}, want: []string{"set-0", "web"}},
		"deleting with a deadline": {claim: []func(*v1.NodeClaim){deletingClaim, func(nc *v1.NodeClaim) {
			nc.Annotations = map[string]string{v1.AnnotationTerminationTimestamp: now.Add(2 * time.Minute).Format(time.RFC3339)}
		}}, want: []string{"db", "pinned", "set-0", "web"}},
	} {
		nc := claim("c", "default", append([]func(*v1.NodeClaim){launchedAs("n"), initialized(now.Add(-time.Hour))}, tc.claim...)...)
		s := state.Build(state.Objects{NodePools: []*v1.NodePool{nodePool("default", "default")}, NodeClaims: []*v1.NodeClaim{nc},
			Nodes: []*corev1.Node{node("n", "default"), node("other", "default")}, Pods: pods, PDBs: []*policyv1.PodDisruptionBudget{never}},
			state.Options{Now: now, NodeClasses: ready()})
		if d := cmp.Diff(tc.want, podNames(s.Leaving)); d != "" {
			t.Errorf("%s: leaving pods (-want +got):\n%s", name, d)
		}
		in := s.Input(nil)
		if len(in.Pods) != len(tc.want) {
			t.Errorf("%s: the scheduler's input has %d pods, want the %d leaving", name, len(in.Pods), len(tc.want))
		}
	}
}

func deletingClaim(nc *v1.NodeClaim) {
	at := metav1.NewTime(now.Add(-time.Second))
	nc.DeletionTimestamp, nc.Finalizers = &at, []string{v1.TerminationFinalizer}
}

// A node's last pod event is the latest of its NodeClaim's record (pods
// that left, pods made on it) and its pods' bindings by kube-scheduler
// (the PodScheduled condition).
func TestLastPodEvent(t *testing.T) {
	at := func(d time.Duration) time.Time { return now.Add(-d).Truncate(time.Second) }
	scheduled := func(when time.Time) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(when)}}
		}
	}
	created := func(when time.Time) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(when) }
	}
	left := func(when time.Time) func(*v1.NodeClaim) {
		return func(nc *v1.NodeClaim) { nc.Status.LastPodEventTime = metav1.NewTime(when) }
	}
	for _, c := range []struct {
		name  string
		pods  []*corev1.Pod
		claim func(*v1.NodeClaim)
		want  time.Time
	}{
		{"bound by the scheduler", []*corev1.Pod{pod("a", on("ip-a"), created(at(time.Hour)), scheduled(at(10*time.Minute)))}, left(at(30 * time.Minute)), at(10 * time.Minute)},
		{"made on the node: the record", []*corev1.Pod{pod("a", on("ip-a"), created(at(5*time.Minute)))}, left(at(5 * time.Minute)), at(5 * time.Minute)},
		{"a pod not bound by kube-scheduler does not count itself", []*corev1.Pod{pod("a", on("ip-a"), created(at(time.Minute)))}, left(at(30 * time.Minute)), at(30 * time.Minute)},
		{"a pod left last", []*corev1.Pod{pod("a", on("ip-a"), created(at(time.Hour)), scheduled(at(time.Hour)))}, left(at(2 * time.Minute)), at(2 * time.Minute)},
	} {
		s := state.Build(state.Objects{
			NodePools:  []*v1.NodePool{nodePool("default", "default")},
			NodeClaims: []*v1.NodeClaim{claim("default-a", "default", launchedAs("ip-a"), initialized(at(2*time.Hour)), c.claim)},
			Nodes:      []*corev1.Node{node("ip-a", "default")},
			Pods:       c.pods,
		}, state.Options{Now: now, NodeClasses: ready()})
		if got := s.Nodes[0].LastPodEvent(); !got.Equal(c.want) {
			t.Errorf("%s: last pod event %s, want %s", c.name, got, c.want)
		}
	}
}

// A node that joined before its NodeClaim recorded the instance (EC2
// starts instances before CreateFleet answers) is that NodeClaim's: it is
// counted once in its NodePool's limits, with its capacity for the
// NodeClaim's, offers no room of its own and is no disruption candidate.
// Nodes beyond the NodeClaims still launching count, as do nodes older
// than every launching NodeClaim and nodes of the NodePool that are not
// tainted karpenter.sh/unregistered.
func TestANodeAwaitingItsNodeClaimCountsOnce(t *testing.T) {
	unregistered := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute}}
	}
	// Nodes are made an hour ago; a launching NodeClaim knows no capacity.
	launching := func(made time.Time) func(*v1.NodeClaim) {
		return func(nc *v1.NodeClaim) {
			nc.CreationTimestamp, nc.Status.Capacity, nc.Status.Allocatable = metav1.NewTime(made), nil, nil
		}
	}
	for name, tc := range map[string]struct {
		launching, early int
		claimsMade       time.Time
		wantNodes        int64
		wantCPU          int64
	}{
		"as many early nodes as launching NodeClaims": {launching: 2, early: 2, claimsMade: now.Add(-2 * time.Hour), wantNodes: 2 + 1, wantCPU: 2 * (2 + 1)},
		"one more early node than launching":          {launching: 1, early: 2, claimsMade: now.Add(-2 * time.Hour), wantNodes: 1 + 1 + 1, wantCPU: 2 * (2 + 1)},
		"no NodeClaim launching":                      {launching: 0, early: 1, wantNodes: 1 + 1, wantCPU: 2 * (1 + 1)},
		"a NodeClaim made after the early node":       {launching: 1, early: 1, claimsMade: now, wantNodes: 1 + 1 + 1, wantCPU: 2 * (1 + 1)},
	} {
		o := state.Objects{NodePools: []*v1.NodePool{nodePool("default", "default")}, Nodes: []*corev1.Node{node("ip-user", "default")}}
		for i := range tc.launching {
			o.NodeClaims = append(o.NodeClaims, claim(fmt.Sprintf("default-%d", i), "default", launching(tc.claimsMade)))
		}
		for i := range tc.early {
			o.Nodes = append(o.Nodes, node(fmt.Sprintf("ip-early-%d", i), "default", unregistered))
		}
		// A pod that tolerates every taint would fit the early nodes.
		o.Pods = []*corev1.Pod{pod("anywhere", unschedulable, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		})}
		s := state.Build(o, state.Options{Now: now, NodeClasses: ready()})
		if got := s.Usage["default"]["nodes"]; got.Value() != tc.wantNodes {
			t.Errorf("%s: NodePool default counts %d nodes, want %d: %v", name, got.Value(), tc.wantNodes, s.Usage)
		}
		if got := s.Usage["default"][corev1.ResourceCPU]; got.Value() != tc.wantCPU {
			t.Errorf("%s: NodePool default counts %d CPUs, want %d (a launching NodeClaim's early node stands for its capacity): %v", name, got.Value(), tc.wantCPU, s.Usage)
		}
		if d := cmp.Diff(state.Usage(o.NodeClaims, o.Nodes), s.Usage); d != "" {
			t.Errorf("%s: Usage and the snapshot disagree:\n%s", name, d)
		}
		var candidates []string
		for _, n := range s.Candidates() {
			candidates = append(candidates, n.Name)
		}
		// ip-user has no NodeClaim: not a candidate of a live cluster.
		if d := cmp.Diff([]string(nil), candidates); d != "" {
			t.Errorf("%s: disruption candidates (-want +got):\n%s", name, d)
		}
		for _, n := range s.Input(nil).Nodes {
			if strings.HasPrefix(n.Name, "ip-early") {
				t.Errorf("%s: the scheduler is offered %s, a node awaiting its NodeClaim", name, n.Name)
			}
		}
	}
}
