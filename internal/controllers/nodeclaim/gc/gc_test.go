package gc_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/gc"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// instances is a cloud of listed instances that records deletions and
// tags.
type instances struct {
	listed  []*cloudprovider.Instance
	deleted map[string]bool
	tags    []string // "INSTANCE=NODECLAIM", in order
}

func (c *instances) List(context.Context) ([]*cloudprovider.Instance, error) { return c.listed, nil }
func (c *instances) Get(_ context.Context, id string) (*cloudprovider.Instance, error) {
	for _, inst := range c.listed {
		if inst.ProviderID == id {
			return inst, nil
		}
	}
	return nil, &cloudprovider.NotFoundError{Message: id}
}
func (c *instances) Delete(_ context.Context, id string, _ cloudprovider.Holder) error {
	c.deleted[id] = true
	return nil
}
func (c *instances) TagHolder(_ context.Context, inst *cloudprovider.Instance, claim string) error {
	c.tags = append(c.tags, inst.InstanceID+"="+claim)
	inst.NodeClaim = claim
	return nil
}

// An instance of a launch batch that no NodeClaim records is kept while a
// NodeClaim of its batch has no instance yet (it may be the one to take
// it), and collected once none has: a batch launched for NodeClaims
// deleted before their launch leaves nothing behind. The instance a
// NodeClaim recorded is tagged with its name, once.
func TestGarbageCollectionOfLaunchBatches(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	now := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	launched := now.Now().Add(-time.Hour)
	batchInstance := func(id, batch string) *cloudprovider.Instance {
		return &cloudprovider.Instance{ProviderID: "aws:///us-east-1a/" + id, InstanceID: id, LaunchBatch: batch, LaunchTime: launched}
	}
	cloud := &instances{deleted: map[string]bool{}, listed: []*cloudprovider.Instance{
		batchInstance("i-waiting", "b-waiting"), batchInstance("i-spare", "b-done"), batchInstance("i-taken", "b-done"),
	}}
	member := func(name, batch, providerID string) {
		nc := newClaim(name)
		nc.Annotations = map[string]string{cloudprovider.AnnotationLaunchBatch: batch + "/2"}
		if err := kube.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		if providerID != "" {
			nc.Status.ProviderID = providerID
			if err := kube.Status().Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
		}
	}
	member("waiting", "b-waiting", "")
	member("taken", "b-done", "aws:///us-east-1a/i-taken")
	collector := &gc.GarbageCollector{Client: kube, Cloud: cloud, Clock: now, Grace: time.Minute, Log: logr.Discard()}
	if err := collector.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cloud.deleted) != 0 {
		t.Errorf("deleted %v on the first pass that saw them: an instance is collected a grace period after it was first seen without a NodeClaim", cloud.deleted)
	}
	now.Step(time.Minute)
	if err := collector.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"aws:///us-east-1a/i-spare": true}
	if len(cloud.deleted) != 1 || !cloud.deleted["aws:///us-east-1a/i-spare"] {
		t.Errorf("deleted %v, want %v: the spare instance of a batch whose NodeClaims all have theirs", cloud.deleted, want)
	}
	if want := []string{"i-taken=taken"}; !slices.Equal(cloud.tags, want) {
		t.Errorf("tagged %v, want %v: the instance its NodeClaim recorded, and no other", cloud.tags, want)
	}
	if err := kube.Delete(ctx, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "waiting"}}); err != nil {
		t.Fatal(err)
	}
	if err := collector.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if !cloud.deleted["aws:///us-east-1a/i-waiting"] {
		t.Errorf("deleted %v: the batch's last NodeClaim without an instance is gone, so is the reason to keep i-waiting", cloud.deleted)
	}
	if len(cloud.tags) != 1 {
		t.Errorf("tagged %v: a tag already naming its NodeClaim is not written again", cloud.tags)
	}
}

// newClaim is a NodeClaim of the default NodePool and EC2NodeClass.
func newClaim(name string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			NodeClassRef: &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
}

// lyingCloud answers as a wrong region or a lagging listing does: it
// lists nothing and finds nothing, unless told an instance is back.
type lyingCloud struct {
	instances
	found map[string]bool
}

func (c *lyingCloud) List(context.Context) ([]*cloudprovider.Instance, error) { return nil, nil }
func (c *lyingCloud) Get(_ context.Context, id string) (*cloudprovider.Instance, error) {
	if c.found[id] {
		return &cloudprovider.Instance{ProviderID: id}, nil
	}
	return nil, &cloudprovider.NotFoundError{Message: id}
}

