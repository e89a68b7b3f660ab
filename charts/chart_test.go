package charts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodewright/nodewright/charts"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/operator/rbac"
	simaccount "github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
)

func render(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := charts.Render(charts.Release{Name: "nodewright", Namespace: "nodewright", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func settings(extra map[string]any) map[string]any {
	s := map[string]any{"clusterName": "prod"}
	for k, v := range extra {
		s[k] = v
	}
	return map[string]any{"settings": s, "image": testImage}
}

// testImage is where the tests' releases say the image was pushed.
var testImage = map[string]any{"repository": "registry.example/nodewright"}

// The chart's CRDs are the generated ones, byte for byte (make generate
// copies them).
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	inChart, err := charts.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	generated, err := filepath.Glob("../api/crds/*.yaml")
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated CRDs found: %v", err)
	}
	if len(inChart) != len(generated) {
		t.Errorf("the chart has %d CRDs, the API %d: run make generate", len(inChart), len(generated))
	}
	for _, path := range generated {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := inChart[filepath.Base(path)]; !bytes.Equal(got, want) {
			t.Errorf("charts/nodewright/crds/%s differs from %s: run make generate", filepath.Base(path), path)
		}
	}
}

// Values the chart does not know, or without the cluster's name, are
// refused with the value to fix.
func TestValuesAreChecked(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no cluster name", map[string]any{}, "clusterName"},
		{"unknown setting", settings(map[string]any{"clusterNmae": "x"}), "clusterNmae"},
		{"unknown top-level value", map[string]any{"settings": map[string]any{"clusterName": "prod"}, "replica": 3}, "replica"},
		{"duration", settings(map[string]any{"launchTimeout": "five minutes"}), "launchTimeout"},
		{"log format", settings(map[string]any{"logFormat": "text"}), "logFormat"},
		{"endpoint", settings(map[string]any{"clusterEndpoint": "example.com"}), "clusterEndpoint"},
		{"scrape interval", map[string]any{"settings": map[string]any{"clusterName": "prod"}, "serviceMonitor": map[string]any{"interval": "1.5m"}}, "interval"},
		{"no service account", map[string]any{"settings": map[string]any{"clusterName": "prod"}, "image": testImage, "serviceAccount": map[string]any{"create": false}}, "serviceAccount.name is required"},
		{"no image", map[string]any{"settings": map[string]any{"clusterName": "prod"}}, "image.repository is required: push the image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := charts.Render(charts.Release{Name: "nodewright", Namespace: "nodewright", Values: c.values})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %s", err, c.want)
			}
		})
	}
}

// Every setting reaches the controller's flags.
func TestSettingsBecomeFlags(t *testing.T) {
	objs := render(t, settings(map[string]any{
		"clusterEndpoint": "https://api.internal:443", "region": "eu-west-1", "interruptionQueue": "prod-interruptions",
		"launchTimeout": "7m", "logFormat": "console", "nominatePodsMax": 20,
	}))
	dep := find(t, objs, "Deployment")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, want := range []string{"controller", "--cluster-name=prod", "--cluster-endpoint=https://api.internal:443", "--region=eu-west-1",
		"--interruption-queue=prod-interruptions", "--launch-timeout=7m", "--log-format=console", "--nominate-pods-max=20", "--leader-elect=true",
		"--leader-election-namespace=nodewright"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("the chart renders no %s", kind)
	return nil
}

func rules(t *testing.T, objs []*unstructured.Unstructured) map[string][]rbacv1.PolicyRule {
	t.Helper()
	out := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatal(err)
		}
		out[o.GetKind()+" "+o.GetName()] = role.Rules
	}
	return out
}

