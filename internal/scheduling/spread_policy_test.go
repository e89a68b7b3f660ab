package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// existing is a node in a zone with room for a few pods and count pods
// labelled app=web on it.
func existing(name, zone, arch string, count int, taints ...corev1.Taint) *scheduling.Node {
	n := &scheduling.Node{Name: name, Taints: taints,
		Requirements: scheduling.LabelRequirements(map[string]string{scheduling.LabelZone: zone, scheduling.LabelArch: arch, scheduling.LabelHostname: name}),
		Allocatable:  scheduling.MustParseResources("cpu=8,memory=32Gi,pods=50")}
	for i := range count {
		n.Pods = append(n.Pods, newPod(fmt.Sprintf("%s-web-%d", name, i), "100m", "64Mi", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} }))
	}
	return n
}

func spreadPod(name string, edit ...func(*corev1.Pod, *corev1.TopologySpreadConstraint)) *corev1.Pod {
	return newPod(name, "100m", "64Mi", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: scheduling.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		for _, e := range edit {
			e(p, &c)
		}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
	})
}

// nodeTaintsPolicy: Honor leaves out the domains of nodes whose taints the
// pod does not tolerate; Ignore (the default) counts them.
func TestSpreadNodeTaintsPolicy(t *testing.T) {
	nodes := []*scheduling.Node{existing("n-a", "us-east-1a", "amd64", 1), existing("n-b", "us-east-1b", "amd64", 1),
		existing("n-c", "us-east-1c", "amd64", 0, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})}
	plan := solve(t, scheduling.Input{Nodes: nodes, Pods: []*corev1.Pod{spreadPod("ignore")}})
	if len(plan.Unschedulable) != 1 {
		t.Errorf("Ignore: placed %v; the tainted zone counts with 0 pods, so one more in a or b breaks maxSkew 1", placement(plan))
	}
	honor := spreadPod("honor", func(_ *corev1.Pod, c *corev1.TopologySpreadConstraint) {
		c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
	})
	plan = solve(t, scheduling.Input{Nodes: nodes, Pods: []*corev1.Pod{honor}})
	if len(plan.Unschedulable) != 0 {
		t.Errorf("Honor: %v; the tainted zone does not count", reasons(plan))
	}
}

// nodeAffinityPolicy: Honor (the default) counts only the nodes the pod's
// node selector admits; Ignore counts every node.
func TestSpreadNodeAffinityPolicy(t *testing.T) {
	nodes := []*scheduling.Node{existing("x-a", "us-east-1a", "amd64", 0), existing("arm-b", "us-east-1b", "arm64", 1)}
	arm := func(p *corev1.Pod, _ *corev1.TopologySpreadConstraint) {
		p.Spec.NodeSelector = map[string]string{scheduling.LabelArch: "arm64"}
	}
	plan := solve(t, scheduling.Input{Nodes: nodes, Pods: []*corev1.Pod{spreadPod("honor", arm)}})
	if len(plan.Unschedulable) != 0 {
		t.Errorf("Honor: %v; the amd64 node's zone does not count for an arm64 pod", reasons(plan))
	}
	ignore := spreadPod("ignore", arm, func(_ *corev1.Pod, c *corev1.TopologySpreadConstraint) {
		c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
	})
	plan = solve(t, scheduling.Input{Nodes: nodes, Pods: []*corev1.Pod{ignore}})
	if len(plan.Unschedulable) != 1 {
		t.Errorf("Ignore: placed %v; zone a counts with 0 pods, so a second in b breaks maxSkew 1", placement(plan))
	}
}

// A preferred node affinity does not shrink the domains a spread counts:
// the preference gives way to the spread.
func TestPreferredAffinityDoesNotShrinkSpreadDomains(t *testing.T) {
	nodes := []*scheduling.Node{existing("n-a", "us-east-1a", "amd64", 1), existing("n-b", "us-east-1b", "amd64", 0), existing("n-c", "us-east-1c", "amd64", 0)}
	pod := spreadPod("web", func(p *corev1.Pod, _ *corev1.TopologySpreadConstraint) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}},
		}}}}
	})
	plan := solve(t, scheduling.Input{Nodes: nodes, Pods: []*corev1.Pod{pod}})
	if got := placement(plan)["web"]; got != "n-b" && got != "n-c" {
		t.Errorf("placed on %q (unschedulable %v); a second pod in us-east-1a breaks maxSkew 1 over three zones", got, reasons(plan))
	}
}

