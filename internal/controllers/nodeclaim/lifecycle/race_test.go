package lifecycle_test

import (
	"errors"

	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/controllers/nodeclaim/lifecycle"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

const uninitialized = "node.cloudprovider.kubernetes.io/uninitialized"

// startIntercepted runs the NodeClaim lifecycle (and the EC2NodeClass
// controller) against a real control plane, its client's calls going
// through the interceptor funcs makes from a direct client.
func startIntercepted(t *testing.T, funcs func(direct client.Client) interceptor.Funcs) *env {
	t.Helper()
	return startInterceptedOn(t, controlplane.Options{ControllerManager: true}, funcs, nil)
}

// startInterceptedCloud is startIntercepted with the lifecycle's cloud
// provider wrapped by wrap (unless nil).
func startInterceptedCloud(t *testing.T, funcs func(direct client.Client) interceptor.Funcs, wrap func(lifecycle.CloudProvider) lifecycle.CloudProvider) *env {
	t.Helper()
	return startInterceptedOn(t, controlplane.Options{ControllerManager: true}, funcs, wrap)
}

// startInterceptedOn is startInterceptedCloud on a control plane started
// with planeOpts.
func startInterceptedOn(t *testing.T, planeOpts controlplane.Options, funcs func(direct client.Client) interceptor.Funcs, wrap func(lifecycle.CloudProvider) lifecycle.CloudProvider) *env {
	t.Helper()
	plane := controlplane.StartForTest(t, planeOpts)
	direct, scheme := optest.Direct(t, plane)
	mgr, err := ctrl.NewManager(plane.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptrTo(true)},
		NewClient: func(rc *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(rc, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, funcs(direct)), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := simaws.NewAccount()
	a.Seed()
	ctx, cancel := context.WithCancel(context.Background())
	resolver := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), ClusterName: account.ClusterName, Region: account.Region, KubernetesVersion: simaws.KubernetesVersion}
	cluster, _ := provider.ClusterFromEKS(ctx, a.EKS(), account.ClusterName)
	recorder := mgr.GetEventRecorderFor("nodewright")
	if err := (&nodeclass.Controller{Client: mgr.GetClient(), Resolver: resolver, Recorder: recorder, Clock: clock.RealClock{}, Refresh: time.Minute}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	opts := lifecycle.DefaultOptions()
	opts.Poll = 200 * time.Millisecond
	if err := listing.Index(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	registry := prometheus.NewRegistry()
	m, err := metrics.New(registry)
	if err != nil {
		t.Fatal(err)
	}
	life := &lifecycle.Controller{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Metrics: m,
		Recorder: recorder, Clock: clock.RealClock{}, Options: opts, Registrations: nodepoolhealth.NewRegistrations(),
		Cloud: &provider.CloudProvider{Kube: mgr.GetClient(), Launcher: provider.New(a.EC2(), resolver, cluster, clock.RealClock{}),
			Types: &instancetypes.Cache{Provider: &instancetypes.Provider{EC2: a.EC2(), Pricing: a.Pricing(), Region: account.Region}, Clock: clock.RealClock{}, TTL: time.Hour}},
	}
	if wrap != nil {
		life.Cloud = wrap(life.Cloud)
	}
	if err := life.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	optest.RunManager(t, ctx, cancel, mgr)

	return &env{Env: &optest.Env{Kube: direct, Account: a, Plane: plane}, kube: direct, account: a, registry: registry}
}

// counted is the value of one of the lifecycle's counters (startIntercepted).
func (e *env) counted(t *testing.T, name string) float64 {
	t.Helper()
	families, err := e.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// S2's race: the cloud controller manager removes its uninitialized taint
// from the node after nodewright has read the node and before nodewright
// writes its registration. nodewright must not write the taint back.
// An interceptor plays the cloud controller manager at exactly that moment.
func TestRegistrationNeverRestoresTheCloudProviderTaint(t *testing.T) {
	var once sync.Once
	e := startIntercepted(t, func(direct client.Client) interceptor.Funcs {
		ccmFirst := func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if node, ok := obj.(*corev1.Node); ok && node.Labels[v1.LabelRegistered] == "true" {
				once.Do(func() {
					fresh := &corev1.Node{}
					if err := direct.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
						t.Error(err)
						return
					}
					before := fresh.DeepCopy()
					var kept []corev1.Taint
					for _, taint := range fresh.Spec.Taints {
						if taint.Key != uninitialized {
							kept = append(kept, taint)
						}
					}
					fresh.Spec.Taints = kept
					if err := direct.Patch(ctx, fresh, client.MergeFrom(before)); err != nil {
						t.Error(err)
					}
				})
			}
			return c.Patch(ctx, obj, patch, opts...)
		}
		return interceptor.Funcs{Patch: ccmFirst}
	})
	direct := e.kube
	ctx := context.Background()
	e.DefaultNodeClass(t)
	e.create(t, newClaim("raced"))
	e.waitCondition(t, "raced", v1.ConditionLaunched, metav1.ConditionTrue)
	nc := e.claim(t, "raced")
	// The kubelet (--cloud-provider=external) registers with the taint.
	node := e.boot(t, nc, "", corev1.Taint{Key: uninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	e.waitCondition(t, "raced", v1.ConditionRegistered, metav1.ConditionTrue)
	defer func() {
		if t.Failed() {
			n := &corev1.Node{}
			_ = direct.Get(context.Background(), client.ObjectKeyFromObject(node), n)
			t.Logf("node taints %v; NodeClaim conditions %+v", n.Spec.Taints, e.claim(t, "raced").Status.Conditions)
		}
	}()
	e.waitFor(t, "the NodeClaim to initialize", func(context.Context) (bool, error) {
		return meta.IsStatusConditionTrue(e.claim(t, "raced").Status.Conditions, v1.ConditionInitialized), nil
	})
	if err := direct.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == uninitialized {
			t.Fatalf("nodewright wrote back %s after the cloud controller manager removed it", uninitialized)
		}
	}
}

// A launch whose status write is lost (a conflict, a crash of the write)
// is recorded by the next reconcile from what this process launched,
// without asking EC2 again: one CreateFleet call for the NodeClaim.
func TestALostLaunchRecordIsNotLaunchedAgain(t *testing.T) {
	var once sync.Once
	e := startIntercepted(t, func(client.Client) interceptor.Funcs {
		return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			lost := false
			if nc, ok := obj.(*v1.NodeClaim); ok && nc.Status.ProviderID != "" {
				once.Do(func() { lost = true })
			}
			if lost {
				return apierrors.NewConflict(schema.GroupResource{Group: v1.Group, Resource: "nodeclaims"}, obj.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}
	})
	e.DefaultNodeClass(t)
	e.create(t, newClaim("lost"))
	e.waitCondition(t, "lost", v1.ConditionLaunched, metav1.ConditionTrue)
	if n := e.account.Stats().CallsBy["CreateFleet"]; n != 1 {
		t.Errorf("CreateFleet called %d times for one NodeClaim whose first launch record was lost, want 1", n)
	}
	if n := len(e.account.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func ptrTo[T any](v T) *T { return &v }

// The kubelet writes its node's status right after registering: a
// registration decided on the cached node then meets a newer node. It is
// made again at once on the node read afresh, in the same reconcile, not
// after an error and its backoff (which at a thousand nodes queue behind
// one another for seconds).
func TestRegistrationAfterAHeartbeatIsMadeAgainAtOnce(t *testing.T) {
	var mu sync.Mutex
	var conflicted, registeredIn types.UID
	// Without kube-controller-manager: its node lifecycle controller
	// writes the node too (not-ready taints), and a conflict of its own
	// on each of the bounded tries would hand the registration to a later
	// reconcile for a reason this test is not about.
	e := startInterceptedOn(t, controlplane.Options{}, func(direct client.Client) interceptor.Funcs {
		return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			node, ok := obj.(*corev1.Node)
			if !ok || node.Labels[v1.LabelRegistered] != "true" {
				return c.Patch(ctx, obj, patch, opts...)
			}
			id := controller.ReconcileIDFromContext(ctx)
			mu.Lock()
			first := conflicted == ""
			if first {
				conflicted = id
			}
			mu.Unlock()
			if first {
				// The kubelet's heartbeat lands between nodewright's read
				// and its write.
				fresh := &corev1.Node{}
				if err := direct.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
					t.Error(err)
				}
				before := fresh.DeepCopy()
				beat := metav1.NewTime(time.Now().Add(time.Second))
				for i := range fresh.Status.Conditions {
					fresh.Status.Conditions[i].LastHeartbeatTime = beat
				}
				if len(fresh.Status.Conditions) == 0 {
					fresh.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: beat, LastTransitionTime: beat}}
				}
				if err := direct.Status().Patch(ctx, fresh, client.MergeFrom(before)); err != nil {
					t.Error(err)
				}
			}
			err := c.Patch(ctx, obj, patch, opts...)
			if err == nil {
				mu.Lock()
				registeredIn = id
				mu.Unlock()
			}
			return err
		}}
	}, nil)
	e.DefaultNodeClass(t)
	e.create(t, newClaim("heartbeat"))
	e.waitCondition(t, "heartbeat", v1.ConditionLaunched, metav1.ConditionTrue)
	node := e.boot(t, e.claim(t, "heartbeat"), "")
	e.waitCondition(t, "heartbeat", v1.ConditionRegistered, metav1.ConditionTrue)
	mu.Lock()
	defer mu.Unlock()
	if conflicted == "" || registeredIn != conflicted {
		t.Errorf("the registration that met the heartbeat was reconcile %q, the one written %q: want one reconcile", conflicted, registeredIn)
	}
	if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[v1.LabelRegistered] != "true" || !slices.Contains(node.Finalizers, v1.TerminationFinalizer) {
		t.Errorf("node after registration: labels %v, finalizers %v", node.Labels, node.Finalizers)
	}
}

