package provisioning_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/operator"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

func nodePool(name string, labels map[string]string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.ObjectMeta.Labels = labels
	np.Spec.Template.Spec.Requirements = reqs
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	return np
}

func in(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func pod(name string, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "app", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		}}}},
	}
}

// decisions counts the provisioning decisions made in this process (the
// operator's metric).
func decisions(t *testing.T) uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "nodewright_provisioning_decision_duration_seconds" && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// referenceCreated is the reference's count of NodeClaims provisioned for
// a NodePool in this process.
func referenceCreated(t *testing.T, pool string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "karpenter_nodeclaims_created_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["nodepool"] == pool && labels["reason"] == "provisioned" {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// afterDecisions waits until the provisioner has made n more decisions:
// what they do (or do not do) is then there to see, however slow the
// machine.
func afterDecisions(t *testing.T, e *optest.Env, n uint64) {
	t.Helper()
	from := decisions(t)
	e.WaitFor(t, fmt.Sprintf("%d more provisioning decisions", n), func(context.Context) (bool, error) {
		return decisions(t) >= from+n, nil
	})
}

func claims(t *testing.T, e *optest.Env) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := e.Kube.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Pending pods (marked Unschedulable by the real kube-scheduler) get
// NodeClaims from the NodePools that fit them; a pod no NodePool fits gets
// an event naming the blocking requirement; pods planned onto launched
// NodeClaims do not get a second NodeClaim while their nodes boot.
func TestPendingPodsGetNodeClaims(t *testing.T) {
	e := optest.Start(t, optest.Options{Scheduler: true})
	e.DefaultNodeClass(t)
	general := nodePool("general", nil, in("kubernetes.io/arch", "amd64"), in("karpenter.k8s.aws/instance-category", "c", "m", "r"))
	general.Spec.Weight = ptr.To[int32](10) // tried first, so pods without a selector land here
	e.Create(t, general)
	e.Create(t, nodePool("armapps", map[string]string{"pod-type": "armapp"}, in("kubernetes.io/arch", "arm64"), in("karpenter.k8s.aws/instance-family", "t4g")))
	for _, p := range []*corev1.Pod{
		pod("web-0", nil), pod("web-1", nil), pod("web-2", nil),
		pod("arm-0", map[string]string{"pod-type": "armapp"}), pod("arm-1", map[string]string{"pod-type": "armapp"}),
		pod("typo-0", map[string]string{"pod-type": "armapps"}),
	} {
		e.Create(t, p)
	}
	defer func() {
		if t.Failed() {
			pods := &corev1.PodList{}
			_ = e.Kube.List(context.Background(), pods)
			for _, p := range pods.Items {
				t.Logf("pod %s node %q conditions %+v", p.Name, p.Spec.NodeName, p.Status.Conditions)
			}
			for _, nc := range claims(t, e) {
				t.Logf("NodeClaim %s provider %q conditions %+v", nc.Name, nc.Status.ProviderID, nc.Status.Conditions)
			}
		}
	}()
	e.WaitFor(t, "NodeClaims for both NodePools, launched", func(context.Context) (bool, error) {
		pools := map[string]bool{}
		for _, nc := range claims(t, e) {
			if nc.Status.ProviderID == "" {
				return false, nil
			}
			pools[nc.Labels[v1.LabelNodePool]] = true
		}
		return pools["general"] && pools["armapps"], nil
	})
	// The operator's /metrics serves them under the reference's name too.
	if n := referenceCreated(t, "general"); n < 1 {
		t.Errorf("karpenter_nodeclaims_created_total{reason=provisioned,nodepool=general} = %v", n)
	}
	for _, nc := range claims(t, e) {
		reqs := map[string][]string{}
		for _, r := range nc.Spec.Requirements {
			reqs[r.Key] = r.Values
		}
		wantArch := map[string]string{"general": "amd64", "armapps": "arm64"}[nc.Labels[v1.LabelNodePool]]
		if len(reqs["kubernetes.io/arch"]) != 1 || reqs["kubernetes.io/arch"][0] != wantArch || len(reqs["node.kubernetes.io/instance-type"]) == 0 {
			t.Errorf("NodeClaim %s requirements %v", nc.Name, reqs)
		}
		if nc.Labels[v1.LabelNodePool] == "armapps" && nc.Labels["pod-type"] != "armapp" {
			t.Errorf("NodeClaim %s lacks the NodePool's template label: %v", nc.Name, nc.Labels)
		}
		if cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]; cpu.IsZero() {
			t.Errorf("NodeClaim %s requests no CPU", nc.Name)
		}
	}
	e.WaitFor(t, "an event explaining the typo pod", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := e.Kube.List(ctx, events, client.InNamespace("default")); err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "typo-0" && ev.Reason == "FailedScheduling" && ev.Source.Component == "nodewright" &&
				strings.Contains(ev.Message, "NodePool armapps: requires pod-type=armapp, pod selects pod-type=armapps") {
				return true, nil
			}
		}
		return false, nil
	})
	count := len(claims(t, e))
	afterDecisions(t, e, 2) // two more decisions while the nodes boot
	if now := len(claims(t, e)); now != count {
		t.Errorf("%d NodeClaims became %d while the first ones were booting: pods were planned twice", count, now)
	}
}

