// Package rbac holds the permissions the Helm chart grants nodewright,
// rendered from the chart when the code is generated (rules.json, by
// hack/rbacrules), and checks at start that the controller's identity
// has them. The controller reads them from here, so it does not link
// the chart's renderer.
package rbac

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rules are the chart's ClusterRole rules and the rules of its Role in
// the leader lease's namespace.
type Rules struct {
	ClusterRole []rbacv1.PolicyRule `json:"clusterRole"`
	Role        []rbacv1.PolicyRule `json:"role"`
}

//go:embed rules.json
var rulesJSON []byte

// Chart returns the rules the chart grants.
func Chart() (Rules, error) {
	var r Rules
	if err := json.Unmarshal(rulesJSON, &r); err != nil {
		return Rules{}, fmt.Errorf("reading the chart's RBAC rules: %w", err)
	}
	return r, nil
}

// PodDeletionCost is what the PodDeletionCostManagement feature gate
// needs beyond the chart's default rules (the chart grants it with the
// gate): patching pods' annotations.
var PodDeletionCost = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}}

// CapacityBuffer is what the CapacityBuffer feature gate needs beyond the
// chart's default rules (the chart grants it with the gate): reading
// buffers and writing their status, keeping their PodTemplates, and
// reading the workloads they name.
var CapacityBuffer = []rbacv1.PolicyRule{
	{APIGroups: []string{"autoscaling.x-k8s.io"}, Resources: []string{"capacitybuffers"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"autoscaling.x-k8s.io"}, Resources: []string{"capacitybuffers/status"}, Verbs: []string{"patch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"podtemplates"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "replicasets"}, Verbs: []string{"get", "list", "watch"}},
}

// Check asks the API server whether the client's user may do everything
// the chart's ClusterRole grants, and what its Role grants in namespace
// (the leader lease's; "" without leader election), and names what it
// may not: a controller started without the chart's permissions says so
// instead of waiting on caches that never fill. gated are the rules the
// feature gates turned on need too.
func Check(ctx context.Context, kube client.Client, namespace string, gated ...rbacv1.PolicyRule) error {
	rules, err := Chart()
	if err != nil {
		return err
	}
	denied, err := deniedOf(ctx, kube, append(rules.ClusterRole, gated...), "")
	if err != nil {
		return err
	}
	if namespace != "" {
		more, err := deniedOf(ctx, kube, rules.Role, namespace)
		if err != nil {
			return err
		}
		denied = append(denied, more...)
	}
	if len(denied) > 0 {
		return fmt.Errorf("nodewright's identity may not %s; install the chart's ClusterRole and Role (charts/nodewright/templates/clusterrole.yaml, role.yaml) and bind them to it",
			strings.Join(denied, "; "))
	}
	return nil
}

func deniedOf(ctx context.Context, kube client.Client, rules []rbacv1.PolicyRule, ns string) ([]string, error) {
	var denied []string
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				names := rule.ResourceNames
				if len(names) == 0 {
					names = []string{""}
				}
				for _, verb := range rule.Verbs {
					for _, name := range names {
						ok, err := allowed(ctx, kube, ns, verb, group, res, name)
						if err != nil {
							return nil, err
						}
						if !ok {
							what := qualified(group, res)
							if name != "" {
								what += " " + name
							}
							denied = append(denied, fmt.Sprintf("%s %s %s", verb, what, where(ns)))
						}
					}
				}
			}
		}
	}
	return denied, nil
}

func allowed(ctx context.Context, kube client.Client, ns, verb, group, res, name string) (bool, error) {
	resource, sub, _ := strings.Cut(res, "/")
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub, Name: name},
	}}
	if err := kube.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking the API server what nodewright may do: %w", err)
	}
	return review.Status.Allowed, nil
}

func where(ns string) string {
	if ns == "" {
		return "in every namespace"
	}
	return "in namespace " + ns
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}
