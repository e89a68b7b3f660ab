package lifecycle_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/controlplane"
	"github.com/nodewright/nodewright/internal/lifecycle"
	"github.com/nodewright/nodewright/internal/sim/account"
	simaws "github.com/nodewright/nodewright/internal/sim/aws"
	"github.com/nodewright/nodewright/internal/sim/kubelet"
)

type env struct {
	kube    client.Client
	account *simaws.Account
}

// start runs the EC2NodeClass status and NodeClaim lifecycle controllers
// against a real API server and the simulated account.
func start(t *testing.T) *env {
	t.Helper()
	logf.SetLogger(logr.Discard())
	if testing.Verbose() {
		logf.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	cp := controlplane.StartForTest(t, controlplane.Options{ControllerManager: true}) // its node lifecycle controller lifts node.kubernetes.io/not-ready
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, awsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}, // one manager per test
	})
	if err != nil {
		t.Fatal(err)
	}
	a := simaws.NewAccount()
	a.Seed()
	resolver := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), ClusterName: account.ClusterName, KubernetesVersion: simaws.KubernetesVersion}
	cluster, err := provider.ClusterFromEKS(context.Background(), a.EKS(), account.ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	recorder := mgr.GetEventRecorderFor("nodewright")
	ctx, cancel := context.WithCancel(context.Background())
	statusCtrl := &nodeclass.Controller{Client: mgr.GetClient(), Resolver: resolver, Recorder: recorder, Clock: clock.RealClock{}, Refresh: time.Minute}
	opts := lifecycle.DefaultOptions()
	opts.Poll = 200 * time.Millisecond
	lifecycleCtrl := &lifecycle.Controller{
		Client: mgr.GetClient(), Recorder: recorder, Clock: clock.RealClock{}, Options: opts,
		Cloud: &provider.CloudProvider{
			Kube: mgr.GetClient(), Provider: provider.New(a.EC2(), resolver, cluster, clock.RealClock{}),
			Types: &instancetypes.Cache{Provider: &instancetypes.Provider{EC2: a.EC2(), Pricing: a.Pricing(), Region: account.Region}, Clock: clock.RealClock{}, TTL: time.Hour},
		},
	}
	if err := statusCtrl.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := lifecycleCtrl.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	k, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{kube: k, account: a}
	e.create(t, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: account.NodeRole,
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
	}})
	e.waitFor(t, "EC2NodeClass default Ready", func(ctx context.Context) (bool, error) {
		nc := &awsv1.EC2NodeClass{}
		err := k.Get(ctx, client.ObjectKey{Name: "default"}, nc)
		return err == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionReady), err
	})
	return e
}

func (e *env) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.kube.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func (e *env) waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
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
func (e *env) boot(t *testing.T, nc *v1.NodeClaim, userData string) *corev1.Node {
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
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: reg.Taints},
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
	e := start(t)
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
	if notFound.Reason != lifecycle.ReasonNodeNotFound {
		t.Errorf("before the node registers: %+v", notFound)
	}

	node := e.boot(t, nc, "")
	registered := e.waitCondition(t, "general-a", v1.ConditionRegistered, metav1.ConditionTrue)
	if registered.Reason != lifecycle.ReasonRegistered {
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
	waiting := e.waitCondition(t, "general-a", v1.ConditionInitialized, metav1.ConditionFalse)
	if waiting.Reason != lifecycle.ReasonStartupTaintsExist || !strings.Contains(waiting.Message, "node.cilium.io/agent-not-ready") {
		t.Errorf("initialization waits for the startup taint: %+v", waiting)
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
	if registered.Reason != lifecycle.ReasonUnregisteredTaintMissing ||
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
			if ev.InvolvedObject.Name == "s1" && ev.Reason == lifecycle.ReasonUnregisteredTaintMissing && ev.Type == corev1.EventTypeWarning {
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
