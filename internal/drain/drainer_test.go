package drain_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// site is one control plane and a drainer on the test's clock.
type site struct {
	t      *testing.T
	kube   client.Client
	clock  *clocktesting.FakeClock
	said   *record.FakeRecorder
	d      *drain.Drainer
	log    []string
	nodeNo int
}

func newSite(t *testing.T) *site {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	s := &site{t: t, kube: kube, clock: clocktesting.NewFakeClock(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)), said: record.NewFakeRecorder(1000)}
	s.d = &drain.Drainer{Client: kube, Recorder: s.said, Clock: s.clock}
	return s
}

func (s *site) node(name string) *corev1.Node {
	s.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.kube.Create(context.Background(), n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "agent-uid"}}
}

func critical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }

func labelled(app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels = map[string]string{"app": app} }
}

func (s *site) pod(name, node string, mutate ...func(*corev1.Pod)) {
	s.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	if err := s.kube.Create(context.Background(), p); err != nil {
		s.t.Fatal(err)
	}
}

// phase sets a pod's phase, as its kubelet would.
func (s *site) phase(name string, phase corev1.PodPhase) {
	s.t.Helper()
	p := &corev1.Pod{}
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
		s.t.Fatal(err)
	}
	p.Status.Phase = phase
	if err := s.kube.Status().Update(context.Background(), p); err != nil {
		s.t.Fatal(err)
	}
}

// running makes the pod Running and Ready, as its kubelet would (an
// unready pod may be evicted whatever its budget allows).
func (s *site) running(name string) {
	s.t.Helper()
	p := &corev1.Pod{}
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
		s.t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.clock.Now())}}
	if err := s.kube.Status().Update(context.Background(), p); err != nil {
		s.t.Fatal(err)
	}
}

// budget makes a PodDisruptionBudget of the app's pods allowing the
// disruptions given, its status written as kube-controller-manager
// would (it is not running here).
func (s *site) budget(app string, pods, allowed int32) {
	s.t.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(pods - allowed)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}
	if err := s.kube.Create(ctx, pdb); err != nil {
		s.t.Fatal(err)
	}
	s.allow(app, pods, allowed)
}

func (s *site) allow(app string, pods, allowed int32) {
	s.t.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: app}, pdb); err != nil {
		s.t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: pods, DesiredHealthy: pods - allowed, ExpectedPods: pods}
	if err := s.kube.Status().Update(ctx, pdb); err != nil {
		s.t.Fatal(err)
	}
}

