package scheduling_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

func TestNodeSelectorAndRequiredAffinityAgree(t *testing.T) {
	armPool := pool(t, "arm", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "arm64"), func(np *v1.NodePool) {
		np.Spec.Template.ObjectMeta.Labels = map[string]string{"pod-type": "armapp"}
	})
	selector := pods(3, "selector", "250m", "256Mi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pod-type": "armapp"} })
	affinity := pods(3, "affinity", "250m", "256Mi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pod-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"armapp"}}}}},
		}}}
	})
	a := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{armPool}, Pods: selector})
	b := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{armPool}, Pods: affinity})
	if len(a.Unschedulable)+len(b.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v %v", reasons(a), reasons(b))
	}
	if len(a.NodeClaims) != len(b.NodeClaims) || a.Price() != b.Price() || a.NodeClaims[0].InstanceType != b.NodeClaims[0].InstanceType {
		t.Errorf("nodeSelector planned %d claims at $%.4f, affinity %d at $%.4f", len(a.NodeClaims), a.Price(), len(b.NodeClaims), b.Price())
	}
	for _, c := range a.NodeClaims {
		if arch, _ := c.InstanceType.Requirements[scheduling.LabelArch].Single(); arch != "arm64" {
			t.Errorf("claim %s got %s instance type %s", c.Name, arch, c.InstanceType.Name)
		}
	}
	// A typo names the NodePool and the label that blocked it.
	typo := newPod("typo", "250m", "256Mi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pod-type": "armapps"} })
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{armPool}, Pods: []*corev1.Pod{typo}})
	if got, want := reasons(plan)["typo"], "NodePool arm: requires pod-type=armapp, pod selects pod-type=armapps"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}

func TestUnschedulableReasons(t *testing.T) {
	gpu := pool(t, "gpu", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	})
	arm := pool(t, "arm", requirement(scheduling.LabelArch, corev1.NodeSelectorOpIn, "arm64"))
	arm.AMIs = archAMIs("amd64")
	arm.NodeClass = "arm"
	for _, tc := range []struct {
		name  string
		pools []*scheduling.NodePool
		pod   *corev1.Pod
		want  string
	}{
		{"taint", []*scheduling.NodePool{gpu}, newPod("p", "1", "1Gi"), "NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated"},
		{"ami", []*scheduling.NodePool{arm}, newPod("p", "1", "1Gi"), "NodePool arm: no AMI for arm64 in EC2NodeClass arm"},
		{"too big", []*scheduling.NodePool{pool(t, "general")}, newPod("p", "16", "64Gi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{scheduling.LabelArch: "amd64", "karpenter.k8s.aws/instance-category": "t"}
		}), "NodePool general: no instance type fits 16 CPU / 64Gi"},
		{"unknown resource", []*scheduling.NodePool{pool(t, "general")}, newPod("p", "1", "1Gi", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/fpga"] = resource.MustParse("1")
		}), "no instance type provides example.com/fpga"},
		{"no nodepool", nil, newPod("p", "1", "1Gi"), "no NodePool exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := solve(t, scheduling.Input{NodePools: tc.pools, Pods: []*corev1.Pod{tc.pod}})
			if got := reasons(plan)["p"]; !strings.HasPrefix(got, tc.want) {
				t.Errorf("reason %q, want it to start with %q", got, tc.want)
			}
			if len(plan.NodeClaims) != 0 {
				t.Errorf("planned %d NodeClaims for an unschedulable pod", len(plan.NodeClaims))
			}
		})
	}
}

func TestTolerationsAndStartupTaints(t *testing.T) {
	tainted := pool(t, "tainted", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoExecute}}
	})
	tolerant := newPod("tolerant", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ci", Effect: corev1.TaintEffectNoSchedule}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{tainted}, Pods: []*corev1.Pod{tolerant, newPod("intolerant", "1", "1Gi")}})
	if placement(plan)["tolerant"] == "" {
		t.Errorf("the pod tolerating the NodePool taint (and not the startup taint) was not placed: %v", reasons(plan))
	}
	if !strings.Contains(reasons(plan)["intolerant"], "taint dedicated=ci:NoSchedule not tolerated") {
		t.Errorf("intolerant pod: %q", reasons(plan)["intolerant"])
	}
}

