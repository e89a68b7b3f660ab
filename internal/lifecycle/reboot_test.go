package lifecycle_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/drain"
	"github.com/nodewright/nodewright/internal/fake/account"
	"github.com/nodewright/nodewright/internal/intent"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/operator/optest"
	"github.com/nodewright/nodewright/internal/reboot"
)

// A reboot node repair asked for, carried out on the test's clock: the
// node is fenced, its boot ID recorded and its instance rebooted once
// (a pass that finds the boot ID unchanged does not reboot it again);
// when the node does not boot again within the timeout, the reboot fails,
// the fence comes off and the NodeClaim is deleted, so the node is
// replaced. A request whose drain bound cannot be read fails without a
// reboot and without replacing the node.
func TestRebootThatDoesNotComeBackIsReplaced(t *testing.T) {
	e := &env{}
	o := optest.Start(t, optest.Options{Configure: func(cfg *operator.Config) { cfg.NodeRepair = false }})
	o.DefaultNodeClass(t)
	e.Env, e.kube, e.account = o, o.Kube, o.Account
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	said := record.NewFakeRecorder(100)
	poll, issueWithin, timeout := reboot.Defaults()
	c := &reboot.Controller{Client: e.kube, Cloud: provider.New(e.account.EC2(), nil, userdata.Cluster{Name: account.ClusterName}, clk),
		Drainer: &drain.Drainer{Client: e.kube, Recorder: said, Clock: clk}, Recorder: said, Clock: clk, Poll: poll, IssueWithin: issueWithin, Timeout: timeout}
	pass := func(name string) {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
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
		if err := intent.RequestReboot(ctx, e.kube, e.claim(t, name), bound, "rebooting for KernelReady=False", clk.Now()); err != nil {
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
