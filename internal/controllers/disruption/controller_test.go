package disruption_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controllers/disruption"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// classes resolves the cluster's EC2NodeClasses as the controller does
// (readiness, stamp and drift rules from their status), with the
// instance types of two zones and one amd64 AMI for every one.
type classes struct {
	kube  client.Reader
	types []*scheduling.InstanceType
}

func (c classes) NodeClassObject() client.Object { return &awsv1.EC2NodeClass{} }

func (c classes) ResolveNodeClasses(ctx context.Context, _ []*v1.NodePool) (map[string]*cloudprovider.NodeClass, error) {
	list := &awsv1.EC2NodeClassList{}
	if err := c.kube.List(ctx, list); err != nil {
		return nil, err
	}
	out := map[string]*cloudprovider.NodeClass{}
	for i := range list.Items {
		rc := nodeclass.Resolved(&list.Items[i], c.types)
		if rc.NotReady == nil {
			rc.AMIs = []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})}}
		}
		out[rc.Name] = rc
	}
	return out, nil
}

// A rollback that fails half-way (its node's untaint conflicts with
// another write) is taken up again next round, and told once.
func TestARollbackTakenUpAgainIsToldOnce(t *testing.T) {
	e := startController(t)
	ctx := context.Background()
	e.node(t, "big", "m5.4xlarge", nil)
	e.reconcile(t) // decides
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates, taints, launches the replacement
	claims := &v1.NodeClaimList{}
	if err := e.kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	watching, err := client.NewWithWatch(e.plane.Config, client.Options{Scheme: e.kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	conflicts := 1
	e.ctrl.Client = interceptor.NewClient(watching, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, isNode := obj.(*corev1.Node); isNode && obj.GetName() == "big" && conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "big", errors.New("the object has been modified"))
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	for i := range claims.Items {
		if !strings.HasPrefix(claims.Items[i].Name, "nc-") {
			if err := e.kube.Delete(ctx, &claims.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.ctrl.Reconcile(ctx); !apierrors.IsConflict(err) {
		t.Fatalf("the rollback's first round: %v, want the injected conflict", err)
	}
	e.reconcile(t)
	if tainted(t, e.kube, "big") {
		t.Error("the node stays tainted after the rollback was taken up again")
	}
	told := 0
	for _, ev := range e.events() {
		if strings.Contains(ev, "DisruptionRolledBack") {
			told++
		}
	}
	if told != 2 {
		t.Errorf("DisruptionRolledBack told %d times, want once on the node and once on its NodeClaim", told)
	}
}

type env struct {
	plane    *controlplane.ControlPlane
	kube     client.Client
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	ctrl     *disruption.Controller
}

func startController(t *testing.T) *env {
	plane, kube := sharedPlane(t)
	types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{plane: plane, kube: kube, clock: clocktesting.NewFakeClock(time.Now()), recorder: record.NewFakeRecorder(100)}
	e.recorder.IncludeObject = true
	e.ctrl = &disruption.Controller{
		Client: kube, NodeClasses: classes{kube: kube, types: types}, Registrations: nodepoolhealth.NewRegistrations(), Recorder: e.recorder, Clock: e.clock, Log: logr.Discard(),
		Config: disruption.Config{Options: spotToSpot(decide.DefaultOptions()), Poll: time.Second, ValidationDelay: 15 * time.Second, ReplacementTimeout: 10 * time.Minute},
	}
	ctx := context.Background()
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: "node",
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"a": "b"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"a": "b"}}},
	}}
	e.create(t, class)
	meta.SetStatusCondition(&class.Status.Conditions, metav1.Condition{Type: awsv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"})
	if err := kube.Status().Update(ctx, class); err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	np.Spec.Disruption = v1.Disruption{ConsolidateAfter: "0s", Budgets: []v1.Budget{{Nodes: "100%"}}}
	e.create(t, np)
	return e
}

func (e *env) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// node creates an initialized on-demand node of the instance type with
// its NodeClaim, and a pod on it.
func (e *env) node(t *testing.T, name, instanceType string, podAnnotations map[string]string) {
	ctx := context.Background()
	it := e.ctrl.NodeClasses.(classes).types
	var spec *scheduling.InstanceType
	for _, x := range it {
		if x.Name == instanceType {
			spec = x
		}
	}
	labels := spec.Requirements.Labels()
	labels[corev1.LabelHostname], labels[corev1.LabelTopologyZone], labels[v1.LabelCapacityType], labels[v1.LabelNodePool] = name, "us-east-1a", v1.CapacityTypeOnDemand, "default"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-" + name}}
	e.create(t, n)
	n.Status.Capacity, n.Status.Allocatable = spec.Capacity.List(), spec.Allocatable.List()
	if err := e.kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + name, Labels: launchLabels(n)}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}}
	e.create(t, nc)
	nc.Status.ProviderID, nc.Status.NodeName = n.Spec.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.clock.Now().Add(-time.Hour))}}
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + name, Namespace: "default", Annotations: podAnnotations},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
	e.create(t, pod)
}

