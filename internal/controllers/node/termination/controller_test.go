package termination_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
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

// cloud is an InstanceDeleter whose instances are terminating after the
// first Delete and gone (NotFound) at the next; an instance it does not
// own answers NotOwned, and one it fails for answers that error.
type cloud struct {
	mu      sync.Mutex
	calls   []string
	notOurs map[string]bool
	failing map[string]error
}

func (c *cloud) Delete(_ context.Context, providerID string, _ cloudprovider.Holder) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := slices.Contains(c.calls, providerID)
	c.calls = append(c.calls, providerID)
	switch {
	case c.failing[providerID] != nil:
		return c.failing[providerID]
	case c.notOurs[providerID]:
		return &cloudprovider.NotOwnedError{Message: providerID + " carries no nodewright tags"}
	case seen:
		return &cloudprovider.NotFoundError{Message: providerID + " is terminated"}
	}
	return nil
}

// asked are the providerIDs Delete was called with, in order.
func (c *cloud) asked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func (c *cloud) fail(providerID string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		delete(c.failing, providerID)
		// A failed call did not start the termination.
		c.calls = slices.DeleteFunc(c.calls, func(id string) bool { return id == providerID })
		return
	}
	c.failing[providerID] = err
}

// plant is the shared control plane: a direct client, and a client
// reading through a cache indexed as in the operator.
type plant struct {
	direct client.Client
	cached client.Client
}

func newPlant(t *testing.T) *plant {
	t.Helper()
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
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	cached, err := client.New(plane.Config, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	return &plant{direct: direct, cached: cached}
}

// term is one case: the controller on its own clock, recorder and cloud.
type term struct {
	t     *testing.T
	p     *plant
	clock *clocktesting.FakeClock
	said  *record.FakeRecorder
	cloud *cloud
	c     *termination.Controller
	log   []string
}

func (p *plant) term(t *testing.T) *term {
	said := record.NewFakeRecorder(1000)
	said.IncludeObject = true
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	cl := &cloud{notOurs: map[string]bool{}, failing: map[string]error{}}
	return &term{t: t, p: p, clock: clk, said: said, cloud: cl, c: &termination.Controller{
		Client: p.cached, APIReader: p.direct, Cloud: cl, Recorder: said, Clock: clk, Poll: time.Second,
		Drainer: &drain.Drainer{Client: p.cached, Recorder: said, Clock: clk},
	}}
}

func instance(node string) string { return "aws:///us-west-2b/i-" + node }

// claimOpt shapes a NodeClaim before it is created.
type claimOpt func(*v1.NodeClaim)

func gracePeriod(d time.Duration) claimOpt {
	return func(nc *v1.NodeClaim) { nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d} }
}

func terminateBy(at time.Time) claimOpt {
	return func(nc *v1.NodeClaim) {
		nc.Annotations = map[string]string{v1.AnnotationTerminationTimestamp: at.UTC().Format(time.RFC3339)}
	}
}

// finalized keeps the NodeClaim once deleted, as the NodeClaim lifecycle's
// finalizer does while its node goes.
func finalized(nc *v1.NodeClaim) { nc.Finalizers = []string{v1.TerminationFinalizer} }

// launch makes a registered node of nodewright's, with the termination
// finalizer, and its NodeClaim.
func (s *term) launch(name string, opts ...claimOpt) {
	s.t.Helper()
	ctx := context.Background()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6i.large"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	for _, o := range opts {
		o(nc)
	}
	if err := s.p.direct.Create(ctx, nc); err != nil {
		s.t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = instance(name), name
	if err := s.p.direct.Status().Update(ctx, nc); err != nil {
		s.t.Fatal(err)
	}
	s.bareNode(name, instance(name), v1.TerminationFinalizer)
}