// A launch that never returns does not hold up the others: pods created
// while it (and the launches of earlier decisions) are in flight get
// NodeClaims of their own, and no pod is planned onto two NodeClaims,
// however many decisions its launch spans.
func TestDecisionsGoOnWhileNodeClaimsLaunch(t *testing.T) {
	e := optest.Start(t, optest.Options{Scheduler: true})
	e.DefaultNodeClass(t)
	e.Create(t, nodePool("general", nil, in("kubernetes.io/arch", "amd64"), in("karpenter.k8s.aws/instance-category", "c", "m", "r")))
	e.Create(t, nodePool("slow", map[string]string{"pool": "slow"}, in("kubernetes.io/arch", "amd64")))
	// Every AWS call takes a while, so launches span several decisions,
	// and the slow NodePool's launches never return.
	e.Account.SetFaults(simaws.Faults{Latency: 300 * time.Millisecond, HangNodePool: "slow"})
	e.Create(t, pod("stuck-0", map[string]string{"pool": "slow"}))
	e.WaitFor(t, "a NodeClaim for the slow NodePool", func(context.Context) (bool, error) {
		return len(claims(t, e)) == 1, nil
	})
	var names []string
	for round := range 3 {
		for i := range 4 {
			p := pod(fmt.Sprintf("web-%d-%d", round, i), nil)
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1500m")
			e.Create(t, p)
			names = append(names, p.Name)
		}
		afterDecisions(t, e, 1) // the next round comes after a decision
	}
	defer func() {
		if t.Failed() {
			for _, nc := range claims(t, e) {
				t.Logf("NodeClaim %s provider %q requests %v", nc.Name, nc.Status.ProviderID, nc.Spec.Resources.Requests)
			}
		}
	}()
	e.WaitFor(t, "every pod planned onto a NodeClaim of the general NodePool, launched", func(ctx context.Context) (bool, error) {
		for _, nc := range claims(t, e) {
			if nc.Labels[v1.LabelNodePool] == "general" && nc.Status.ProviderID == "" {
				return false, nil
			}
		}
		nominated, err := nominations(ctx, e)
		return len(nominated) == len(names)+1, err
	})
	afterDecisions(t, e, 2) // more decisions while the slow launch hangs
	nominated, err := nominations(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if got := nominated[name]; len(got) != 1 || !strings.HasPrefix(got[0], "general-") {
			t.Errorf("pod %s was planned onto %v, want one NodeClaim of the general NodePool", name, got)
		}
	}
	for _, nc := range claims(t, e) {
		if nc.Labels[v1.LabelNodePool] == "slow" && nc.Status.ProviderID != "" {
			t.Errorf("NodeClaim %s of the slow NodePool launched: its launch should still hang", nc.Name)
		}
	}
}

// nominations lists, per pod, the NodeClaims (or nodes) nodewright
// planned it onto (its Nominated events).
func nominations(ctx context.Context, e *optest.Env) (map[string][]string, error) {
	events := &corev1.EventList{}
	if err := e.Kube.List(ctx, events, client.InNamespace("default")); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, ev := range events.Items {
		if ev.Reason == "Nominated" && ev.Source.Component == "nodewright" {
			target := strings.TrimPrefix(strings.TrimPrefix(ev.Message, "pod should schedule on "), "NodeClaim ")
			target, _, _ = strings.Cut(target, " ")
			out[ev.InvolvedObject.Name] = append(out[ev.InvolvedObject.Name], target)
		}
	}
	return out, nil
}

