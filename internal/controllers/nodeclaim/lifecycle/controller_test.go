package lifecycle_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/kubelet"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

type env struct {
	*optest.Env
	kube    client.Client
	account *simaws.Account
	// registry holds the lifecycle's metrics (startIntercepted only).
	registry *prometheus.Registry
}

// start runs the operator against kube-apiserver and kube-controller-manager
// (its node lifecycle controller lifts node.kubernetes.io/not-ready) and
// the simulated account, with the EC2NodeClass "default" ready.
func start(t *testing.T) *env {
	t.Helper()
	return startLogging(t, logr.Logger{})
}

func startLogging(t *testing.T, log logr.Logger) *env {
	t.Helper()
	e := optest.Start(t, optest.Options{ControllerManager: true, Log: log})
	e.DefaultNodeClass(t)
	return &env{Env: e, kube: e.Kube, account: e.Account}
}

func (e *env) create(t *testing.T, obj client.Object) { t.Helper(); e.Create(t, obj) }

func (e *env) waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	e.WaitFor(t, what, cond)
}

func (e *env) claim(t *testing.T, name string) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	if err := e.kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func (e *env) waitCondition(t *testing.T, name, condType string, status metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	nc := &v1.NodeClaim{}
	defer func() {
		if t.Failed() {
			t.Logf("NodeClaim %s conditions: %+v", name, nc.Status.Conditions)
		}
	}()
	e.waitFor(t, "NodeClaim "+name+" "+condType+"="+string(status), func(ctx context.Context) (bool, error) {
		if err := e.kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, condType)
		if c != nil && c.Status == status {
			got = *c
			return true, nil
		}
		return false, nil
	})
	return got
}

