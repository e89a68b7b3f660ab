package nodepool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controllers/nodepool"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// classes is a ready node class of a given generation.
type classes struct{ generation *int64 }

func (c classes) NodeClass(_ context.Context, name string) (*cloudprovider.NodeClass, error) {
	return &cloudprovider.NodeClass{Kind: "EC2NodeClass", Name: name, Generation: *c.generation}, nil
}

func (c classes) NodeClassObject() client.Object { return &awsv1.EC2NodeClass{} }

// Drift pauses on the NodePool once its replacements failed the limit
// in a row — DriftAllowed=False with the cause and the fix, the count in
// status.driftBackoff, one event — survives a restart of the controller,
// and resumes when the resume annotation gets a new value or the node
// class changes.
func TestDriftPausesAndResumesOnTheNodePool(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}}}
	if err := kube.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	generation := int64(1)
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	recorder := record.NewFakeRecorder(10)
	drifts := nodepoolhealth.NewDriftReplacements()
	ctrl := &nodepool.Controller{Client: kube, NodeClasses: classes{&generation}, Clock: clock, Registrations: nodepoolhealth.NewRegistrations(),
		Drifts: drifts, DriftFailureLimit: 2, Recorder: recorder}
	reconcileAndRead := func() *v1.NodePool {
		t.Helper()
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "default"}}); err != nil {
			t.Fatal(err)
		}
		got := &v1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	allowed := func(np *v1.NodePool) *metav1.Condition {
		return meta.FindStatusCondition(np.Status.Conditions, v1.ConditionDriftAllowed)
	}

	drifts.Record("default", clock.Now(), false, "replacement NodeClaim a failed to launch or register")
	got := reconcileAndRead()
	if c := allowed(got); c == nil || c.Status != metav1.ConditionTrue || got.Status.DriftBackoff == nil || got.Status.DriftBackoff.Failures != 1 || got.Status.DriftBackoff.Paused {
		t.Fatalf("after one failure: %+v, %+v", c, got.Status.DriftBackoff)
	}
	drifts.Record("default", clock.Now(), false, "replacement NodeClaim b failed to launch or register")
	got = reconcileAndRead()
	c := allowed(got)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonReplacementsFailing ||
		!strings.Contains(c.Message, "2 replacements of drifted nodes failed in a row") || !strings.Contains(c.Message, "NodeClaim b failed") ||
		!strings.Contains(c.Message, v1.AnnotationResumeDrift) || !got.Status.DriftBackoff.Paused {
		t.Fatalf("at the limit: %+v, %+v", c, got.Status.DriftBackoff)
	}
	if ev := <-recorder.Events; !strings.Contains(ev, "Warning ReplacementsFailing") {
		t.Errorf("event %q", ev)
	}
	if paused := nodepoolhealth.PausedDrift(map[string]*v1.NodePool{"default": got}, nil, 2); !strings.Contains(paused["default"], "failed in a row") {
		t.Errorf("a NodePool whose status says drift is paused is not paused offline: %v", paused)
	}

	// A restarted controller keeps drift paused, and says nothing again.
	ctrl.Drifts = nodepoolhealth.NewDriftReplacements()
	drifts = ctrl.Drifts
	if c := allowed(reconcileAndRead()); c.Status != metav1.ConditionFalse {
		t.Errorf("after a restart: %+v", c)
	}
	if rec, _ := drifts.Get("default"); rec.Failures != 2 {
		t.Errorf("the restarted record: %+v", rec)
	}
	select {
	case ev := <-recorder.Events:
		t.Errorf("event again: %q", ev)
	default:
	}

	// The resume annotation resumes it.
	got.Annotations = map[string]string{v1.AnnotationResumeDrift: "1"}
	if err := kube.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got = reconcileAndRead()
	if c := allowed(got); c.Status != metav1.ConditionTrue || got.Status.DriftBackoff != nil {
		t.Errorf("after the annotation: %+v, %+v", c, got.Status.DriftBackoff)
	}
	if ev := <-recorder.Events; !strings.Contains(ev, "DriftResumed") {
		t.Errorf("event %q", ev)
	}
	// Paused again, then the node class changes.
	drifts.Record("default", clock.Now(), false, "c")
	drifts.Record("default", clock.Now(), false, "d")
	if c := allowed(reconcileAndRead()); c.Status != metav1.ConditionFalse {
		t.Fatalf("paused again: %+v", c)
	}
	generation++
	if c := allowed(reconcileAndRead()); c.Status != metav1.ConditionTrue {
		t.Errorf("after the node class changed: %+v", c)
	}
}
