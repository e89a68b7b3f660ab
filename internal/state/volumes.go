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
	var acc topologyOf
	for _, vol := range p.Spec.Volumes {
		claimName, className, ok := claimOfVolume(p, vol)
		if !ok {
			continue
		}
		ref := volumeClaim{vol: vol.Name, ref: p.Namespace + "/" + claimName, ephemeral: vol.Ephemeral != nil}
		claim := v.claims[types.NamespacedName{Namespace: p.Namespace, Name: claimName}]
		if why := ref.unusable(claim); why != "" {
			return &scheduling.VolumeTopology{Refused: why}
		}
		if claim != nil && claim.Spec.VolumeName != "" {
			if why := v.bound(&acc, ref, claim); why != "" {
				return &scheduling.VolumeTopology{Refused: why}
			}
			continue
		}
		if claim != nil {
			className = claim.Spec.StorageClassName
		}
		if why := v.unbound(&acc, ref, className); why != "" {
			return &scheduling.VolumeTopology{Refused: why}
		}
	}
	return acc.vt
}

// topologyOf gathers a pod's volume topology as its volumes are read.
type topologyOf struct{ vt *scheduling.VolumeTopology }

func (t *topologyOf) get() *scheduling.VolumeTopology {
	if t.vt == nil {
		t.vt = &scheduling.VolumeTopology{}
	}
	return t.vt
}

// add requires one of the alternatives (none: nothing).
func (t *topologyOf) add(alternatives []scheduling.Requirements) {
	if len(alternatives) > 0 {
		t.get().Terms = append(t.get().Terms, alternatives)
	}
}

// attach counts a volume of the CSI driver against the node's limit.
func (t *topologyOf) attach(driver, id string) {
	if driver == "" {
		return
	}
	vt := t.get()
	if vt.Attach == nil {
		vt.Attach = map[string][]string{}
	}
	vt.Attach[driver] = append(vt.Attach[driver], id)
}

// claimOfVolume names the claim a volume uses (and an ephemeral volume's
// class); false for a volume without a claim.
func claimOfVolume(p *corev1.Pod, vol corev1.Volume) (string, *string, bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, nil, true
	case vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil:
		return p.Name + "-" + vol.Name, vol.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName, true
	}
	return "", nil, false
}

// volumeClaim is a pod volume's claim, for what is said about it.
type volumeClaim struct {
	vol, ref  string
	ephemeral bool
}

// unusable says why a claim keeps the pod off every node: missing (an
// ephemeral volume's is made with the pod), being deleted, or lost.
func (c volumeClaim) unusable(claim *corev1.PersistentVolumeClaim) string {
	switch {
	case claim == nil && !c.ephemeral:
		return fmt.Sprintf("PersistentVolumeClaim %s of volume %s does not exist", c.ref, c.vol)
	case claim != nil && !claim.DeletionTimestamp.IsZero():
		return fmt.Sprintf("PersistentVolumeClaim %s of volume %s is being deleted", c.ref, c.vol)
	case claim != nil && claim.Status.Phase == corev1.ClaimLost:
		return fmt.Sprintf("PersistentVolumeClaim %s of volume %s is Lost: the volume it was bound to is gone; recreate the claim", c.ref, c.vol)
	}
	return ""
}

// bound adds what a claim bound to a volume requires: the volume's node
// affinity, and its attachment; or says why the pod waits.
func (v *volumes) bound(acc *topologyOf, c volumeClaim, claim *corev1.PersistentVolumeClaim) string {
	if !bindCompleted(claim) {
		return fmt.Sprintf("PersistentVolumeClaim %s names PersistentVolume %s, but their binding is not complete (no %s annotation): the volume controller finishes it first",
			c.ref, claim.Spec.VolumeName, annBindCompleted)
	}
	pv := v.pvs[claim.Spec.VolumeName]
	switch {
	case pv == nil:
		return fmt.Sprintf("PersistentVolume %s of claim %s does not exist", claim.Spec.VolumeName, c.ref)
	case !pv.DeletionTimestamp.IsZero():
		return fmt.Sprintf("PersistentVolume %s of claim %s is being deleted", pv.Name, c.ref)
	}
	acc.add(volumeAlternatives(pv))
	acc.attach(driverOf(pv), pv.Name)
	return ""
}

// volumeAlternatives are the node terms a volume's node affinity allows.
// A node's own disk names the node by hostname, which no new node can
// have: as the reference does, the hostname is left to kube-scheduler
// and the rest of each term still counts.
func volumeAlternatives(pv *corev1.PersistentVolume) []scheduling.Requirements {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	alternatives := nodeSelectorAlternatives(pv.Spec.NodeAffinity.Required.NodeSelectorTerms)
	if pv.Spec.Local != nil || pv.Spec.HostPath != nil {
		for _, alt := range alternatives {
			delete(alt, scheduling.LabelHostname)
		}
	}
	return alternatives
}

// unbound adds what a claim not bound yet requires: its class makes its
// volume where the pod goes (WaitForFirstConsumer), within the class's
// allowed topologies; or says why the pod waits.
func (v *volumes) unbound(acc *topologyOf, c volumeClaim, className *string) string {
	class := v.defaultClass
	if className != nil {
		class = v.classes[*className]
	}
	switch {
	case className != nil && *className == "":
		return fmt.Sprintf("claim %s of volume %s is not bound and names no StorageClass (storageClassName \"\"): it waits for a PersistentVolume made for it", c.ref, c.vol)
	case class == nil && className != nil:
		return fmt.Sprintf("claim %s of volume %s is not bound and its StorageClass %s does not exist", c.ref, c.vol, *className)
	case class == nil:
		return fmt.Sprintf("claim %s of volume %s is not bound and names no StorageClass, and no class is the default: it waits for a PersistentVolume made for it", c.ref, c.vol)
	case class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer:
		return fmt.Sprintf("claim %s of volume %s is not bound, and StorageClass %s binds Immediately: its volume is made before the pod is scheduled", c.ref, c.vol, class.Name)
	}
	if len(class.AllowedTopologies) > 0 {
		acc.add(topologyAlternatives(class.AllowedTopologies))
	}
	acc.attach(class.Provisioner, c.ref)
	return ""
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