// Preferred node affinity terms are tried heaviest first, each alone: when
// the heaviest cannot be met, the next heaviest that can is kept.
func TestHeaviestSatisfiablePreferenceWins(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"),
		requirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, "us-east-1a", "us-east-1b", "us-east-1c"))
	prefer := func(weight int32, zone string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}
	}
	pod := newPod("web", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			prefer(1, "us-east-1a"), prefer(100, "us-west-2a"), prefer(50, "us-east-1c"),
		}}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: []*corev1.Pod{pod}})
	if len(plan.NodeClaims) != 1 {
		t.Fatalf("unschedulable: %v", reasons(plan))
	}
	if zone, _ := plan.NodeClaims[0].Requirements[scheduling.LabelZone].Single(); zone != "us-east-1c" {
		t.Errorf("zone %q; the weight-100 zone does not exist, so the weight-50 one wins", zone)
	}
}

// A pod whose required affinity targets a pod placed after it is placed
// too, with it: the result does not depend on the order.
func TestAffinityToAPodPlacedLater(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"))
	// The bigger pod is placed first; its affinity target comes after.
	follower := newPod("follower", "4", "8Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: scheduling.LabelZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "leader"}},
		}}}}
	})
	leader := newPod("leader", "100m", "64Mi", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "leader"} })
	for _, order := range [][]*corev1.Pod{{follower, leader}, {leader, follower}} {
		plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: order})
		if len(plan.Unschedulable) > 0 {
			t.Errorf("order %s, %s: unschedulable %v", order[0].Name, order[1].Name, reasons(plan))
		}
	}
}

// Pods that must share a node (required affinity on the hostname) get one
// NodeClaim large enough for all of them.
func TestSelfAffinityPodsShareOneNode(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge", "m5.2xlarge", "m5.4xlarge"))
	together := pods(6, "db", "1", "1Gi", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: scheduling.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		}}}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: together})
	if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) != 1 {
		t.Fatalf("%d NodeClaims, unschedulable %v; want the 6 pods on one node", len(plan.NodeClaims), reasons(plan))
	}
	if it := plan.NodeClaims[0].InstanceType.Name; it != "m5.2xlarge" {
		t.Errorf("the NodeClaim's cheapest type is %s; 6 CPUs need an m5.2xlarge", it)
	}
}

// A NodeClaim sized for the cheapest packing of its first pod (one small
// node per pod) grows to a type that holds every pod that must share its
// host, instead of leaving them pending.
func TestSelfAffinityPodsGrowTheirNodeClaim(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "t3a.micro", "t3a.small", "m5.xlarge"))
	together := pods(3, "db", "1", "100Mi", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: scheduling.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		}}}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: together})
	if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) != 1 {
		t.Fatalf("%d NodeClaims, unschedulable %v; want the 3 pods on one node", len(plan.NodeClaims), reasons(plan))
	}
	if it := plan.NodeClaims[0].InstanceType.Name; it != "m5.xlarge" {
		t.Errorf("the NodeClaim's cheapest type is %s; 3 CPUs need the m5.xlarge", it)
	}
	// Without the affinity, one small node per pod is cheaper.
	apart := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(3, "web", "1", "100Mi")})
	if len(apart.NodeClaims) != 3 || apart.NodeClaims[0].InstanceType.Name != "t3a.micro" {
		t.Errorf("without affinity: %d NodeClaims of %s, want 3 t3a.micro", len(apart.NodeClaims), apart.NodeClaims[0].InstanceType.Name)
	}
}

// A NodeClaim lists, besides the types it was sized with, the cheapest
// others its pods fit in, cheapest first, for the launch to fall back on.
func TestNodeClaimsListTypesToFallBackOn(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "c5.large", "m5.large", "c5.xlarge", "m5.xlarge", "t3.nano"))
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: pods(1, "web", "1", "1Gi")})
	if len(plan.NodeClaims) != 1 {
		t.Fatalf("unschedulable: %v", reasons(plan))
	}
	var names []string
	prev := 0.0
	for _, it := range plan.NodeClaims[0].InstanceTypes {
		names = append(names, it.Name)
		o, _ := it.CheapestOffering(plan.NodeClaims[0].Requirements)
		if o.Price < prev {
			t.Errorf("%s at $%v listed after a dearer type", it.Name, o.Price)
		}
		prev = o.Price
	}
	if got := fmt.Sprint(names); got != "[c5.large m5.large c5.xlarge m5.xlarge]" {
		t.Errorf("the NodeClaim lists %s; want every type the pod fits (not t3.nano), cheapest first", got)
	}
}