// drain runs one pass of the drain.
func (s *site) drain(node *corev1.Node, deadline time.Time, opts drain.Options) bool {
	s.t.Helper()
	done, err := s.d.Drain(context.Background(), node, node, deadline, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	return done
}

// going reports whether the pod is being evicted or deleted (or gone).
func (s *site) going(name string) bool {
	s.t.Helper()
	p := &corev1.Pod{}
	err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return !p.DeletionTimestamp.IsZero()
}

// gone reports whether the pod no longer exists.
func (s *site) gone(name string) bool {
	s.t.Helper()
	err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &corev1.Pod{})
	if err != nil && !apierrors.IsNotFound(err) {
		s.t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// kubeletRemoves finishes the graceful deletion of the pods being evicted.
func (s *site) kubeletRemoves(names ...string) {
	s.t.Helper()
	for _, name := range names {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if err := client.IgnoreNotFound(s.kube.Delete(context.Background(), p, client.GracePeriodSeconds(0))); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *site) events(reason string) []string {
	for len(s.said.Events) > 0 {
		s.log = append(s.log, <-s.said.Events)
	}
	var out []string
	for _, ev := range s.log {
		if strings.Contains(ev, " "+reason+" ") {
			out = append(out, ev)
		}
	}
	return out
}

// A drain evicts in tiers: ordinary pods first, then DaemonSet pods,
// then critical pods, then critical DaemonSet pods, each tier only once
// the one before it is gone; mirror pods and finished pods are never
// waited for; the drain is done once nothing else is left.
func TestADrainEvictsInTiers(t *testing.T) {
	s := newSite(t)
	n := s.node("tiers")
	s.pod("web", "tiers")
	s.pod("agent", "tiers", daemon)
	s.pod("dns", "tiers", critical)
	s.pod("cni", "tiers", daemon, critical)
	s.pod("static", "tiers", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	})
	s.pod("job", "tiers")
	s.phase("job", corev1.PodSucceeded)

	order := [][]string{{"web"}, {"agent"}, {"dns"}, {"cni"}}
	waiting := []string{"web", "agent", "dns", "cni"}
	for i, tier := range order {
		if s.drain(n, time.Time{}, drain.Options{}) {
			t.Fatalf("tier %d: done with %v still on the node", i, waiting)
		}
		for _, name := range waiting {
			want := name == tier[0]
			if got := s.going(name); got != want {
				t.Errorf("tier %d: pod %s evicted %v, want %v", i, name, got, want)
			}
		}
		s.kubeletRemoves(tier...)
		waiting = waiting[1:]
	}
	if !s.drain(n, time.Time{}, drain.Options{}) {
		t.Error("not done with only a mirror pod and a finished pod left")
	}
	if s.going("static") || s.going("job") {
		t.Error("the drain evicted the mirror pod or the finished pod")
	}
}

// A PodDisruptionBudget that allows no disruption keeps its pod: the
// refusal is said (DrainBlocked) and is no error, and the pod is
// evicted once the budget allows it. A pod marked
// karpenter.sh/do-not-disrupt waits for the deadline (DrainWaiting) and
// is deleted at it; a drain before a reboot leaves it there instead, and
// keeps DaemonSet pods.
func TestBudgetsDoNotDisruptAndTheDeadline(t *testing.T) {
	s := newSite(t)
	n := s.node("guarded")
	s.pod("db-0", "guarded", labelled("db"))
	s.running("db-0")
	s.budget("db", 1, 0)
	s.pod("batch", "guarded", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	deadline := s.clock.Now().Add(10 * time.Minute)

	if s.drain(n, deadline, drain.Options{}) || s.going("db-0") || s.going("batch") {
		t.Fatalf("first pass: db-0 evicted %v, batch evicted %v; want both kept", s.going("db-0"), s.going("batch"))
	}
	if evs := s.events(v1.ReasonDrainBlocked); len(evs) != 1 || !strings.Contains(evs[0], "default/db-0") {
		t.Errorf("DrainBlocked events %q, want one naming default/db-0", evs)
	}
	if evs := s.events(v1.ReasonDrainWaiting); len(evs) != 1 || !strings.Contains(evs[0], "default/batch") {
		t.Errorf("DrainWaiting events %q, want one naming default/batch", evs)
	}
	s.allow("db", 1, 1)
	s.drain(n, deadline, drain.Options{})
	if !s.going("db-0") || s.going("batch") {
		t.Fatalf("once the budget allows: db-0 evicted %v, batch evicted %v; want db-0 only", s.going("db-0"), s.going("batch"))
	}
	s.kubeletRemoves("db-0")

	s.clock.SetTime(deadline)
	if s.drain(n, deadline, drain.Options{}) {
		t.Error("done at the deadline before the pod left was deleted")
	}
	if !s.gone("batch") {
		t.Error("the do-not-disrupt pod is still there after the deadline (a termination deletes it)")
	}
	if !s.drain(n, deadline, drain.Options{}) {
		t.Error("not done once the node is empty")
	}

	// Before a reboot: DaemonSet pods stay, and what is left at the
	// deadline rides the reboot out.
	r := s.node("rebooting")
	s.pod("agent-r", "rebooting", daemon)
	s.pod("batch-r", "rebooting", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	rebootBy := s.clock.Now().Add(time.Minute)
	opts := drain.Options{KeepDaemonSets: true, LeaveAtDeadline: true}
	if s.drain(r, rebootBy, opts) {
		t.Error("done before the deadline with a do-not-disrupt pod on the node")
	}
	s.clock.SetTime(rebootBy)
	if !s.drain(r, rebootBy, opts) || s.going("agent-r") || s.going("batch-r") {
		t.Errorf("at the deadline before a reboot: done %v, DaemonSet pod evicted %v, do-not-disrupt pod deleted %v; want done with both left",
			s.drain(r, rebootBy, opts), s.going("agent-r"), s.going("batch-r"))
	}
}

// Pods that tolerate the caller's fence are not evicted: a DaemonSet
// that tolerates every taint (aws-node, kube-proxy) has its pod
// recreated on the node at once, so evicting it would never end the
// drain; such pods go with the node. A pod still terminating a minute
// past its deletion has no kubelet to stop it and is not waited for, so
// a node whose kubelet is gone is not held for ever.
func TestPodsThatWouldComeBackOrCannotLeaveDoNotHoldTheDrain(t *testing.T) {
	s := newSite(t)
	n := s.node("gone")
	s.pod("aws-node", "gone", daemon, func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	})
	s.pod("web", "gone", func(p *corev1.Pod) { p.Finalizers = []string{"test.nodewright.dev/kubelet"} })
	opts := drain.Options{Fence: v1.TaintKeyDisrupted}

	if s.drain(n, time.Time{}, opts) || !s.going("web") {
		t.Fatalf("first pass: web evicted %v; want it evicted and the drain not done", s.going("web"))
	}
	if s.going("aws-node") {
		t.Error("the pod that tolerates the fence was evicted")
	}
	// The pod's kubelet never confirms: it stays terminating.
	p := &corev1.Pod{}
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "web"}, p); err != nil {
		t.Fatal(err)
	}
	s.clock.SetTime(p.DeletionTimestamp.Time.Add(30 * time.Second))
	if s.drain(n, time.Time{}, opts) {
		t.Error("done while a pod is terminating within a minute of its deletion")
	}
	s.clock.SetTime(p.DeletionTimestamp.Time.Add(2 * time.Minute))
	if !s.drain(n, time.Time{}, opts) {
		t.Error("a pod stuck terminating (no kubelet) and a pod that tolerates the fence hold the drain")
	}
	if s.going("aws-node") {
		t.Error("the pod that tolerates the fence was evicted")
	}
	before := *p
	before.Finalizers = nil
	if err := s.kube.Patch(context.Background(), &before, client.MergeFrom(p)); err != nil {
		t.Fatal(err)
	}
	// Without a fence named, the same pod is evicted like any other.
	m := s.node("unfenced")
	s.pod("agent-u", "unfenced", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	})
	s.drain(m, time.Time{}, drain.Options{})
	if !s.going("agent-u") {
		t.Error("without a fence, a pod tolerating every taint was not evicted")
	}
}