func TestExistingNodesFirst(t *testing.T) {
	alloc := scheduling.MustParseResources("cpu=4,memory=16Gi,pods=20")
	node := &scheduling.Node{Name: "node-a", Allocatable: alloc, Requirements: scheduling.LabelRequirements(map[string]string{
		scheduling.LabelHostname: "node-a", scheduling.LabelZone: "us-east-1a", scheduling.LabelArch: "amd64",
	}), Pods: []*corev1.Pod{newPod("running", "2", "4Gi")}}
	in := scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Nodes: []*scheduling.Node{node}, Pods: pods(3, "web", "1", "2Gi")}
	plan := solve(t, in)
	got := placement(plan)
	if got["web-0"] != "node-a" || got["web-1"] != "node-a" {
		t.Errorf("the existing node's free 2 CPU should take two pods first: %v", got)
	}
	if len(plan.NodeClaims) != 1 || got["web-2"] != plan.NodeClaims[0].Name {
		t.Errorf("the third pod should get one new NodeClaim: %v", got)
	}
}

func TestWeightAndLimits(t *testing.T) {
	heavy := pool(t, "heavy", func(np *v1.NodePool) {
		np.Spec.Weight = ptr.To[int32](50)
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	}, requirement("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpIn, "m"))
	light := pool(t, "light")
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{light, heavy}, Pods: pods(20, "w", "1", "1Gi")})
	capacity := map[string]int64{}
	for _, c := range plan.NodeClaims {
		capacity[c.NodePool] += c.InstanceType.Capacity.CPU()
	}
	if capacity["heavy"] == 0 || capacity["heavy"] > 8000 {
		t.Errorf("the heavier NodePool should be used first and stop at its 8 CPU limit: %v", capacity)
	}
	if capacity["light"] == 0 || len(plan.Unschedulable) > 0 {
		t.Errorf("the lighter NodePool should take the rest: %v, unschedulable %v", capacity, reasons(plan))
	}
	// The pods on the lighter NodePool say which NodePool they fell back
	// from and why; those on the heavier one, or that it does not admit
	// (another instance category), say nothing.
	onLight := 0
	for _, c := range plan.NodeClaims {
		if c.NodePool == "light" {
			onLight += len(c.Pods)
		}
	}
	checkFallbacks := func(name string, plan *scheduling.Plan, want int) {
		t.Helper()
		if len(plan.Fallbacks) != want {
			t.Errorf("%s: %d pods fell back, want %d", name, len(plan.Fallbacks), want)
		}
		for _, f := range plan.Fallbacks {
			if f.NodePool != "light" || len(f.Passed) != 1 || f.Passed[0].Name != "heavy" || f.Passed[0].Weight != 50 || !strings.Contains(f.Passed[0].Reason, "limits reached") {
				t.Errorf("%s: pod %s fell back to %s from %+v", name, f.Pod.Name, f.NodePool, f.Passed)
			}
		}
	}
	checkFallbacks("packed pods", plan, onLight)
	// Pods placed one at a time (spread by hostname) say so too.
	spread := pods(12, "s", "1", "1Gi", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "s"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "s"}}}}
	})
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{light, heavy}, Pods: spread})
	onLight = 0
	for _, c := range plan.NodeClaims {
		if c.NodePool == "light" {
			onLight += len(c.Pods)
		}
	}
	if onLight == 0 {
		t.Fatalf("no spread pod on the lighter NodePool: %v", placement(plan))
	}
	checkFallbacks("spread pods", plan, onLight)
	other := pods(3, "c", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-category": "c"}
	})
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{light, heavy}, Pods: other})
	checkFallbacks("pods the heavier NodePool does not admit", plan, 0)
}

func TestMinValues(t *testing.T) {
	pl := pool(t, "diverse", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{
			Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "m6i", "c6i"}, MinValues: ptr.To(3),
		}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pl}, Pods: pods(4, "w", "1", "1Gi")})
	for _, c := range plan.NodeClaims {
		families := map[string]bool{}
		for _, it := range c.InstanceTypes {
			v, _ := it.Requirements["karpenter.k8s.aws/instance-family"].Single()
			families[v] = true
		}
		if len(families) < 3 {
			t.Errorf("claim %s lists %d families, minValues is 3", c.Name, len(families))
		}
	}
}

func TestDaemonSetOverheadAndHostPorts(t *testing.T) {
	ds := newPod("ds", "500m", "512Mi")
	in := scheduling.Input{
		NodePools:  []*scheduling.NodePool{pool(t, "general")},
		DaemonSets: daemonSets(ds),
		Pods: pods(2, "hp", "100m", "128Mi", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 8080}}
		}),
	}
	plan := solve(t, in)
	if len(plan.NodeClaims) != 2 {
		t.Fatalf("two pods on host port 8080 need two nodes, got %d", len(plan.NodeClaims))
	}
	for _, c := range plan.NodeClaims {
		if c.DaemonOverhead.CPU() != 500 {
			t.Errorf("claim %s carries %dm of DaemonSet CPU, want 500m", c.Name, c.DaemonOverhead.CPU())
		}
	}
}

