package operator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "github.com/nodewright/nodewright/api/v1"
)

// newTrim makes the cache's transform: every object loses its managed fields
// (no controller reads them; a third of a pod's size), and a pod keeps
// of its containers only what decides where it fits (name, resources,
// host ports, restart policy: sidecars), of its volumes only those of a
// PersistentVolumeClaim (their topology decides where it fits), no
// container statuses, no kubectl last-applied-configuration, no security
// context or IP addresses, and of its conditions only PodScheduled (where
// kube-scheduler left it) and Ready (the pods' metrics). At tens of
// thousands of pods the rest (images, commands, environment, probes,
// mounts, service account token volumes) is most of what the controller
// would hold in memory. Pods share the parts they hold equal, and
// NodeClaims their requirements' equal value lists (sharedParts).
func newTrim() toolscache.TransformFunc {
	parts := &sharedParts{}
	return func(obj any) (any, error) {
		obj, err := cache.TransformStripManagedFields()(obj)
		switch o := obj.(type) {
		case *corev1.Pod:
			trimPod(o)
			parts.pod(o)
		case *v1.NodeClaim:
			parts.nodeClaim(o)
		}
		return obj, err
	}
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
	p.Spec.SecurityContext = nil
	p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, p.Status.HostIPs = "", nil, "", nil
	p.Status.Conditions = readConditions(p.Status.Conditions)
}

// readConditions are a pod's PodScheduled and Ready conditions, in a
// slice of their own: the decoded slice's room for the others goes.
func readConditions(all []corev1.PodCondition) []corev1.PodCondition {
	read := func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled || c.Type == corev1.PodReady }
	n := 0
	for _, c := range all {
		if read(c) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	kept := make([]corev1.PodCondition, 0, n)
	for _, c := range all {
		if read(c) {
			kept = append(kept, c)
		}
	}
	return kept
}