func newClaim(name string, startupTaints ...corev1.Taint) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "default", "team": "a"}},
		Spec: v1.NodeClaimSpec{
			Requirements:  []v1.NodeSelectorRequirementWithMinValues{{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: startupTaints,
			NodeClassRef:  &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
}

// boot plays the kubelet: it reads the launched instance's user data as
// the node would and registers the Node with what it says, Ready.
func (e *env) boot(t *testing.T, nc *v1.NodeClaim, userData string, extraTaints ...corev1.Taint) *corev1.Node {
	t.Helper()
	ud := userData
	if ud == "" {
		for _, inst := range e.account.Instances() {
			if strings.HasSuffix(nc.Status.ProviderID, "/"+*inst.InstanceId) {
				ud = inst.UserData
			}
		}
	}
	reg, err := kubelet.Read(awsv1.AMIFamilyAL2023, ud)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-" + nc.Name, Labels: reg.Labels},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: append(reg.Taints, extraTaints...)},
	}
	e.create(t, node)
	created := node.DeepCopy()
	node.Status = corev1.NodeStatus{
		Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	node.Status.Allocatable = node.Status.Capacity
	if err := e.kube.Status().Patch(context.Background(), node, client.MergeFrom(created)); err != nil {
		t.Fatal(err)
	}
	return node
}

func TestLaunchRegisterInitializeTerminate(t *testing.T) {
	logs := &optest.Logs{}
	e := startLogging(t, logs.Logger(t))
	ctx := context.Background()
	cilium := corev1.Taint{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}
	e.create(t, newClaim("general-a", cilium))
	launched := e.waitCondition(t, "general-a", v1.ConditionLaunched, metav1.ConditionTrue)
	nc := e.claim(t, "general-a")
	if !strings.HasPrefix(nc.Status.ProviderID, "aws:///us-east-1") || nc.Labels["node.kubernetes.io/instance-type"] != "m5.large" ||
		!strings.Contains(launched.Message, "m5.large") || len(nc.Finalizers) == 0 {
		t.Fatalf("launched NodeClaim: %+v", nc)
	}
	_, notFound := nc.Status, e.waitCondition(t, "general-a", v1.ConditionRegistered, metav1.ConditionUnknown)
	if notFound.Reason != v1.ReasonNodeNotFound {
		t.Errorf("before the node registers: %+v", notFound)
	}

	node := e.boot(t, nc, "")
	registered := e.waitCondition(t, "general-a", v1.ConditionRegistered, metav1.ConditionTrue)
	if registered.Reason != v1.ReasonRegistered {
		t.Errorf("registered: %+v", registered)
	}
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[v1.LabelRegistered] != "true" || node.Labels["team"] != "a" || len(node.OwnerReferences) != 1 || len(node.Finalizers) != 1 {
		t.Errorf("node after registration: labels %v owners %v finalizers %v", node.Labels, node.OwnerReferences, node.Finalizers)
	}
	for _, want := range []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}, cilium} {
		found := false
		for _, tt := range node.Spec.Taints {
			found = found || (tt.Key == want.Key && tt.Effect == want.Effect)
		}
		if !found {
			t.Errorf("taint %s not synced onto the node: %v", want.ToString(), node.Spec.Taints)
		}
	}
	for _, tt := range node.Spec.Taints {
		if tt.Key == v1.TaintKeyUnregistered {
			t.Errorf("karpenter.sh/unregistered still on the node")
		}
	}
	e.waitFor(t, "initialization to wait for the startup taint", func(context.Context) (bool, error) {
		c := meta.FindStatusCondition(e.claim(t, "general-a").Status.Conditions, v1.ConditionInitialized)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1.ReasonStartupTaintsExist &&
			strings.Contains(c.Message, "node.cilium.io/agent-not-ready"), nil
	})
	if c := meta.FindStatusCondition(e.claim(t, "general-a").Status.Conditions, v1.ConditionReady); c == nil || c.Status == metav1.ConditionTrue {
		t.Errorf("Ready while a startup taint is on the node: %+v", c)
	}
	// The CNI removes its startup taint.
	before := node.DeepCopy()
	var kept []corev1.Taint
	for _, tt := range node.Spec.Taints {
		if tt.Key != cilium.Key {
			kept = append(kept, tt)
		}
	}
	node.Spec.Taints = kept
	if err := e.kube.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(t, "general-a", v1.ConditionReady, metav1.ConditionTrue)

	if err := e.kube.Delete(ctx, e.claim(t, "general-a")); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "NodeClaim general-a to be gone", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKey{Name: "general-a"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), node); !apierrors.IsNotFound(err) {
		t.Errorf("the node outlived its NodeClaim: %v", err)
	}
	for _, inst := range e.account.Instances() {
		if inst.State.Name != "terminated" {
			t.Errorf("instance %s is %s after its NodeClaim was deleted", *inst.InstanceId, inst.State.Name)
		}
	}
	// Prometheus counted the NodeClaim through its life.
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "nodepool" && l.GetValue() == "default" {
					counted[f.GetName()] += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	for _, name := range []string{"nodewright_nodeclaims_registered_total", "nodewright_nodeclaims_initialized_total", "nodewright_nodeclaims_terminated_total", "nodewright_nodeclaim_registration_duration_seconds"} {
		if counted[name] < 1 {
			t.Errorf("metric %s did not count the NodeClaim: %v", name, counted[name])
		}
	}
	// Each step is logged as a structured line naming the NodeClaim.
	for msg, keys := range map[string][]string{
		"launched NodeClaim":    {"providerID", "instanceType", "zone", "capacityType"},
		"registered NodeClaim":  {"Node", "after", "nodeAge"},
		"initialized NodeClaim": {"Node"},
		"deleted node":          {"Node"},
		"terminated NodeClaim":  {"providerID"},
	} {
		entry := logs.Find(msg, "general-a")
		if entry == nil {
			t.Errorf("no log line %q for NodeClaim general-a", msg)
			continue
		}
		for _, k := range keys {
			if entry[k] == nil || entry[k] == "" {
				t.Errorf("log line %q lacks %s: %v", msg, k, entry)
			}
		}
	}
	if entry := logs.Find("launched NodeClaim", "general-a"); entry != nil && (entry["instanceType"] != "m5.large" || entry["providerID"] != nc.Status.ProviderID) {
		t.Errorf("launch logged as %v", entry)
	}
}