// A registration backoff recorded in the NodePool's status by an earlier
// controller (before a restart or a leader change) holds: pods of the
// NodePool are told until when, and nothing launches. A pod is told once
// while its reason stays the same, however many decisions pass.
func TestBackoffInStatusHoldsAcrossRestarts(t *testing.T) {
	e := optest.Start(t, optest.Options{Scheduler: true})
	e.DefaultNodeClass(t)
	np := nodePool("default", nil, in("kubernetes.io/arch", "amd64"))
	e.Create(t, np)
	ctx := context.Background()
	until := time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
	e.WaitFor(t, "the backoff written into the NodePool's status", func(ctx context.Context) (bool, error) {
		if err := e.Kube.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
			return false, err
		}
		np.Status.RegistrationBackoff = &v1.RegistrationBackoff{Failures: 3, LastTimeout: metav1.NewTime(until.Add(-4 * time.Minute)), Until: metav1.NewTime(until), Cause: "kubelet: Unauthorized"}
		return e.Kube.Status().Update(ctx, np) == nil, nil
	})
	// The operator's cache shows the backoff once its NodePool controller
	// has taken it up.
	e.WaitFor(t, "the backoff taken up", func(ctx context.Context) (bool, error) {
		err := e.Kube.Get(ctx, client.ObjectKeyFromObject(np), np)
		c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionNodeRegistrationHealthy)
		return err == nil && c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "3 NodeClaim(s) in a row"), err
	})
	told := func(name string) []corev1.Event {
		events := &corev1.EventList{}
		if err := e.Kube.List(ctx, events, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		var out []corev1.Event
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == name && ev.Reason == "FailedScheduling" && ev.Source.Component == "nodewright" {
				out = append(out, ev)
			}
		}
		return out
	}
	e.Create(t, pod("first", nil))
	e.WaitFor(t, "the pod told the NodePool backs off", func(context.Context) (bool, error) {
		for _, ev := range told("first") {
			if strings.Contains(ev.Message, "back off until "+until.Format(time.RFC3339)) && strings.Contains(ev.Message, "3 registration timeout(s)") {
				return true, nil
			}
		}
		return false, nil
	})
	// That decision created nothing (NodeClaims are created before pods
	// are told), and neither does the next, which a second pod causes.
	if n := len(claims(t, e)); n != 0 {
		t.Fatalf("%d NodeClaims launched during the backoff", n)
	}
	e.Create(t, pod("second", nil))
	e.WaitFor(t, "the second pod told too", func(context.Context) (bool, error) { return len(told("second")) > 0, nil })
	if n := len(claims(t, e)); n != 0 {
		t.Errorf("%d NodeClaims launched during the backoff", n)
	}
	for _, ev := range told("first") {
		if ev.Count > 1 {
			t.Errorf("the first pod was told the same %d times: %s", ev.Count, ev.Message)
		}
	}
}

// The pods planned onto a NodeClaim are nominated to its node before the
// node can take pods (while karpenter.sh/unregistered is still on it), so
// kube-scheduler counts them as taking their room from the first moment
// and pods planned onto nodes not up yet cannot take it: each nomination
// is written before the registration that lifts the taint (the API
// server's resource versions order the writes).
func TestPlannedPodsAreNominatedBeforeTheNodeTakesPods(t *testing.T) {
	e := optest.Start(t, optest.Options{Scheduler: true})
	e.DefaultNodeClass(t)
	e.Create(t, nodePool("general", nil, in("kubernetes.io/arch", "amd64"), in("karpenter.k8s.aws/instance-category", "c", "m", "r")))
	for _, name := range []string{"web-0", "web-1"} {
		e.Create(t, pod(name, nil))
	}
	claim := launchedClaim(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(e.Plane.Config)
	from := claim.ResourceVersion
	pods, err := kube.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer pods.Stop()
	nodes, err := kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer nodes.Stop()

	name := "ip-10-0-0-1.ec2.internal"
	bootNode(t, e, &claim, name, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")})

	revision := func(o metav1.Object) uint64 {
		n, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Fatalf("resource version %q of %s: %v", o.GetResourceVersion(), o.GetName(), err)
		}
		return n
	}
	var lifted uint64
	for lifted == 0 {
		select {
		case ev := <-nodes.ResultChan():
			n, ok := ev.Object.(*corev1.Node)
			if ok && n.Name == name && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyUnregistered }) {
				lifted = revision(n)
			}
		case <-ctx.Done():
			t.Fatal("the node was never registered")
		}
	}
	nominated := map[string]uint64{}
	for len(nominated) < 2 {
		select {
		case ev := <-pods.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Status.NominatedNodeName == name && nominated[p.Name] == 0 {
				nominated[p.Name] = revision(p)
			}
		case <-ctx.Done():
			t.Fatalf("pods nominated to %s: %v; want web-0 and web-1", name, nominated)
		}
	}
	for pod, at := range nominated {
		if at > lifted {
			t.Errorf("pod %s was nominated to %s (revision %d) after karpenter.sh/unregistered was lifted (revision %d): pods planned elsewhere could take its room first", pod, name, at, lifted)
		}
	}
}

