package disruption_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// The controller-level cases share one control plane: starting etcd and
// an API server per case cost most of the package's time. Each case
// starts from an empty cluster (emptyCluster), and the cases of this
// package do not run in parallel.
var shared struct {
	once  sync.Once
	plane *controlplane.ControlPlane
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.plane != nil {
		if err := shared.plane.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// sharedPlane starts the package's control plane on first use, and
// returns it emptied of everything an earlier case left, with a client.
func sharedPlane(t *testing.T) (*controlplane.ControlPlane, client.Client) {
	t.Helper()
	shared.once.Do(func() {
		shared.plane, shared.err = controlplane.Start(context.Background(), controlplane.Options{})
	})
	if shared.err != nil {
		t.Fatalf("starting the control plane: %v", shared.err)
	}
	kube, _ := optest.Direct(t, shared.plane)
	emptyCluster(t, kube)
	return shared.plane, kube
}

// leftovers are the kinds a case may create; emptyCluster removes every
// object of them, finalizers and all.
func leftovers() []client.ObjectList {
	return []client.ObjectList{
		&admissionv1.ValidatingAdmissionPolicyBindingList{}, &admissionv1.ValidatingAdmissionPolicyList{},
		&corev1.PodList{}, &policyv1.PodDisruptionBudgetList{}, &corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{},
		&corev1.PodTemplateList{}, &corev1.NodeList{},
		&v1.NodeClaimList{}, &v1.NodePoolList{}, &v1alpha1.NodeOverlayList{}, &awsv1.EC2NodeClassList{}, &v1beta1.CapacityBufferList{},
	}
}

// emptyCluster deletes every object a case may have left and waits until
// they are gone (and an admission policy left behind no longer applies).
func emptyCluster(t *testing.T, kube client.Client) {
	t.Helper()
	ctx := context.Background()
	policies := false
	for _, list := range leftovers() {
		if err := kube.List(ctx, list); err != nil {
			t.Fatalf("listing %T: %v", list, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			if ns := obj.GetNamespace(); ns == metav1.NamespaceSystem {
				continue
			}
			if _, isPolicy := obj.(*admissionv1.ValidatingAdmissionPolicy); isPolicy {
				policies = true
			}
			if len(obj.GetFinalizers()) > 0 {
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
				if err := kube.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
					t.Fatalf("clearing the finalizers of %T %s: %v", obj, obj.GetName(), err)
				}
			}
			if err := kube.Delete(ctx, obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				t.Fatalf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, list := range leftovers() {
			if err := kube.List(ctx, list); err != nil {
				return false, err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return false, err
			}
			for _, item := range items {
				if item.(client.Object).GetNamespace() != metav1.NamespaceSystem {
					return false, nil
				}
			}
		}
		return !policies || admitsAnyNodeClaim(ctx, kube), nil
	})
	if err != nil {
		t.Fatalf("emptying the shared control plane: %v", err)
	}
}

// admitsAnyNodeClaim says whether the API server accepts (in a dry run) a
// NodeClaim that an admission policy of an earlier case refused.
func admitsAnyNodeClaim(ctx context.Context, kube client.Client) bool {
	probe := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	probe.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	probe.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	err := kube.Create(ctx, probe, client.DryRunAll)
	return err == nil || apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), "refused")
}
