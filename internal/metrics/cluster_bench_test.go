package metrics_test

import (
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/metrics"
)

// BenchmarkScrape writes the per-node and per-pod series of a large
// cluster, as a /metrics scrape does: its bytes per op are what each
// scrape allocates at that size.
func BenchmarkScrape(b *testing.B) {
	for _, size := range []struct{ pods, nodes int }{{10_000, 550}, {50_000, 2_700}} {
		b.Run(fmt.Sprintf("pods=%d", size.pods), func(b *testing.B) {
			nodes, pods := bigCluster(size.nodes, size.pods)
			now := time.Now()
			series := metrics.NewClusterSeries(func() ([]*corev1.Node, []*corev1.Pod, func(*corev1.Node) bool, bool) {
				return nodes, pods, func(*corev1.Node) bool { return true }, true
			}, func() time.Time { return now }, func(uid types.UID) bool { return uid[len(uid)-1] == '0' })
			b.ReportAllocs()
			for b.Loop() {
				n, err := series.WriteTo(io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n), "bytes/scrape")
			}
		})
	}
}

// bigCluster is nodes of the sim's shape and pods spread over them, half
// of them pending.
func bigCluster(nodeCount, podCount int) ([]*corev1.Node, []*corev1.Pod) {
	nodes := make([]*corev1.Node, nodeCount)
	for i := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250), Labels: map[string]string{
			"karpenter.sh/nodepool": "default", corev1.LabelTopologyZone: []string{"us-east-1a", "us-east-1b", "us-east-1c"}[i%3],
			corev1.LabelTopologyRegion: "us-east-1", corev1.LabelInstanceTypeStable: "m5.2xlarge", corev1.LabelArchStable: "amd64",
			corev1.LabelOSStable: "linux", "karpenter.sh/capacity-type": "on-demand", "karpenter.k8s.aws/instance-category": "m",
			"karpenter.k8s.aws/instance-family": "m5", "karpenter.k8s.aws/instance-generation": "5", "karpenter.k8s.aws/instance-size": "2xlarge"}}}
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods: resource.MustParse("58"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m"), corev1.ResourceMemory: resource.MustParse("30Gi"),
			corev1.ResourcePods: resource.MustParse("58"), corev1.ResourceEphemeralStorage: resource.MustParse("18Gi")}
		nodes[i] = n
	}
	pods := make([]*corev1.Pod, podCount)
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d-5d8f7c9b4-%05d", i%4, i), Namespace: "default", UID: types.UID(fmt.Sprint(i)),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: fmt.Sprintf("web-%d-5d8f7c9b4", i%4)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
		p.Status.Phase = corev1.PodPending
		if i%2 == 0 {
			p.Spec.NodeName, p.Status.Phase = nodes[i%nodeCount].Name, corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		pods[i] = p
	}
	return nodes, pods
}