// S1 at runtime (validation bypassed): the node registers with the cilium
// taint only. The NodeClaim says so and an event names the cause.
func TestRegistrationWithoutUnregisteredTaintIsNeverSilent(t *testing.T) {
	e := start(t)
	e.create(t, newClaim("s1"))
	e.waitCondition(t, "s1", v1.ConditionLaunched, metav1.ConditionTrue)
	nc := e.claim(t, "s1")
	s1UserData := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags:\n      - --register-with-taints=node.cilium.io/agent-not-ready=true:NoExecute\n"
	cluster, _ := provider.ClusterFromEKS(context.Background(), e.account.EKS(), account.ClusterName)
	generated, err := userdata.Generate(awsv1.AMIFamilyAL2023, cluster, userdata.Node{MaxPods: 29}, s1UserData)
	if err != nil {
		t.Fatal(err)
	}
	e.boot(t, nc, base64.StdEncoding.EncodeToString([]byte(generated)))
	registered := e.waitCondition(t, "s1", v1.ConditionRegistered, metav1.ConditionTrue)
	if registered.Reason != v1.ReasonUnregisteredTaintMissing ||
		!strings.Contains(registered.Message, "registered with node.cilium.io/agent-not-ready=true:NoExecute") ||
		!strings.Contains(registered.Message, "startupTaints") {
		t.Errorf("registered condition: %+v", registered)
	}
	e.waitFor(t, "a Warning event UnregisteredTaintMissing", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := e.kube.List(ctx, events); err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "s1" && ev.Reason == v1.ReasonUnregisteredTaintMissing && ev.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})
}

