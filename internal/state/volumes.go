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
	attach := func(driver, id string) {
		if driver == "" {
			return
		}
		if vt == nil {
			vt = &scheduling.VolumeTopology{}
		}
		if vt.Attach == nil {
			vt.Attach = map[string][]string{}
		}
		vt.Attach[driver] = append(vt.Attach[driver], id)
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
		claimRef := p.Namespace + "/" + claimName
		switch {
		case claim == nil && vol.Ephemeral == nil:
			return refuse(fmt.Sprintf("PersistentVolumeClaim %s of volume %s does not exist", claimRef, vol.Name))
		case claim != nil && !claim.DeletionTimestamp.IsZero():
			return refuse(fmt.Sprintf("PersistentVolumeClaim %s of volume %s is being deleted", claimRef, vol.Name))
		case claim != nil && claim.Status.Phase == corev1.ClaimLost:
			return refuse(fmt.Sprintf("PersistentVolumeClaim %s of volume %s is Lost: the volume it was bound to is gone; recreate the claim", claimRef, vol.Name))
		case claim != nil && claim.Spec.VolumeName != "":
			if !bindCompleted(claim) {
				return refuse(fmt.Sprintf("PersistentVolumeClaim %s names PersistentVolume %s, but their binding is not complete (no %s annotation): the volume controller finishes it first",
					claimRef, claim.Spec.VolumeName, annBindCompleted))
			}
			pv := v.pvs[claim.Spec.VolumeName]
			if pv == nil {
				return refuse(fmt.Sprintf("PersistentVolume %s of claim %s does not exist", claim.Spec.VolumeName, claimRef))
			}
			if !pv.DeletionTimestamp.IsZero() {
				return refuse(fmt.Sprintf("PersistentVolume %s of claim %s is being deleted", pv.Name, claimRef))
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
				alternatives := nodeSelectorAlternatives(pv.Spec.NodeAffinity.Required.NodeSelectorTerms)
				if pv.Spec.Local != nil || pv.Spec.HostPath != nil {
					// A node's own disk names the node by hostname, which
					// no new node can have: as the reference does, the
					// hostname is left to kube-scheduler and the rest of
					// each term still counts.
					for _, alt := range alternatives {
						delete(alt, scheduling.LabelHostname)
					}
				}
				add(alternatives)
			}
			attach(driverOf(pv), pv.Name)
			continue
		case claim != nil:
			className = claim.Spec.StorageClassName
		}
		// Not bound yet: the claim's class makes its volume.
		class := v.defaultClass
		if className != nil {
			class = v.classes[*className]
		}
		switch {
		case className != nil && *className == "":
			return refuse(fmt.Sprintf("claim %s of volume %s is not bound and names no StorageClass (storageClassName \"\"): it waits for a PersistentVolume made for it", claimRef, vol.Name))
		case class == nil && className != nil:
			return refuse(fmt.Sprintf("claim %s of volume %s is not bound and its StorageClass %s does not exist", claimRef, vol.Name, *className))
		case class == nil:
			return refuse(fmt.Sprintf("claim %s of volume %s is not bound and names no StorageClass, and no class is the default: it waits for a PersistentVolume made for it", claimRef, vol.Name))
		case class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer:
			return refuse(fmt.Sprintf("claim %s of volume %s is not bound, and StorageClass %s binds Immediately: its volume is made before the pod is scheduled", claimRef, vol.Name, class.Name))
		}
		if len(class.AllowedTopologies) > 0 {
			add(topologyAlternatives(class.AllowedTopologies))
		}
		attach(class.Provisioner, claimRef)
	}
	return vt
}

// annBindCompleted marks a claim whose binding to its volume the volume
// controller has finished; until then kube-scheduler does not take the
// claim as bound.
const annBindCompleted = "pv.kubernetes.io/bind-completed"

// bindCompleted reports a claim bound to its volume: the annotation, or
// (for manifests written by hand) the Bound phase.
func bindCompleted(c *corev1.PersistentVolumeClaim) bool {
	_, ok := c.Annotations[annBindCompleted]
	return ok || c.Status.Phase == corev1.ClaimBound
}

// driverOf is the CSI driver that attaches a volume; in-tree EBS volumes
// are attached by the EBS CSI driver they migrate to.
func driverOf(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.CSI != nil:
		return pv.Spec.CSI.Driver
	case pv.Spec.AWSElasticBlockStore != nil:
		return ebsCSIDriver
	}
	return ""
}

const ebsCSIDriver = "ebs.csi.aws.com"

// attachLimits are a node's attach limits per CSI driver, from its
// CSINode; nil when it reports none.
func attachLimits(csi *storagev1.CSINode) map[string]int {
	if csi == nil {
		return nil
	}
	var out map[string]int
	for _, d := range csi.Spec.Drivers {
		if d.Allocatable == nil || d.Allocatable.Count == nil {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[d.Name] = int(*d.Allocatable.Count)
	}
	return out
}

// attached are the volumes a node's pods have attached, by driver.
func (v *volumes) attached(pods []*corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for _, p := range pods {
		if vt := v.ofPod(p); vt != nil {
			for driver, ids := range vt.Attach {
				out[driver] = append(out[driver], ids...)
			}
		}
	}
	return out
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
