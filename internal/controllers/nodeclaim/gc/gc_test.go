package gc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

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
func (c *instances) Delete(_ context.Context, id string) error {
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
