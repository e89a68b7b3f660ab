package nodeclass_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/internal/sim/harness/optest"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
)

// startController runs the status controller against a real API server
// and the simulated account.
func startController(t *testing.T) client.Client {
	t.Helper()
	k, _ := startControllerWithAccount(t)
	return k
}

func startControllerWithAccount(t *testing.T) (client.Client, *simaws.Account) {
	t.Helper()
	logf.SetLogger(logr.Discard())
	cp := controlplane.StartForTest(t, controlplane.Options{})
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, awsv1.AddToScheme, v1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	skip := true // one manager per test in this process
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	account := simaws.NewAccount()
	account.Seed()
	resolver := &nodeclass.Resolver{EC2: account.EC2(), SSM: account.SSM(), IAM: account.IAM(), ClusterName: "nodewright-sim", Region: "us-east-1", KubernetesVersion: simaws.KubernetesVersion}
	c := &nodeclass.Controller{
		Client:          mgr.GetClient(),
		Resolver:        resolver,
		Recorder:        mgr.GetEventRecorderFor("nodewright"),
		Clock:           clock.RealClock{},
		Refresh:         time.Minute,
		LaunchTemplates: provider.New(account.EC2(), resolver, userdata.Cluster{Name: "nodewright-sim"}, clock.RealClock{}),
	}
	if err := c.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	optest.RunManager(t, ctx, cancel, mgr)
	k, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return k, account
}

func scenarioNodeClass(t *testing.T, file string) *awsv1.EC2NodeClass {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{}
	if err := yaml.Unmarshal([]byte(strings.Split(string(data), "\n---\n")[0]), nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

// waitCondition waits until the EC2NodeClass has the condition with the
// status, and returns it.
func waitCondition(t *testing.T, k client.Client, name, condType string, status metav1.ConditionStatus) (*awsv1.EC2NodeClass, metav1.Condition) {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	var cond metav1.Condition
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(nc.Status.Conditions, condType)
		if c == nil || c.Status != status {
			return false, nil
		}
		cond = *c
		return true, nil
	})
	if err != nil {
		t.Fatalf("EC2NodeClass %s never had %s=%s; conditions: %+v", name, condType, status, nc.Status.Conditions)
	}
	return nc, cond
}

func TestStatusOfHealthyAndBrokenNodeClasses(t *testing.T) {
	k := startController(t)
	ctx := context.Background()

	healthy := scenarioNodeClass(t, "../../../scenarios/healthy-mixed-arch.yaml")
	if err := k.Create(ctx, healthy); err != nil {
		t.Fatal(err)
	}
	nc, _ := waitCondition(t, k, "default", awsv1.ConditionReady, metav1.ConditionTrue)
	if len(nc.Status.Subnets) != 3 || len(nc.Status.SecurityGroups) != 1 || len(nc.Status.AMIs) != 2 ||
		nc.Status.InstanceProfile != "nodewright_nodewright-sim_us-east-1_default" {
		t.Errorf("resolved status: %+v", nc.Status)
	}

	s1 := scenarioNodeClass(t, "../../../scenarios/s1-userdata-register-taints.yaml")
	if err := k.Create(ctx, s1); err != nil {
		t.Fatal(err)
	}
	_, cond := waitCondition(t, k, "cilium", awsv1.ConditionValidationSucceeded, metav1.ConditionFalse)
	if cond.Reason != awsv1.ReasonUserDataInvalid || !strings.Contains(cond.Message, "userdata-overrides-registration-taints") ||
		!strings.Contains(cond.Message, "startupTaints") {
		t.Errorf("S1 validation condition: %+v", cond)
	}
	_, ready := waitCondition(t, k, "cilium", awsv1.ConditionReady, metav1.ConditionFalse)
	if !strings.Contains(ready.Message, awsv1.ConditionValidationSucceeded) {
		t.Errorf("Ready should name what is not ready: %+v", ready)
	}
	events := &corev1.EventList{}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k.List(ctx, events); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "cilium" && e.Reason == awsv1.ReasonUserDataInvalid && e.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})
	found := false
	for _, e := range events.Items {
		found = found || (e.InvolvedObject.Name == "cilium" && e.Reason == awsv1.ReasonUserDataInvalid)
	}
	if !found {
		t.Error("no Warning event UserDataInvalid for the S1 EC2NodeClass")
	}

	reserved := healthy.DeepCopy()
	reserved.ObjectMeta = metav1.ObjectMeta{Name: "reserved"}
	reserved.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "nodewright-sim"}}}
	if err := k.Create(ctx, reserved); err != nil {
		t.Fatal(err)
	}
	nc, cr := waitCondition(t, k, "reserved", awsv1.ConditionCapacityReservationsReady, metav1.ConditionTrue)
	want := awsv1.CapacityReservation{ID: simaws.SeedReservationID, InstanceType: "m5.large", AvailabilityZone: "us-east-1a",
		OwnerID: "111122223333", InstanceMatchCriteria: "targeted", ReservationType: "default", State: "active"}
	if len(nc.Status.CapacityReservations) != 1 || nc.Status.CapacityReservations[0] != want || !strings.Contains(cr.Message, "2 available") {
		t.Errorf("capacity reservations %+v, condition %+v; want %+v", nc.Status.CapacityReservations, cr, want)
	}
	waitCondition(t, k, "reserved", awsv1.ConditionReady, metav1.ConditionTrue)

	missing := healthy.DeepCopy()
	missing.ObjectMeta = metav1.ObjectMeta{Name: "missing-reservation"}
	missing.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0000000000000000f"}}
	if err := k.Create(ctx, missing); err != nil {
		t.Fatal(err)
	}
	_, cr = waitCondition(t, k, "missing-reservation", awsv1.ConditionCapacityReservationsReady, metav1.ConditionFalse)
	if cr.Reason != awsv1.ReasonReservationsNotFound || !strings.Contains(cr.Message, "id cr-0000000000000000f") {
		t.Errorf("capacity reservations condition: %+v", cr)
	}
	// Nodes still launch as spot or on-demand.
	waitCondition(t, k, "missing-reservation", awsv1.ConditionReady, metav1.ConditionTrue)

	lost := healthy.DeepCopy()
	lost.ObjectMeta = metav1.ObjectMeta{Name: "lost"}
	lost.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "another-cluster"}}}
	lost.Spec.Role = "NoSuchRole"
	if err := k.Create(ctx, lost); err != nil {
		t.Fatal(err)
	}
	_, subnets := waitCondition(t, k, "lost", awsv1.ConditionSubnetsReady, metav1.ConditionFalse)
	if subnets.Reason != awsv1.ReasonSubnetsNotFound || !strings.Contains(subnets.Message, "karpenter.sh/discovery=another-cluster") {
		t.Errorf("subnets condition: %+v", subnets)
	}
	_, profile := waitCondition(t, k, "lost", awsv1.ConditionInstanceProfileReady, metav1.ConditionFalse)
	if !strings.Contains(profile.Message, "role NoSuchRole does not exist") {
		t.Errorf("instance profile condition: %+v", profile)
	}
}