func (e *env) reconcile(t *testing.T) {
	t.Helper()
	if err := e.ctrl.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func tainted(t *testing.T, kube client.Client, name string) bool {
	n := &corev1.Node{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == v1.TaintKeyDisrupted })
}

func has(events []string, fragments ...string) bool {
	return slices.ContainsFunc(events, func(ev string) bool {
		for _, f := range fragments {
			if !strings.Contains(ev, f) {
				return false
			}
		}
		return true
	})
}

// A replacement that fails rolls the command back: the node is untainted
// and says why. A node held by do-not-disrupt says so once.
func TestReplacementFailureRollsBack(t *testing.T) {
	e := startController(t)
	ctx := context.Background()
	e.node(t, "big", "m5.4xlarge", nil)
	e.node(t, "held", "m5.4xlarge", map[string]string{v1.AnnotationDoNotDisrupt: "true"})

	e.reconcile(t) // decides
	if tainted(t, e.kube, "big") {
		t.Fatal("tainted before the validation delay")
	}
	events := e.events()
	if !has(events, "DisruptionBlocked", "pod default/pod-held is annotated karpenter.sh/do-not-disrupt=true") {
		t.Errorf("no DisruptionBlocked for the held node: %v", events)
	}
	e.reconcile(t)
	if again := e.events(); has(again, "DisruptionBlocked") {
		t.Errorf("DisruptionBlocked repeated for the same reason: %v", again)
	}

	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates, taints, launches the replacement
	if !tainted(t, e.kube, "big") {
		t.Fatal("the node was not tainted when the command started")
	}
	claims := &v1.NodeClaimList{}
	if err := e.kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	var replacement *v1.NodeClaim
	for i := range claims.Items {
		if !strings.HasPrefix(claims.Items[i].Name, "nc-") {
			replacement = &claims.Items[i]
		}
	}
	if replacement == nil {
		t.Fatalf("no replacement NodeClaim: %v", claims.Items)
	}
	if events := e.events(); !has(events, "DisruptionLaunching", "Underutilized", replacement.Name, "saves $") {
		t.Errorf("events: %v", events)
	}
	if tainted(t, e.kube, "held") {
		t.Error("the held node was tainted")
	}

	// The replacement fails to launch: its NodeClaim goes.
	if err := e.kube.Delete(ctx, replacement); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if tainted(t, e.kube, "big") {
		t.Error("the node stays tainted after the rollback")
	}
	if events := e.events(); !has(events, "DisruptionRolledBack", "replacement NodeClaim "+replacement.Name+" failed to launch or register") {
		t.Errorf("events: %v", events)
	}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "nc-big"}, &v1.NodeClaim{}); err != nil {
		t.Errorf("the node's NodeClaim after the rollback: %v", err)
	}
}

// Consolidation waiting for a scale-up is told once on the NodePool: not
// on each of its nodes, which all wait alike, nor once a round as the
// count of pending pods moves.
func TestScaleUpIsToldOncePerNodePool(t *testing.T) {
	e := startController(t)
	e.node(t, "big", "m5.4xlarge", nil)
	e.node(t, "big-2", "m5.4xlarge", nil)
	pending := func(name string) {
		e.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}})
	}
	pending("wait-1")
	e.reconcile(t)
	events := e.events()
	if !has(events, "DisruptionBlocked", "1 pending pods are being placed", "kind=NodePool") {
		t.Fatalf("no DisruptionBlocked on the NodePool for the scale-up: %v", events)
	}
	if has(events, "DisruptionBlocked", "kind=NodeClaim") || has(events, "DisruptionBlocked", "kind=Node,") {
		t.Errorf("the scale-up was told on the nodes: %v", events)
	}
	pending("wait-2")
	e.reconcile(t)
	if again := e.events(); has(again, "DisruptionBlocked") {
		t.Errorf("DisruptionBlocked repeated for the same scale-up with another count of pods: %v", again)
	}
}

// A replacement the API server refuses to create rolls the command back
// once: the node is untainted and says why, and the command is not
// started again every round (a new decision, after its validation delay,
// may try again).
func TestRefusedReplacementRollsBackOnce(t *testing.T) {
	e := startController(t)
	ctx := context.Background()
	refuseReplacements(t, e.kube)
	e.node(t, "big", "m5.4xlarge", nil)

	e.reconcile(t) // decides
	e.clock.Step(16 * time.Second)
	e.reconcile(t) // validates, taints, fails to create the replacement
	if tainted(t, e.kube, "big") {
		t.Error("the node stays tainted though its replacement was refused")
	}
	events := e.events()
	if !has(events, "DisruptionRolledBack", "creating a replacement failed", "replacements are refused here") {
		t.Fatalf("events: %v", events)
	}
	e.reconcile(t)
	e.reconcile(t)
	if again := e.events(); has(again, "DisruptionRolledBack") || has(again, "DisruptionLaunching") {
		t.Errorf("the refused command was started again without a new decision: %v", again)
	}
	claims := &v1.NodeClaimList{}
	if err := e.kube.List(ctx, claims); err != nil || len(claims.Items) != 1 {
		t.Errorf("NodeClaims %d (%v); want only the node's own", len(claims.Items), err)
	}
}