func TestDeterministic(t *testing.T) {
	in := scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "a"), pool(t, "b")}, Pods: pods(200, "w", "700m", "1500Mi")}
	first, second := summary(solve(t, in)), summary(solve(t, in))
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("two runs differ:\n%s", diff)
	}
}

func summary(plan *scheduling.Plan) []string {
	out := make([]string, 0, len(plan.NodeClaims)+len(plan.Unschedulable))
	for _, c := range plan.NodeClaims {
		names := make([]string, len(c.Pods))
		for i, p := range c.Pods {
			names[i] = p.Name
		}
		out = append(out, c.Name+" "+c.InstanceType.Name+" "+c.Offering.Zone+" "+strings.Join(names, ","))
	}
	for _, u := range plan.Unschedulable {
		out = append(out, u.Pod.Name+": "+u.Reason)
	}
	return out
}

// Preferences hold when they can and are dropped, one at a time, when not.
func TestPreferencesRelax(t *testing.T) {
	preferZone := func(zone string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scheduling.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}},
			}}}}
		}
	}
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: []*corev1.Pod{
		newPod("possible", "1", "1Gi", preferZone("us-east-1c")), newPod("impossible", "1", "1Gi", preferZone("eu-west-1a")),
	}})
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("a preference made a pod unschedulable: %v", reasons(plan))
	}
	for _, c := range plan.NodeClaims {
		for _, p := range c.Pods {
			if p.Name == "possible" && c.Offering.Zone != "us-east-1c" {
				t.Errorf("the satisfiable zone preference was ignored: %s in %s", p.Name, c.Offering.Zone)
			}
		}
	}
	spread := func(p *corev1.Pod) {
		p.Labels["app"] = "web"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: scheduling.LabelHostname,
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	limited := pool(t, "one-node", func(np *v1.NodePool) { np.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("1")} })
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{limited}, Pods: pods(3, "web", "100m", "128Mi", spread)})
	if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) != 1 {
		t.Errorf("ScheduleAnyway spread should yield to the one-node limit: %d claims, %v", len(plan.NodeClaims), reasons(plan))
	}
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "general")}, Pods: pods(3, "web", "100m", "128Mi", spread)})
	if len(plan.NodeClaims) != 3 {
		t.Errorf("ScheduleAnyway spread on hostname should be honoured when it can: %d claims", len(plan.NodeClaims))
	}
}

// With fewer zones than minDomains, the spread minimum counts as zero: at
// most maxSkew pods per zone, the rest wait with the reason.
func TestSpreadMinDomains(t *testing.T) {
	twoZones := pool(t, "two-zones", requirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, "us-east-1a", "us-east-1b"))
	spread := func(p *corev1.Pod) {
		p.Labels["app"] = "db"
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, MinDomains: ptr.To[int32](3),
			TopologyKey: scheduling.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	}
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{twoZones}, Pods: pods(4, "db", "1", "1Gi", spread)})
	zones := map[string]int{}
	for _, c := range plan.NodeClaims {
		zones[c.Offering.Zone] += len(c.Pods)
	}
	if zones["us-east-1a"] != 1 || zones["us-east-1b"] != 1 || len(plan.Unschedulable) != 2 {
		t.Fatalf("want one pod per zone and two waiting: %v, unschedulable %v", zones, reasons(plan))
	}
	for _, r := range reasons(plan) {
		if !strings.Contains(r, "topology spread on topology.kubernetes.io/zone (maxSkew 1)") {
			t.Errorf("reason %q does not name the spread constraint", r)
		}
	}
	// Without minDomains the two zones simply alternate.
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{twoZones}, Pods: pods(4, "db", "1", "1Gi", func(p *corev1.Pod) {
		spread(p)
		p.Spec.TopologySpreadConstraints[0].MinDomains = nil
	})})
	if len(plan.Unschedulable) != 0 {
		t.Errorf("without minDomains all four fit two zones: %v", reasons(plan))
	}
}