// A NodeClaim this process launched is registered and initialized
// without describing its instance again: the launch answered where it
// runs and that it is nodewright's. (At a scale-up of hundreds of nodes,
// those reads met EC2's request limits and held registrations back.)
func TestALaunchedInstanceIsNotDescribedAgainToRegister(t *testing.T) {
	e := startIntercepted(t, func(client.Client) interceptor.Funcs { return interceptor.Funcs{} })
	e.DefaultNodeClass(t)
	e.create(t, newClaim("known"))
	e.waitCondition(t, "known", v1.ConditionLaunched, metav1.ConditionTrue)
	described := e.account.Stats().CallsBy["DescribeInstances"]
	e.boot(t, e.claim(t, "known"), "")
	e.waitCondition(t, "known", v1.ConditionInitialized, metav1.ConditionTrue)
	if n := e.account.Stats().CallsBy["DescribeInstances"] - described; n != 0 {
		t.Errorf("DescribeInstances called %d times to register and initialize a NodeClaim this process launched, want 0", n)
	}
}

// A reconcile that reads the node from a cache still showing it
// unregistered, after an earlier reconcile registered it, meets a
// conflict, reads the node afresh and finds it registered: the
// registration is recorded, not made and counted a second time. The
// interceptor plays the stale cache: the first list after the
// registration returns the node as it was before.
func TestARegistrationMadeMeanwhileIsNotCountedAgain(t *testing.T) {
	var mu sync.Mutex
	var old *corev1.Node
	var registered, staleServed, conflicts int
	e := startIntercepted(t, func(client.Client) interceptor.Funcs {
		return interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				nodes, ok := list.(*corev1.NodeList)
				if !ok || len(nodes.Items) != 1 {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case old == nil && nodes.Items[0].Labels[v1.LabelRegistered] != "true":
					old = nodes.Items[0].DeepCopy()
				case old != nil && registered > 0 && staleServed == 0:
					nodes.Items[0] = *old.DeepCopy()
					staleServed++
				}
				return nil
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				_, ok := obj.(*corev1.Node)
				// A registration's patch is the one that adds the label.
				data, derr := patch.Data(obj)
				registration := ok && derr == nil && strings.Contains(string(data), v1.LabelRegistered)
				err := c.Patch(ctx, obj, patch, opts...)
				if registration {
					mu.Lock()
					defer mu.Unlock()
					if err == nil {
						registered++
					} else if apierrors.IsConflict(err) && staleServed > 0 {
						conflicts++
					}
				}
				return err
			},
		}
	})
	e.DefaultNodeClass(t)
	e.create(t, newClaim("twice"))
	e.waitCondition(t, "twice", v1.ConditionLaunched, metav1.ConditionTrue)
	e.boot(t, e.claim(t, "twice"), "")
	e.waitCondition(t, "twice", v1.ConditionRegistered, metav1.ConditionTrue)
	e.waitFor(t, "a reconcile to read the stale node and meet the conflict", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return conflicts > 0, nil
	})
	// Counting again would follow the conflict at once (one read and one
	// patch); a second count within seconds would be the bug.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if n := e.counted(t, "nodewright_nodeclaims_registered_total"); n != 1 {
			t.Fatalf("nodewright_nodeclaims_registered_total is %v for one registration", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if registered != 1 {
		t.Errorf("the node's registration was written %d times", registered)
	}
}

