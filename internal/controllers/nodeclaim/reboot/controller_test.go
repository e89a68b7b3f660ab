package reboot_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/reboot"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// instances is a cloud that records reboots and answers with err.
type instances struct {
	mu       sync.Mutex
	rebooted []string
	err      error
}

func (c *instances) Reboot(_ context.Context, providerID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.rebooted = append(c.rebooted, providerID)
	return nil
}

func (c *instances) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rebooted)
}

// rig is one control plane, the reboot controller on the test's clock,
// and the NodeClaims and nodes the test asks to reboot.
type rig struct {
	t     *testing.T
	kube  client.Client
	clock *clocktesting.FakeClock
	said  *record.FakeRecorder
	cloud *instances
	c     *reboot.Controller
	log   []string
}

func newRig(t *testing.T) *rig {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	r := &rig{t: t, kube: kube, clock: clocktesting.NewFakeClock(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)),
		said: record.NewFakeRecorder(1000), cloud: &instances{}}
	poll, issueWithin, timeout := reboot.Defaults()
	r.c = &reboot.Controller{Client: kube, Cloud: r.cloud, Drainer: &drain.Drainer{Client: kube, Recorder: r.said, Clock: r.clock},
		Recorder: r.said, Clock: r.clock, Poll: poll, IssueWithin: issueWithin, Timeout: timeout}
	return r
}

// requested makes a registered node and its NodeClaim, and node repair's
// request to reboot it (intent.RequestReboot) with the drain bound given.
func (r *rig) requested(name string, bound *time.Duration) {
	r.t.Helper()
	ctx := context.Background()
	providerID := "aws:///us-east-1a/i-" + name
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := r.kube.Create(ctx, nc); err != nil {
		r.t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name
	if err := r.kube.Status().Update(ctx, nc); err != nil {
		r.t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := r.kube.Create(ctx, node); err != nil {
		r.t.Fatal(err)
	}
	r.boot(name, "boot-1", corev1.ConditionFalse)
	if err := intent.RequestReboot(ctx, r.kube, nc, bound, "KernelReady=False for 30m", r.clock.Now()); err != nil {
		r.t.Fatal(err)
	}
}

// boot sets the node's boot ID and Ready condition, as its kubelet does.
func (r *rig) boot(name, bootID string, ready corev1.ConditionStatus) {
	r.t.Helper()
	node := &corev1.Node{}
	if err := r.kube.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		r.t.Fatal(err)
	}
	node.Status.NodeInfo.BootID = bootID
	now := metav1.NewTime(r.clock.Now())
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Kubelet", LastHeartbeatTime: now, LastTransitionTime: now}}
	if err := r.kube.Status().Update(context.Background(), node); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) pod(name, node string, mutate ...func(*corev1.Pod)) {
	r.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	if err := r.kube.Create(context.Background(), p); err != nil {
		r.t.Fatal(err)
	}
}

// pass reconciles the NodeClaim once.
func (r *rig) pass(name string) {
	r.t.Helper()
	if _, err := r.c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) claim(name string) *v1.NodeClaim {
	r.t.Helper()
	nc := &v1.NodeClaim{}
	err := r.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return nc
}

func (r *rig) rebooting(name string) *metav1.Condition {
	r.t.Helper()
	nc := r.claim(name)
	if nc == nil {
		r.t.Fatalf("NodeClaim %s is gone", name)
	}
	return meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
}

func (r *rig) fenced(name string) bool {
	r.t.Helper()
	node := &corev1.Node{}
	if err := r.kube.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		r.t.Fatal(err)
	}
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.TaintKeyRebooting })
}

// terminating reports whether the pod is being evicted (or is gone).
func (r *rig) terminating(name string) bool {
	r.t.Helper()
	p := &corev1.Pod{}
	err := r.kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return !p.DeletionTimestamp.IsZero()
}

// kubeletRemoves finishes a pod's graceful deletion, as its kubelet would.
func (r *rig) kubeletRemoves(name string) {
	r.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := client.IgnoreNotFound(r.kube.Delete(context.Background(), p, client.GracePeriodSeconds(0))); err != nil {
		r.t.Fatal(err)
	}
}

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

// A reboot node repair asked for: the node is fenced
// (karpenter.sh/rebooting), its ordinary pods evicted while its
// DaemonSet pods stay (the reboot brings them back up there), its boot
// ID recorded and its instance rebooted once however often it is looked
// at; when it boots again (a new boot ID) and is Ready, the fence comes
// off and the NodeClaim says the reboot succeeded.
func TestARebootDrainsRebootsOnceAndEndsWhenTheNodeIsBack(t *testing.T) {
	r := newRig(t)
	r.requested("n1", nil)
	r.pod("web", "n1")
	r.pod("agent", "n1", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "agent-uid"}}
	})

	r.pass("n1")
	if !r.fenced("n1") || !r.terminating("web") || r.terminating("agent") {
		t.Fatalf("first pass: fenced %v, web evicted %v, DaemonSet pod evicted %v; want fenced, web evicted, the DaemonSet pod kept",
			r.fenced("n1"), r.terminating("web"), r.terminating("agent"))
	}
	if r.cloud.count() != 0 {
		t.Fatal("rebooted before the drain was done")
	}
	r.kubeletRemoves("web")
	r.pass("n1")
	r.pass("n1")
	if n := r.cloud.count(); n != 1 || r.cloud.rebooted[0] != "aws:///us-east-1a/i-n1" {
		t.Fatalf("reboots %v, want one of the node's instance", r.cloud.rebooted)
	}
	if c := r.rebooting("n1"); c == nil || c.Reason != v1.ReasonRebootIssued {
		t.Fatalf("Rebooting %+v, want RebootIssued", c)
	}
	if nc := r.claim("n1"); nc.Annotations[v1.AnnotationRebootPreBootID] != "boot-1" {
		t.Errorf("pre-boot ID %q, want boot-1", nc.Annotations[v1.AnnotationRebootPreBootID])
	}

	// Still the old boot: nothing changes, no second reboot.
	r.clock.Step(time.Minute)
	r.pass("n1")
	if r.cloud.count() != 1 || !r.fenced("n1") {
		t.Fatalf("before the node is back: reboots %d, fenced %v", r.cloud.count(), r.fenced("n1"))
	}
	r.boot("n1", "boot-2", corev1.ConditionTrue)
	r.pass("n1")
	c := r.rebooting("n1")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonRebootSucceeded || r.fenced("n1") {
		t.Errorf("after the node booted again: Rebooting %+v, fenced %v; want False/RebootSucceeded and no fence", c, r.fenced("n1"))
	}
	if nc := r.claim("n1"); nc.Annotations[v1.AnnotationRebootPreBootID] != "" {
		t.Errorf("the pre-boot ID is left: %v", nc.Annotations)
	}
	if len(r.events(v1.ReasonNodeRebooting)) != 1 || len(r.events(v1.ReasonNodeRebooted)) != 1 {
		t.Errorf("events %q", r.log)
	}
}