// refuseReplacements makes the API server refuse every NodeClaim but the
// test's own (named nc-*), and waits until it does.
func refuseReplacements(t *testing.T, kube client.Client) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "refuse-replacements"}, Spec: admissionv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionv1.Fail),
		MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule:       admissionv1.Rule{APIGroups: []string{v1.Group}, APIVersions: []string{"v1"}, Resources: []string{"nodeclaims"}},
		}}}},
		Validations: []admissionv1.Validation{{Expression: "object.metadata.name.startsWith('nc-')", Message: "replacements are refused here"}},
	}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "refuse-replacements"}, Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
		PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
	}}
	for _, obj := range []client.Object{policy, binding} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
		probe.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
		probe.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
		err := kube.Create(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "replacements are refused here"), nil
	})
	if err != nil {
		t.Fatalf("the API server never refused a NodeClaim: %v", err)
	}
}

// Replacements of a NodePool's drifted nodes that keep failing pause its
// drift at the limit: no further replacement is launched, the drifted
// node stays and says why, and the failures are on record (with the
// last cause) for the NodePool's status.
func TestDriftPausesWhenReplacementsKeepFailing(t *testing.T) {
	e := startController(t)
	ctx := context.Background()
	e.ctrl.Drifts = nodepoolhealth.NewDriftReplacements()
	e.ctrl.Config.DriftFailureLimit = 2
	np := &v1.NodePool{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty // drift alone
	if err := e.kube.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	e.node(t, "old", "m5.large", nil)
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "nc-old"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: v1.ReasonNodePoolDrifted,
		LastTransitionTime: metav1.NewTime(e.clock.Now())})
	if err := e.kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	replacement := func() *v1.NodeClaim {
		claims := &v1.NodeClaimList{}
		if err := e.kube.List(ctx, claims); err != nil {
			t.Fatal(err)
		}
		for i := range claims.Items {
			if claims.Items[i].Name != "nc-old" && claims.Items[i].DeletionTimestamp.IsZero() {
				return &claims.Items[i]
			}
		}
		return nil
	}
	for attempt := 1; attempt <= 2; attempt++ {
		e.reconcile(t) // decides
		e.clock.Step(16 * time.Second)
		e.reconcile(t) // launches the replacement
		r := replacement()
		if r == nil {
			t.Fatalf("attempt %d: no replacement launched; events %v", attempt, e.events())
		}
		if err := e.kube.Delete(ctx, r); err != nil { // it failed to register
			t.Fatal(err)
		}
		e.reconcile(t) // rolls back
		if rec, _ := e.ctrl.Drifts.Get("default"); rec.Failures != attempt || !strings.Contains(rec.Cause, "failed to launch or register") {
			t.Fatalf("attempt %d: record %+v", attempt, rec)
		}
	}
	e.events()
	e.reconcile(t)
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	if r := replacement(); r != nil {
		t.Errorf("a third replacement %s was launched after 2 failed in a row; %v", r.Name, e.events())
	}
	if events := e.events(); !has(events, "DisruptionBlocked", "drift of its NodePool is paused", "2 replacements of drifted nodes failed in a row") {
		t.Errorf("the drifted node does not say drift is paused: %v", events)
	}
	if tainted(t, e.kube, "old") {
		t.Error("the drifted node stays tainted; it keeps serving")
	}
}

// spotToSpot turns the SpotToSpotConsolidation gate on, as the reference's
// suite runs.
func spotToSpot(o decide.Options) decide.Options {
	o.SpotToSpot = true
	return o
}

// An emptiness command one of whose nodes got a pod during the validation
// wait goes on with the nodes still empty; the other stays, untainted,
// and is told why.
func TestEmptinessKeepsTheNodesStillEmpty(t *testing.T) {
	e := startController(t)
	redUpdatePool(t, e, func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty })
	redCtrlNode(t, e, "busy", "m5.large", nil)
	redCtrlNode(t, e, "idle", "m5.large", nil)
	e.reconcile(t) // decides Empty[busy idle]
	redCtrlPod(t, e, "arrived", "busy", "100m")
	e.clock.Step(16 * time.Second)
	e.reconcile(t)
	if !rrGone(t, e, "nc-idle") {
		t.Error("the node still empty was not deleted")
	}
	if rrGone(t, e, "nc-busy") || tainted(t, e.kube, "busy") {
		t.Error("the node that got a pod was deleted or tainted")
	}
	if events := e.events(); !has(events, "busy", "Empty disruption cancelled for this node: node busy has pods again") {
		t.Errorf("no cancellation told on the node that got a pod: %v", events)
	}
}
