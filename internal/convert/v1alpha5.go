package convert

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Karpenter v0.31 and earlier: karpenter.sh/v1alpha5 Provisioners and
// karpenter.k8s.aws/v1alpha1 AWSNodeTemplates, converted to v1beta1 by
// the mapping of the v0.32 upgrade guide, then to v1.

type provisioner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              provisionerSpec `json:"spec"`
	Status            any             `json:"status,omitempty"`
}

type provisionerSpec struct {
	Annotations            map[string]string    `json:"annotations,omitempty"`
	Labels                 map[string]string    `json:"labels,omitempty"`
	Taints                 []corev1.Taint       `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint       `json:"startupTaints,omitempty"`
	Requirements           []requirementV1beta1 `json:"requirements,omitempty"`
	KubeletConfiguration   *kubeletV1alpha5     `json:"kubeletConfiguration,omitempty"`
	Provider               *templateSpec        `json:"provider,omitempty"`
	ProviderRef            *providerRef         `json:"providerRef,omitempty"`
	TTLSecondsAfterEmpty   *int64               `json:"ttlSecondsAfterEmpty,omitempty"`
	TTLSecondsUntilExpired *int64               `json:"ttlSecondsUntilExpired,omitempty"`
	Limits                 *struct {
		Resources corev1.ResourceList `json:"resources,omitempty"`
	} `json:"limits,omitempty"`
	Weight        *int32 `json:"weight,omitempty"`
	Consolidation *struct {
		Enabled *bool `json:"enabled,omitempty"`
	} `json:"consolidation,omitempty"`
}

// kubeletV1alpha5 is v1beta1's kubelet configuration and the container
// runtime v0.32 dropped (containerd is the only one EKS 1.24 and later
// run).
type kubeletV1alpha5 struct {
	kubeletV1beta1   `json:",inline"`
	ContainerRuntime *string `json:"containerRuntime,omitempty"`
}

type providerRef struct {
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
}

type awsNodeTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              templateSpec `json:"spec"`
	Status            any          `json:"status,omitempty"`
}

type templateSpec struct {
	SubnetSelector        map[string]string      `json:"subnetSelector,omitempty"`
	SecurityGroupSelector map[string]string      `json:"securityGroupSelector,omitempty"`
	AMISelector           map[string]string      `json:"amiSelector,omitempty"`
	AMIFamily             *string                `json:"amiFamily,omitempty"`
	UserData              *string                `json:"userData,omitempty"`
	InstanceProfile       *string                `json:"instanceProfile,omitempty"`
	Tags                  map[string]string      `json:"tags,omitempty"`
	BlockDeviceMappings   []*blockDeviceMapping  `json:"blockDeviceMappings,omitempty"`
	DetailedMonitoring    *bool                  `json:"detailedMonitoring,omitempty"`
	MetadataOptions       *awsv1.MetadataOptions `json:"metadataOptions,omitempty"`
	Context               *string                `json:"context,omitempty"`
	LaunchTemplateName    *string                `json:"launchTemplate,omitempty"`
	// APIVersion and Kind: an inline provider names its type.
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// v1alpha5's label names, and v1beta1's.
var renamedLabels = map[string]string{"karpenter.sh/provisioner-name": "karpenter.sh/nodepool"}

func fromProvisioner(doc []byte) (*Result, error) {
	var in provisioner
	if err := strict(doc, &in); err != nil {
		if strings.Contains(err.Error(), `"spec.kubelet"`) {
			return nil, fmt.Errorf("%w: a Provisioner's kubelet settings are spec.kubeletConfiguration", err)
		}
		return nil, err
	}
	s := in.Spec
	var notes []string
	pool := nodePoolV1beta1{ObjectMeta: in.ObjectMeta}
	pool.Status = poolStatusV1beta1{}
	pool.Spec.Weight = s.Weight
	if s.Limits != nil {
		pool.Spec.Limits = s.Limits.Resources
	}
	pool.Spec.Template.Metadata = templateMeta{Labels: relabel(s.Labels, &notes), Annotations: s.Annotations}
	t := &pool.Spec.Template.Spec
	t.Taints, t.StartupTaints = s.Taints, s.StartupTaints
	t.Requirements = defaultRequirements(s.Requirements, &notes)
	if k := s.KubeletConfiguration; k != nil {
		if k.ContainerRuntime != nil && *k.ContainerRuntime != "containerd" {
			return nil, fmt.Errorf("spec.kubeletConfiguration.containerRuntime: %s is gone since v0.32 and EKS 1.24, which run containerd only: remove it", *k.ContainerRuntime)
		}
		kubelet := k.kubeletV1beta1
		t.Kubelet = &kubelet
	}
	d, err := provisionerDisruption(s, &notes)
	if err != nil {
		return nil, err
	}
	pool.Spec.Disruption = d
	var objects []runtime.Object
	ref := &nodeClassRefV1beta1{Kind: "EC2NodeClass", APIVersion: "karpenter.k8s.aws/v1beta1"}
	switch {
	case s.Provider != nil && s.ProviderRef != nil:
		return nil, fmt.Errorf("spec.provider and spec.providerRef together were refused by v1alpha5 too: keep providerRef")
	case s.Provider != nil:
		ref.Name = in.Name
		class, classNotes, err := classFromTemplate(in.Name, *s.Provider, "spec.provider")
		if err != nil {
			return nil, err
		}
		notes = append(notes, "the inline spec.provider becomes EC2NodeClass "+in.Name)
		notes = append(notes, classNotes...)
		objects = append(objects, class)
	case s.ProviderRef != nil:
		if s.ProviderRef.Kind != "" && s.ProviderRef.Kind != "AWSNodeTemplate" {
			return nil, fmt.Errorf("spec.providerRef.kind: %s: a Provisioner's node template is an AWSNodeTemplate", s.ProviderRef.Kind)
		}
		ref.Name = s.ProviderRef.Name
		notes = append(notes, "providerRef AWSNodeTemplate "+ref.Name+" is nodeClassRef EC2NodeClass "+ref.Name)
	default:
		return nil, fmt.Errorf("spec.providerRef: a Provisioner without providerRef or provider launched nothing: name its AWSNodeTemplate")
	}
	t.NodeClassRef = ref
	out, err := nodePoolFromV1beta1(&pool)
	if err != nil {
		return nil, err
	}
	delete(out.Annotations, NodeClassRefAnnotation)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	notes = append([]string{"Karpenter v0.33 and later serve no v1alpha5: their API servers have no Provisioner kind"}, notes...)
	return &Result{Objects: append([]runtime.Object{out}, objects...), From: "karpenter.sh/v1alpha5 Provisioner", Notes: notes}, nil
}

func ptrValue(b *bool) bool { return b != nil && *b }

// seconds is a number of seconds as a duration a v1beta1 field takes.
func seconds(n int64) string {
	switch {
	case n%3600 == 0 && n > 0:
		return fmt.Sprintf("%dh", n/3600)
	case n%60 == 0 && n > 0:
		return fmt.Sprintf("%dm", n/60)
	}
	return fmt.Sprintf("%ds", n)
}

// relabel renames the v1alpha5 labels v1beta1 renamed.
func relabel(labels map[string]string, notes *[]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if to, ok := renamedLabels[k]; ok {
			*notes = append(*notes, "label "+k+" is "+to)
			k = to
		}
		out[k] = v
	}
	return out
}

// defaultRequirements are a Provisioner's requirements with the ones
// v1alpha5 added when none constrained the same thing (v1beta1 adds
// none), so the NodePool launches what the Provisioner did.
func defaultRequirements(in []requirementV1beta1, notes *[]string) []requirementV1beta1 {
	out := make([]requirementV1beta1, 0, len(in)+5)
	has := map[string]bool{}
	for _, r := range in {
		if to, ok := renamedLabels[r.Key]; ok {
			*notes = append(*notes, "requirement on "+r.Key+" is on "+to)
			r.Key = to
		}
		has[r.Key] = true
		out = append(out, r)
	}
	var added []string
	add := func(r requirementV1beta1) {
		out = append(out, r)
		added = append(added, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
	}
	typed := false
	for _, k := range []string{corev1.LabelInstanceTypeStable, "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation"} {
		typed = typed || has[k]
	}
	if !typed {
		add(requirementV1beta1{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}})
		add(requirementV1beta1{Key: "karpenter.k8s.aws/instance-generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}})
	}
	if !has["karpenter.sh/capacity-type"] {
		add(requirementV1beta1{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}})
	}
	if !has[corev1.LabelOSStable] {
		add(requirementV1beta1{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}})
	}
	if !has[corev1.LabelArchStable] {
		add(requirementV1beta1{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}})
	}
	if len(added) > 0 {
		*notes = append(*notes, "v1alpha5 added requirements v1beta1 and v1 do not, written out to launch the same nodes: "+strings.Join(added, "; "))
	}
	return out
}

func fromAWSNodeTemplate(doc []byte) (*Result, error) {
	var in awsNodeTemplate
	if err := strict(doc, &in); err != nil {
		return nil, err
	}
	if in.Spec.APIVersion != "" || in.Spec.Kind != "" {
		return nil, fmt.Errorf("spec.apiVersion and spec.kind are a Provisioner's inline provider's, not an AWSNodeTemplate's: remove them")
	}
	class, notes, err := classFromTemplate(in.Name, in.Spec, "spec")
	if err != nil {
		return nil, err
	}
	class.(interface{ SetAnnotations(map[string]string) }).SetAnnotations(in.Annotations)
	class.(interface{ SetLabels(map[string]string) }).SetLabels(in.Labels)
	return &Result{Objects: []runtime.Object{class}, From: "karpenter.k8s.aws/v1alpha1 AWSNodeTemplate", Notes: notes}, nil
}

// classFromTemplate is the EC2NodeClass an AWSNodeTemplate (or a
// Provisioner's inline provider, at field) becomes.
func classFromTemplate(name string, s templateSpec, field string) (runtime.Object, []string, error) {
	if s.LaunchTemplateName != nil {
		return nil, nil, fmt.Errorf("%s.launchTemplate: launch templates made outside Karpenter are not used since v0.32: write what %s sets as the EC2NodeClass's amiSelectorTerms, userData, blockDeviceMappings, metadataOptions and securityGroupSelectorTerms", field, *s.LaunchTemplateName)
	}
	var notes []string
	in := nodeClassV1beta1{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c := &in.Spec
	c.AMIFamily = s.AMIFamily
	if c.AMIFamily == nil {
		c.AMIFamily = ptrTo("AL2")
		notes = append(notes, "without amiFamily v1alpha1 launched AL2: amiFamily AL2 (as the alias al2@latest) keeps that")
	}
	subnets, err := terms(s.SubnetSelector, field+".subnetSelector", false)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range subnets {
		c.SubnetSelectorTerms = append(c.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: t.ID, Tags: t.Tags})
	}
	groups, err := terms(s.SecurityGroupSelector, field+".securityGroupSelector", false)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range groups {
		c.SecurityGroupSelectorTerms = append(c.SecurityGroupSelectorTerms, awsv1.SecurityGroupSelectorTerm{ID: t.ID, Tags: t.Tags})
	}
	if c.AMISelectorTerms, err = terms(s.AMISelector, field+".amiSelector", true); err != nil {
		return nil, nil, err
	}
	c.UserData, c.Tags, c.BlockDeviceMappings = s.UserData, s.Tags, s.BlockDeviceMappings
	c.DetailedMonitoring, c.MetadataOptions, c.Context = s.DetailedMonitoring, s.MetadataOptions, s.Context
	if s.InstanceProfile != nil {
		c.InstanceProfile = s.InstanceProfile
		notes = append(notes, "instanceProfile "+*s.InstanceProfile+" is kept; spec.role (the profile's role) lets the controller make the profile itself")
	} else {
		notes = append(notes, "without instanceProfile v1alpha1 used the controller's defaultInstanceProfile setting, which v0.32 removed: set spec.role to the node role")
	}
	defaultClassV1beta1(&in)
	out := nodeClassFromV1beta1(&in)
	return out, append(notes, classNotes(&in, out)...), nil
}

// terms are a v1alpha1 selector map's v1beta1 terms: ids (aws::ids, or
// aws-ids before v0.28) one term each; an AMI's aws::name and aws::owners
// a term for each name and owner; every other key a tag, on each term.
func terms(sel map[string]string, field string, ami bool) ([]amiTerm, error) {
	if len(sel) == 0 {
		return nil, nil
	}
	tags := map[string]string{}
	var ids, names, owners []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		v := sel[k]
		switch {
		case k == "aws::ids" || k == "aws-ids":
			ids = split(v)
		case ami && k == "aws::name":
			names = split(v)
		case ami && k == "aws::owners":
			owners = split(v)
		case strings.HasPrefix(k, "aws::"):
			return nil, fmt.Errorf("%s: key %s is not a selector key of v1alpha1 (aws::ids%s)", field, k, map[bool]string{true: ", aws::name, aws::owners", false: ""}[ami])
		default:
			tags[k] = v
		}
	}
	if len(ids) > 0 {
		if len(tags) > 0 || len(names) > 0 || len(owners) > 0 {
			return nil, fmt.Errorf("%s: aws::ids with other keys: v1beta1 takes an id alone in its term; keep the ids, or the other keys", field)
		}
		var out []amiTerm
		for _, id := range ids {
			out = append(out, amiTerm{ID: id})
		}
		return out, nil
	}
	if len(names) == 0 {
		names = []string{""}
	}
	if len(owners) == 0 {
		owners = []string{""}
	}
	var out []amiTerm
	for _, t := range tagSets(tags) {
		for _, n := range names {
			for _, o := range owners {
				out = append(out, amiTerm{Name: n, Owner: o, Tags: t})
			}
		}
	}
	return out, nil
}

// tagSets are the tag maps a v1alpha1 selector's tags stand for: a value
// "a,b" matched either, so each combination of the values is a term.
func tagSets(tags map[string]string) []map[string]string {
	if len(tags) == 0 {
		return []map[string]string{nil}
	}
	sets := []map[string]string{{}}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		values := split(tags[k])
		if len(values) == 0 {
			values = []string{tags[k]}
		}
		var next []map[string]string
		for _, set := range sets {
			for _, v := range values {
				m := make(map[string]string, len(set)+1)
				for sk, sv := range set {
					m[sk] = sv
				}
				m[k] = v
				next = append(next, m)
			}
		}
		sets = next
	}
	return sets
}

func split(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// provisionerDisruption is a Provisioner's emptiness, consolidation and
// expiry as v1beta1's disruption.
func provisionerDisruption(s provisionerSpec, notes *[]string) (*disruptionV1beta1, error) {
	d := &disruptionV1beta1{}
	switch {
	case s.TTLSecondsAfterEmpty != nil && s.Consolidation != nil && ptrValue(s.Consolidation.Enabled):
		return nil, fmt.Errorf("spec.ttlSecondsAfterEmpty and spec.consolidation.enabled together were refused by v1alpha5 too: keep one")
	case s.TTLSecondsAfterEmpty != nil:
		d.ConsolidationPolicy, d.ConsolidateAfter = "WhenEmpty", ptrTo(seconds(*s.TTLSecondsAfterEmpty))
		*notes = append(*notes, fmt.Sprintf("ttlSecondsAfterEmpty %d is consolidationPolicy WhenEmpty, consolidateAfter %s", *s.TTLSecondsAfterEmpty, *d.ConsolidateAfter))
	case s.Consolidation != nil && ptrValue(s.Consolidation.Enabled):
		d.ConsolidationPolicy = "WhenUnderutilized"
		*notes = append(*notes, "consolidation.enabled is consolidationPolicy WhenEmptyOrUnderutilized")
	default:
		d.ConsolidationPolicy, d.ConsolidateAfter = "WhenEmpty", ptrTo("Never")
		*notes = append(*notes, "without ttlSecondsAfterEmpty or consolidation, its nodes were never consolidated: consolidationPolicy WhenEmpty, consolidateAfter Never keeps that")
	}
	if s.TTLSecondsUntilExpired != nil {
		d.ExpireAfter = ptrTo(seconds(*s.TTLSecondsUntilExpired))
		*notes = append(*notes, fmt.Sprintf("ttlSecondsUntilExpired %d is expireAfter %s", *s.TTLSecondsUntilExpired, *d.ExpireAfter))
	} else {
		d.ExpireAfter = ptrTo("Never")
		*notes = append(*notes, "without ttlSecondsUntilExpired its nodes never expired: expireAfter Never keeps that (v1's default is 720h)")
	}
	return d, nil
}
