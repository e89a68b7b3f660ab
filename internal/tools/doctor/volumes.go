package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// volumesApart says when a pod's bound PersistentVolumes are in zones
// no one node is in (EBS volumes attach in their own zone): the pod
// fits no node whatever the NodePools say, and what to change.
func volumesApart(o *whatif.Objects, pod *corev1.Pod) (string, string, bool) {
	pvs := map[string]*corev1.PersistentVolume{}
	for _, pv := range o.PVs {
		pvs[pv.Name] = pv
	}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range o.PVCs {
		claims[c.Namespace+"/"+c.Name] = c
	}
	var common map[string]bool
	var parts []string
	classes := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c := claims[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]
		if c == nil || c.Spec.VolumeName == "" || pvs[c.Spec.VolumeName] == nil {
			continue
		}
		zones := volumeZones(pvs[c.Spec.VolumeName])
		if zones == nil {
			continue
		}
		if c.Spec.StorageClassName != nil {
			classes[*c.Spec.StorageClassName] = true
		}
		parts = append(parts, fmt.Sprintf("%s in %s", c.Spec.VolumeName, strings.Join(slices.Sorted(maps.Keys(zones)), ", ")))
		if common == nil {
			common = zones
			continue
		}
		for z := range common {
			if !zones[z] {
				delete(common, z)
			}
		}
	}
	if common == nil || len(common) > 0 || len(parts) < 2 {
		return "", "", false
	}
	why := fmt.Sprintf("its PersistentVolumes are in different zones (%s), and a node, in one zone, can attach only the volumes of its own", strings.Join(parts, "; "))
	fix := "make the pod's volumes in one zone: set the StorageClass's volumeBindingMode to WaitForFirstConsumer, so each volume is made in the zone of the node the pod is scheduled to, and make the claims again (or move one volume's data, from a snapshot, to the others' zone)"
	if len(classes) > 0 {
		fix = fmt.Sprintf("make the pod's volumes in one zone: set StorageClass %s's volumeBindingMode to WaitForFirstConsumer, so each volume is made in the zone of the node the pod is scheduled to, and make the claims again (or move one volume's data, from a snapshot, to the others' zone)", strings.Join(slices.Sorted(maps.Keys(classes)), ", "))
	}
	return why, fix, true
}

// volumeZones are the zones a PersistentVolume's node affinity admits;
// nil when it says none.
func volumeZones(pv *corev1.PersistentVolume) map[string]bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out map[string]bool
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if (e.Key == corev1.LabelTopologyZone || e.Key == corev1.LabelFailureDomainBetaZone || e.Key == "topology.ebs.csi.aws.com/zone") && e.Operator == corev1.NodeSelectorOpIn {
				if out == nil {
					out = map[string]bool{}
				}
				for _, z := range e.Values {
					out[z] = true
				}
			}
		}
	}
	return out
}
