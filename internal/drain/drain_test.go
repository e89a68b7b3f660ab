package drain_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// rig is one case of the drain: its own namespace and nodes on the shared
// control plane, a drainer on its own clock, recorder and metrics.
type rig struct {
	t     *testing.T
	kube  client.Client
	ns    string
	clock *clocktesting.FakeClock
	said  *record.FakeRecorder
	reg   *prometheus.Registry
	d     *drain.Drainer
	owner *v1.NodeClaim
	log   []string
}

func newRig(t *testing.T, kube client.Client, ns string) *rig {
	t.Helper()
	if err := kube.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	said := record.NewFakeRecorder(1000)
	said.IncludeObject = true
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	// The events go to the object the drain is for (a NodeClaim in a
	// termination); it needs no existence to be told about.
	owner := &v1.NodeClaim{TypeMeta: metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim"}, ObjectMeta: metav1.ObjectMeta{Name: ns + "-claim"}}
	return &rig{t: t, kube: kube, ns: ns, clock: clk, said: said, reg: reg, owner: owner,
		d: &drain.Drainer{Client: kube, Recorder: said, Clock: clk, Metrics: m}}
}

func (r *rig) node(name string) *corev1.Node {
	r.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.kube.Create(context.Background(), n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// podKind shapes a pod before it is created.
type podKind func(*corev1.Pod)

func ofDaemonSet(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid"}}
}

func clusterCritical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" }

func nodeCritical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }

func mirror(p *corev1.Pod) { annotate(p, corev1.MirrorPodAnnotationKey, "mirror-hash") }

func doNotDisrupt(value string) podKind {
	return func(p *corev1.Pod) { annotate(p, v1.AnnotationDoNotDisrupt, value) }
}

func app(name string) podKind {
	return func(p *corev1.Pod) { p.Labels = map[string]string{"app": name} }
}

func annotate(p *corev1.Pod, key, value string) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[key] = value
}

func (r *rig) pod(name, node string, kinds ...podKind) {
	r.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	for _, k := range kinds {
		k(p)
	}
	if err := r.kube.Create(context.Background(), p); err != nil {
		r.t.Fatal(err)
	}
}

// status writes a pod's phase as its kubelet would; a Running pod is
// Ready too (an unready pod may be evicted whatever its budget allows).
func (r *rig) status(name string, phase corev1.PodPhase) {
	r.t.Helper()
	p := &corev1.Pod{}
	if err := r.kube.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, p); err != nil {
		r.t.Fatal(err)
	}
	p.Status.Phase = phase
	if phase == corev1.PodRunning {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(r.clock.Now())}}
	}
	if err := r.kube.Status().Update(context.Background(), p); err != nil {
		r.t.Fatal(err)
	}
}

// guard makes a PodDisruptionBudget of the app's one pod with
// maxUnavailable 0, its status written as kube-controller-manager would
// (it is not running here) with the disruptions allowed given.
func (r *rig) guard(name string, allowed int32) {
	r.t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
	}
	if err := r.kube.Create(context.Background(), pdb); err != nil {
		r.t.Fatal(err)
	}
	r.allows(name, allowed)
}

func (r *rig) allows(name string, allowed int32) {
	r.t.Helper()
	pdb := &policyv1.PodDisruptionBudget{}
	if err := r.kube.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, pdb); err != nil {
		r.t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 1, DesiredHealthy: 1 - allowed, ExpectedPods: 1}
	if err := r.kube.Status().Update(context.Background(), pdb); err != nil {
		r.t.Fatal(err)
	}
}

// drain runs one pass of the drain; a pass never fails here.
func (r *rig) drain(node *corev1.Node, deadline time.Time, opts drain.Options) bool {
	r.t.Helper()
	done, err := r.d.Drain(context.Background(), node, r.owner, deadline, opts)
	if err != nil {
		r.t.Fatalf("drain of %s: %v", node.Name, err)
	}
	return done
}

