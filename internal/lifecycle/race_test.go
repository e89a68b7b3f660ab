package lifecycle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/controlplane"
	"github.com/nodewright/nodewright/internal/lifecycle"
	"github.com/nodewright/nodewright/internal/nodepool"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/operator/optest"
	"github.com/nodewright/nodewright/internal/sim/account"
	simaws "github.com/nodewright/nodewright/internal/sim/aws"
	"github.com/nodewright/nodewright/internal/state/listing"
)

const uninitialized = "node.cloudprovider.kubernetes.io/uninitialized"

// S2's race: the cloud controller manager removes its uninitialized taint
// from the node after nodewright has read the node and before nodewright
// writes its registration. nodewright must not write the taint back.
// An interceptor plays the cloud controller manager at exactly that moment.
func TestRegistrationNeverRestoresTheCloudProviderTaint(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{ControllerManager: true})
	scheme, err := operator.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	direct, err := client.New(plane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
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
	mgr, err := ctrl.NewManager(plane.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptrTo(true)},
		NewClient: func(rc *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.NewWithWatch(rc, o)
			if err != nil {
				return nil, err
			}
			return interceptor.NewClient(c, interceptor.Funcs{Patch: ccmFirst}), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := simaws.NewAccount()
	a.Seed()
	ctx, cancel := context.WithCancel(context.Background())
	resolver := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), ClusterName: account.ClusterName, KubernetesVersion: simaws.KubernetesVersion}
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
	life := &lifecycle.Controller{
		Client: mgr.GetClient(), Recorder: recorder, Clock: clock.RealClock{}, Options: opts, Registrations: nodepool.NewRegistrations(),
		Cloud: &provider.CloudProvider{Kube: mgr.GetClient(), Provider: provider.New(a.EC2(), resolver, cluster, clock.RealClock{}),
			Types: &instancetypes.Cache{Provider: &instancetypes.Provider{EC2: a.EC2(), Pricing: a.Pricing(), Region: account.Region}, Clock: clock.RealClock{}, TTL: time.Hour}},
	}
	if err := life.SetupWithManager(ctx, mgr); err != nil {
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

	e := &env{Env: &optest.Env{Kube: direct, Account: a, Plane: plane}, kube: direct, account: a}
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

func ptrTo[T any](v T) *T { return &v }
