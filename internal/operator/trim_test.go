package operator

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The cache keeps of a pod what decides where it fits and what the
// controllers read (requests, sidecars, host ports, volumes, affinity,
// labels, annotations, conditions) and drops the rest of its containers,
// their statuses and its managed fields.
func TestCacheTrimsPodsToWhatDecidesWhereTheyFit(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}
	full := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", Labels: map[string]string{"app": "web"},
				Annotations:   map[string]string{"karpenter.sh/do-not-disrupt": "true", corev1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &always, Resources: requests}},
				Containers: []corev1.Container{{Name: "app", Image: "web:1", Command: []string{"serve"}, Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
					Resources: requests, Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9100, HostPort: 9100}},
					ReadinessProbe: &corev1.Probe{}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
					{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
					{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}}},
				NodeSelector:    map[string]string{"kubernetes.io/arch": "arm64"},
				Tolerations:     []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "n",
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable},
					{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "web:1"}},
				PodIP:             "10.0.0.7", PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}}, HostIP: "10.0.0.1", HostIPs: []corev1.HostIP{{IP: "10.0.0.1"}}},
		}
	}
	got, err := newTrim()(full())
	if err != nil {
		t.Fatal(err)
	}
	pod := got.(*corev1.Pod)
	want := full()
	want.ManagedFields, want.Status.ContainerStatuses = nil, nil
	want.Spec.SecurityContext = nil
	want.Status.PodIP, want.Status.PodIPs, want.Status.HostIP, want.Status.HostIPs = "", nil, "", nil
	want.Status.Conditions = slices.Delete(want.Status.Conditions, 1, 2) // PodScheduled and Ready stay
	delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
	want.Spec.Volumes = slices.Delete(want.Spec.Volumes, 1, 2) // the claims' volumes stay
	want.Spec.InitContainers[0].Image = ""
	want.Spec.Containers[0] = corev1.Container{Name: "app", Resources: requests, Ports: []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}}
	if !equality.Semantic.DeepEqual(pod, want) {
		t.Errorf("trimmed pod:\n%+v\nwant:\n%+v", pod, want)
	}
	before, _ := scheduling.PodRequests(full())
	after, _ := scheduling.PodRequests(pod)
	if before.String() != after.String() {
		t.Errorf("requests %s after trimming, %s before", after, before)
	}
}

// replica is a pod of a Deployment's ReplicaSet as the API server sends
// it: decoded afresh, so nothing is shared before the cache's transform.
func replica(t testing.TB, i int, cpu string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-5d8f7c9b4-%05d", i), Namespace: "default", GenerateName: "web-5d8f7c9b4-",
			Labels:          map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b4"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c9b4", UID: "6f1c0e0a-5d8f-4c9b-a4f1-0e0a5d8f7c9b", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "web:1", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			NodeSelector: map[string]string{"kubernetes.io/arch": "amd64"},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
			SchedulerName: corev1.DefaultSchedulerName, SecurityContext: &corev1.PodSecurityContext{},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.1.7", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	decoded := &corev1.Pod{}
	if err := decoded.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return decoded
}

// Pods of one Deployment share their equal parts in the cache; a pod
// whose part differs keeps its own, and a copy of a cached pod (what
// readers get) can be changed without touching the others.
func TestCachedPodsShareEqualParts(t *testing.T) {
	transform := newTrim()
	cached := func(i int, cpu string) *corev1.Pod {
		obj, err := transform(replica(t, i, cpu))
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*corev1.Pod)
	}
	a, b, other := cached(0, "500m"), cached(1, "500m"), cached(2, "1")
	same := func(x, y any) bool { return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() }
	for part, pair := range map[string][2]any{
		"requests":      {a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests},
		"labels":        {a.Labels, b.Labels},
		"node selector": {a.Spec.NodeSelector, b.Spec.NodeSelector},
		"tolerations":   {a.Spec.Tolerations, b.Spec.Tolerations},
		"owner":         {a.OwnerReferences, b.OwnerReferences},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("the two replicas' %s are two copies, want one shared", part)
		}
	}
	if same(a.Spec.Containers[0].Resources.Requests, other.Spec.Containers[0].Resources.Requests) {
		t.Error("a pod requesting 1 CPU shares the requests of pods requesting 500m")
	}
	if got := other.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "1" || !same(a.Labels, other.Labels) {
		t.Errorf("the third replica: requests %s CPU (want 1), labels shared %v (want true)", got, same(a.Labels, other.Labels))
	}
	changed := a.DeepCopy()
	changed.Labels["app"] = "api"
	changed.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if b.Labels["app"] != "web" || b.Spec.Containers[0].Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("changing a copy of one cached pod changed another: labels %v, requests %v", b.Labels, b.Spec.Containers[0].Resources.Requests)
	}
}

// NodeClaims planned together list the same instance types: the cache
// holds one list for them, and a copy a controller changes is its own.
func TestCachedNodeClaimsShareInstanceTypeLists(t *testing.T) {
	transform := newTrim()
	cached := func(name string, types ...string) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: scheduling.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: types},
			{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}},
		}
		obj, err := transform(nc)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*v1.NodeClaim)
	}
	a := cached("general-a", "c6a.2xlarge", "m6a.2xlarge", "c5.2xlarge")
	b := cached("general-b", "c6a.2xlarge", "m6a.2xlarge", "c5.2xlarge")
	other := cached("general-c", "c6a.4xlarge", "m6a.4xlarge")
	same := func(x, y []string) bool { return &x[0] == &y[0] }
	if !same(a.Spec.Requirements[0].Values, b.Spec.Requirements[0].Values) || !same(a.Spec.Requirements[1].Values, b.Spec.Requirements[1].Values) {
		t.Error("two NodeClaims listing the same instance types and capacity types hold two copies of the lists, want one")
	}
	if same(a.Spec.Requirements[0].Values, other.Spec.Requirements[0].Values) {
		t.Error("a NodeClaim of 4xlarge types shares the list of one of 2xlarge types")
	}
	if got := other.Spec.Requirements[0].Values; !slices.Equal(got, []string{"c6a.4xlarge", "m6a.4xlarge"}) {
		t.Errorf("the third NodeClaim lists %v, want its own types", got)
	}
	changed := a.DeepCopy()
	changed.Spec.Requirements[0].Values[0] = "r6a.2xlarge"
	if got := b.Spec.Requirements[0].Values[0]; got != "c6a.2xlarge" {
		t.Errorf("changing a copy of one cached NodeClaim changed another's first type to %s", got)
	}
}

// BenchmarkCachedPod measures the memory a cached pod holds, trimmed
// alone and trimmed with its parts shared.
func BenchmarkCachedPod(b *testing.B) {
	const pods = 20_000
	for _, c := range []struct {
		name      string
		transform func(*corev1.Pod)
	}{
		{"decoded", func(*corev1.Pod) {}},
		{"trimmed", trimPod},
		{"trimmed+shared", func(p *corev1.Pod) { _, _ = newTrimShared(p) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				held := make([]*corev1.Pod, pods)
				before := heapAfterGC()
				for i := range held {
					held[i] = replica(b, i, []string{"250m", "500m", "1", "2"}[i%4])
					c.transform(held[i])
				}
				b.ReportMetric(float64(heapAfterGC()-before)/pods, "B/pod")
				runtime.KeepAlive(held)
			}
		})
	}
}

var sharedForBench = newTrim()

func newTrimShared(p *corev1.Pod) (any, error) { return sharedForBench(p) }

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
