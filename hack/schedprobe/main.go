package main

import (
	"context"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/controlplane"
	"github.com/nodewright/nodewright/internal/operator"
)

func main() {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{Scheduler: true, ControllerManager: true, AssetsDir: os.Args[1], FeatureGates: []string{"SchedulerAsyncAPICalls=true"}})
	if err != nil {
		panic(err)
	}
	defer cp.Stop()
	scheme, _ := operator.Scheme()
	k, _ := client.New(cp.Config, client.Options{Scheme: scheme})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](10000), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}}}
	start := time.Now()
	if err := k.Create(ctx, d); err != nil {
		panic(err)
	}
	for range 60 {
		time.Sleep(2 * time.Second)
		pods := &corev1.PodList{}
		_ = k.List(ctx, pods)
		unsched := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					unsched++
				}
			}
		}
		fmt.Printf("%5.1fs pods %d unschedulable %d\n", time.Since(start).Seconds(), len(pods.Items), unsched)
		if unsched == 10000 {
			return
		}
	}
}