// evicted lists which of the pods are being evicted or deleted (or gone).
func (r *rig) evicted(names ...string) map[string]bool {
	r.t.Helper()
	out := map[string]bool{}
	for _, name := range names {
		p := &corev1.Pod{}
		err := r.kube.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, p)
		switch {
		case apierrors.IsNotFound(err):
			out[name] = true
		case err != nil:
			r.t.Fatal(err)
		default:
			out[name] = !p.DeletionTimestamp.IsZero()
		}
	}
	return out
}

// expectEvicted checks that exactly the pods in want, of all, are being
// evicted.
func (r *rig) expectEvicted(when string, all []string, want ...string) {
	r.t.Helper()
	got := r.evicted(all...)
	for _, name := range all {
		if got[name] != contains(want, name) {
			r.t.Errorf("%s: pod %s evicted %v, want %v", when, name, got[name], !got[name])
		}
	}
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// exists reports whether the pod is still stored, terminating or not.
func (r *rig) exists(name string) bool {
	r.t.Helper()
	err := r.kube.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: name}, &corev1.Pod{})
	if err != nil && !apierrors.IsNotFound(err) {
		r.t.Fatal(err)
	}
	return err == nil
}

// kubelet finishes the graceful deletion of evicted pods, as the node's
// kubelet would once their containers stopped.
func (r *rig) kubelet(names ...string) {
	r.t.Helper()
	for _, name := range names {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name}}
		if err := client.IgnoreNotFound(r.kube.Delete(context.Background(), p, client.GracePeriodSeconds(0))); err != nil {
			r.t.Fatal(err)
		}
	}
}

// events are the events of the reason said so far.
func (r *rig) events(reason string) []string {
	for len(r.said.Events) > 0 {
		r.log = append(r.log, <-r.said.Events)
	}
	var out []string
	for _, ev := range r.log {
		if strings.Contains(ev, " "+reason+" ") {
			out = append(out, ev)
		}
	}
	return out
}

