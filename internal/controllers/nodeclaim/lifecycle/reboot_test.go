package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/reboot"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// A reboot node repair asked for, carried out on the test's clock: the
// node is fenced, its boot ID recorded and its instance rebooted once
// (a pass that finds the boot ID unchanged does not reboot it again);
// when the node does not boot again within the timeout, the reboot fails,
// the fence comes off and the NodeClaim is deleted, so the node is
// replaced. A request whose drain bound cannot be read fails without a
// reboot and without replacing the node.
func TestRebootThatDoesNotComeBackIsReplaced(t *testing.T) {
	e, _ := startRebooting(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	said := record.NewFakeRecorder(100)
	poll, issueWithin, timeout := reboot.Defaults()
	c := &reboot.Controller{Client: e.kube, Cloud: provider.New(e.account.EC2(), nil, userdata.Cluster{Name: account.ClusterName}, clk),
		Drainer: &drain.Drainer{Client: e.kube, Recorder: said, Clock: clk}, Recorder: said, Clock: clk, Poll: poll, IssueWithin: issueWithin, Timeout: timeout}
	pass := func(name string) {
		t.Helper()
		// A conflict is retried, as the manager retries it.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			_, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	request := func(name string, bound *time.Duration) *corev1.Node {
		t.Helper()
		node := e.launched(t, name)
		before := node.DeepCopy()
		node.Status.NodeInfo.BootID = "boot-" + name
		if err := e.kube.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		e.waitFor(t, "NodeClaim "+name+" to name its node", func(context.Context) (bool, error) {
			return e.claim(t, name).Status.NodeName == node.Name, nil
		})
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return intent.RequestReboot(ctx, e.kube, e.claim(t, name), bound, "rebooting for KernelReady=False", clk.Now())
		}); err != nil {
			t.Fatal(err)
		}
		return node
	}
	reboots := func() int {
		n := 0
		for _, inst := range e.account.Instances() {
			n += inst.Reboots
		}
		return n
	}
	rebooting := func(name string) *metav1.Condition {
		return meta.FindStatusCondition(e.claim(t, name).Status.Conditions, v1.ConditionRebooting)
	}
	fenced := func(node *corev1.Node) bool {
		fresh := &corev1.Node{}
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
			t.Fatal(err)
		}
		for _, taint := range fresh.Spec.Taints {
			if taint.Key == v1.TaintKeyRebooting {
				return true
			}
		}
		return false
	}

	node := request("stuck", ptr.To(time.Duration(0)))
	pass("stuck")
	if cond := rebooting("stuck"); cond == nil || cond.Reason != v1.ReasonRebootIssued || !fenced(node) || reboots() != 1 {
		t.Fatalf("after the first pass: Rebooting %+v, fenced %v, %d reboots", cond, fenced(node), reboots())
	}
	if got := e.claim(t, "stuck").Annotations[v1.AnnotationRebootPreBootID]; got != "boot-stuck" {
		t.Errorf("pre-boot ID %q", got)
	}
	clk.Step(time.Minute)
	pass("stuck")
	if reboots() != 1 {
		t.Errorf("the reboot was issued again while waiting: %d reboots", reboots())
	}
	clk.Step(timeout)
	pass("stuck")
	if cond := rebooting("stuck"); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1.ReasonRebootFailed {
		t.Errorf("after the timeout: Rebooting %+v", cond)
	}
	if fenced(node) {
		t.Error("the fence stayed on after the reboot failed")
	}
	e.gone(t, "stuck")

	node = request("malformed", nil)
	before := e.claim(t, "malformed")
	changed := before.DeepCopy()
	if changed.Annotations == nil {
		changed.Annotations = map[string]string{}
	}
	changed.Annotations[v1.AnnotationRebootTerminationGracePeriod] = "-5m"
	if err := e.kube.Patch(ctx, changed, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	pass("malformed")
	nc := e.claim(t, "malformed")
	if cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting); cond == nil || cond.Reason != v1.ReasonRebootFailed || !nc.DeletionTimestamp.IsZero() || fenced(node) || reboots() != 1 {
		t.Errorf("a malformed bound: Rebooting %+v, deleting %v, fenced %v, %d reboots", cond, !nc.DeletionTimestamp.IsZero(), fenced(node), reboots())
	}
}