// bareNode makes a node with the providerID and finalizers given, and no
// NodeClaim.
func (s *term) bareNode(name, providerID string, finalizers ...string) {
	s.t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default", v1.LabelRegistered: "true"}, Finalizers: finalizers},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := s.p.direct.Create(context.Background(), node); err != nil {
		s.t.Fatal(err)
	}
}

func (s *term) pod(name, node string, ann map[string]string, labels map[string]string) {
	s.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	if err := s.p.direct.Create(context.Background(), p); err != nil {
		s.t.Fatal(err)
	}
}

var keepMe = map[string]string{v1.AnnotationDoNotDisrupt: "true"}

// ready makes the pod Running and Ready, as its kubelet would, so its
// budget counts it healthy.
func (s *term) ready(name string) {
	s.t.Helper()
	p := &corev1.Pod{}
	if err := s.p.direct.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
		s.t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if err := s.p.direct.Status().Update(context.Background(), p); err != nil {
		s.t.Fatal(err)
	}
}

// budget sets (creating it the first time) a PodDisruptionBudget with
// maxUnavailable 0 over the app's one pod, its status written as
// kube-controller-manager would, with the disruptions allowed given.
func (s *term) budget(app string, allowed int32) {
	s.t.Helper()
	ctx := context.Background()
	pdb := &policyv1.PodDisruptionBudget{}
	err := s.p.direct.Get(ctx, client.ObjectKey{Namespace: "default", Name: app}, pdb)
	if apierrors.IsNotFound(err) {
		pdb = &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		}
		err = s.p.direct.Create(ctx, pdb)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 1, DesiredHealthy: 1 - allowed, ExpectedPods: 1}
	if err := s.p.direct.Status().Update(ctx, pdb); err != nil {
		s.t.Fatal(err)
	}
}

// deleteNode deletes the node as `kubectl delete node` does; it returns
// when the API server stamped the deletion.
func (s *term) deleteNode(name string) time.Time {
	s.t.Helper()
	if err := s.p.direct.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		s.t.Fatal(err)
	}
	n := s.node(name)
	if n == nil || n.DeletionTimestamp.IsZero() {
		s.t.Fatalf("node %s has no deletion timestamp after its deletion", name)
	}
	return n.DeletionTimestamp.Time
}

// caughtUp waits until the cache shows the node, the NodeClaims and the
// pods as the API server has them: the controller reads the cache.
func (s *term) caughtUp(node string) {
	s.t.Helper()
	ctx := context.Background()
	same := func(a, b []string) bool { slices.Sort(a); slices.Sort(b); return slices.Equal(a, b) }
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var a, b corev1.Node
		errA, errB := s.p.direct.Get(ctx, client.ObjectKey{Name: node}, &a), s.p.cached.Get(ctx, client.ObjectKey{Name: node}, &b)
		if apierrors.IsNotFound(errA) != apierrors.IsNotFound(errB) || a.ResourceVersion != b.ResourceVersion {
			return false, nil
		}
		var ca, cb v1.NodeClaimList
		var pa, pb corev1.PodList
		if err := s.p.direct.List(ctx, &ca); err != nil {
			return false, err
		}
		if err := s.p.direct.List(ctx, &pa); err != nil {
			return false, err
		}
		if s.p.cached.List(ctx, &cb) != nil || s.p.cached.List(ctx, &pb) != nil {
			return false, nil //nolint:nilerr // the cache is still starting: look again
		}
		var va, vb, wa, wb []string
		for _, nc := range ca.Items {
			va = append(va, nc.Name+"@"+nc.ResourceVersion)
		}
		for _, nc := range cb.Items {
			vb = append(vb, nc.Name+"@"+nc.ResourceVersion)
		}
		for _, p := range pa.Items {
			wa = append(wa, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		}
		for _, p := range pb.Items {
			wb = append(wb, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
		}
		return same(va, vb) && same(wa, wb), nil
	}); err != nil {
		s.t.Fatalf("the cache did not catch up with node %s: %v", node, err)
	}
}

