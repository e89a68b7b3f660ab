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
	"github.com/nodewright/nodewright/internal/controllers/nodepool"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// A NodePool the API server admits (its CRD checks label keys only
// loosely, as the reference's does) but whose label no node can carry is
// ValidationSucceeded=False and not Ready, naming the field; fixed, it is
// ready again.
func TestNodePoolTheAPIServerAdmitsButNoNodeCanCarry(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "labels"}}
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"spaces are not allowed": "bar"}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: "In", Values: []string{"xspot"}}}
	if err := kube.Create(ctx, np); err != nil {
		t.Fatalf("the API server refuses what the reference's admits: %v", err)
	}
	generation := int64(1)
	ctrl := &nodepool.Controller{Client: kube, NodeClasses: classes{&generation}, Clock: clocktesting.NewFakeClock(time.Now()),
		Registrations: nodepoolhealth.NewRegistrations(), Drifts: nodepoolhealth.NewDriftReplacements(), DriftFailureLimit: 2, Recorder: record.NewFakeRecorder(10)}
	read := func() *v1.NodePool {
		t.Helper()
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "labels"}}); err != nil {
			t.Fatal(err)
		}
		got := &v1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "labels"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := read()
	valid := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionValidationSucceeded)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady)
	if valid == nil || valid.Status != metav1.ConditionFalse || valid.Reason != v1.ReasonValidationFailed ||
		!strings.Contains(valid.Message, "spec.template.metadata.labels[spaces are not allowed]") || !strings.Contains(valid.Message, "spec.template.spec.requirements[0].values") ||
		ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonValidationFailed {
		t.Fatalf("ValidationSucceeded %+v, Ready %+v", valid, ready)
	}
	got.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "bar"}
	got.Spec.Template.Spec.Requirements[0].Values = []string{"spot", "xspot"}
	if err := kube.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	got = read()
	if c := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionValidationSucceeded); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("fixed, ValidationSucceeded %+v", c)
	}
}