// No capacity anywhere for the NodeClaim's only instance type: the
// NodeClaim is deleted (so the provisioner can choose again), with an event.
func TestInsufficientCapacityDeletesTheNodeClaim(t *testing.T) {
	e := start(t)
	for _, zone := range account.Zones() {
		for _, ct := range []string{"spot", "on-demand"} {
			e.account.SetUnavailable(ct, "m5.large", zone, true)
		}
	}
	e.create(t, newClaim("nocap"))
	e.waitFor(t, "NodeClaim nocap to be deleted", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKey{Name: "nocap"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	for _, inst := range e.account.Instances() {
		if inst.State.Name != "terminated" {
			t.Errorf("an instance was left running: %s", *inst.InstanceId)
		}
	}
}

// Deleting a NodeClaim drains its node through the Eviction API: a
// PodDisruptionBudget that allows no disruption holds the pods (and the
// node and instance) until it does.
func TestDrainRespectsPodDisruptionBudgets(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.create(t, newClaim("drained"))
	e.waitCondition(t, "drained", v1.ConditionLaunched, metav1.ConditionTrue)
	node := e.boot(t, e.claim(t, "drained"), "")
	e.waitCondition(t, "drained", v1.ConditionRegistered, metav1.ConditionTrue)
	labels := map[string]string{"app": "db"}
	for _, name := range []string{"db-0", "db-1"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "db", Image: "postgres"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
		}
		e.create(t, pod)
		before := pod.DeepCopy()
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := e.kube.Status().Patch(ctx, pod, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	e.create(t, pdb)
	e.waitFor(t, "the PodDisruptionBudget's status", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)
		return err == nil && pdb.Status.ExpectedPods == 2 && pdb.Status.ObservedGeneration == pdb.Generation, err
	})

	if err := e.kube.Delete(ctx, e.claim(t, "drained")); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the node to be tainted karpenter.sh/disrupted", func(ctx context.Context) (bool, error) {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == v1.TaintKeyDisrupted && taint.Effect == corev1.TaintEffectNoSchedule {
				return true, nil
			}
		}
		return false, nil
	})
	e.waitFor(t, "two drain attempts that the PodDisruptionBudget refused", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := e.kube.List(ctx, events); err != nil {
			return false, err
		}
		refused := int32(0)
		for _, ev := range events.Items {
			if ev.Reason == v1.ReasonDrainBlocked && strings.Contains(ev.Message, "pod default/db-0") {
				refused += max(ev.Count, 1)
			}
		}
		return refused >= 2, nil
	})
	for _, name := range []string{"db-0", "db-1"} {
		pod := &corev1.Pod{}
		if err := e.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, pod); err != nil || !pod.DeletionTimestamp.IsZero() {
			t.Fatalf("pod %s was evicted against its PodDisruptionBudget (%v)", name, err)
		}
	}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "drained"}, &v1.NodeClaim{}); err != nil {
		t.Fatalf("the NodeClaim went while its pods were still on the node: %v", err)
	}

	// The budget allows disruption: the pods are evicted; the kubelet stops
	// them; then the node and the instance go.
	before := pdb.DeepCopy()
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(0))
	if err := e.kube.Patch(ctx, pdb, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "both pods to be evicted", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"db-0", "db-1"} {
			pod := &corev1.Pod{}
			err := e.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, pod)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil || pod.DeletionTimestamp.IsZero() {
				return false, err
			}
			if err := e.kube.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				return false, err
			}
		}
		return true, nil
	})
	e.waitFor(t, "the NodeClaim to be gone", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKey{Name: "drained"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	for _, inst := range e.account.Instances() {
		if inst.State.Name != "terminated" {
			t.Errorf("instance %s is %s", *inst.InstanceId, inst.State.Name)
		}
	}
}

// `kubectl delete node` on a nodewright node terminates it cleanly: the
// node is drained (its pod evicted), its NodeClaim and instance go, and
// the node does not hang in Terminating.
func TestDeletingTheNodeTerminatesIt(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.create(t, newClaim("byhand"))
	e.waitCondition(t, "byhand", v1.ConditionLaunched, metav1.ConditionTrue)
	node := e.boot(t, e.claim(t, "byhand"), "")
	e.waitCondition(t, "byhand", v1.ConditionRegistered, metav1.ConditionTrue)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
	}
	e.create(t, pod)
	if err := e.kube.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the pod to be evicted", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil || pod.DeletionTimestamp.IsZero() {
			return false, err
		}
		return true, client.IgnoreNotFound(e.kube.Delete(ctx, pod, client.GracePeriodSeconds(0))) // the kubelet's part
	})
	e.waitFor(t, "the node, the NodeClaim and the instance to be gone", func(ctx context.Context) (bool, error) {
		errNode := e.kube.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
		errClaim := e.kube.Get(ctx, client.ObjectKey{Name: "byhand"}, &v1.NodeClaim{})
		for _, inst := range e.account.Instances() {
			if inst.State.Name != "terminated" {
				return false, nil
			}
		}
		return apierrors.IsNotFound(errNode) && apierrors.IsNotFound(errClaim), nil
	})
}