// evictions is karpenter_pods_eviction_requests_total for the HTTP code.
func (r *rig) evictions(code string) float64 {
	r.t.Helper()
	families, err := r.reg.Gather()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_pods_eviction_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" && l.GetValue() == code {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// How a drain treats each kind of pod, on one API server: the tiers, the
// pods it never waits for, the DaemonSet pods a reboot keeps,
// PodDisruptionBudgets, do-not-disrupt and the deadline.
func TestDrainCases(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)

	// One pass evicts only the lowest tier there is, every pod of it, and
	// the next tier waits until those pods are gone, not just evicted:
	// ordinary pods, then DaemonSet pods, then the
	// system-cluster-critical and system-node-critical ones, then critical
	// DaemonSet pods. Each pod is asked to leave once; pods of other nodes
	// are not touched.
	t.Run("one tier at a time", func(t *testing.T) {
		r := newRig(t, kube, "tiers")
		n := r.node("tiers")
		r.node("tiers-other")
		r.pod("web-1", "tiers")
		r.pod("web-2", "tiers")
		r.pod("agent", "tiers", ofDaemonSet)
		r.pod("coredns", "tiers", clusterCritical)
		r.pod("kube-proxy", "tiers", ofDaemonSet, nodeCritical)
		r.pod("elsewhere", "tiers-other")
		all := []string{"web-1", "web-2", "agent", "coredns", "kube-proxy", "elsewhere"}

		if r.drain(n, time.Time{}, drain.Options{}) {
			t.Fatal("done on the first pass")
		}
		r.expectEvicted("first pass", all, "web-1", "web-2")
		if got := r.evictions("201"); got != 2 {
			t.Errorf("eviction requests answered 201 after the first pass: %v, want 2", got)
		}
		// The ordinary pods are terminating, not gone: the DaemonSet pod
		// waits, and nothing is asked to leave twice.
		if r.drain(n, time.Time{}, drain.Options{}) {
			t.Fatal("done while the ordinary pods are still terminating")
		}
		r.expectEvicted("while the ordinary pods terminate", all, "web-1", "web-2")
		if got := r.evictions("201"); got != 2 {
			t.Errorf("eviction requests after a second pass: %v, want still 2", got)
		}
		r.kubelet("web-1", "web-2")
		r.drain(n, time.Time{}, drain.Options{})
		r.expectEvicted("once the ordinary pods are gone", all, "web-1", "web-2", "agent")
		r.kubelet("agent")
		r.drain(n, time.Time{}, drain.Options{})
		r.expectEvicted("once the DaemonSet pod is gone", all, "web-1", "web-2", "agent", "coredns")
		r.kubelet("coredns")
		if r.drain(n, time.Time{}, drain.Options{}) {
			t.Fatal("done with a critical DaemonSet pod on the node")
		}
		r.expectEvicted("once the critical pod is gone", all, "web-1", "web-2", "agent", "coredns", "kube-proxy")
		r.kubelet("kube-proxy")
		if !r.drain(n, time.Time{}, drain.Options{}) {
			t.Error("not done once the node is empty (the pod of another node is not its)")
		}
		r.expectEvicted("at the end", all, "web-1", "web-2", "agent", "coredns", "kube-proxy")
	})

	// Mirror pods (their kubelet owns them) and pods that finished
	// (Succeeded or Failed) are neither evicted nor waited for: a node with
	// only those is drained at once.
	t.Run("mirror and finished pods", func(t *testing.T) {
		r := newRig(t, kube, "finished")
		n := r.node("finished")
		r.pod("etcd", "finished", mirror, nodeCritical)
		r.pod("job", "finished")
		r.status("job", corev1.PodFailed)
		r.pod("init", "finished", ofDaemonSet)
		r.status("init", corev1.PodSucceeded)
		if !r.drain(n, time.Time{}, drain.Options{}) {
			t.Error("not done with only a mirror pod, a failed pod and a succeeded pod on the node")
		}
		r.expectEvicted("after the drain", []string{"etcd", "job", "init"})
		if got := r.evictions("201") + r.evictions("429"); got != 0 {
			t.Errorf("%v eviction requests, want none", got)
		}
	})

	// A drain before a reboot (KeepDaemonSets) leaves the DaemonSet pods,
	// critical or not, on the node and is done without them; the critical
	// pods that are not DaemonSet pods still go, after the ordinary ones.
	// Without the option, the same DaemonSet pods are evicted.
	t.Run("DaemonSet pods kept", func(t *testing.T) {
		r := newRig(t, kube, "keep")
		n := r.node("keep")
		r.pod("web", "keep")
		r.pod("agent", "keep", ofDaemonSet)
		r.pod("coredns", "keep", clusterCritical)
		r.pod("cni", "keep", ofDaemonSet, nodeCritical)
		all := []string{"web", "agent", "coredns", "cni"}
		keep := drain.Options{KeepDaemonSets: true}

		if r.drain(n, time.Time{}, keep) {
			t.Fatal("done on the first pass")
		}
		r.expectEvicted("first pass", all, "web")
		r.kubelet("web")
		if r.drain(n, time.Time{}, keep) {
			t.Fatal("done with a critical pod on the node")
		}
		r.expectEvicted("second pass", all, "web", "coredns")
		r.kubelet("coredns")
		if !r.drain(n, time.Time{}, keep) {
			t.Error("not done with only DaemonSet pods left and KeepDaemonSets")
		}
		r.expectEvicted("with only DaemonSet pods left", all, "web", "coredns")

		if r.drain(n, time.Time{}, drain.Options{}) {
			t.Error("done without KeepDaemonSets while DaemonSet pods are on the node")
		}
		r.expectEvicted("without KeepDaemonSets", all, "web", "coredns", "agent")
	})

	// A PodDisruptionBudget that allows no disruption (the API server
	// answers 429) keeps its pod: each pass says so on the drain's owner
	// (DrainBlocked), counts the refusal, returns no error and is not
	// done; the pod is evicted once the budget allows it.
	t.Run("a budget that allows nothing", func(t *testing.T) {
		r := newRig(t, kube, "budget")
		n := r.node("budget")
		r.pod("db-0", "budget", app("db"))
		r.status("db-0", corev1.PodRunning)
		r.guard("db", 0)

		for pass := 1; pass <= 2; pass++ {
			if r.drain(n, time.Time{}, drain.Options{}) {
				t.Fatalf("pass %d: done with a pod its budget keeps", pass)
			}
			r.expectEvicted("while the budget allows nothing", []string{"db-0"})
			evs := r.events(v1.ReasonDrainBlocked)
			if len(evs) != pass {
				t.Fatalf("pass %d: DrainBlocked events %q, want %d", pass, evs, pass)
			}
			if ev := evs[pass-1]; !strings.Contains(ev, "budget/db-0") || !strings.Contains(ev, "kind=NodeClaim") {
				t.Errorf("pass %d: DrainBlocked event %q, want one on the NodeClaim naming budget/db-0", pass, ev)
			}
			if got := r.evictions("429"); got != float64(pass) {
				t.Errorf("pass %d: %v eviction requests answered 429, want %d", pass, got, pass)
			}
		}
		r.allows("db", 1)
		r.drain(n, time.Time{}, drain.Options{})
		r.expectEvicted("once the budget allows one", []string{"db-0"}, "db-0")
		if got := r.evictions("201"); got != 1 {
			t.Errorf("%v eviction requests answered 201, want 1", got)
		}
		r.kubelet("db-0")
		if !r.drain(n, time.Time{}, drain.Options{}) {
			t.Error("not done once the pod is gone")
		}
	})

	// karpenter.sh/do-not-disrupt: "true" holds a pod without a deadline
	// however long it takes (DrainWaiting, each pass); any other value does
	// not.
	t.Run("do-not-disrupt without a deadline", func(t *testing.T) {
		r := newRig(t, kube, "nodeadline")
		n := r.node("nodeadline")
		r.pod("batch", "nodeadline", doNotDisrupt("true"))
		r.pod("web", "nodeadline", doNotDisrupt("false"))
		r.drain(n, time.Time{}, drain.Options{})
		r.expectEvicted("first pass", []string{"batch", "web"}, "web")
		r.kubelet("web")
		r.clock.Step(365 * 24 * time.Hour)
		if r.drain(n, time.Time{}, drain.Options{}) {
			t.Error("done a year on with a do-not-disrupt pod and no deadline")
		}
		r.expectEvicted("a year on", []string{"batch"})
		if evs := r.events(v1.ReasonDrainWaiting); len(evs) != 2 || !strings.Contains(evs[1], "nodeadline/batch") {
			t.Errorf("DrainWaiting events %q, want one per pass naming nodeadline/batch", evs)
		}
	})

	// At the deadline a termination deletes, at once and without grace,
	// every pod still there, whatever its tier: a pod its budget keeps, a
	// do-not-disrupt pod, DaemonSet and critical pods, and a pod evicted
	// earlier that is still terminating. Mirror and finished pods are left.
	// The drain is done at the pass after.
	t.Run("deleted at the deadline", func(t *testing.T) {
		r := newRig(t, kube, "deadline")
		n := r.node("deadline")
		r.pod("slow", "deadline")
		r.pod("db-0", "deadline", app("db"))
		r.status("db-0", corev1.PodRunning)
		r.guard("db", 0)
		r.pod("batch", "deadline", doNotDisrupt("true"))
		r.pod("agent", "deadline", ofDaemonSet)
		r.pod("cni", "deadline", ofDaemonSet, nodeCritical)
		r.pod("static", "deadline", mirror)
		r.pod("job", "deadline")
		r.status("job", corev1.PodSucceeded)
		leaving := []string{"slow", "db-0", "batch", "agent", "cni"}
		deadline := r.clock.Now().Add(10 * time.Minute)

		if r.drain(n, deadline, drain.Options{}) {
			t.Fatal("done before the deadline")
		}
		r.expectEvicted("before the deadline", append(leaving, "static", "job"), "slow")
		r.clock.SetTime(deadline)
		if r.drain(n, deadline, drain.Options{}) {
			t.Error("done on the pass that deletes the pods left")
		}
		for _, name := range leaving {
			if r.exists(name) {
				t.Errorf("pod %s is still there after the deadline", name)
			}
		}
		for _, name := range []string{"static", "job"} {
			if !r.exists(name) || r.evicted(name)[name] {
				t.Errorf("the mirror or finished pod %s was deleted at the deadline", name)
			}
		}
		if !r.drain(n, deadline, drain.Options{}) {
			t.Error("not done once the pods left were deleted")
		}
	})

	// Before a reboot (LeaveAtDeadline) the pods still there at the
	// deadline are left to ride it out, DaemonSet pods, budget-kept and
	// do-not-disrupt pods alike, and the drain is done.
	t.Run("left at the deadline", func(t *testing.T) {
		r := newRig(t, kube, "leave")
		n := r.node("leave")
		r.pod("db-0", "leave", app("db"))
		r.status("db-0", corev1.PodRunning)
		r.guard("db", 0)
		r.pod("batch", "leave", doNotDisrupt("true"))
		r.pod("agent", "leave", ofDaemonSet)
		all := []string{"db-0", "batch", "agent"}
		deadline := r.clock.Now().Add(time.Minute)
		leave := drain.Options{LeaveAtDeadline: true}

		if r.drain(n, deadline, leave) {
			t.Error("done before the deadline")
		}
		r.clock.SetTime(deadline.Add(time.Second))
		if !r.drain(n, deadline, leave) {
			t.Error("not done past the deadline with LeaveAtDeadline")
		}
		r.expectEvicted("past the deadline", all)
		for _, name := range all {
			if !r.exists(name) {
				t.Errorf("pod %s was deleted past the deadline with LeaveAtDeadline", name)
			}
		}
	})

	// Pods that tolerate the caller's fence are not evicted: a DaemonSet
	// that tolerates every taint (aws-node, kube-proxy) has its pod
	// recreated on the node at once, so evicting it would never end the
	// drain; such pods go with the node. Without a fence named, the same
	// pod is evicted. A pod still terminating a minute past its deletion
	// has no kubelet to stop it and is not waited for, so a node whose
	// kubelet is gone is not held for ever.
	t.Run("pods that would come back or cannot leave", func(t *testing.T) {
		r := newRig(t, kube, "stuck")
		n := r.node("stuck")
		everything := func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} }
		r.pod("aws-node", "stuck", ofDaemonSet, everything)
		r.pod("web", "stuck", func(p *corev1.Pod) { p.Finalizers = []string{"test.nodewright.dev/no-kubelet"} })
		opts := drain.Options{Fence: v1.TaintKeyDisrupted}
		if r.drain(n, time.Time{}, opts) {
			t.Fatal("done on the first pass")
		}
		r.expectEvicted("first pass", []string{"aws-node", "web"}, "web")
		p := &corev1.Pod{}
		if err := kube.Get(context.Background(), client.ObjectKey{Namespace: r.ns, Name: "web"}, p); err != nil {
			t.Fatal(err)
		}
		r.clock.SetTime(p.DeletionTimestamp.Add(30 * time.Second))
		if r.drain(n, time.Time{}, opts) {
			t.Error("done while a pod is terminating within a minute of its deletion")
		}
		r.clock.SetTime(p.DeletionTimestamp.Add(2 * time.Minute))
		if !r.drain(n, time.Time{}, opts) {
			t.Error("a pod stuck terminating and a pod tolerating the fence hold the drain")
		}
		r.expectEvicted("past a minute", []string{"aws-node", "web"}, "web")
		released := p.DeepCopy()
		released.Finalizers = nil
		if err := kube.Patch(context.Background(), released, client.MergeFrom(p)); err != nil {
			t.Fatal(err)
		}

		m := r.node("stuck-unfenced")
		r.pod("agent-u", "stuck-unfenced", everything)
		r.drain(m, time.Time{}, drain.Options{})
		r.expectEvicted("without a fence", []string{"agent-u"}, "agent-u")
	})
}
