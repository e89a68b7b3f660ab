package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

func taint(key string, effect corev1.TaintEffect) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	}
}

// A NodePool tainted PreferNoSchedule is used only when no other NodePool
// (of any weight) takes the pod, and then it is.
func TestPreferNoScheduleNodePoolsComeLast(t *testing.T) {
	arch := requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64")
	soft := pool(t, "a-soft", arch, taint("example.com/soft", corev1.TaintEffectPreferNoSchedule))
	plain := pool(t, "b-plain", arch)
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{soft, plain}, Pods: pods(3, "web", "1", "1Gi")})
	for _, c := range plan.NodeClaims {
		if c.NodePool != "b-plain" {
			t.Errorf("NodeClaim %s from %s; the untainted NodePool takes the pods", c.Name, c.NodePool)
		}
	}
	// Only the tainted NodePool can take arm64 pods: it does.
	armOnly := pool(t, "c-soft-arm", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "arm64"), taint("example.com/soft", corev1.TaintEffectPreferNoSchedule))
	armPods := pods(2, "arm", "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{scheduling.LabelArch: "arm64"} })
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{armOnly, plain}, Pods: armPods})
	if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) == 0 || plan.NodeClaims[0].NodePool != "c-soft-arm" {
		t.Errorf("arm64 pods: %d NodeClaims, unschedulable %v; want them on the PreferNoSchedule NodePool", len(plan.NodeClaims), reasons(plan))
	}
	// An existing node tainted PreferNoSchedule is passed over for a new one.
	node := &scheduling.Node{Name: "soft-node", Requirements: scheduling.LabelRequirements(map[string]string{scheduling.LabelArch: "amd64"}),
		Taints: []corev1.Taint{{Key: "example.com/soft", Effect: corev1.TaintEffectPreferNoSchedule}}, Allocatable: scheduling.MustParseResources("cpu=8,memory=32Gi,pods=100")}
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{plain}, Nodes: []*scheduling.Node{node}, Pods: pods(1, "one", "1", "1Gi")})
	if len(plan.NodeClaims) != 1 {
		t.Errorf("%d NodeClaims; the pod avoids the PreferNoSchedule node while a NodePool takes it", len(plan.NodeClaims))
	}
	plan = solve(t, scheduling.Input{Nodes: []*scheduling.Node{node}, Pods: pods(1, "one", "1", "1Gi")})
	if len(plan.Unschedulable) > 0 {
		t.Errorf("with no NodePool the pod still goes to the PreferNoSchedule node: %v", reasons(plan))
	}
}

// DaemonSets that do not tolerate a NodePool's startup taints still run on
// its nodes once those taints are gone: their requests count.
func TestDaemonSetsCountDespiteStartupTaints(t *testing.T) {
	np := pool(t, "cilium", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge"), func(np *v1.NodePool) {
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, DaemonSets: daemonSets(newPod("agent", "1", "1Gi")), Pods: pods(1, "web", "1", "1Gi")})
	if len(plan.NodeClaims) != 1 || plan.NodeClaims[0].InstanceType.Name != "m5.xlarge" {
		t.Errorf("plan %v; want one m5.xlarge: the DaemonSet's CPU and the pod's do not fit an m5.large", plan.NodeClaims)
	}
}

// A DaemonSet costs only on the instance types its affinity admits: one
// for m5.xlarge alone leaves an m5.large room for a pod it would not
// otherwise fit beside.
func TestDaemonSetOverheadIsPerInstanceType(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge"))
	onlyXLarge := func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{scheduling.LabelInstanceType: "m5.xlarge"}
	}
	in := scheduling.Input{NodePools: []*scheduling.NodePool{np}, DaemonSets: daemonSets(newPod("big-agent", "1", "1Gi", onlyXLarge)), Pods: pods(1, "web", "1", "1Gi")}
	plan := solve(t, in)
	if len(plan.NodeClaims) != 1 || plan.NodeClaims[0].InstanceType.Name != "m5.large" {
		t.Errorf("plan %v; want an m5.large: the DaemonSet does not run there", plan.NodeClaims)
	}
	// A pod that must run on m5.xlarge shares it with the DaemonSet.
	in.Pods = pods(1, "xl", "3", "1Gi", onlyXLarge)
	if plan := solve(t, in); len(plan.Unschedulable) != 1 {
		t.Errorf("a 3-CPU pod beside the 1-CPU DaemonSet on an m5.xlarge (3.92 CPU): unschedulable %v; want it refused", reasons(plan))
	}
}

