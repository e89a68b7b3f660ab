// Package listing reads from the API server (or the manager's cache) the
// objects state.Build turns into a snapshot.
package listing

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/state"
)

// Listed are the objects of a cluster: what state.Build reads.
type Listed struct {
	state.Objects
}

// Cached is a client whose reads come from the manager's cache, with that
// cache: List takes the pods straight from its informer.
type Cached struct {
	client.Client
	Cache cache.Cache
}

// List reads every NodePool, NodeClaim, Node, Pod,
// DaemonSet, PodDisruptionBudget, Namespace, PersistentVolumeClaim,
// PersistentVolume, StorageClass and NodeOverlay (none when the cluster
// does not have the NodeOverlay CRD), the CapacityBuffers with their
// PodTemplates (listBuffers), and the DRA objects (listDevices).
//
// From a cache, the pods, NodeClaims and nodes are the cache's own
// objects, not copies (copying tens of thousands of pods and thousands of
// NodeClaims for every decision would cost more than the decision):
// callers read them and never change them. From a Cached
// client they come from the informer's store, without the list of pod
// structs a List call builds (50 MB at 45,000 pods, every decision).
func List(ctx context.Context, kube client.Reader) (*Listed, error) {
	var (
		pools  v1.NodePoolList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
		sets   appsv1.DaemonSetList
		pdbs   policyv1.PodDisruptionBudgetList
	)
	store := podStore(ctx, kube)
	uncopied := []client.ListOption{client.UnsafeDisableDeepCopy}
	for _, l := range []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{{"NodePools", &pools, nil}, {"NodeClaims", &claims, uncopied}, {"Nodes", &nodes, uncopied},
		{"Pods", &pods, uncopied}, {"DaemonSets", &sets, nil}, {"PodDisruptionBudgets", &pdbs, nil}} {
		if l.what == "Pods" && store != nil {
			continue
		}
		if err := kube.List(ctx, l.list, l.opts...); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	out := &Listed{}
	if store != nil {
		items := store.List()
		out.Pods = make([]*corev1.Pod, 0, len(items))
		for _, o := range items {
			if pod, ok := o.(*corev1.Pod); ok {
				out.Pods = append(out.Pods, pod)
			}
		}
	} else {
		out.Pods = Pointers(pods.Items)
	}
	out.NodePools = Pointers(pools.Items)
	out.NodeClaims = Pointers(claims.Items)
	out.Nodes = Pointers(nodes.Items)
	out.DaemonSets = Pointers(sets.Items)
	out.PDBs = Pointers(pdbs.Items)
	var (
		namespaces corev1.NamespaceList
		pvcs       corev1.PersistentVolumeClaimList
		pvs        corev1.PersistentVolumeList
		storage    storagev1.StorageClassList
		csiNodes   storagev1.CSINodeList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"Namespaces", &namespaces}, {"PersistentVolumeClaims", &pvcs}, {"PersistentVolumes", &pvs}, {"StorageClasses", &storage}, {"CSINodes", &csiNodes}} {
		if err := kube.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	out.Namespaces, out.PVCs, out.PVs, out.StorageClasses = Pointers(namespaces.Items), Pointers(pvcs.Items), Pointers(pvs.Items), Pointers(storage.Items)
	out.CSINodes = Pointers(csiNodes.Items)
	overlays := &v1alpha1.NodeOverlayList{}
	switch err := kube.List(ctx, overlays); {
	case meta.IsNoMatchError(err):
		// A cluster without the NodeOverlay CRD has no overlays.
	case err != nil:
		return nil, fmt.Errorf("listing NodeOverlays: %w", err)
	default:
		out.Overlays = Pointers(overlays.Items)
	}
	if err := listBuffers(ctx, kube, out); err != nil {
		return nil, err
	}
	if err := listDevices(ctx, kube, out); err != nil {
		return nil, err
	}
	return out, nil
}

// listDevices reads the DeviceClasses, ResourceClaims,
// ResourceClaimTemplates and ResourceSlices (DRA); a cluster without
// resource.k8s.io/v1 (before Kubernetes 1.34) has none.
func listDevices(ctx context.Context, kube client.Reader, out *Listed) error {
	var (
		classes   resourcev1.DeviceClassList
		claims    resourcev1.ResourceClaimList
		templates resourcev1.ResourceClaimTemplateList
		slices    resourcev1.ResourceSliceList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"DeviceClasses", &classes}, {"ResourceClaims", &claims}, {"ResourceClaimTemplates", &templates}, {"ResourceSlices", &slices}} {
		switch err := kube.List(ctx, l.list); {
		case meta.IsNoMatchError(err):
			return nil
		case err != nil:
			return fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	out.DeviceClasses, out.ResourceClaims = Pointers(classes.Items), Pointers(claims.Items)
	out.ResourceClaimTemplates, out.ResourceSlices = Pointers(templates.Items), Pointers(slices.Items)
	return nil
}

// listBuffers reads the CapacityBuffers and, when there are any, the
// PodTemplates they resolve to. A client whose scheme does not know
// CapacityBuffer (the CapacityBuffer feature gate is off), or a cluster
// without the CRD, has none.
func listBuffers(ctx context.Context, kube client.Reader, out *Listed) error {
	buffers := &v1beta1.CapacityBufferList{}
	switch err := kube.List(ctx, buffers); {
	case runtime.IsNotRegisteredError(err) || meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("listing CapacityBuffers: %w", err)
	case len(buffers.Items) == 0:
		return nil
	}
	out.CapacityBuffers = Pointers(buffers.Items)
	templates := &corev1.PodTemplateList{}
	if err := kube.List(ctx, templates); err != nil {
		return fmt.Errorf("listing PodTemplates: %w", err)
	}
	out.PodTemplates = Pointers(templates.Items)
	return nil
}

// podStore is the pod informer's store of a Cached client whose informer
// has synced, else nil.
func podStore(ctx context.Context, kube client.Reader) toolscache.Store {
	cached, ok := kube.(Cached)
	if !ok {
		return nil
	}
	inf, err := cached.Cache.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(true))
	if err != nil {
		return nil
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok || !shared.HasSynced() {
		return nil
	}
	return shared.GetStore()
}

// Pointers points at each item of a listed slice.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Field indexes of the manager's cache, registered by Index.
const (
	// NodeProviderID indexes Nodes by spec.providerID.
	NodeProviderID = "spec.providerID"
	// PodNodeName indexes Pods by spec.nodeName.
	PodNodeName = "spec.nodeName"
	// NodeClaimProviderID indexes NodeClaims by status.providerID.
	NodeClaimProviderID = "status.providerID"
)

// Index registers the field indexes the controllers look objects up by.
func Index(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range []struct {
		obj   client.Object
		field string
		value func(client.Object) string
	}{
		{&corev1.Node{}, NodeProviderID, func(o client.Object) string { return o.(*corev1.Node).Spec.ProviderID }},
		{&corev1.Pod{}, PodNodeName, func(o client.Object) string { return o.(*corev1.Pod).Spec.NodeName }},
		{&v1.NodeClaim{}, NodeClaimProviderID, func(o client.Object) string { return o.(*v1.NodeClaim).Status.ProviderID }},
	} {
		value := ix.value
		if err := indexer.IndexField(ctx, ix.obj, ix.field, func(o client.Object) []string { return []string{value(o)} }); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", ix.obj, ix.field, err)
		}
	}
	return nil
}

// NodeClassResolver is the cloud's side of node classes: the kind
// NodePools name, and what each one can launch.
type NodeClassResolver interface {
	// NodeClassObject is an empty object of the node class kind, to
	// watch.
	NodeClassObject() client.Object
	// ResolveNodeClasses resolves, by name, the node classes the
	// NodePools use: their instance types and AMIs, or why they are not
	// ready, with their stamps and drift rules. A class that does not
	// exist is left out.
	ResolveNodeClasses(ctx context.Context, pools []*v1.NodePool) (map[string]*cloudprovider.NodeClass, error)
}