// reconcile reconciles the node once, on what the cache shows.
func (s *term) reconcile(node string) (reconcile.Result, error) {
	s.t.Helper()
	s.caughtUp(node)
	return s.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
}

// pass reconciles the node once, which must not fail.
func (s *term) pass(node string) reconcile.Result {
	s.t.Helper()
	res, err := s.reconcile(node)
	if err != nil {
		s.t.Fatalf("reconciling node %s: %v", node, err)
	}
	return res
}

// node is the node as the API server has it, nil once it is gone.
func (s *term) node(name string) *corev1.Node {
	s.t.Helper()
	n := &corev1.Node{}
	if err := s.p.direct.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		s.t.Fatal(err)
	}
	return n
}

// held reports whether the node is still there with the finalizer.
func (s *term) held(name string) bool {
	s.t.Helper()
	n := s.node(name)
	return n != nil && slices.Contains(n.Finalizers, v1.TerminationFinalizer)
}

// tainted reports whether the node carries karpenter.sh/disrupted:NoSchedule.
func (s *term) tainted(name string) bool {
	s.t.Helper()
	n := s.node(name)
	return n != nil && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == v1.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// claimGoing reports whether the NodeClaim is deleted (or gone).
func (s *term) claimGoing(name string) bool {
	s.t.Helper()
	nc := &v1.NodeClaim{}
	err := s.p.direct.Get(context.Background(), client.ObjectKey{Name: name}, nc)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return !nc.DeletionTimestamp.IsZero()
}

// evicted reports whether the pod is being evicted or deleted (or gone).
func (s *term) evicted(name string) bool {
	s.t.Helper()
	p := &corev1.Pod{}
	err := s.p.direct.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return !p.DeletionTimestamp.IsZero()
}

// kubelet finishes the graceful deletion of an evicted pod.
func (s *term) kubelet(name string) {
	s.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := client.IgnoreNotFound(s.p.direct.Delete(context.Background(), p, client.GracePeriodSeconds(0))); err != nil {
		s.t.Fatal(err)
	}
}

// events are the events of the reason said so far.
func (s *term) events(reason string) []string {
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

// What a deleted node of nodewright's goes through, on one API server:
// what holds it, what bounds its drain, and which nodes are not its to
// terminate.
func TestTerminationCases(t *testing.T) {
	p := newPlant(t)

	// A PodDisruptionBudget that allows nothing holds a deleted node: it
	// is fenced, its NodeClaim says why (DrainBlocked) and stays, its
	// instance is not touched and its finalizer stays. Once the budget
	// allows it the pod is evicted; once it is gone the NodeClaim of the
	// node deleted on its own is deleted and the instance terminated with
	// the node's providerID; the finalizer stays while the instance is
	// terminating, and goes when the cloud says it is gone.
	t.Run("a budget holds the node", func(t *testing.T) {
		s := p.term(t)
		s.launch("guarded")
		s.pod("db-0", "guarded", nil, map[string]string{"app": "db"})
		s.ready("db-0")
		s.budget("db", 0)
		s.deleteNode("guarded")

		for pass := 1; pass <= 2; pass++ {
			if res := s.pass("guarded"); res.RequeueAfter == 0 {
				t.Errorf("pass %d: not requeued while the drain is blocked", pass)
			}
			if !s.held("guarded") || !s.tainted("guarded") {
				t.Fatalf("pass %d: node held %v, tainted %v; want the node held and fenced", pass, s.held("guarded"), s.tainted("guarded"))
			}
			if s.evicted("db-0") || s.claimGoing("guarded") || len(s.cloud.asked()) != 0 {
				t.Fatalf("pass %d: pod evicted %v, NodeClaim deleted %v, Delete calls %v; want none while the budget allows nothing",
					pass, s.evicted("db-0"), s.claimGoing("guarded"), s.cloud.asked())
			}
			evs := s.events(v1.ReasonDrainBlocked)
			if len(evs) != pass || !strings.Contains(evs[pass-1], "default/db-0") || !strings.Contains(evs[pass-1], "kind=NodeClaim") {
				t.Errorf("pass %d: DrainBlocked events %q, want %d, on the NodeClaim, naming default/db-0", pass, evs, pass)
			}
		}

		s.budget("db", 1)
		s.pass("guarded")
		if !s.evicted("db-0") || s.claimGoing("guarded") || len(s.cloud.asked()) != 0 {
			t.Fatalf("once the budget allows: pod evicted %v, NodeClaim deleted %v, Delete calls %v; want the pod evicted only",
				s.evicted("db-0"), s.claimGoing("guarded"), s.cloud.asked())
		}
		if !s.held("guarded") {
			t.Fatal("the node was released while its pod was terminating")
		}

		s.kubelet("db-0")
		if res := s.pass("guarded"); res.RequeueAfter == 0 {
			t.Error("not requeued while the instance is terminating")
		}
		if !s.claimGoing("guarded") {
			t.Error("the NodeClaim of a node deleted on its own was not deleted once it was drained")
		}
		if got := s.cloud.asked(); !slices.Equal(got, []string{instance("guarded")}) {
			t.Errorf("Delete calls %v, want one with the node's providerID %s", got, instance("guarded"))
		}
		if !s.held("guarded") || !s.tainted("guarded") {
			t.Fatal("the node was released (or unfenced) while its instance was still terminating")
		}

		s.pass("guarded")
		if s.node("guarded") != nil {
			t.Errorf("the node is still there after the cloud said its instance is gone")
		}
		if got := s.cloud.asked(); !slices.Equal(got, []string{instance("guarded"), instance("guarded")}) {
			t.Errorf("Delete calls %v, want two with %s", got, instance("guarded"))
		}
	})

	// A NodeClaim deleted before its node: its terminationGracePeriod runs
	// from the NodeClaim's deletion, the earlier one. A do-not-disrupt pod
	// holds the node until then (DrainWaiting) and is deleted at that
	// deadline, and the node goes.
	t.Run("the grace period runs from the earlier deletion", func(t *testing.T) {
		s := p.term(t)
		s.launch("early", gracePeriod(10*time.Minute), finalized)
		s.pod("batch", "early", keepMe, nil)
		ctx := context.Background()
		if err := s.p.direct.Delete(ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "early"}}); err != nil {
			t.Fatal(err)
		}
		nc := &v1.NodeClaim{}
		if err := s.p.direct.Get(ctx, client.ObjectKey{Name: "early"}, nc); err != nil {
			t.Fatal(err)
		}
		claimDeleted := nc.DeletionTimestamp.Time
		// Deletions are stamped to the second: the node's must come a
		// second later for the two to differ.
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return time.Now().After(claimDeleted.Add(1100 * time.Millisecond)), nil
		}); err != nil {
			t.Fatal(err)
		}
		nodeDeleted := s.deleteNode("early")
		if !claimDeleted.Before(nodeDeleted) {
			t.Fatalf("setup: the NodeClaim was deleted at %v, the node at %v; want the NodeClaim first", claimDeleted, nodeDeleted)
		}
		deadline := claimDeleted.Add(10 * time.Minute)

		s.clock.SetTime(deadline.Add(-time.Second))
		s.pass("early")
		if s.evicted("batch") || len(s.cloud.asked()) != 0 || !s.held("early") {
			t.Fatalf("a second before the deadline: pod deleted %v, Delete calls %v, node held %v; want the pod and the node kept",
				s.evicted("batch"), s.cloud.asked(), s.held("early"))
		}
		if evs := s.events(v1.ReasonDrainWaiting); len(evs) != 1 || !strings.Contains(evs[0], "default/batch") || !strings.Contains(evs[0], "kind=NodeClaim") {
			t.Errorf("DrainWaiting events %q, want one on the NodeClaim naming default/batch", evs)
		}

		// The NodeClaim's deadline, before the node's own (nodeDeleted+10m).
		s.clock.SetTime(deadline)
		s.pass("early")
		if !s.evicted("batch") {
			t.Fatal("the do-not-disrupt pod is still there at the grace period counted from the NodeClaim's deletion")
		}
		s.pass("early")
		s.pass("early")
		if s.node("early") != nil {
			t.Errorf("the node is still there once drained and its instance gone (Delete calls %v)", s.cloud.asked())
		}
	})

	// karpenter.sh/nodeclaim-termination-timestamp on the NodeClaim, when
	// sooner than the terminationGracePeriod, is the drain's deadline; a
	// later one does not lengthen the grace period.
	t.Run("the termination timestamp when sooner", func(t *testing.T) {
		s := p.term(t)
		soon := time.Now().Add(5 * time.Minute).Truncate(time.Second)
		s.launch("soon", gracePeriod(time.Hour), terminateBy(soon))
		s.pod("batch-soon", "soon", keepMe, nil)
		s.launch("late", gracePeriod(10*time.Minute), terminateBy(time.Now().Add(time.Hour)))
		s.pod("batch-late", "late", keepMe, nil)
		s.deleteNode("soon")
		lateDeleted := s.deleteNode("late")

		s.clock.SetTime(soon.Add(-time.Second))
		s.pass("soon")
		if s.evicted("batch-soon") {
			t.Fatal("the do-not-disrupt pod was deleted before the termination timestamp")
		}
		s.clock.SetTime(soon)
		s.pass("soon")
		if !s.evicted("batch-soon") {
			t.Error("the do-not-disrupt pod is still there at the termination timestamp, sooner than the grace period")
		}

		s.clock.SetTime(lateDeleted.Add(10 * time.Minute))
		s.pass("late")
		if !s.evicted("batch-late") {
			t.Error("the do-not-disrupt pod is still there at the grace period, sooner than the termination timestamp")
		}
	})

	// A node with neither a providerID nor a NodeClaim is drained and
	// released without asking the cloud. A node with a providerID but no
	// NodeClaim has no deadline: a do-not-disrupt pod holds it however long
	// (DrainWaiting on the node); once the pod is gone its instance is
	// terminated and the node released.
	t.Run("a node without a NodeClaim", func(t *testing.T) {
		s := p.term(t)
		s.bareNode("bare", "", v1.TerminationFinalizer)
		s.pod("web-bare", "bare", nil, nil)
		s.deleteNode("bare")
		s.pass("bare")
		if !s.evicted("web-bare") || !s.held("bare") || !s.tainted("bare") {
			t.Fatalf("first pass: pod evicted %v, node held %v, tainted %v; want all", s.evicted("web-bare"), s.held("bare"), s.tainted("bare"))
		}
		s.kubelet("web-bare")
		s.pass("bare")
		if s.node("bare") != nil {
			t.Error("the drained node without a providerID is still there")
		}
		if got := s.cloud.asked(); len(got) != 0 {
			t.Errorf("Delete calls %v for a node without a providerID", got)
		}

		s.bareNode("orphan", instance("orphan"), v1.TerminationFinalizer)
		s.pod("batch-orphan", "orphan", keepMe, nil)
		s.deleteNode("orphan")
		s.pass("orphan")
		s.clock.Step(365 * 24 * time.Hour)
		s.pass("orphan")
		if s.evicted("batch-orphan") || !s.held("orphan") || len(s.cloud.asked()) != 0 {
			t.Fatalf("a year on without a NodeClaim: pod deleted %v, node held %v, Delete calls %v; want the pod and the node kept",
				s.evicted("batch-orphan"), s.held("orphan"), s.cloud.asked())
		}
		if evs := s.events(v1.ReasonDrainWaiting); len(evs) != 2 || !strings.Contains(evs[1], "kind=Node,") {
			t.Errorf("DrainWaiting events %q, want one a pass, on the node", evs)
		}
		s.kubelet("batch-orphan")
		s.pass("orphan")
		s.pass("orphan")
		if s.node("orphan") != nil {
			t.Error("the node without a NodeClaim is still there once drained and its instance gone")
		}
		if got := s.cloud.asked(); !slices.Equal(got, []string{instance("orphan"), instance("orphan")}) {
			t.Errorf("Delete calls %v, want two with %s", got, instance("orphan"))
		}
	})

	// Nodes that are not being terminated by nodewright are left as they
	// are: one not deleted, one deleted without the termination finalizer,
	// one that does not exist. No taint, no eviction, no cloud call.
	t.Run("nodes not terminating", func(t *testing.T) {
		s := p.term(t)
		s.launch("alive")
		s.pod("web-alive", "alive", nil, nil)
		s.bareNode("theirs", instance("theirs"), "example.com/hold")
		s.pod("web-theirs", "theirs", nil, nil)
		s.deleteNode("theirs")
		for _, name := range []string{"alive", "theirs"} {
			if res := s.pass(name); res != (reconcile.Result{}) {
				t.Errorf("node %s: requeued %+v", name, res)
			}
			if s.tainted(name) || s.evicted("web-"+name) || s.node(name) == nil {
				t.Errorf("node %s: tainted %v, pod evicted %v, node gone %v; want it untouched", name, s.tainted(name), s.evicted("web-"+name), s.node(name) == nil)
			}
		}
		if s.claimGoing("alive") {
			t.Error("the NodeClaim of a node not deleted was deleted")
		}
		if res, err := s.reconcile("never-was"); err != nil || res != (reconcile.Result{}) {
			t.Errorf("a node that does not exist: %+v, %v", res, err)
		}
		if got := s.cloud.asked(); len(got) != 0 {
			t.Errorf("Delete calls %v", got)
		}
	})

	// A cloud error other than NotFound or NotOwned is the reconcile's
	// error, and the node stays; when the cloud answers again the
	// instance is terminated and the node released.
	t.Run("a cloud error keeps the node", func(t *testing.T) {
		s := p.term(t)
		s.launch("flaky")
		s.cloud.fail(instance("flaky"), errors.New("RequestLimitExceeded"))
		s.deleteNode("flaky")
		if _, err := s.reconcile("flaky"); err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
			t.Errorf("reconcile error %v, want the cloud's", err)
		}
		if !s.held("flaky") {
			t.Fatal("the node was released though its instance could not be terminated")
		}
		s.cloud.fail(instance("flaky"), nil)
		s.pass("flaky")
		if !s.held("flaky") {
			t.Fatal("the node was released while its instance was terminating")
		}
		s.pass("flaky")
		if s.node("flaky") != nil {
			t.Error("the node is still there after its instance is gone")
		}
	})

	// A node on an instance nodewright did not launch is drained like any
	// other, then released with its instance left running (one Delete
	// call, answered NotOwned), said with a Warning InstanceNotOwned on the
	// node; its NodeClaim is deleted with it.
	t.Run("a foreign instance", func(t *testing.T) {
		s := p.term(t)
		s.launch("foreign")
		s.cloud.notOurs[instance("foreign")] = true
		s.pod("web-foreign", "foreign", nil, nil)
		s.deleteNode("foreign")
		s.pass("foreign")
		if !s.evicted("web-foreign") || !s.held("foreign") || len(s.cloud.asked()) != 0 {
			t.Fatalf("first pass: pod evicted %v, node held %v, Delete calls %v; want the pod evicted and the node held, the cloud not asked yet",
				s.evicted("web-foreign"), s.held("foreign"), s.cloud.asked())
		}
		s.kubelet("web-foreign")
		if res := s.pass("foreign"); res != (reconcile.Result{}) {
			t.Errorf("requeued %+v after releasing a foreign node", res)
		}
		if s.node("foreign") != nil {
			t.Error("the node on a foreign instance was not released")
		}
		if got := s.cloud.asked(); !slices.Equal(got, []string{instance("foreign")}) {
			t.Errorf("Delete calls %v, want one with %s", got, instance("foreign"))
		}
		evs := s.events(v1.ReasonInstanceNotOwned)
		if len(evs) != 1 || !strings.HasPrefix(evs[0], corev1.EventTypeWarning+" ") || !strings.Contains(evs[0], "kind=Node,") || !strings.Contains(evs[0], "foreign") {
			t.Errorf("InstanceNotOwned events %q, want one Warning on the node", evs)
		}
		if !s.claimGoing("foreign") {
			t.Error("the NodeClaim of the foreign node deleted on its own was not deleted")
		}
	})

	// Another controller removes its own finalizer after nodewright read
	// the node: the release writes the finalizers as the API server has
	// them (without nodewright's), not the list it read less its own —
	// which would add the other's back to a deleted node, refused — and
	// the node goes.
	t.Run("a finalizer removed after the read", func(t *testing.T) {
		s := p.term(t)
		const theirs = "example.com/archive-logs"
		s.launch("shared")
		ctx := context.Background()
		n := s.node("shared")
		n.Finalizers = append(n.Finalizers, theirs)
		if err := s.p.direct.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		s.deleteNode("shared")
		s.pass("shared") // drained, NodeClaim deleted, instance terminating
		s.caughtUp("shared")
		late := *s.c
		late.Client = &writesAfterRead{Client: s.p.cached, after: func() {
			fresh := s.node("shared")
			fresh.Finalizers = slices.DeleteFunc(fresh.Finalizers, func(f string) bool { return f == theirs })
			if err := s.p.direct.Update(ctx, fresh); err != nil {
				t.Error(err)
			}
		}}
		if _, err := late.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "shared"}}); err != nil {
			t.Fatalf("releasing the node: %v", err)
		}
		if n := s.node("shared"); n != nil {
			t.Errorf("the node is still there with finalizers %v", n.Finalizers)
		}
	})
}