// A DaemonSet's host port is taken on every new node: a pod asking for
// the same port cannot go there.
func TestDaemonSetHostPortsConflictWithPods(t *testing.T) {
	withPort := func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
	}
	np := pool(t, "general", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"))
	in := scheduling.Input{NodePools: []*scheduling.NodePool{np}, DaemonSets: daemonSets(newPod("exporter", "100m", "64Mi", withPort)), Pods: pods(1, "web", "1", "1Gi", withPort)}
	plan := solve(t, in)
	if len(plan.NodeClaims) != 0 || len(plan.Unschedulable) != 1 {
		t.Fatalf("%d NodeClaims, unschedulable %v; want the pod refused", len(plan.NodeClaims), reasons(plan))
	}
	in.DaemonSets = daemonSets(newPod("exporter", "100m", "64Mi"))
	if plan := solve(t, in); len(plan.NodeClaims) != 1 {
		t.Errorf("without the DaemonSet's port: unschedulable %v", reasons(plan))
	}
}

// Pods that select by the deprecated beta and failure-domain labels mean
// the labels that replaced them.
func TestDeprecatedLabelsMeanTheirReplacements(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64", "arm64"))
	selectors := map[string]string{
		"beta.kubernetes.io/arch": "arm64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/instance-type": "m6g.large",
		"failure-domain.beta.kubernetes.io/zone": "us-east-1b", "failure-domain.beta.kubernetes.io/region": "us-east-1",
	}
	byAffinity := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "failure-domain.beta.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1c"}},
			}}},
		}}}
	}
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{np}, Pods: append(
		pods(1, "selector", "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = selectors }),
		pods(1, "affinity", "1", "1Gi", byAffinity)...)})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", reasons(plan))
	}
	for _, c := range plan.NodeClaims {
		zone, _ := c.Requirements[scheduling.LabelZone].Single()
		switch c.Pods[0].Name {
		case "selector-0":
			if c.InstanceType.Name != "m6g.large" || zone != "us-east-1b" {
				t.Errorf("the beta-label pod got %s in %q", c.InstanceType.Name, zone)
			}
		case "affinity-0":
			if zone != "us-east-1c" {
				t.Errorf("the failure-domain affinity pod got zone %q", zone)
			}
		}
	}
}

// A pod affinity term's namespace selector selects namespaces by their
// labels: only the pods of those namespaces attract the pod.
func TestPodAffinityNamespaceSelector(t *testing.T) {
	np := pool(t, "general", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "amd64"))
	db := func(ns, zone string) *scheduling.Node {
		pod := newPod("db-"+ns, "100m", "64Mi", func(p *corev1.Pod) { p.Namespace, p.Labels = ns, map[string]string{"app": "db"} })
		return &scheduling.Node{Name: "node-" + ns, Requirements: scheduling.LabelRequirements(map[string]string{scheduling.LabelZone: zone, scheduling.LabelArch: "amd64"}),
			Allocatable: scheduling.MustParseResources("cpu=100m,memory=64Mi,pods=1"), Pods: []*corev1.Pod{pod}}
	}
	web := pods(1, "web", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: scheduling.LabelZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		}}}}
	})
	in := scheduling.Input{NodePools: []*scheduling.NodePool{np}, Nodes: []*scheduling.Node{db("team-a", "us-east-1c"), db("other", "us-east-1a")}, Pods: web,
		Namespaces: map[string]map[string]string{"team-a": {"team": "a"}, "other": {}, "default": {}}}
	plan := solve(t, in)
	if len(plan.NodeClaims) != 1 || len(plan.Unschedulable) > 0 {
		t.Fatalf("%d NodeClaims, unschedulable %v", len(plan.NodeClaims), reasons(plan))
	}
	if zone, _ := plan.NodeClaims[0].Requirements[scheduling.LabelZone].Single(); zone != "us-east-1c" {
		t.Errorf("the pod's NodeClaim is in zone %q; only team-a's db (us-east-1c) attracts it", zone)
	}
}
