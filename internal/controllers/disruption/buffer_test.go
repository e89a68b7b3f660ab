package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// buffer adds a CapacityBuffer resolved to replicas copies of a pod of
// the CPU, as its controller writes it.
func (c *cluster) buffer(name string, replicas int32, cpu string) {
	t := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name + "-pod", Namespace: "default"}}
	t.Template.Labels = map[string]string{"app": "web"}
	t.Template.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}
	b := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	b.Status.PodTemplateRef, b.Status.Replicas = &v1beta1.LocalObjectRef{Name: t.Name}, ptr.To(replicas)
	b.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonResolved}}
	c.objs.CapacityBuffers = append(c.objs.CapacityBuffers, b)
	c.objs.PodTemplates = append(c.objs.PodTemplates, t)
}

func (c *cluster) snapshot() *state.Snapshot {
	return state.Build(c.objs, state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: c.all,
		AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}}}})
}

// A CapacityBuffer's pods take room on the nodes there as pods of those
// nodes, and those that do not fit are pending, for the provisioner: a
// node that holds only buffer pods is not empty, so emptiness leaves it,
// and consolidation must find room for them too. A buffer not resolved
// (its controller has not made it ready) keeps no room.
func TestCapacityBufferKeepsRoom(t *testing.T) {
	c := newCluster(t)
	c.node("spare", "m5.large", onDemand)
	if d := c.decide(); !strings.HasPrefix(commands(d), "Empty[spare]") {
		t.Fatalf("without a buffer the empty node goes: %q", commands(d))
	}
	c.buffer("web", 3, "500m")
	s := c.snapshot()
	if len(s.Buffers) != 1 || s.Buffers[0].Pods != 3 || s.Buffers[0].Hosted != 3 || len(s.Pending) != 0 {
		t.Fatalf("buffers %+v, %d pending: want 3 pods with room on the node", s.Buffers, len(s.Pending))
	}
	if n := s.Nodes[0]; len(n.Reschedulable()) != 3 || !state.Virtual(n.Reschedulable()[0]) || len(n.Blockers()) != 0 {
		t.Errorf("node %s: pods %d, blockers %v", n.Name, len(n.Reschedulable()), n.Blockers())
	}
	// It may be replaced by a cheaper node that holds the buffer's pods,
	// never removed without one.
	d := c.decide()
	if strings.Contains(commands(d), "Empty") || len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 || d.Commands[0].Pods != 3 {
		t.Errorf("a node holding buffer pods: %q (%s), want it replaced by a cheaper one for the 3 pods", commands(d), blocked(d, "spare"))
	}

	c.objs.CapacityBuffers[0].Status.Replicas = ptr.To(int32(6))
	s = c.snapshot()
	pending := 0
	for _, p := range s.Pending {
		if state.Virtual(p) && state.BufferOf(p).Name == "web" && *p.Spec.Priority < 0 {
			pending++
		}
	}
	if s.Buffers[0].Hosted != 3 || pending != 3 {
		t.Errorf("6 buffer pods on a node with room for 3: %+v, %d pending", s.Buffers, pending)
	}
	plan := scheduling.Solve(s.Input(nil))
	if len(plan.NodeClaims) == 0 || len(plan.Unschedulable) != 0 {
		t.Errorf("the provisioner's plan for the pending buffer pods: %d NodeClaims, %d unschedulable", len(plan.NodeClaims), len(plan.Unschedulable))
	}

	c.objs.CapacityBuffers[0].Status.Conditions = nil
	if s := c.snapshot(); len(s.Buffers) != 0 || len(s.Pending) != 0 {
		t.Errorf("a buffer not ready keeps room: %+v", s.Buffers)
	}
}