// A NodePool none of whose offerings has capacity passes its pods to the
// next NodePool by weight in the same plan, and they say why.
func TestNoCapacityFallsBackInOnePlan(t *testing.T) {
	var types []*scheduling.InstanceType
	for _, it := range catalog(t) {
		c := *it
		c.Offerings = slices.Clone(it.Offerings)
		for i := range c.Offerings {
			c.Offerings[i].Available = false
		}
		types = append(types, &c)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "spot-only"}}
	np.Spec.Weight = ptr.To[int32](10)
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	starved := scheduling.NodePoolFromObject(np, types, archAMIs("amd64", "arm64"), nil)
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{starved, pool(t, "fallback")}, Pods: pods(5, "w", "1", "1Gi")})
	if len(plan.Unschedulable) > 0 || len(plan.NodeClaims) == 0 {
		t.Fatalf("unschedulable %v, %d NodeClaims", reasons(plan), len(plan.NodeClaims))
	}
	for _, c := range plan.NodeClaims {
		if c.NodePool != "fallback" {
			t.Errorf("NodeClaim %s of NodePool %s, which has no capacity", c.Name, c.NodePool)
		}
	}
	if len(plan.Fallbacks) != 5 {
		t.Fatalf("%d pods fell back, want 5", len(plan.Fallbacks))
	}
	if f := plan.Fallbacks[0]; f.Passed[0].Name != "spot-only" || !strings.Contains(f.Passed[0].Reason, "no instance type has an offering") {
		t.Errorf("fell back from %+v", f.Passed)
	}
}

// A pod that keeps off some nodes by hostname (a NotIn affinity, as
// users write to avoid a bad node) gets a NodeClaim whose requirements
// do not name the hostname: the NodeClaim API refuses it, and a new
// node has a name of its own anyway.
func TestHostnameNotInStaysOffNodeClaims(t *testing.T) {
	avoid := pods(2, "avoid", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: scheduling.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"ip-10-0-3-7.ec2.internal"}},
				{Key: scheduling.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}},
		}}}
	})
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "default")}, Pods: avoid})
	if len(plan.NodeClaims) == 0 || len(plan.Unschedulable) > 0 {
		t.Fatalf("planned %d NodeClaims, unschedulable %v", len(plan.NodeClaims), reasons(plan))
	}
	for _, c := range plan.NodeClaims {
		if _, ok := c.Requirements[scheduling.LabelHostname]; ok {
			t.Errorf("NodeClaim %s requires %s", c.Name, c.Requirements[scheduling.LabelHostname])
		}
		if arch, _ := c.Requirements[scheduling.LabelArch].Single(); arch != "amd64" {
			t.Errorf("NodeClaim %s lost the pod's architecture: %v", c.Name, c.Requirements[scheduling.LabelArch])
		}
	}
}

// Quantities the API server accepts but int64 cannot hold are counted as
// more than any node has, never wrapped: a pod asking 1.8e22 CPUs (or
// 1e30 bytes of memory) fits no instance type and says so; a NodePool
// limit of 1e16 CPUs, or of 1e30 bytes of memory, limits nothing a
// cluster can reach; a negative limit admits no node and says so.
func TestQuantitiesBeyondInt64(t *testing.T) {
	huge := pods(1, "huge-cpu", "18e21", "1Gi")
	huge = append(huge, pods(1, "huge-memory", "1", "1e30")...)
	plan := solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{pool(t, "default")}, Pods: huge})
	if len(plan.NodeClaims) != 0 {
		t.Errorf("planned %d NodeClaims (%s first) for pods no instance type can hold", len(plan.NodeClaims), plan.NodeClaims[0].InstanceType.Name)
	}
	for _, name := range []string{"huge-cpu-0", "huge-memory-0"} {
		if r := reasons(plan)[name]; !strings.Contains(r, "no instance type fits") {
			t.Errorf("%s: %q, want no instance type fits", name, r)
		}
	}
	vast := pool(t, "vast", func(np *v1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e16"), corev1.ResourceMemory: resource.MustParse("1e30")}
	})
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{vast}, Pods: pods(10, "w", "1", "1Gi")})
	if len(plan.NodeClaims) == 0 || len(plan.Unschedulable) > 0 {
		t.Errorf("limits of 1e16 CPUs and 1e30 bytes: %d NodeClaims, unschedulable %v; want every pod planned", len(plan.NodeClaims), reasons(plan))
	}
	negative := pool(t, "negative", func(np *v1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
	})
	plan = solve(t, scheduling.Input{NodePools: []*scheduling.NodePool{negative}, Pods: pods(1, "w", "1", "1Gi")})
	if r := reasons(plan)["w-0"]; len(plan.NodeClaims) != 0 || !strings.Contains(r, "below zero") || !strings.Contains(r, "cpu=-1") {
		t.Errorf("a limit of -1 CPU: %d NodeClaims, reason %q; want none, saying the limit is below zero", len(plan.NodeClaims), r)
	}
}