// No rule is broader than the controllers need: no wildcard, no Secret or
// ConfigMap, no way to grant itself more, writes only where nodewright
// writes.
func TestRBACIsNarrow(t *testing.T) {
	writes := sets.New("create", "update", "patch", "delete", "deletecollection")
	// Where nodewright writes, and why.
	mayWrite := sets.New(
		"karpenter.sh/nodeclaims",                 // it creates and deletes them
		"karpenter.sh/nodeclaims/status",          // their one writer
		"karpenter.sh/nodepools/status",           // their one writer
		"karpenter.sh/nodeoverlays/status",        // their one writer
		"karpenter.sh/nodepools/finalizers",       // NodeClaims owned with blockOwnerDeletion
		"karpenter.k8s.aws/ec2nodeclasses",        // its finalizer
		"karpenter.k8s.aws/ec2nodeclasses/status", // their one writer
		"/nodes",                     // labels, taints, finalizer; deleted with their instance
		"/pods",                      // deleted once a node's termination deadline has passed
		"/pods/status",               // nominatedNodeName
		"/pods/eviction",             // the drain
		"/events",                    // events
		"coordination.k8s.io/leases", // the leader lease (Role only)
	)
	found := rules(t, render(t, settings(nil)))
	if len(found) != 2 {
		t.Fatalf("roles %v, want one ClusterRole and one Role", found)
	}
	for role, rs := range found {
		for _, r := range rs {
			if len(r.NonResourceURLs) > 0 {
				t.Errorf("%s grants non-resource URLs %v", role, r.NonResourceURLs)
			}
			// Names narrow a rule; the one named is the leader lease, read
			// and renewed by its name only (create cannot be limited so).
			leaderLease := slices.Equal(r.Resources, []string{"leases"}) && slices.Equal(r.ResourceNames, []string{"nodewright-leader"}) && !slices.Contains(r.Verbs, "create")
			if len(r.ResourceNames) > 0 && !leaderLease {
				t.Errorf("%s names resources %v for %v", role, r.ResourceNames, r.Resources)
			}
			for _, v := range r.Verbs {
				if v == "*" || v == "escalate" || v == "bind" || v == "impersonate" {
					t.Errorf("%s grants verb %q", role, v)
				}
			}
			for _, g := range r.APIGroups {
				if g == "*" {
					t.Errorf("%s grants every API group", role)
				}
				for _, res := range r.Resources {
					key := g + "/" + res
					if strings.Contains(res, "*") || res == "secrets" || res == "configmaps" || res == "serviceaccounts/token" {
						t.Errorf("%s grants %s", role, key)
					}
					if w := sets.New(r.Verbs...).Intersection(writes); w.Len() > 0 && !mayWrite.Has(key) {
						t.Errorf("%s grants %v on %s, which nodewright only reads", role, sets.List(w), key)
					}
					if slices.Contains(r.Verbs, "update") && key != "coordination.k8s.io/leases" && key != "karpenter.sh/nodepools/finalizers" {
						t.Errorf("%s grants update on %s: nodewright writes with patches", role, key)
					}
					if key == "coordination.k8s.io/leases" && strings.HasPrefix(role, "ClusterRole") {
						t.Errorf("%s grants leases in every namespace; the Role grants the one lease's namespace", role)
					}
				}
			}
		}
	}
}

// The rendered objects are valid for the API server (server-side dry run
// after the CRDs), with default values and with each option turned on.
func TestChartAppliesToTheAPIServer(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{})
	ctx := context.Background()
	kube, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nodewright"}}); err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]map[string]any{
		"defaults": settings(nil),
		"irsa, digest, own service account": {
			"settings":       map[string]any{"clusterName": "prod"},
			"serviceAccount": map[string]any{"name": "autoscaler", "annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/nodewright"}},
			"image":          map[string]any{"repository": "registry.example/nodewright", "digest": "sha256:" + strings.Repeat("ab", 32)},
			"replicas":       3, "podAnnotations": map[string]any{"a": "b"}, "nodeSelector": map[string]any{"pool": "system"},
			// Labels and a spread selector of the user's own, one repeating a selector label.
			"podLabels": map[string]any{"team": "platform", "app.kubernetes.io/name": "nodewright"},
			"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"team": "platform"}}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs := render(t, values)
			kinds := sets.New[string]()
			for _, o := range objs {
				kinds.Insert(o.GetKind())
				if err := kube.Patch(ctx, o, client.Apply, client.FieldOwner("helm"), client.DryRunAll); err != nil {
					t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			want := sets.New("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "PodDisruptionBudget", "Service")
			if !kinds.Equal(want) {
				t.Errorf("kinds %v, want %v", sets.List(kinds), sets.List(want))
			}
		})
	}
	objs := render(t, map[string]any{"settings": map[string]any{"clusterName": "prod"}, "image": testImage, "serviceMonitor": map[string]any{"enabled": true},
		"dashboards": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}})
	sm := find(t, objs, "ServiceMonitor")
	if port, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(port) != 1 {
		t.Errorf("ServiceMonitor endpoints %v", port)
	}
	// The dashboards: ConfigMaps the API server takes, labelled for
	// Grafana's sidecar, each holding a dashboard with panels.
	dashboards := 0
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		dashboards++
		if o.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("ConfigMap %s lacks the grafana_dashboard label: %v", o.GetName(), o.GetLabels())
		}
		if err := kube.Patch(ctx, o, client.Apply, client.FieldOwner("helm"), client.DryRunAll); err != nil {
			t.Errorf("ConfigMap %s: %v", o.GetName(), err)
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for name, text := range data {
			var d struct {
				UID    string
				Panels []struct{ Targets []struct{ Expr string } }
			}
			if err := json.Unmarshal([]byte(text), &d); err != nil || d.UID == "" || len(d.Panels) < 4 {
				t.Errorf("ConfigMap %s: %s is no dashboard: %v", o.GetName(), name, err)
			}
		}
	}
	if dashboards != 5 {
		t.Errorf("%d dashboards, want 5", dashboards)
	}
	rule := find(t, objs, "PrometheusRule")
	if groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups"); len(groups) != 1 {
		t.Errorf("PrometheusRule groups %v", groups)
	}
}

