package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// Initialization waits for the extended resources the NodeClaim's pods
// request (a GPU), not for every one its instance type can have: EFA
// interfaces are on a node only when its launch asked for them.
func TestInitializationWaitsForRequestedResources(t *testing.T) {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu-x7k2p"}}
	nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")}
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48"), "nvidia.com/gpu": resource.MustParse("4"), "vpc.amazonaws.com/efa": resource.MustParse("1")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-3-9"}}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("47")}
	if msg := resourceNotRegistered(nc, node); !strings.Contains(msg, "nvidia.com/gpu") {
		t.Errorf("before the device plugin registers the GPUs: %q, want it waiting for nvidia.com/gpu", msg)
	}
	node.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("4")
	if msg := resourceNotRegistered(nc, node); msg != "" {
		t.Errorf("with the GPUs registered and no EFA interface (none asked for): %q, want none", msg)
	}
}
