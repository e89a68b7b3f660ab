package doctor

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/listing"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// ReadCluster reads what the rules need from a running cluster:
// NodePools and EC2NodeClasses with their status, NodeClaims, Nodes, pods
// (pending ones are diagnosed, bound ones fill their nodes), DaemonSets,
// PodDisruptionBudgets, CapacityBuffers with their PodTemplates,
// the aws-auth and amazon-vpc-cni ConfigMaps and warning events.
func ReadCluster(ctx context.Context, kube client.Reader) (*whatif.Objects, []corev1.Event, error) {
	listed, err := listing.List(ctx, kube)
	if err != nil {
		return nil, nil, err
	}
	classes := &awsv1.EC2NodeClassList{}
	if err := kube.List(ctx, classes); err != nil {
		return nil, nil, fmt.Errorf("listing EC2NodeClasses: %w", err)
	}
	o := &whatif.Objects{NodePools: listed.NodePools, EC2NodeClasses: listing.Pointers(classes.Items), NodeClaims: listed.NodeClaims, Nodes: listed.Nodes,
		Pods: listed.Pods, DaemonSets: listed.DaemonSets, PDBs: listed.PDBs, CapacityBuffers: listed.CapacityBuffers, PodTemplates: listed.PodTemplates}
	events := &corev1.EventList{}
	if err := kube.List(ctx, events, client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return nil, nil, fmt.Errorf("listing events: %w", err)
	}
	// RuntimeClasses: pods are admitted with their overhead already, but
	// workloads' templates are not.
	runtimeClasses := &nodev1.RuntimeClassList{}
	switch err := kube.List(ctx, runtimeClasses); {
	case err == nil:
		o.RuntimeClasses = listing.Pointers(runtimeClasses.Items)
	case !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("listing RuntimeClasses: %w", err)
	}
	// The controller's Deployment says how it decides; a user who may not
	// list Deployments gets the defaults (and the flags they give).
	deployments := &appsv1.DeploymentList{}
	selector, _ := labels.Parse("app.kubernetes.io/name in (nodewright, karpenter)")
	switch err := kube.List(ctx, deployments, client.MatchingLabelsSelector{Selector: selector}); {
	case err == nil:
		for i := range deployments.Items {
			if c, ok := whatif.ControllerOf(&deployments.Items[i]); ok {
				o.Controllers = append(o.Controllers, c)
			}
		}
	case apierrors.IsForbidden(err):
		o.ControllersNotRead = err.Error()
	case !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("listing the controller's Deployments: %w", err)
	}
	// The controller's ServiceAccount names its IAM role (IRSA).
	accounts := &corev1.ServiceAccountList{}
	switch err := kube.List(ctx, accounts); {
	case err == nil:
		for i := range accounts.Items {
			if accounts.Items[i].Annotations[whatif.IRSARoleAnnotation] != "" {
				o.ServiceAccounts = append(o.ServiceAccounts, &accounts.Items[i])
			}
		}
	case !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("listing ServiceAccounts: %w", err)
	}
	for name, dst := range map[string]**corev1.ConfigMap{"aws-auth": &o.AWSAuth, "amazon-vpc-cni": &o.VPCCNI} {
		cm := &corev1.ConfigMap{}
		switch err := kube.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: name}, cm); {
		case err == nil:
			*dst = cm
		case !apierrors.IsNotFound(err):
			return nil, nil, fmt.Errorf("reading ConfigMap kube-system/%s: %w", name, err)
		}
	}
	return o, events.Items, nil
}
