package static_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/decide/static"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

type cluster struct {
	t     *testing.T
	types []*scheduling.InstanceType
	pool  *v1.NodePool
	objs  state.Objects
}

func newCluster(t *testing.T, replicas int64) *cluster {
	types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"}})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "static"}}
	np.Spec.Replicas = ptr.To(replicas)
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "m5.xlarge"}}}
	return &cluster{t: t, types: types, pool: np, objs: state.Objects{NodePools: []*v1.NodePool{np}}}
}

// claim adds a NodeClaim of the pool created age ago; registered gives it
// a node, with pods running pods on it.
func (c *cluster) claim(name string, age time.Duration, registered bool, pods int, mutate ...func(*corev1.Node, *v1.NodeClaim)) {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "static"}, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	var node *corev1.Node
	if registered {
		node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + name, Labels: map[string]string{v1.LabelNodePool: "static"}}}
		node.Spec.ProviderID = "aws:///us-east-1a/i-" + name
		nc.Status.ProviderID, nc.Status.NodeName = node.Spec.ProviderID, node.Name
		nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-age))}}
		c.objs.Nodes = append(c.objs.Nodes, node)
		for i := range pods {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default"}}
			p.Spec.NodeName = node.Name
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
			p.Status.Phase = corev1.PodRunning
			c.objs.Pods = append(c.objs.Pods, p)
		}
	}
	for _, m := range mutate {
		m(node, nc)
	}
	c.objs.NodeClaims = append(c.objs.NodeClaims, nc)
}

func (c *cluster) decide(classReady bool) *static.Decision {
	class := &cloudprovider.NodeClass{NotReady: &cloudprovider.NotReady{Condition: "SubnetsReady", Reason: "SubnetsNotFound", Message: "is not ready (SubnetsNotFound: no subnet matches)"}}
	if classReady {
		class = &cloudprovider.NodeClass{InstanceTypes: c.types, AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements()}}}
	}
	s := state.Build(c.objs, state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": class}})
	return static.Decide(s, "static")
}

func names(nodes []*state.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.NodeClaim.Name)
	}
	return out
}

func TestAStaticNodePoolLaunchesWhatItMisses(t *testing.T) {
	c := newCluster(t, 3)
	c.claim("a", time.Hour, true, 2)
	d := c.decide(true)
	if len(d.Launch) != 2 || len(d.Remove) != 0 || d.Short != "" {
		t.Fatalf("launch %d, remove %v, short %q; want 2 launched for 3 replicas with 1 NodeClaim", len(d.Launch), names(d.Remove), d.Short)
	}
	if it := d.Launch[0].InstanceType.Name; it != "m5.large" {
		t.Errorf("cheapest instance type %s, want m5.large", it)
	}

	// A node disruption is replacing does not count; one being deleted neither.
	c.claim("drifting", time.Hour, true, 1, func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Spec.Taints = []corev1.Taint{{Key: v1.TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}}
	})
	c.claim("going", time.Hour, true, 0, func(_ *corev1.Node, nc *v1.NodeClaim) {
		nc.DeletionTimestamp = &metav1.Time{Time: now}
		nc.Finalizers = []string{v1.TerminationFinalizer}
	})
	if d := c.decide(true); d.Counted != 1 || len(d.Launch) != 2 {
		t.Errorf("counted %d, launch %d; want 1 counted and 2 launched", d.Counted, len(d.Launch))
	}

	// limits.nodes counts every NodeClaim, those leaving included.
	c.pool.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse("4")}
	if d := c.decide(true); len(d.Launch) != 1 || !strings.Contains(d.Short, "limit of 4 nodes reached") {
		t.Errorf("launch %d, short %q; want 1 launched and the limit named", len(d.Launch), d.Short)
	}
	if d := c.decide(false); len(d.Launch) != 0 || !strings.Contains(d.Short, "SubnetsNotFound") {
		t.Errorf("with its EC2NodeClass not ready: launch %d, short %q", len(d.Launch), d.Short)
	}
}

// Scaling down removes the NodeClaims that cost least to remove: not yet
// registered, then nothing holding them, then fewest pods, then newest.
func TestAStaticNodePoolRemovesItsSurplusCheapestFirst(t *testing.T) {
	c := newCluster(t, 2)
	c.claim("busy-old", 3*time.Hour, true, 5)
	c.claim("busy-new", time.Hour, true, 5)
	c.claim("quiet", 2*time.Hour, true, 1)
	c.claim("launching", time.Minute, false, 0)
	c.claim("held", 2*time.Hour, true, 0, func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
	})
	d := c.decide(true)
	want := []string{"launching", "quiet", "busy-new"}
	if got := names(d.Remove); !slices.Equal(got, want) || len(d.Launch) != 0 {
		t.Errorf("remove %v, launch %d; want %v", got, len(d.Launch), want)
	}
	c.pool.Spec.Replicas = ptr.To(int64(5))
	if d := c.decide(true); len(d.Remove) != 0 || len(d.Launch) != 0 {
		t.Errorf("at its replicas: remove %v, launch %d", names(d.Remove), len(d.Launch))
	}
	dynamic := newCluster(t, 0)
	dynamic.pool.Spec.Replicas = nil
	if d := dynamic.decide(true); d != nil {
		t.Errorf("a dynamic NodePool got a static decision: %+v", d)
	}
}
