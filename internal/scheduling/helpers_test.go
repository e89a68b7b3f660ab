package scheduling_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/scheduling/verify"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
)

// catalogTypes converts the catalog once; instance types are read-only.
var catalogTypes = sync.OnceValues(func() ([]*scheduling.InstanceType, error) {
	return instancetypes.Load(instancetypes.Options{Zones: account.Zones()})
})

// catalog returns the real instance types in three zones.
func catalog(t testing.TB) []*scheduling.InstanceType {
	t.Helper()
	types, err := catalogTypes()
	if err != nil {
		t.Fatal(err)
	}
	return types
}

func archAMIs(archs ...string) []scheduling.AMI {
	out := make([]scheduling.AMI, 0, len(archs))
	for _, a := range archs {
		out = append(out, scheduling.AMI{ID: "ami-" + a, Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{
			Key: scheduling.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a},
		})})
	}
	return out
}

// pool builds a NodePool; edit the object with opts.
func pool(t testing.TB, name string, opts ...func(*v1.NodePool)) *scheduling.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: name}
	for _, o := range opts {
		o(np)
	}
	return scheduling.NodePoolFromObject(np, catalog(t), archAMIs("amd64", "arm64"), nil)
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
}

// newPod builds a pod requesting cpu and memory.
func newPod(name, cpu, memory string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pods(n int, prefix, cpu, memory string, opts ...func(*corev1.Pod)) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("%s-%d", prefix, i), cpu, memory, opts...)
	}
	return out
}

// solve solves and fails the test when the independent verifier finds a
// violation.
func solve(t testing.TB, in scheduling.Input) *scheduling.Plan {
	t.Helper()
	plan := scheduling.Solve(in)
	if errs := verify.Plan(in, plan); len(errs) > 0 {
		t.Fatalf("the plan breaks constraints:\n%s", strings.Join(errs, "\n"))
	}
	return plan
}

func reasons(plan *scheduling.Plan) map[string]string {
	out := map[string]string{}
	for _, u := range plan.Unschedulable {
		out[u.Pod.Name] = u.Reason
	}
	return out
}

// placement maps pod names to the NodeClaim or node they landed on.
func placement(plan *scheduling.Plan) map[string]string {
	out := map[string]string{}
	for _, c := range plan.NodeClaims {
		for _, p := range c.Pods {
			out[p.Name] = c.Name
		}
	}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			out[p.Name] = e.Node
		}
	}
	return out
}

func daemonSets(pods ...*corev1.Pod) []*appsv1.DaemonSet {
	out := make([]*appsv1.DaemonSet, len(pods))
	for i, p := range pods {
		out[i] = &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Spec: appsv1.DaemonSetSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec},
		}}
	}
	return out
}
