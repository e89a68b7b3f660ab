package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/operator/rbac"
)

// The release local runs use (nodewright sim, the tests): the controllers
// run as its service account, so they have exactly the permissions a user
// installs.
const (
	LocalRelease   = "nodewright"
	LocalNamespace = "nodewright"
)

// LocalUser is the user the controllers act as in local runs: the chart's
// service account, with the groups the API server gives service accounts.
var LocalUser = rest.ImpersonationConfig{
	UserName: "system:serviceaccount:" + LocalNamespace + ":" + LocalRelease,
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + LocalNamespace, "system:authenticated"},
}

// rbacKinds are the chart's objects that matter when the controllers run
// outside the cluster: who they are and what they may do.
var rbacKinds = map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// InstallRBAC applies the chart's service account and roles for the local
// release, as `helm install` would, and returns admin impersonating that
// service account. featureGates are the chart's settings.featureGates
// (podDeletionCostManagement: true grants what that gate needs).
func InstallRBAC(ctx context.Context, kube client.Client, admin *rest.Config, clusterName string, featureGates ...string) (*rest.Config, error) {
	gates := map[string]any{}
	for _, g := range featureGates {
		gates[g] = true
	}
	objs, err := Render(Release{Name: LocalRelease, Namespace: LocalNamespace,
		Values: map[string]any{"settings": map[string]any{"clusterName": clusterName, "featureGates": gates}, "image": localImage}})
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: LocalNamespace}}
	if err := client.IgnoreAlreadyExists(kube.Create(ctx, ns)); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", LocalNamespace, err)
	}
	for _, o := range objs {
		if !rbacKinds[o.GetKind()] {
			continue
		}
		if err := kube.Patch(ctx, o, client.Apply, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying the chart's %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	rc := rest.CopyConfig(admin)
	rc.Impersonate = LocalUser
	return rc, nil
}

// WriteKubeconfig writes, beside the administrator's kubeconfig at
// adminPath, one that impersonates the local release's service account,
// for a controller in its own process, and returns its path.
func WriteKubeconfig(adminPath string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(adminPath)
	if err != nil {
		return "", err
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = LocalUser.UserName
		auth.ImpersonateGroups = LocalUser.Groups
	}
	path := filepath.Join(filepath.Dir(adminPath), "controller.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o600)
}

// localImage is the image of releases rendered for their RBAC alone:
// the chart requires one, and nothing runs it.
var localImage = map[string]any{"repository": "localhost/nodewright"}

// RBACRules are the rules of the chart's ClusterRole and of its Role (in
// the leader lease's namespace), as rendered for a release.
func RBACRules() (rbac.Rules, error) {
	objs, err := Render(Release{Name: LocalRelease, Namespace: LocalNamespace, Values: map[string]any{"settings": map[string]any{"clusterName": "check"}, "image": localImage}})
	if err != nil {
		return rbac.Rules{}, err
	}
	var out rbac.Rules
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			return rbac.Rules{}, err
		}
		if o.GetKind() == "ClusterRole" {
			out.ClusterRole = append(out.ClusterRole, role.Rules...)
		} else {
			out.Role = append(out.Role, role.Rules...)
		}
	}
	return out, nil
}
