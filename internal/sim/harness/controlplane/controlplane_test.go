package controlplane_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
)

// With kube-scheduler and kube-controller-manager running, a Deployment's
// pod is created, bound to a Ready node, and a PodDisruptionBudget covering
// it gets a status: what later controllers rely on.
func TestSchedulerAndControllerManager(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{Scheduler: true, ControllerManager: true})
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{corev1.LabelHostname: "node-a"}}}
	node, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("10"),
	}
	// kube-controller-manager writes the new node too (its taints, its
	// annotations): a conflict is retried on the latest version.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Status = corev1.NodeStatus{
			Capacity: resources, Allocatable: resources,
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		}
		_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
				}}},
			},
		},
	}
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var boundTo string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		boundTo = pods.Items[0].Spec.NodeName
		return boundTo != "", nil
	})
	if err != nil {
		t.Fatalf("the Deployment's pod was not created and bound (bound to %q): %v", boundTo, err)
	}
	if boundTo != "node-a" {
		t.Errorf("pod bound to %q, want node-a", boundTo)
	}

	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pdb, err := kube.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods == 1, nil
	})
	if err != nil {
		t.Fatalf("the PodDisruptionBudget's status was not computed: %v", err)
	}
}

func TestMissingBinariesNameTheFix(t *testing.T) {
	_, err := controlplane.Start(context.Background(), controlplane.Options{AssetsDir: t.TempDir(), Scheduler: true})
	if err == nil {
		t.Fatal("started a control plane from an empty directory")
	}
	for _, want := range []string{"etcd", "kube-apiserver", "kube-scheduler", "nodewright sim"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "kube-controller-manager") {
		t.Errorf("error %q names kube-controller-manager, which was not asked for", err)
	}
}

// Each program of the control plane gives a CPU profile (the bench's
// -profile-apiserver and -profile-scheduler): a gzipped pprof, not an
// authorization error.
func TestProfiles(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{Scheduler: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{"kube-apiserver", "kube-scheduler"} {
		var out bytes.Buffer
		if err := cp.Profile(ctx, name, time.Second, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.HasPrefix(out.Bytes(), []byte{0x1f, 0x8b}) {
			t.Errorf("%s's profile is not a gzipped pprof: %.80q", name, out.String())
		}
	}
	if err := cp.Profile(ctx, "kube-controller-manager", time.Second, io.Discard); err == nil {
		t.Error("profiling a program this control plane does not run did not fail")
	}
}