// A node that does not boot again within the timeout (20 minutes): the
// reboot failed, the fence comes off and the NodeClaim is deleted, so the
// node is replaced.
func TestARebootThatDoesNotComeBackIsReplaced(t *testing.T) {
	r := newRig(t)
	r.requested("n2", nil)
	r.pass("n2")
	if r.cloud.count() != 1 {
		t.Fatalf("reboots %d, want 1 (the node has no pods to drain)", r.cloud.count())
	}
	r.clock.Step(19 * time.Minute)
	r.pass("n2")
	if nc := r.claim("n2"); nc == nil || !nc.DeletionTimestamp.IsZero() {
		t.Fatal("the node was replaced within the timeout")
	}
	r.clock.Step(2 * time.Minute)
	r.pass("n2")
	if nc := r.claim("n2"); nc != nil && nc.DeletionTimestamp.IsZero() {
		t.Errorf("past the timeout the NodeClaim was kept; want it deleted (Rebooting %+v)", meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting))
	}
	if r.fenced("n2") {
		t.Error("the fence stayed on a node whose reboot failed")
	}
	if evs := r.events(v1.ReasonNodeRebootFailed); len(evs) != 1 || !strings.Contains(evs[0], "did not boot again") || !strings.Contains(evs[0], "replaced") {
		t.Errorf("NodeRebootFailed events %q", evs)
	}
}

// The drain before a reboot waits for a pod marked do-not-disrupt up to
// the request's bound, then reboots with the pod left on the node (it
// rides the reboot out); a request whose bound cannot be read fails
// without a reboot and without replacing the node.
func TestTheDrainBoundAndABadRequest(t *testing.T) {
	r := newRig(t)
	bound := time.Minute
	r.requested("n3", &bound)
	r.pod("batch", "n3", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	r.pass("n3")
	r.clock.Step(30 * time.Second)
	r.pass("n3")
	if r.cloud.count() != 0 || r.terminating("batch") {
		t.Fatalf("within the bound: reboots %d, pod evicted %v; want neither", r.cloud.count(), r.terminating("batch"))
	}
	r.clock.Step(31 * time.Second)
	r.pass("n3")
	if r.cloud.count() != 1 || r.terminating("batch") {
		t.Errorf("past the bound: reboots %d, pod evicted %v; want the reboot with the pod left", r.cloud.count(), r.terminating("batch"))
	}

	r.requested("n4", nil)
	nc := r.claim("n4")
	nc.Annotations = map[string]string{v1.AnnotationRebootTerminationGracePeriod: "soon"}
	if err := r.kube.Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	r.pass("n4")
	c := r.rebooting("n4")
	if c == nil || c.Reason != v1.ReasonRebootFailed || !strings.Contains(c.Message, v1.AnnotationRebootTerminationGracePeriod) {
		t.Errorf("a bad bound: Rebooting %+v, want RebootFailed naming the annotation", c)
	}
	if r.cloud.count() != 1 || !r.claim("n4").DeletionTimestamp.IsZero() {
		t.Errorf("a bad request rebooted (%d reboots) or replaced the node", r.cloud.count())
	}
}

// The cloud refusing: an instance nodewright did not launch is neither
// rebooted nor replaced; an error that passes is retried until five
// minutes after the request, then the node is replaced.
func TestACloudThatRefusesTheReboot(t *testing.T) {
	r := newRig(t)
	r.cloud.err = &cloudprovider.NotOwnedError{Message: "i-n5 has no nodewright tags"}
	r.requested("n5", nil)
	r.pass("n5")
	if c := r.rebooting("n5"); c == nil || c.Reason != v1.ReasonRebootFailed || !r.claim("n5").DeletionTimestamp.IsZero() {
		t.Errorf("a foreign instance: Rebooting %+v; want RebootFailed and the NodeClaim kept", c)
	}

	r.cloud.err = errors.New("RequestLimitExceeded")
	r.requested("n6", nil)
	r.pass("n6")
	r.clock.Step(4 * time.Minute)
	r.pass("n6")
	if c := r.rebooting("n6"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("a passing error within five minutes: Rebooting %+v, want still requested", c)
	}
	r.clock.Step(2 * time.Minute)
	r.pass("n6")
	if nc := r.claim("n6"); nc != nil && nc.DeletionTimestamp.IsZero() {
		t.Error("a reboot that could not be issued for five minutes: the node is not replaced")
	}
}