// A NodeClaim's instance that EC2 does not find is no reason on its own
// to delete the NodeClaim: EC2's reads lag, and a wrong region or
// credential finds nothing at all. A NodeClaim is deleted only when it
// registered, its Node is not Ready, and its instance was missed
// ConfirmLooks passes in a row over the grace period; one answer that
// finds it starts the count again. A NodeClaim that never registered is
// left to the registration timeout.
func TestMissingInstancesConfirmedBeforeTheirNodeClaimsGo(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	now := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	registered := func(name string, cond ...string) *v1.NodeClaim {
		nc := newClaim(name)
		if err := kube.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		nc.Status.ProviderID = "aws:///eu-west-2a/i-" + name
		for _, c := range cond {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: metav1.NewTime(now.Now())})
		}
		if err := kube.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	node := func(nc *v1.NodeClaim, ready corev1.ConditionStatus) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + nc.Name}, Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}}
		if err := kube.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(now.Now())}}
		if err := kube.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	serving := registered("serving", v1.ConditionLaunched, v1.ConditionRegistered, v1.ConditionInitialized)
	node(serving, corev1.ConditionTrue)
	gone := registered("gone", v1.ConditionLaunched, v1.ConditionRegistered, v1.ConditionInitialized)
	node(gone, corev1.ConditionUnknown)
	registered("nodeless", v1.ConditionLaunched, v1.ConditionRegistered)
	flapping := registered("flapping", v1.ConditionLaunched, v1.ConditionRegistered)
	registered("booting", v1.ConditionLaunched)

	cloud := &lyingCloud{instances: instances{deleted: map[string]bool{}}, found: map[string]bool{}}
	collector := &gc.GarbageCollector{Client: kube, Cloud: cloud, Clock: now, Grace: 30 * time.Second, Recorder: record.NewFakeRecorder(100), Log: logr.Discard()}
	exists := func() map[string]bool {
		out := map[string]bool{}
		for _, name := range []string{"serving", "gone", "nodeless", "flapping", "booting"} {
			out[name] = kube.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{}) == nil
		}
		return out
	}
	pass := func() {
		t.Helper()
		if err := collector.Collect(ctx); err != nil {
			t.Fatal(err)
		}
		now.Step(20 * time.Second)
	}

	// Two passes, 20 s apart: fewer looks than ConfirmLooks and less
	// than the grace. The third pass finds flapping's instance.
	pass()
	pass()
	if got := exists(); slices.Contains(mapsFalse(got), "gone") || slices.Contains(mapsFalse(got), "nodeless") {
		t.Fatalf("after 2 passes the NodeClaims are %v: none may go on fewer than %d looks", got, gc.ConfirmLooks)
	}
	cloud.found[flapping.Status.ProviderID] = true
	pass() // third look for gone and nodeless, 40 s after the first
	cloud.found[flapping.Status.ProviderID] = false
	want := map[string]bool{"serving": true, "gone": false, "nodeless": false, "flapping": true, "booting": true}
	if got := exists(); !maps.Equal(got, want) {
		t.Errorf("after 3 passes over 40 s, NodeClaims present: %v, want %v: only registered NodeClaims whose Node is not Ready and whose instance was missed %d times over the grace go", got, want, gc.ConfirmLooks)
	}
	// flapping's count began again when its instance was found; serving's
	// Node is Ready and booting never registered, however long.
	pass()
	pass()
	if !exists()["flapping"] {
		t.Errorf("flapping was deleted two passes after its instance was found: the count of looks begins again")
	}
	for range 20 {
		pass()
	}
	if got := exists(); !got["serving"] || !got["booting"] || got["flapping"] {
		t.Errorf("after 25 passes: %v: a NodeClaim whose Node is Ready, or that never registered, is never collected; flapping's instance stayed missing", got)
	}
}

func mapsFalse(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if !v {
			out = append(out, k)
		}
	}
	return out
}

// EC2's clock and the controller's disagree: an instance EC2 says was
// launched an hour ago (its clock runs behind) is not collected on the
// pass that first sees it without a NodeClaim (its launch may be
// recording it right now), only a grace period later by the
// controller's own clock; one recorded in between is never collected.
func TestOrphansAreTimedByTheControllersClock(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	now := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	skewed := now.Now().Add(-time.Hour)
	cloud := &instances{deleted: map[string]bool{}, listed: []*cloudprovider.Instance{
		{ProviderID: "aws:///ap-south-1a/i-orphan", InstanceID: "i-orphan", NodeClaim: "gone", LaunchTime: skewed},
		{ProviderID: "aws:///ap-south-1a/i-recording", InstanceID: "i-recording", NodeClaim: "recording", LaunchTime: skewed},
	}}
	collector := &gc.GarbageCollector{Client: kube, Cloud: cloud, Clock: now, Grace: 30 * time.Second, Recorder: record.NewFakeRecorder(10), Log: logr.Discard()}
	if err := collector.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if len(cloud.deleted) != 0 {
		t.Fatalf("deleted %v on the first look: EC2's launch time alone is not the controller's clock", cloud.deleted)
	}
	nc := newClaim("recording")
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = "aws:///ap-south-1a/i-recording"
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	now.Step(31 * time.Second)
	if err := collector.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if !cloud.deleted["aws:///ap-south-1a/i-orphan"] || cloud.deleted["aws:///ap-south-1a/i-recording"] {
		t.Errorf("deleted %v: want the orphan, a grace period after it was first seen, and not the instance its NodeClaim recorded", cloud.deleted)
	}
}