// Pods planned onto a registered node that kube-scheduler has not tried
// yet keep their room there: the next decision does not plan them again,
// so a larger pod that comes after them gets a NodeClaim of its own
// instead of their room (and them a NodeClaim they do not need). No
// kube-scheduler runs: the pods are never tried.
func TestUntriedPodsKeepTheirRoomOnANode(t *testing.T) {
	logs := &optest.Logs{}
	e := optest.Start(t, optest.Options{Log: logs.Logger(t)})
	e.DefaultNodeClass(t)
	e.Create(t, nodePool("general", nil, in("kubernetes.io/arch", "amd64"), in("karpenter.k8s.aws/instance-category", "c", "m", "r")))
	e.Create(t, pod("seed", nil))
	claim := launchedClaim(t, e)
	name := "ip-10-0-0-1.ec2.internal"
	bootNode(t, e, &claim, name, claim.Status.Allocatable)
	e.WaitFor(t, "the NodeClaim registered", func(ctx context.Context) (bool, error) {
		nc := &v1.NodeClaim{}
		err := e.Kube.Get(ctx, client.ObjectKeyFromObject(&claim), nc)
		return err == nil && nc.Status.NodeName == name, err
	})

	// Three small pods fill most of the node's room left by the seed.
	room := claim.Status.Allocatable.Cpu().MilliValue() - 500
	small := resource.NewMilliQuantity((room-100)/3, resource.DecimalSI)
	var smalls []string
	for i := range 3 {
		p := pod(fmt.Sprintf("small-%d", i), nil)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *small}
		e.Create(t, p)
		smalls = append(smalls, p.Name)
	}
	e.WaitFor(t, "a decision planning the three small pods", func(context.Context) (bool, error) {
		for _, line := range logs.With("computed a plan") {
			if line["pendingPods"] == float64(3) {
				return true, nil
			}
		}
		return false, nil
	})
	if got := claims(t, e); len(got) != 1 {
		t.Fatalf("%d NodeClaims after the small pods, want the one: they fit on its node", len(got))
	}
	// A larger pod comes: it alone needs a new node.
	large := pod("large", nil)
	large.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(room-200, resource.DecimalSI)}
	e.Create(t, large)
	var nominated map[string][]string
	e.WaitFor(t, "the large pod planned", func(ctx context.Context) (bool, error) {
		var err error
		nominated, err = nominations(ctx, e)
		return len(nominated["large"]) > 0, err
	})
	for _, p := range smalls {
		if got := nominated[p]; len(got) > 0 {
			t.Errorf("pod %s was planned again, onto %v: it had room on node %s", p, got, name)
		}
	}
	if got := nominated["large"]; len(got) != 1 || got[0] == name || got[0] == claim.Name {
		t.Errorf("the large pod was planned onto %v, want the new NodeClaim only", got)
	}
	if got := len(claims(t, e)); got != 2 {
		t.Errorf("%d NodeClaims, want 2", got)
	}
}