// laterCloud tells the first launches to retry later, as a launcher out of
// its own request budget does.
type laterCloud struct {
	lifecycle.CloudProvider
	mu         sync.Mutex
	left, told int
}

func (c *laterCloud) Create(ctx context.Context, nc *v1.NodeClaim) (*cloudprovider.Instance, error) {
	c.mu.Lock()
	if c.left > 0 {
		c.left--
		c.told++
		c.mu.Unlock()
		return nil, &cloudprovider.RetryLaterError{Message: "waiting its turn", After: 100 * time.Millisecond}
	}
	c.mu.Unlock()
	return c.CloudProvider.Create(ctx, nc)
}

// A launch told to wait for the launcher's request budget is tried again
// when told, as a wait and not a failure: the NodeClaim says it waits
// (Launched Unknown, LaunchWaiting, written once however often it is told
// again), never LaunchFailed (a status write each time, with the error's
// backoff), and gets one instance once it goes through.
func TestALaunchToldToRetryLaterIsNotAFailure(t *testing.T) {
	later := &laterCloud{left: 3}
	var mu sync.Mutex
	var failed []string
	waiting := 0
	e := startInterceptedCloud(t, func(client.Client) interceptor.Funcs {
		return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok {
				cond := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionLaunched)
				mu.Lock()
				switch {
				case cond != nil && cond.Reason == v1.ReasonLaunchFailed:
					failed = append(failed, cond.Message)
				case cond != nil && cond.Reason == v1.ReasonLaunchWaiting && cond.Status == metav1.ConditionUnknown && strings.Contains(cond.Message, "waiting its turn"):
					waiting++
				}
				mu.Unlock()
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}
	}, func(c lifecycle.CloudProvider) lifecycle.CloudProvider { later.CloudProvider = c; return later })
	e.DefaultNodeClass(t)
	e.create(t, newClaim("later"))
	e.waitCondition(t, "later", v1.ConditionLaunched, metav1.ConditionTrue)
	later.mu.Lock()
	told := later.told
	later.mu.Unlock()
	if told != 3 {
		t.Errorf("the launch was told to retry later %d times, want 3", told)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		t.Errorf("waiting to launch was written as a failure: %v", failed)
	}
	if waiting != 1 {
		t.Errorf("the wait was written %d times, want once", waiting)
	}
	if n := len(e.account.Instances()); n != 1 {
		t.Errorf("%d instances for one NodeClaim", n)
	}
}
