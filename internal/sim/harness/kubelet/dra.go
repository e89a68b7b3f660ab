package kubelet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/api/v1alpha1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/state"
)

// DRADriverAnnotation marks, on a DaemonSet's pod template, the DRA
// driver its pods are the kubelet plugin of (gpu.nvidia.com,
// neuron.aws.com): on each node where such a pod runs, the simulated
// driver publishes the node's devices, DRADelay after the pod started.
const DRADriverAnnotation = "sim.nodewright.dev/dra-driver"

// draDriverVersion is the driver version the simulated NVIDIA driver
// reports.
const draDriverVersion = "580.95.5"

// tickDRA publishes the devices of the nodes whose DRA driver plugin pods
// have run for DRADelay: one ResourceSlice per driver and node, owned by
// the node (so it goes with it), as the drivers' kubelet plugins do.
func (s *Simulator) tickDRA(ctx context.Context) error {
	sets := &appsv1.DaemonSetList{}
	if err := s.reader().List(ctx, sets); err != nil {
		return err
	}
	var published map[string]bool
	for i := range sets.Items {
		ds := &sets.Items[i]
		driver := ds.Spec.Template.Annotations[DRADriverAnnotation]
		if driver == "" || ds.Spec.Selector == nil {
			continue
		}
		if published == nil {
			var err error
			if published, err = s.publishedSlices(ctx); err != nil {
				return err
			}
		}
		if err := s.publishFor(ctx, ds, driver, published); err != nil {
			return err
		}
	}
	return nil
}

// publishedSlices are the driver/node pairs that have a ResourceSlice.
func (s *Simulator) publishedSlices(ctx context.Context) (map[string]bool, error) {
	list := &resourcev1.ResourceSliceList{}
	if err := s.reader().List(ctx, list); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, sl := range list.Items {
		if sl.Spec.NodeName != nil {
			out[sl.Spec.Driver+"/"+*sl.Spec.NodeName] = true
		}
	}
	return out, nil
}

// publishFor publishes the driver's devices on each node where the
// DaemonSet's pod has run for DRADelay.
func (s *Simulator) publishFor(ctx context.Context, ds *appsv1.DaemonSet, driver string, published map[string]bool) error {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil //nolint:nilerr // the API server refuses such a DaemonSet
	}
	pods := &corev1.PodList{}
	if err := s.reader().List(ctx, pods, client.InNamespace(ds.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return err
	}
	for _, pod := range pods.Items {
		node := pod.Spec.NodeName
		if node == "" || pod.Status.Phase != corev1.PodRunning || published[driver+"/"+node] || pod.Status.StartTime == nil ||
			s.Clock.Since(pod.Status.StartTime.Time) < s.DRADelay {
			continue
		}
		if err := s.publish(ctx, driver, node); err != nil {
			return err
		}
		published[driver+"/"+node] = true
	}
	return nil
}

// publish writes the node's ResourceSlice of the driver: the devices its
// instance type has, with what a running driver adds (UUIDs, versions).
func (s *Simulator) publish(ctx context.Context, driver, nodeName string) error {
	node := &corev1.Node{}
	if err := s.reader().Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.mu.Lock()
	spec, ok := s.catalog[node.Labels[corev1.LabelInstanceTypeStable]]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	sets, err := s.overlaid(ctx, node.Labels, instancetypes.Devices(spec))
	if err != nil {
		return err
	}
	var devices []resourcev1.Device
	for _, set := range sets {
		if set.Driver != driver {
			continue
		}
		attached := set.Devices
		if set.OnRequest {
			attached = attached[:min(len(attached), s.efaLaunched(node.Spec.ProviderID))]
		}
		devices = running(driver, nodeName, attached)
	}
	if len(devices) == 0 {
		return nil // no such device on the node: the plugin has nothing to publish
	}
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: nodeName + "-" + driver + "-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}}},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(nodeName), Devices: devices,
			Pool: resourcev1.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1}},
	}
	s.Log.V(1).Info("DRA driver published devices", "driver", driver, "Node", nodeName, "devices", len(devices))
	if err := s.Kube.Create(ctx, slice); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("publishing %s's devices of %s: %w", driver, nodeName, err)
	}
	return nil
}

// efaLaunched is how many EFA interfaces the node's instance was launched
// with: DRANET publishes a device for each of them only.
func (s *Simulator) efaLaunched(providerID string) int {
	for _, inst := range s.Account.Instances() {
		if strings.HasSuffix(providerID, "/"+aws.ToString(inst.InstanceId)) {
			return efaInterfaces(inst)
		}
	}
	return 0
}

// efaInterfaces counts the EFA interfaces an instance was launched with.
func efaInterfaces(inst simaws.Instance) int {
	n := 0
	for _, ni := range inst.Launched.NetworkInterfaces {
		if t := aws.ToString(ni.InterfaceType); t == "efa" || t == "efa-only" {
			n++
		}
	}
	return n
}

// overlaid are a node's devices with those the NodeOverlays selecting it
// declare: the simulated hardware has what the user says it has.
func (s *Simulator) overlaid(ctx context.Context, labels map[string]string, catalog []scheduling.DeviceSet) ([]scheduling.DeviceSet, error) {
	list := &v1alpha1.NodeOverlayList{}
	if err := s.reader().List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return catalog, nil
		}
		return nil, err
	}
	overlays := make([]*v1alpha1.NodeOverlay, 0, len(list.Items))
	for i := range list.Items {
		overlays = append(overlays, &list.Items[i])
	}
	return state.OverlaidDevices(labels, catalog, state.SortOverlays(overlays)), nil
}

// running adds to the catalog's devices what the driver reads from the
// hardware: a UUID per GPU and the driver's versions.
func running(driver, node string, devices []resourcev1.Device) []resourcev1.Device {
	out := make([]resourcev1.Device, 0, len(devices))
	for _, d := range devices {
		d = *d.DeepCopy()
		if driver == instancetypes.NVIDIADriver {
			sum := sha256.Sum256([]byte(node + "/" + d.Name))
			d.Attributes["uuid"] = resourcev1.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("GPU-%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))}
			d.Attributes["driverVersion"] = resourcev1.DeviceAttribute{VersionValue: ptr.To(draDriverVersion)}
		}
		out = append(out, d)
	}
	return out
}
