package termination_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controllers/node/termination"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// ec2 is a cloud whose instances take one call to start terminating and
// are gone at the next; foreign instances are not nodewright's.
type ec2 struct {
	mu      sync.Mutex
	calls   []string
	foreign map[string]bool
}

func (c *ec2) Delete(_ context.Context, providerID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.foreign[providerID] {
		return &cloudprovider.NotOwnedError{Message: providerID + " has no nodewright tags"}
	}
	seen := slices.Contains(c.calls, providerID)
	c.calls = append(c.calls, providerID)
	if seen {
		return &cloudprovider.NotFoundError{Message: providerID}
	}
	return nil
}

func (c *ec2) deletes(providerID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, id := range c.calls {
		if id == providerID {
			n++
		}
	}
	return n
}

// site is one control plane, the termination controller reading through
// an indexed cache as in the operator, on the test's clock.
type site struct {
	t       *testing.T
	direct  client.Client
	cached  client.Client
	clock   *clocktesting.FakeClock
	said    *record.FakeRecorder
	cloud   *ec2
	c       *termination.Controller
	log     []string
	stopped context.CancelFunc
}

func newSite(t *testing.T) *site {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	direct, scheme := optest.Direct(t, plane)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(plane.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := listing.Index(ctx, c); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	cached, err := client.New(plane.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{t: t, direct: direct, cached: cached, clock: clocktesting.NewFakeClock(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)),
		said: record.NewFakeRecorder(1000), cloud: &ec2{foreign: map[string]bool{}}, stopped: cancel}
	s.c = &termination.Controller{Client: cached, Cloud: s.cloud, Drainer: &drain.Drainer{Client: cached, Recorder: s.said, Clock: s.clock},
		Recorder: s.said, Clock: s.clock, Poll: time.Second}
	return s
}

func providerID(name string) string { return "aws:///us-east-1a/i-" + name }

// launched makes a registered node of nodewright's (its finalizer) and
// its NodeClaim, with the terminationGracePeriod given (none when 0).
func (s *site) launched(name string, grace time.Duration) {
	s.t.Helper()
	ctx := context.Background()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if grace > 0 {
		nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
	}
	if err := s.direct.Create(ctx, nc); err != nil {
		s.t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID(name), name
	if err := s.direct.Status().Update(ctx, nc); err != nil {
		s.t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default", v1.LabelRegistered: "true"},
			Finalizers: []string{v1.TerminationFinalizer}},
		Spec: corev1.NodeSpec{ProviderID: providerID(name)},
	}
	if err := s.direct.Create(ctx, node); err != nil {
		s.t.Fatal(err)
	}
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
	if err := s.direct.Create(context.Background(), p); err != nil {
		s.t.Fatal(err)
	}
}

// deleteNode deletes the node as `kubectl delete node` does.
func (s *site) deleteNode(name string) {
	s.t.Helper()
	if err := s.direct.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		s.t.Fatal(err)
	}
}

// settled waits until the cache shows the node, its NodeClaims and the
// pods as the API server has them.
func (s *site) settled(node string) {
	s.t.Helper()
	ctx := context.Background()
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var a, b corev1.Node
		errA, errB := s.direct.Get(ctx, client.ObjectKey{Name: node}, &a), s.cached.Get(ctx, client.ObjectKey{Name: node}, &b)
		if apierrors.IsNotFound(errA) != apierrors.IsNotFound(errB) || a.ResourceVersion != b.ResourceVersion {
			return false, nil
		}
		var ca, cb v1.NodeClaimList
		var pa, pb corev1.PodList
		if err := s.direct.List(ctx, &ca); err != nil {
			return false, err
		}
		if err := s.direct.List(ctx, &pa); err != nil {
			return false, err
		}
		if s.cached.List(ctx, &cb) != nil || s.cached.List(ctx, &pb) != nil {
			return false, nil
		}
		return versions(ca.Items) == versions(cb.Items) && podVersions(pa.Items) == podVersions(pb.Items), nil
	}); err != nil {
		s.t.Fatalf("the cache did not catch up: %v", err)
	}
}

func versions(items []v1.NodeClaim) string {
	var out []string
	for i := range items {
		out = append(out, items[i].Name+"@"+items[i].ResourceVersion)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func podVersions(items []corev1.Pod) string {
	var out []string
	for i := range items {
		out = append(out, items[i].Name+"@"+items[i].ResourceVersion)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// pass reconciles the node once, on what the cache shows.
func (s *site) pass(node string) {
	s.t.Helper()
	s.settled(node)
	if _, err := s.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: node}}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *site) node(name string) *corev1.Node {
	s.t.Helper()
	n := &corev1.Node{}
	if err := s.direct.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		s.t.Fatal(err)
	}
	return n
}

func (s *site) claimDeleted(name string) bool {
	s.t.Helper()
	nc := &v1.NodeClaim{}
	err := s.direct.Get(context.Background(), client.ObjectKey{Name: name}, nc)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return !nc.DeletionTimestamp.IsZero()
}

func (s *site) going(name string) bool {
	s.t.Helper()
	p := &corev1.Pod{}
	err := s.direct.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return !p.DeletionTimestamp.IsZero()
}

func (s *site) kubeletRemoves(name string) {
	s.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := client.IgnoreNotFound(s.direct.Delete(context.Background(), p, client.GracePeriodSeconds(0))); err != nil {
		s.t.Fatal(err)
	}
}

func fenced(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == v1.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule
	})
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

