package state

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// volumeKeys are topology keys of volumes that mean a node label under
// another name: the EBS CSI driver's zone, and the deprecated zone and
// region of in-tree volumes.
var volumeKeys = map[string]string{
	"topology.ebs.csi.aws.com/zone":     scheduling.LabelZone,
	corev1.LabelFailureDomainBetaZone:   scheduling.LabelZone,
	corev1.LabelFailureDomainBetaRegion: scheduling.LabelRegion,
}

// volumes holds the claims, volumes and classes pods' volumes refer to.
type volumes struct {
	claims       map[types.NamespacedName]*corev1.PersistentVolumeClaim
	pvs          map[string]*corev1.PersistentVolume
	classes      map[string]*storagev1.StorageClass
	defaultClass *storagev1.StorageClass
}

func newVolumes(o Objects) *volumes {
	v := &volumes{claims: map[types.NamespacedName]*corev1.PersistentVolumeClaim{}, pvs: map[string]*corev1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{}}
	for _, c := range o.PVCs {
		v.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
	}
	for _, pv := range o.PVs {
		v.pvs[pv.Name] = pv
	}
	for _, sc := range o.StorageClasses {
		v.classes[sc.Name] = sc
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			v.defaultClass = sc
		}
	}
	return v
}

// topology is what the pods' persistent volumes require of their nodes,
// for the pods that have any.
func (v *volumes) topology(pods []*corev1.Pod) map[*corev1.Pod]*scheduling.VolumeTopology {
	var out map[*corev1.Pod]*scheduling.VolumeTopology
	for _, p := range pods {
		vt := v.ofPod(p)
		if vt == nil {
			continue
		}
		if out == nil {
			out = map[*corev1.Pod]*scheduling.VolumeTopology{}
		}
		out[p] = vt
	}
	return out
}

// ofPod is what one pod's volumes require: for a claim bound to a
// volume, the volume's node affinity; for one not bound yet, the allowed
// topologies of its StorageClass (with WaitForFirstConsumer the volume is
// made where the pod goes).
func (v *volumes) ofPod(p *corev1.Pod) *scheduling.VolumeTopology {
	var vt *scheduling.VolumeTopology
	add := func(alternatives []scheduling.Requirements) {
		if len(alternatives) == 0 {
			return
		}
		if vt == nil {
			vt = &scheduling.VolumeTopology{}
		}
		vt.Terms = append(vt.Terms, alternatives)
	}
	refuse := func(why string) *scheduling.VolumeTopology {
		return &scheduling.VolumeTopology{Refused: why}
	}
	for _, vol := range p.Spec.Volumes {
		var claimName string
		var className *string
		switch {
		case vol.PersistentVolumeClaim != nil:
			claimName = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil:
			claimName = p.Name + "-" + vol.Name
			className = vol.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName
		default:
			continue
		}
		claim := v.claims[types.NamespacedName{Namespace: p.Namespace, Name: claimName}]
		switch {
		case claim == nil && vol.Ephemeral == nil:
			return refuse(fmt.Sprintf("PersistentVolumeClaim %s/%s of volume %s does not exist", p.Namespace, claimName, vol.Name))
		case claim != nil && claim.Spec.VolumeName != "":
			pv := v.pvs[claim.Spec.VolumeName]
			if pv == nil {
				return refuse(fmt.Sprintf("PersistentVolume %s of claim %s/%s does not exist", claim.Spec.VolumeName, p.Namespace, claimName))
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
				add(nodeSelectorAlternatives(pv.Spec.NodeAffinity.Required.NodeSelectorTerms))
			}
			continue
		case claim != nil:
			className = claim.Spec.StorageClassName
		}
		class := v.defaultClass
		if className != nil {
			class = v.classes[*className]
		}
		if class != nil && len(class.AllowedTopologies) > 0 {
			add(topologyAlternatives(class.AllowedTopologies))
		}
	}
	return vt
}

func nodeSelectorAlternatives(terms []corev1.NodeSelectorTerm) []scheduling.Requirements {
	out := make([]scheduling.Requirements, 0, len(terms))
	for _, t := range terms {
		reqs := scheduling.Requirements{}
		for _, e := range t.MatchExpressions {
			reqs.Add(scheduling.NewRequirement(volumeKey(e.Key), e.Operator, e.Values...))
		}
		out = append(out, reqs)
	}
	return out
}

func topologyAlternatives(terms []corev1.TopologySelectorTerm) []scheduling.Requirements {
	out := make([]scheduling.Requirements, 0, len(terms))
	for _, t := range terms {
		reqs := scheduling.Requirements{}
		for _, e := range t.MatchLabelExpressions {
			reqs.Add(scheduling.NewRequirement(volumeKey(e.Key), corev1.NodeSelectorOpIn, e.Values...))
		}
		out = append(out, reqs)
	}
	return out
}

// volumeKey is the node label a volume topology key means.
func volumeKey(key string) string {
	if k, ok := volumeKeys[key]; ok {
		return k
	}
	return key
}
