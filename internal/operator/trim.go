package operator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// trim is the cache's transform: every object loses its managed fields
// (no controller reads them; a third of a pod's size), and a pod keeps
// of its containers only what decides where it fits (name, resources,
// host ports, restart policy: sidecars), of its volumes only those of a
// PersistentVolumeClaim (their topology decides where it fits), no
// container statuses and no kubectl last-applied-configuration. At tens
// of thousands of pods the rest (images, commands, environment, probes,
// mounts, service account token volumes) is most of what the controller
// would hold in memory.
func trim(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if pod, ok := obj.(*corev1.Pod); ok {
		trimPod(pod)
	}
	return obj, err
}

func trimPod(p *corev1.Pod) {
	for _, containers := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range containers {
			c := &containers[i]
			*c = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy,
				Ports: slices.DeleteFunc(c.Ports, func(port corev1.ContainerPort) bool { return port.HostPort == 0 })}
		}
	}
	p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim == nil && v.Ephemeral == nil })
	delete(p.Annotations, corev1.LastAppliedConfigAnnotation)
	p.Spec.EphemeralContainers = nil
	p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.EphemeralContainerStatuses = nil, nil, nil
}
