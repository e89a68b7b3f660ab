package doctor

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/simulate"
)

// ReadCluster reads what the rules need from a running cluster:
// NodePools and EC2NodeClasses with their status, NodeClaims, Nodes, pods
// (pending ones are diagnosed, bound ones fill their nodes), DaemonSets,
// the aws-auth ConfigMap and warning events.
func ReadCluster(ctx context.Context, kube client.Reader) (*simulate.Objects, []corev1.Event, error) {
	o := &simulate.Objects{}
	var (
		pools   v1.NodePoolList
		classes awsv1.EC2NodeClassList
		claims  v1.NodeClaimList
		nodes   corev1.NodeList
		pods    corev1.PodList
		sets    appsv1.DaemonSetList
		events  corev1.EventList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"NodePools", &pools}, {"EC2NodeClasses", &classes}, {"NodeClaims", &claims}, {"Nodes", &nodes}, {"Pods", &pods}, {"DaemonSets", &sets}} {
		if err := kube.List(ctx, l.list); err != nil {
			return nil, nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	if err := kube.List(ctx, &events, client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return nil, nil, fmt.Errorf("listing events: %w", err)
	}
	for i := range pools.Items {
		o.NodePools = append(o.NodePools, &pools.Items[i])
	}
	for i := range classes.Items {
		o.EC2NodeClasses = append(o.EC2NodeClasses, &classes.Items[i])
	}
	for i := range nodes.Items {
		o.Nodes = append(o.Nodes, &nodes.Items[i])
	}
	for i := range claims.Items {
		o.NodeClaims = append(o.NodeClaims, &claims.Items[i])
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil || len(p.Spec.SchedulingGates) > 0 {
			continue
		}
		o.Pods = append(o.Pods, p)
	}
	for i := range sets.Items {
		o.DaemonSets = append(o.DaemonSets, &sets.Items[i])
	}
	cm := &corev1.ConfigMap{}
	switch err := kube.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "aws-auth"}, cm); {
	case err == nil:
		o.AWSAuth = cm
	case !apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("reading ConfigMap kube-system/aws-auth: %w", err)
	}
	return o, events.Items, nil
}