// launchedClaim waits for the one NodeClaim to launch and returns it.
func launchedClaim(t *testing.T, e *optest.Env) v1.NodeClaim {
	t.Helper()
	var claim v1.NodeClaim
	e.WaitFor(t, "a launched NodeClaim", func(context.Context) (bool, error) {
		list := claims(t, e)
		if len(list) == 1 && list[0].Status.ProviderID != "" {
			claim = list[0]
			return true, nil
		}
		return false, nil
	})
	return claim
}

// bootNode does what the kubelet of the NodeClaim's instance does: it
// registers the node with karpenter.sh/unregistered, then reports it
// Ready with the allocatable resources.
func bootNode(t *testing.T, e *optest.Env, claim *v1.NodeClaim, name string, allocatable corev1.ResourceList) {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelArchStable: "amd64"}},
		Spec:       corev1.NodeSpec{ProviderID: claim.Status.ProviderID, Taints: []corev1.Taint{{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute}}},
	}
	e.Create(t, node)
	created := node.DeepCopy()
	node.Status.Capacity, node.Status.Allocatable = allocatable, allocatable
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := e.Kube.Status().Patch(context.Background(), node, client.MergeFrom(created)); err != nil {
		t.Fatal(err)
	}
}

// A pod that avoids a node by hostname (a NotIn affinity, as users write
// to keep off a bad node) gets a NodeClaim the API server accepts: one
// that does not require the hostname, which the NodeClaim CRD refuses.
func TestPodAvoidingANodeByHostnameGetsANodeClaim(t *testing.T) {
	e := optest.Start(t, optest.Options{Scheduler: true})
	e.DefaultNodeClass(t)
	e.Create(t, nodePool("general", nil, in("kubernetes.io/arch", "amd64"), in("karpenter.k8s.aws/instance-category", "c", "m")))
	p := pod("avoider-0", nil)
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"ip-192-168-77-12.eu-west-1.compute.internal"}}}}},
	}}}
	e.Create(t, p)
	e.WaitFor(t, "a launched NodeClaim for the pod", func(context.Context) (bool, error) {
		for _, nc := range claims(t, e) {
			if nc.Status.ProviderID != "" {
				return true, nil
			}
		}
		return false, nil
	})
	for _, nc := range claims(t, e) {
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelHostname {
				t.Errorf("NodeClaim %s requires %s %s %v", nc.Name, r.Key, r.Operator, r.Values)
			}
		}
	}
}

// With --min-values-policy=BestEffort a NodePool whose types offer fewer
// families than its minValues launches on those it has: the NodeClaim the
// API server stores asks for as many as they offer, says it was relaxed,
// and is counted so; the metric's label says the same.
func TestRelaxedMinValuesReachTheNodeClaim(t *testing.T) {
	e := optest.Start(t, optest.Options{Scheduler: true, Configure: func(cfg *operator.Config) { cfg.Policy.RelaxMinValues = true }})
	e.DefaultNodeClass(t)
	families := in("karpenter.k8s.aws/instance-family", "m5", "m6i", "c6i")
	families.MinValues = ptr.To(3)
	e.Create(t, nodePool("diverse", nil, families, in("karpenter.k8s.aws/instance-category", "m")))
	e.Create(t, pod("web-0", nil))
	e.WaitFor(t, "a NodeClaim", func(context.Context) (bool, error) { return len(claims(t, e)) > 0, nil })
	nc := claims(t, e)[0]
	if nc.Annotations[v1.AnnotationMinValuesRelaxed] != "true" {
		t.Errorf("annotations %v; want %s=true", nc.Annotations, v1.AnnotationMinValuesRelaxed)
	}
	for _, r := range nc.Spec.Requirements {
		if r.Key == "karpenter.k8s.aws/instance-family" && (r.MinValues == nil || *r.MinValues != 2) {
			t.Errorf("instance-family minValues %v; want 2, the families m5 and m6i", r.MinValues)
		}
	}
	// Counted once the create returned, which may be after the NodeClaim shows.
	e.WaitFor(t, `karpenter_nodeclaims_created_total{nodepool="diverse",min_values_relaxed="true"}`, func(context.Context) (bool, error) {
		gathered, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return false, err
		}
		for _, f := range gathered {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if f.GetName() == "karpenter_nodeclaims_created_total" && labels["nodepool"] == "diverse" && labels["min_values_relaxed"] == "true" && m.GetCounter().GetValue() >= 1 {
					return true, nil
				}
			}
		}
		return false, nil
	})
}