// The controllers run as the chart's service account with leader election
// on: the Role is enough to take the lease in the release's namespace.
func TestControllerTakesTheLeaseAsTheChartsServiceAccount(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	kube, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := charts.InstallRBAC(ctx, kube, cp.Config, simaccount.ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := newOperator(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	optest.RunManager(t, ctx, cancel, mgr)
	var lease coordinationv1.Lease
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: charts.LocalNamespace, Name: "nodewright-leader"}, &lease); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		t.Fatalf("no leader lease taken: %v", err)
	}
	// Outside the release's namespace the service account may not.
	other := rest.CopyConfig(rc)
	sa, err := client.New(other, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = sa.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "x"}})
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("creating a lease in kube-system as the service account: %v, want forbidden", err)
	}
}

// A controller whose identity lacks one of the chart's permissions does
// not start; it names what it may not do.
func TestControllerWithoutThePermissionsSaysWhich(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{})
	ctx := context.Background()
	kube, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := charts.InstallRBAC(ctx, kube, cp.Config, simaccount.ClusterName)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := kube.Get(ctx, client.ObjectKey{Name: charts.LocalRelease}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "pods/eviction") })
	if err := kube.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: charts.LocalNamespace, Name: charts.LocalRelease}}); err != nil {
		t.Fatal(err)
	}
	_, err = newOperator(ctx, rc)
	for _, want := range []string{"may not", "create pods/eviction in every namespace", "get leases.coordination.k8s.io nodewright-leader in namespace nodewright", "install the chart's ClusterRole"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("operator.New: %v; want an error saying %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "list pods") {
		t.Errorf("the error names permissions the identity has: %v", err)
	}
}

// newOperator builds the controllers for a simulated account, with leader
// election in the chart's namespace, acting as rc's user.
func newOperator(ctx context.Context, rc *rest.Config) (manager.Manager, error) {
	account := simaws.NewAccount()
	account.Seed()
	cfg := optest.Config()
	cfg.LeaderElection, cfg.LeaderElectionNamespace = true, charts.LocalNamespace
	return operator.New(ctx, rc, cfg, runner.Clouds(account), clock.RealClock{}, logr.Discard())
}

// The rules the controller checks at start (generated into the binary)
// are the chart's as it renders now: make generate writes them.
func TestControllerChecksTheChartsRules(t *testing.T) {
	want, err := charts.RBACRules()
	if err != nil {
		t.Fatal(err)
	}
	got, err := rbac.Chart()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("internal/operator/rbac/rules.json is stale; run make generate (-chart +generated):\n%s", d)
	}
}

// The Role reads and renews the leader lease by its name only: no rule
// gets or updates every lease of the namespace.
func TestLeaseRightsByName(t *testing.T) {
	named := false
	for role, rs := range rules(t, render(t, settings(nil))) {
		for _, r := range rs {
			if !slices.Contains(r.Resources, "leases") {
				continue
			}
			if (slices.Contains(r.Verbs, "get") || slices.Contains(r.Verbs, "update")) && len(r.ResourceNames) == 0 {
				t.Errorf("%s gets or updates every lease: %+v", role, r)
			}
			named = named || slices.Equal(r.ResourceNames, []string{"nodewright-leader"})
		}
	}
	if !named {
		t.Error("no rule names the leader lease nodewright-leader")
	}
}
