package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// service account.
func InstallRBAC(ctx context.Context, kube client.Client, admin *rest.Config, clusterName string) (*rest.Config, error) {
	objs, err := Render(Release{Name: LocalRelease, Namespace: LocalNamespace,
		Values: map[string]any{"settings": map[string]any{"clusterName": clusterName}}})
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
		if err := kube.Patch(ctx, o, client.Apply, client.FieldOwner("helm"), client.ForceOwnership); err != nil { //nolint:staticcheck // server-side apply of unstructured objects
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

// CheckRBAC asks the API server whether the client's user may do
// everything the chart's ClusterRole grants, and what its Role grants in
// namespace (the leader lease's; "" without leader election), and names
// what it may not: a controller
// started without the chart's permissions says so instead of waiting on
// caches that never fill.
func CheckRBAC(ctx context.Context, kube client.Client, namespace string) error {
	objs, err := Render(Release{Name: LocalRelease, Namespace: LocalNamespace, Values: map[string]any{"settings": map[string]any{"clusterName": "check"}}})
	if err != nil {
		return err
	}
	var denied []string
	for _, o := range objs {
		ns := ""
		switch o.GetKind() {
		case "ClusterRole":
		case "Role":
			if namespace == "" {
				continue
			}
			ns = namespace
		default:
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			return err
		}
		for _, rule := range role.Rules {
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, verb := range rule.Verbs {
						review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
							ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub},
						}}
						if err := kube.Create(ctx, review); err != nil {
							return fmt.Errorf("asking the API server what nodewright may do: %w", err)
						}
						if !review.Status.Allowed {
							where := "in every namespace"
							if ns != "" {
								where = "in namespace " + ns
							}
							denied = append(denied, fmt.Sprintf("%s %s %s", verb, qualified(group, res), where))
						}
					}
				}
			}
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("nodewright's identity may not %s; install the chart's ClusterRole and Role (charts/nodewright/templates/clusterrole.yaml, role.yaml) and bind them to it",
			strings.Join(denied, "; "))
	}
	return nil
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}
