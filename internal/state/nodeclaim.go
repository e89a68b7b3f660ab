package state

import (
	"encoding/json"
	"hash/fnv"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Drift annotations: the hash of the NodePool template and of the
// EC2NodeClass a NodeClaim was made from, each with the version of the
// hashing, so that a new version of nodewright that hashes differently
// restamps instead of reporting drift.
const (
	AnnotationNodePoolHash            = v1.Group + "/nodepool-hash"
	AnnotationNodePoolHashVersion     = v1.Group + "/nodepool-hash-version"
	AnnotationEC2NodeClassHash        = awsv1.Group + "/ec2nodeclass-hash"
	AnnotationEC2NodeClassHashVersion = awsv1.Group + "/ec2nodeclass-hash-version"
	// HashVersion is the version of both hashes. It differs from every
	// version the reference stamps (v1 to v6), so that NodeClaims it made
	// are restamped when nodewright takes them over, never compared with
	// hashes made another way.
	HashVersion = "nodewright-v1"
)

// ForeignHashes reports a NodeClaim whose drift hashes another hashing
// stamped.
func ForeignHashes(nc *v1.NodeClaim) bool {
	for _, key := range []string{AnnotationNodePoolHashVersion, AnnotationEC2NodeClassHashVersion} {
		if v, ok := nc.Annotations[key]; ok && v != HashVersion {
			return true
		}
	}
	return false
}

// Restamp adopts a NodeClaim whose hashes another hashing made (an
// earlier nodewright, or the reference's, whose NodeClaims nodewright
// takes over): unless it is already drifted, the NodePool and
// EC2NodeClass as they are now are what it was made from, so it drifts
// on their next change and not on the difference between two hashings.
// It reports whether it changed the NodeClaim's annotations.
func Restamp(nc *v1.NodeClaim, np *v1.NodePool, class *awsv1.EC2NodeClass) bool {
	if meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionDrifted) {
		return false
	}
	changed := false
	set := func(hashKey, versionKey, hash string) {
		if nc.Annotations[versionKey] == HashVersion {
			return
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[hashKey], nc.Annotations[versionKey] = hash, HashVersion
		changed = true
	}
	if np != nil {
		set(AnnotationNodePoolHash, AnnotationNodePoolHashVersion, NodePoolHash(np))
	}
	if class != nil {
		set(AnnotationEC2NodeClassHash, AnnotationEC2NodeClassHashVersion, EC2NodeClassHash(class))
	}
	return changed
}

// NodePoolHash hashes what a NodePool's nodes are made from: the
// template's labels, annotations, taints, startup taints and node class.
// Requirements are checked on their own (a node drifts only when they no
// longer admit it); expireAfter and terminationGracePeriod apply to
// existing NodeClaims as they are and do not replace nodes.
func NodePoolHash(np *v1.NodePool) string {
	t := np.Spec.Template
	return hash(struct {
		Labels, Annotations map[string]string
		Taints, Startup     []corev1.Taint
		NodeClassRef        *v1.NodeClassReference
	}{t.ObjectMeta.Labels, t.ObjectMeta.Annotations, t.Spec.Taints, t.Spec.StartupTaints, t.Spec.NodeClassRef})
}

// EC2NodeClassHash hashes the EC2NodeClass fields that shape an instance
// directly. The selector terms are not hashed: what they select (AMIs,
// subnets, security groups) is compared with what the instance has.
func EC2NodeClassHash(class *awsv1.EC2NodeClass) string {
	spec := class.Spec.DeepCopy()
	spec.SubnetSelectorTerms, spec.SecurityGroupSelectorTerms, spec.AMISelectorTerms, spec.CapacityReservationSelectorTerms = nil, nil, nil, nil
	return hash(spec)
}

func hash(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain API structs always marshal
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return strconv.FormatUint(h.Sum64(), 10)
}

// NodePoolOwner makes a NodeClaim the NodePool's: deleting the NodePool deletes
// its NodeClaims (and, through their finalizers, nodes and instances), as
// the reference's do. None for a NodePool read from a file (no UID).
func NodePoolOwner(np *v1.NodePool) []metav1.OwnerReference {
	if np.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID, BlockOwnerDeletion: ptr.To(true)}}
}

// NodeClaimFor makes the NodeClaim of a planned node: the NodePool's
// template labels, annotations, taints and limits of time, the planned
// requirements (with the template's minValues) and requests, and the
// hashes that drift is measured against.
func NodeClaimFor(np *v1.NodePool, class *awsv1.EC2NodeClass, planned *scheduling.PlannedNodeClaim) *v1.NodeClaim {
	labels := map[string]string{v1.LabelNodePool: np.Name}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		labels[k] = v
	}
	annotations := map[string]string{AnnotationNodePoolHash: NodePoolHash(np), AnnotationNodePoolHashVersion: HashVersion}
	if class != nil {
		annotations[AnnotationEC2NodeClassHash] = EC2NodeClassHash(class)
		annotations[AnnotationEC2NodeClassHashVersion] = HashVersion
	}
	for k, v := range np.Spec.Template.ObjectMeta.Annotations {
		annotations[k] = v
	}
	minValues := map[string]*int{}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.MinValues != nil {
			minValues[r.Key] = r.MinValues
		}
	}
	selectors := planned.Requirements.NodeSelectorRequirements()
	reqs := make([]v1.NodeSelectorRequirementWithMinValues, 0, len(selectors))
	for _, r := range selectors {
		reqs = append(reqs, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: minValues[r.Key]})
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: np.Name + "-", Labels: labels, Annotations: annotations, OwnerReferences: NodePoolOwner(np)},
		Spec: v1.NodeClaimSpec{
			Requirements:           reqs,
			Resources:              v1.ResourceRequirements{Requests: planned.Requests.List()},
			Taints:                 np.Spec.Template.Spec.Taints,
			StartupTaints:          np.Spec.Template.Spec.StartupTaints,
			NodeClassRef:           np.Spec.Template.Spec.NodeClassRef,
			ExpireAfter:            np.Spec.Template.Spec.ExpireAfter,
			TerminationGracePeriod: np.Spec.Template.Spec.TerminationGracePeriod,
		},
	}
}