// A NodeClaim deleted while its instance's kubelet has registered a node
// the NodeClaim never took over (no finalizer of nodewright's: nothing to
// drain) has its instance terminated at once, without waiting for that
// node to go: a kubelet registers its node again each time it is deleted
// while the instance runs, and here another controller's finalizer keeps
// the node.
func TestDeletingANodeClaimDoesNotWaitForANodeItNeverTookOver(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.create(t, newClaim("early"))
	e.waitCondition(t, "early", v1.ConditionLaunched, metav1.ConditionTrue)
	nc := e.claim(t, "early")
	if err := e.kube.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-early", Finalizers: []string{"example.com/keep"}},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{{Key: v1.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute}}}}
	e.create(t, node)
	t.Cleanup(func() {
		_ = e.kube.Patch(context.Background(), node, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
	e.waitFor(t, "the instance terminated and the NodeClaim gone", func(ctx context.Context) (bool, error) {
		for _, inst := range e.account.Instances() {
			if inst.State.Name != "terminated" && inst.State.Name != "shutting-down" {
				return false, nil
			}
		}
		err := e.kube.Get(ctx, client.ObjectKey{Name: "early"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// A NodeClaim whose node never registers is deleted at the registration
// timeout; its NodePool says so with the likely cause and backs off.
func TestRegistrationTimeoutMarksTheNodePool(t *testing.T) {
	e := optest.Start(t, optest.Options{ControllerManager: true, Configure: func(c *operator.Config) { c.Lifecycle.RegistrationTimeout = 3 * time.Second }})
	e.DefaultNodeClass(t)
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	e.Create(t, pool)
	e.Create(t, newClaim("never"))
	e.WaitFor(t, "the NodePool's node class ready", func(ctx context.Context) (bool, error) {
		err := e.Kube.Get(ctx, client.ObjectKeyFromObject(pool), pool)
		return err == nil && meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionNodeClassReady), err
	})
	e.WaitFor(t, "the NodeClaim to be deleted at the registration timeout", func(ctx context.Context) (bool, error) {
		err := e.Kube.Get(ctx, client.ObjectKey{Name: "never"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	seen := ""
	e.WaitFor(t, "NodeRegistrationHealthy=False on the NodePool", func(ctx context.Context) (bool, error) {
		if err := e.Kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionNodeRegistrationHealthy)
		if now := fmt.Sprint(c); now != seen {
			seen = now
			t.Logf("NodeRegistrationHealthy: %s", now)
		}
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "aws-auth") &&
			strings.Contains(c.Message, "1 NodeClaim(s) in a row") && strings.Contains(c.Message, "launches back off until"), nil
	})
	if len(pool.Annotations) != 0 {
		t.Errorf("the backoff is written into the NodePool's annotations: %v", pool.Annotations)
	}
	e.WaitFor(t, "the backoff kept in the NodePool's status", func(ctx context.Context) (bool, error) {
		if err := e.Kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return false, err
		}
		b := pool.Status.RegistrationBackoff
		return b != nil && b.Failures == 1 && b.Until.Sub(b.LastTimeout.Time) == time.Minute && strings.Contains(b.Cause, "aws-auth"), nil
	})
}

// Garbage collection: an instance whose NodeClaim vanished without its
// finalizer running is terminated; a registered NodeClaim whose instance
// was terminated outside nodewright is deleted once its Node is no longer
// Ready (while the kubelet reports Ready, the instance runs whatever EC2
// says); a NodeClaim that never registered is left to the registration
// timeout.
func TestGarbageCollection(t *testing.T) {
	oe := optest.Start(t, optest.Options{Configure: func(c *operator.Config) { c.GCInterval, c.GCGrace = 500*time.Millisecond, time.Second }})
	oe.DefaultNodeClass(t)
	e := &env{Env: oe, kube: oe.Kube, account: oe.Account}
	ctx := context.Background()
	// Instances nodewright did not launch, older than any it will: a
	// managed node group's (tagged as the cluster's), another cluster's
	// nodewright's, and one without tags. Listed before the orphan, they
	// would be collected in the pass that collects it, or earlier.
	foreign := foreignInstances(e.Account)
	for _, name := range []string{"orphan", "victim", "booting"} {
		e.Create(t, newClaim(name))
	}
	for _, name := range []string{"orphan", "victim", "booting"} {
		e.WaitFor(t, name+" launched", func(ctx context.Context) (bool, error) {
			nc := &v1.NodeClaim{}
			err := e.Kube.Get(ctx, client.ObjectKey{Name: name}, nc)
			return err == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionLaunched), err
		})
	}
	victimNode := e.boot(t, e.claim(t, "victim"), "")
	e.waitCondition(t, "victim", v1.ConditionRegistered, metav1.ConditionTrue)
	// The orphan's NodeClaim disappears without nodewright's finalizer.
	orphan := &v1.NodeClaim{}
	if err := e.Kube.Get(ctx, client.ObjectKey{Name: "orphan"}, orphan); err != nil {
		t.Fatal(err)
	}
	orphanID := orphan.Status.ProviderID
	before := orphan.DeepCopy()
	orphan.Finalizers = nil
	if err := e.Kube.Patch(ctx, orphan, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if err := e.Kube.Delete(ctx, orphan); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	// The victim's and booting's instances are terminated behind
	// nodewright's back.
	for _, name := range []string{"victim", "booting"} {
		_, id, _ := strings.Cut(strings.TrimPrefix(e.claim(t, name).Status.ProviderID, "aws:///"), "/")
		if _, err := e.Account.EC2().TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
			t.Fatal(err)
		}
	}
	e.WaitFor(t, "the orphaned instance to be terminated", func(context.Context) (bool, error) {
		for _, inst := range e.Account.Instances() {
			if strings.HasSuffix(orphanID, "/"+*inst.InstanceId) {
				return inst.State.Name == "terminated", nil
			}
		}
		return false, nil
	})
	// Ten passes and more past the grace: the victim's Node still
	// reports Ready, so its NodeClaim stays.
	time.Sleep(10 * 500 * time.Millisecond)
	if err := e.Kube.Get(ctx, client.ObjectKey{Name: "victim"}, &v1.NodeClaim{}); err != nil {
		t.Fatalf("the victim's NodeClaim, whose Node reports Ready: %v; it must stay", err)
	}
	// Its kubelet stops reporting: the node lifecycle controller sets
	// Ready Unknown.
	node := &corev1.Node{}
	if err := e.Kube.Get(ctx, client.ObjectKeyFromObject(victimNode), node); err != nil {
		t.Fatal(err)
	}
	patched := node.DeepCopy()
	for i := range patched.Status.Conditions {
		if patched.Status.Conditions[i].Type == corev1.NodeReady {
			patched.Status.Conditions[i].Status, patched.Status.Conditions[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
		}
	}
	if err := e.Kube.Status().Patch(ctx, patched, client.MergeFrom(node)); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(t, "the registered NodeClaim without an instance to be deleted", func(ctx context.Context) (bool, error) {
		err := e.Kube.Get(ctx, client.ObjectKey{Name: "victim"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := e.Kube.Get(ctx, client.ObjectKey{Name: "booting"}, &v1.NodeClaim{}); err != nil {
		t.Errorf("the NodeClaim that never registered: %v; garbage collection leaves it to the registration timeout", err)
	}
	for _, inst := range e.Account.Instances() {
		if what, ok := foreign[*inst.InstanceId]; ok && inst.State.Name != "running" {
			t.Errorf("garbage collection touched %s (%s): %s", *inst.InstanceId, what, inst.State.Name)
		}
	}
}

// foreignInstances starts instances nodewright did not launch in the
// account and returns what each is, by id.
func foreignInstances(a *simaws.Account) map[string]string {
	cluster := "kubernetes.io/cluster/" + account.ClusterName
	return map[string]string{
		a.AddInstance("m5.large", "us-east-1a", "", map[string]string{cluster: "owned", "eks:nodegroup-name": "system", "eks:cluster-name": account.ClusterName}): "a managed node group's",
		a.AddInstance("m5.large", "us-east-1a", "", map[string]string{"kubernetes.io/cluster/other": "owned", v1.LabelNodePool: "default",
			"karpenter.sh/nodeclaim": "default-abcde", awsv1.LabelEC2NodeClass: "default"}): "another cluster's",
		a.AddInstance("m5.large", "us-east-1a", "", nil): "untagged",
	}
}

// --cluster-endpoint: nodes are launched to join the endpoint given, not
// the one EKS reports.
func TestClusterEndpointReachesTheUserData(t *testing.T) {
	const endpoint = "https://api.private.example.com:443"
	e := optest.Start(t, optest.Options{Configure: func(c *operator.Config) { c.ClusterEndpoint = endpoint }})
	e.DefaultNodeClass(t)
	env := &env{Env: e, kube: e.Kube, account: e.Account}
	env.create(t, newClaim("private"))
	env.waitCondition(t, "private", v1.ConditionLaunched, metav1.ConditionTrue)
	insts := e.Account.Instances()
	if len(insts) != 1 {
		t.Fatalf("%d instances, want 1", len(insts))
	}
	data, err := base64.StdEncoding.DecodeString(insts[0].UserData)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "apiServerEndpoint: "+endpoint) || strings.Contains(string(data), account.Endpoint) {
		t.Errorf("the user data does not join %s (only):\n%s", endpoint, data)
	}
}

// A NodeClaim made before NodeClaims were owned by their NodePool becomes
// its NodePool's once initialized, so deleting the NodePool deletes it.
func TestNodeClaimsBecomeTheirNodePools(t *testing.T) {
	e := start(t)
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	e.create(t, pool)
	e.launched(t, "older")
	e.waitCondition(t, "older", v1.ConditionInitialized, metav1.ConditionTrue)
	e.waitFor(t, "NodeClaim older to be owned by NodePool default", func(ctx context.Context) (bool, error) {
		nc := &v1.NodeClaim{}
		err := e.kube.Get(ctx, client.ObjectKey{Name: "older"}, nc)
		return err == nil && len(nc.OwnerReferences) == 1 && nc.OwnerReferences[0].UID == pool.UID, err
	})
	if err := e.kube.Delete(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "NodeClaim older to go with its NodePool", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKey{Name: "older"}, &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// A change of a NodePool's template wakes its NodeClaims (a Ready one
// does not poll), which then show that they no longer match it.
func TestANodePoolTemplateChangeDriftsItsNodeClaims(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	e.create(t, pool)
	e.launched(t, "team-a")
	e.waitCondition(t, "team-a", v1.ConditionInitialized, metav1.ConditionTrue)
	if c := meta.FindStatusCondition(e.claim(t, "team-a").Status.Conditions, v1.ConditionDrifted); c != nil {
		t.Fatalf("drifted before its NodePool changed: %+v", c)
	}
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
		t.Fatal(err)
	}
	pool.Spec.Template.Spec.Requirements[0].Values = []string{"b"}
	if err := e.kube.Update(ctx, pool); err != nil {
		t.Fatal(err)
	}
	drifted := e.waitCondition(t, "team-a", v1.ConditionDrifted, metav1.ConditionTrue)
	if drifted.Reason != v1.ReasonRequirementsDrifted || !strings.Contains(drifted.Message, "team=a") {
		t.Errorf("drift after the NodePool stopped admitting team=a: %+v", drifted)
	}
}

// A NodeClaim that points at an instance nodewright did not launch (a
// managed node group's) goes without its node or instance: deleting it
// deletes neither.
func TestNodeClaimOfAForeignInstanceLeavesItAlone(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	foreign := e.account.AddInstance("m5.large", "us-east-1a", "", map[string]string{"kubernetes.io/cluster/" + account.ClusterName: "owned", "eks:nodegroup-name": "system"})
	providerID := "aws:///us-east-1a/" + foreign
	// A launched NodeClaim whose status is then pointed at the foreign
	// instance (as a hand-written or restored NodeClaim would be).
	e.create(t, newClaim("adopter"))
	e.waitCondition(t, "adopter", v1.ConditionLaunched, metav1.ConditionTrue)
	nc := e.claim(t, "adopter")
	before := nc.DeepCopy()
	nc.Status.ProviderID = providerID
	if err := e.kube.Status().Patch(ctx, nc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-managed"}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	e.create(t, node)
	// The node is not taken over, and the NodeClaim says why.
	registered := e.waitCondition(t, "adopter", v1.ConditionRegistered, metav1.ConditionFalse)
	if registered.Reason != v1.ReasonInstanceNotOwned || !strings.Contains(registered.Message, foreign) {
		t.Errorf("Registered: %+v", registered)
	}
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil || len(node.Finalizers) > 0 || len(node.OwnerReferences) > 0 || len(node.Labels) > 0 {
		t.Errorf("the managed node group's node was taken over: %v %+v", err, node.ObjectMeta)
	}
	if err := e.kube.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the NodeClaim to go", func(ctx context.Context) (bool, error) {
		err := e.kube.Get(ctx, client.ObjectKeyFromObject(nc), &v1.NodeClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := e.kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil || !node.DeletionTimestamp.IsZero() {
		t.Errorf("the managed node group's node was deleted: %v %v", err, node.DeletionTimestamp)
	}
	for _, inst := range e.account.Instances() {
		if *inst.InstanceId == foreign && inst.State.Name != "running" {
			t.Errorf("the managed node group's instance is %s", inst.State.Name)
		}
	}
}