// A node of the same name registered since the controller read the
// deleted one (EC2 gave a new instance the old one's address): the
// release leaves the new node's finalizer alone.
func TestReleaseLeavesANewNodeOfTheSameName(t *testing.T) {
	p := newPlant(t)
	s := p.term(t)
	s.launch("ip-10-0-1-7")
	s.deleteNode("ip-10-0-1-7")
	s.pass("ip-10-0-1-7") // drained, NodeClaim deleted, instance terminating
	s.caughtUp("ip-10-0-1-7")
	ctx := context.Background()
	late := *s.c
	late.Client = &writesAfterRead{Client: s.p.cached, after: func() {
		old := s.node("ip-10-0-1-7")
		old.Finalizers = nil
		if err := s.p.direct.Update(ctx, old); err != nil {
			t.Error(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return s.node("ip-10-0-1-7") == nil, nil
		}); err != nil {
			t.Error(err)
		}
		s.bareNode("ip-10-0-1-7", "aws:///us-west-2b/i-reborn", v1.TerminationFinalizer)
	}}
	if _, err := late.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "ip-10-0-1-7"}}); err != nil {
		t.Fatal(err)
	}
	n := s.node("ip-10-0-1-7")
	if n == nil || n.Spec.ProviderID != "aws:///us-west-2b/i-reborn" || !slices.Contains(n.Finalizers, v1.TerminationFinalizer) {
		t.Fatalf("the new node of the same name is %+v; want it kept with its finalizer", n)
	}
}

// writesAfterRead is a client whose first read of a node is followed at
// once by another controller's write (after): what the caller holds is
// then older than the API server's.
type writesAfterRead struct {
	client.Client
	once  sync.Once
	after func()
}

func (w *writesAfterRead) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := w.Client.Get(ctx, key, obj, opts...)
	if _, isNode := obj.(*corev1.Node); isNode && err == nil {
		w.once.Do(w.after)
	}
	return err
}
