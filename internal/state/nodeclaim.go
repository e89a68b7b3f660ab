package state

import (
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mitchellh/hashstructure/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Drift annotations: the hash of the NodePool template a NodeClaim was
// made from, with the version of the hashing, so that a new version of
// nodewright that hashes differently restamps instead of reporting drift.
// The node class's hash is its cloud's (cloudprovider.Stamp).
const (
	AnnotationNodePoolHash        = v1.Group + "/nodepool-hash"
	AnnotationNodePoolHashVersion = v1.Group + "/nodepool-hash-version"
	// HashVersion is the version of the NodePool hash: the reference's
	// own (karpenter.sh v1.15's NodePoolHashVersion), as the hash is its
	// value (TestStaticDriftAsTheReference compares them), so the stamps
	// of NodeClaims it made are read as they are, and its controller reads
	// nodewright's. Stamps of another version (an earlier nodewright's,
	// nodewright-v1 to nodewright-v3) are restamped, never compared.
	HashVersion = "v3"
)

// ForeignHashes reports a NodeClaim whose drift hashes another hashing
// stamped: the NodePool's, or its class's (nil: not known).
func ForeignHashes(nc *v1.NodeClaim, class *cloudprovider.NodeClass) bool {
	if v, ok := nc.Annotations[AnnotationNodePoolHashVersion]; ok && v != HashVersion {
		return true
	}
	if class == nil || class.Stamp.VersionAnnotation == "" {
		return false
	}
	v, ok := nc.Annotations[class.Stamp.VersionAnnotation]
	return ok && v != class.Stamp.Version
}

// Restamp adopts a NodeClaim whose hashes another hashing made (an
// earlier nodewright, or the reference's, whose NodeClaims nodewright
// takes over): unless it is already drifted, the NodePool and
// EC2NodeClass as they are now are what it was made from, so it drifts
// on their next change and not on the difference between two hashings.
// It reports whether it changed the NodeClaim's annotations.
func Restamp(nc *v1.NodeClaim, np *v1.NodePool, class *cloudprovider.NodeClass) bool {
	if meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionDrifted) {
		return false
	}
	changed := false
	set := func(s cloudprovider.Stamp) {
		if s.HashAnnotation == "" || nc.Annotations[s.VersionAnnotation] == s.Version {
			return
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[s.HashAnnotation], nc.Annotations[s.VersionAnnotation] = s.Hash, s.Version
		changed = true
	}
	if np != nil {
		set(NodePoolStamp(np))
	}
	if class != nil {
		set(class.Stamp)
	}
	return changed
}

// NodePoolHash hashes what a NodePool's nodes are made from, as the
// reference's template hash takes it: the template's labels,
// annotations, taints, startup taints, node class, expireAfter and
// terminationGracePeriod (a change of either replaces the nodes made
// before it, which carry the old values). Requirements are checked on
// their own (a node drifts only when they no longer admit it).
func NodePoolHash(np *v1.NodePool) string {
	t := np.Spec.Template
	// "Never" is hashed as unset, as the reference reads it.
	expire := NillableDuration{}
	if d, never, err := t.Spec.ExpireAfter.Parse(); err == nil && !never {
		expire.Duration, expire.raw = &d, string(t.Spec.ExpireAfter)
	}
	var ref *NodeClassReference
	if r := t.Spec.NodeClassRef; r != nil {
		ref = &NodeClassReference{Kind: r.Kind, Name: r.Name, Group: r.Group}
	}
	return DriftHash(NodeClaimTemplate{
		ObjectMeta: ObjectMeta{Labels: t.ObjectMeta.Labels, Annotations: t.ObjectMeta.Annotations},
		Spec: NodeClaimTemplateSpec{Taints: t.Spec.Taints, StartupTaints: t.Spec.StartupTaints, NodeClassRef: ref,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod, ExpireAfter: expire},
	})
}

// The shapes the reference's NodePool hash walks, by its type and field
// names, fields in its order (the hash takes all three): the same
// template hashes to the same value, so its NodeClaims' stamps are read
// as they are.
type (
	// NodeClaimTemplate is the hashed part of a NodePool's template.
	NodeClaimTemplate struct {
		ObjectMeta
		Spec NodeClaimTemplateSpec
	}
	// ObjectMeta is the template metadata the hash takes.
	ObjectMeta struct {
		Labels, Annotations map[string]string
	}
	// NodeClaimTemplateSpec is the template spec the hash takes.
	NodeClaimTemplateSpec struct {
		Taints, StartupTaints  []corev1.Taint
		NodeClassRef           *NodeClassReference
		TerminationGracePeriod *metav1.Duration
		ExpireAfter            NillableDuration
	}
	// NodeClassReference names the template's node class.
	NodeClassReference struct {
		Kind, Name, Group string
	}
	// NillableDuration is a duration, or unset (zero, not hashed) for
	// "Never"; raw keeps a set one non-zero, as the reference's keeps
	// what it read (a field the hash skips).
	NillableDuration struct {
		*time.Duration
		raw string
	}
)

// CustomLabels are the labels a NodeClaim carries from its requirements
// on labels no instance type or cloud sets (a team, a workload): a value
// each allows (the first of an In's, a number for Exists or NotIn), as
// the reference resolves them when it makes a NodeClaim. Its node gets
// them too, so the pods that select them land there, and the NodePool's
// requirements keep admitting it.
func CustomLabels(reqs scheduling.Requirements) map[string]string {
	out := map[string]string{}
	for key, r := range reqs {
		if setByTheCloud(key) {
			continue
		}
		if v, ok := r.Value(); ok {
			out[key] = v
		}
	}
	return out
}

// setByTheCloud: labels the instance type, its offering or the lifecycle
// set (Karpenter's well-known and restricted labels), which a NodeClaim's
// requirements do not resolve.
func setByTheCloud(key string) bool {
	switch key {
	case v1.LabelNodePool, v1.LabelCapacityType, corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelInstanceTypeStable,
		corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelWindowsBuild, corev1.LabelHostname, "topology.k8s.aws/zone-id",
		corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion, corev1.LabelInstanceType, "beta.kubernetes.io/arch", "beta.kubernetes.io/os":
		return true
	}
	return strings.HasPrefix(key, "karpenter.sh/") || strings.HasPrefix(key, "karpenter.k8s.aws/")
}

// DriftHash hashes a value as the reference hashes the objects drift is
// measured against (hashstructure's FormatV2): lists as sets, a zero
// value as its absence, fields tagged hash:"ignore" left out.
func DriftHash(v any) string {
	h, err := hashstructure.Hash(v, hashstructure.FormatV2, &hashstructure.HashOptions{SlicesAsSets: true, IgnoreZeroValue: true, ZeroNil: true})
	if err != nil {
		panic(err) // plain API structs always hash
	}
	return strconv.FormatUint(h, 10)
}

// NodePoolStamp is the NodePool hash a NodeClaim made from it carries.
func NodePoolStamp(np *v1.NodePool) cloudprovider.Stamp {
	return cloudprovider.Stamp{HashAnnotation: AnnotationNodePoolHash, VersionAnnotation: AnnotationNodePoolHashVersion, Hash: NodePoolHash(np), Version: HashVersion}
}

// Hash is the hash of a value's JSON: the hashes stamped on NodeClaims.
func Hash(v any) string {
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
func NodeClaimFor(np *v1.NodePool, class *cloudprovider.NodeClass, planned *scheduling.PlannedNodeClaim) *v1.NodeClaim {
	labels := CustomLabels(planned.Requirements)
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		labels[k] = v
	}
	labels[v1.LabelNodePool] = np.Name
	annotations := map[string]string{AnnotationNodePoolHash: NodePoolHash(np), AnnotationNodePoolHashVersion: HashVersion}
	if class != nil && class.Stamp.HashAnnotation != "" {
		annotations[class.Stamp.HashAnnotation] = class.Stamp.Hash
		annotations[class.Stamp.VersionAnnotation] = class.Stamp.Version
	}
	if prices := cloudprovider.PricesOf(planned.InstanceTypes); prices != nil {
		annotations[cloudprovider.AnnotationDecidedPrices] = prices.Encode()
	}
	if devices := planned.Requests.Devices(); len(devices) > 0 {
		annotations[v1.AnnotationRequestedDRADrivers] = strings.Join(slices.Sorted(maps.Keys(devices)), ",")
	}
	for k, v := range np.Spec.Template.ObjectMeta.Annotations {
		annotations[k] = v
	}
	minValues := map[string]*int{}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.MinValues != nil {
			minValues[r.Key] = r.MinValues
			if relaxed, ok := planned.Requirements[r.Key]; ok && planned.MinValuesRelaxed != "" && relaxed.MinValues < *r.MinValues {
				// The CRD's least minValues is 1: a key no type offers
				// has none.
				minValues[r.Key] = nil
				if relaxed.MinValues > 0 {
					minValues[r.Key] = ptr.To(relaxed.MinValues)
				}
			}
		}
	}
	annotations[v1.AnnotationMinValuesRelaxed] = strconv.FormatBool(planned.MinValuesRelaxed != "")
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