// A reboot whose condition write fails after the instance was rebooted
// (a conflict on a busy API server) is retried without rebooting the
// instance again: the next pass records the reboot it already issued.
func TestRebootIsIssuedOnceWhenItsConditionWriteFails(t *testing.T) {
	e, o := startRebooting(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	said := record.NewFakeRecorder(100)
	failures := 1
	scheme, err := operator.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	watching, err := client.NewWithWatch(o.Plane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var stale *v1.NodeClaim
	conflicting := interceptor.NewClient(watching, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && stale != nil && key.Name == stale.Name {
				stale.DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && failures > 0 && sub == "status" && rebootIssued(nc) {
				failures--
				return apierrors.NewConflict(schema.GroupResource{Group: v1.Group, Resource: "nodeclaims"}, nc.Name, errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	poll, issueWithin, timeout := reboot.Defaults()
	c := &reboot.Controller{Client: conflicting, Cloud: provider.New(e.account.EC2(), nil, userdata.Cluster{Name: account.ClusterName}, clk),
		Drainer: &drain.Drainer{Client: e.kube, Recorder: said, Clock: clk}, Recorder: said, Clock: clk, Poll: poll, IssueWithin: issueWithin, Timeout: timeout}
	node := e.launched(t, "flaky")
	before := node.DeepCopy()
	node.Status.NodeInfo.BootID = "boot-flaky"
	if err := e.kube.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "NodeClaim flaky to name its node", func(context.Context) (bool, error) {
		return e.claim(t, "flaky").Status.NodeName == node.Name, nil
	})
	// The lifecycle controller may still be writing the NodeClaim: a
	// conflicting request is made again, as the next disruption round
	// would.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return intent.RequestReboot(ctx, e.kube, e.claim(t, "flaky"), ptr.To(time.Duration(0)), "rebooting for KernelReady=False", clk.Now())
	}); err != nil {
		t.Fatal(err)
	}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Name: "flaky"}}
	if _, err := c.Reconcile(ctx, req); !apierrors.IsConflict(err) {
		t.Fatalf("the first pass: %v, want the injected conflict", err)
	}
	// As a lagging cache would show it after the write: requested, its
	// boot ID recorded, not yet issued.
	requested := e.claim(t, "flaky")
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	reboots := func() int {
		n := 0
		for _, inst := range e.account.Instances() {
			n += inst.Reboots
		}
		return n
	}
	cond := meta.FindStatusCondition(e.claim(t, "flaky").Status.Conditions, v1.ConditionRebooting)
	if reboots() != 1 || cond == nil || cond.Reason != v1.ReasonRebootIssued {
		t.Errorf("after a failed condition write and a retry: %d reboots, Rebooting %+v; want 1 reboot and RebootIssued", reboots(), cond)
	}
	stale = requested
	// Its condition write conflicts (the object moved on); the reboot
	// must not have been issued before it.
	if _, err := c.Reconcile(ctx, req); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
	stale = nil
	if reboots() != 1 {
		t.Errorf("a pass that read the NodeClaim from before the condition was written rebooted again: %d reboots", reboots())
	}
}

// startRebooting runs the operator without node repair: the tests drive
// the reboot controller themselves.
func startRebooting(t *testing.T) (*env, *optest.Env) {
	t.Helper()
	o := optest.Start(t, optest.Options{Configure: func(cfg *operator.Config) { cfg.NodeRepair = false }})
	o.DefaultNodeClass(t)
	return &env{Env: o, kube: o.Kube, account: o.Account}, o
}

func rebootIssued(nc *v1.NodeClaim) bool {
	cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRebooting)
	return cond != nil && cond.Reason == v1.ReasonRebootIssued
}
