package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/operator"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
)

// A CRD missing at start stops the controller at once with the kind and
// the command that installs it, instead of a cache that never fills and
// a timeout minutes later naming neither.
func TestMissingCRDIsNamedAtStart(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	scheme := apiextensionsScheme(t)
	kube, err := client.New(plane.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "nodeoverlays.karpenter.sh"}}
	if err := kube.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(kube.Get(ctx, client.ObjectKeyFromObject(crd), crd)), nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg := operator.DefaultConfig()
	cfg.ClusterName, cfg.MetricsAddr, cfg.HealthAddr, cfg.SkipNameValidation = "prod", "0", "0", true
	a := simaws.NewAccount()
	a.Seed()
	_, err = operator.New(ctx, plane.Config, cfg, runner.Clouds(a), clock.RealClock{}, logr.Discard())
	if err == nil || !strings.Contains(err.Error(), "NodeOverlay (karpenter.sh/v1alpha1)") || !strings.Contains(err.Error(), "charts/nodewright/crds/") {
		t.Errorf("operator.New without the NodeOverlay CRD: %v; want the kind named and how to install it", err)
	}
}

func apiextensionsScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