// `kubectl delete node` on a node of nodewright's: the node is fenced
// (karpenter.sh/disrupted:NoSchedule) and drained first; only then is its
// NodeClaim deleted and its instance terminated; the finalizer stays until
// the instance is gone, so the kubelet cannot register the node again.
func TestADeletedNodeIsDrainedThenTerminatedThenReleased(t *testing.T) {
	s := newSite(t)
	s.launched("n1", 0)
	s.pod("web", "n1")
	s.deleteNode("n1")

	s.pass("n1")
	n := s.node("n1")
	if n == nil || !fenced(n) || !s.going("web") {
		t.Fatalf("first pass: node %v, fenced, web evicted %v; want the node fenced and web evicted", n != nil, s.going("web"))
	}
	if s.claimDeleted("n1") || s.cloud.deletes(providerID("n1")) != 0 {
		t.Fatal("the NodeClaim or the instance went before the drain was done")
	}
	s.kubeletRemoves("web")
	s.pass("n1")
	if !s.claimDeleted("n1") || s.cloud.deletes(providerID("n1")) != 1 {
		t.Fatalf("drained: NodeClaim deleted %v, terminations %d; want both", s.claimDeleted("n1"), s.cloud.deletes(providerID("n1")))
	}
	if n := s.node("n1"); n == nil || !slices.Contains(n.Finalizers, v1.TerminationFinalizer) {
		t.Fatal("the node was released while its instance was still terminating")
	}
	if evs := s.events(v1.ReasonNodeDeleted); len(evs) != 1 {
		t.Errorf("NodeDeleted events %q, want one on the NodeClaim", evs)
	}
	s.pass("n1")
	if n := s.node("n1"); n != nil {
		t.Errorf("the node is still there (finalizers %v) after its instance is gone", n.Finalizers)
	}
}

// A NodeClaim's terminationGracePeriod bounds the drain: a pod marked
// karpenter.sh/do-not-disrupt keeps the node until then, and is deleted
// at the deadline, so the node does go.
func TestTheGracePeriodBoundsTheDrain(t *testing.T) {
	s := newSite(t)
	s.launched("n2", 10*time.Minute)
	s.pod("batch", "n2", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	// The lifecycle's finalizer holds the NodeClaim while its node goes.
	nc := &v1.NodeClaim{}
	if err := s.direct.Get(context.Background(), client.ObjectKey{Name: "n2"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Finalizers = []string{v1.TerminationFinalizer}
	if err := s.direct.Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if err := s.direct.Delete(context.Background(), &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}); err != nil {
		t.Fatal(err)
	}
	s.deleteNode("n2")
	// The deletions are stamped by the API server's clock.
	s.clock.SetTime(s.node("n2").DeletionTimestamp.Time)

	s.pass("n2")
	s.clock.Step(9 * time.Minute)
	s.pass("n2")
	if s.going("batch") || s.cloud.deletes(providerID("n2")) != 0 {
		t.Fatalf("within the grace period: pod deleted %v, terminations %d; want neither", s.going("batch"), s.cloud.deletes(providerID("n2")))
	}
	if evs := s.events(v1.ReasonDrainWaiting); len(evs) == 0 {
		t.Error("no DrainWaiting event for the do-not-disrupt pod")
	}
	s.clock.Step(2 * time.Minute)
	s.pass("n2")
	s.pass("n2")
	s.pass("n2")
	if !s.going("batch") || s.node("n2") != nil {
		t.Errorf("past the grace period: pod deleted %v, node gone %v; want both", s.going("batch"), s.node("n2") == nil)
	}
}

// A node whose instance nodewright did not launch is released without
// terminating that instance, and says so (InstanceNotOwned).
func TestAForeignInstanceIsLeftRunning(t *testing.T) {
	s := newSite(t)
	s.launched("n3", 0)
	s.cloud.foreign[providerID("n3")] = true
	s.deleteNode("n3")
	s.pass("n3")
	if n := s.node("n3"); n != nil {
		t.Errorf("the node of a foreign instance was not released (finalizers %v)", n.Finalizers)
	}
	if evs := s.events(v1.ReasonInstanceNotOwned); len(evs) != 1 || !strings.Contains(evs[0], "Warning") || !strings.Contains(evs[0], "terminate it yourself") {
		t.Errorf("InstanceNotOwned events %q", evs)
	}
}
