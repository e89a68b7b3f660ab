// Package convert reads the objects of the autoscaler's older APIs —
// karpenter.sh/v1beta1 and karpenter.k8s.aws/v1beta1 (Karpenter v0.32 to
// v1.0), karpenter.sh/v1alpha5 Provisioners and karpenter.k8s.aws/v1alpha1
// AWSNodeTemplates (v0.31 and earlier) — as the v1 objects they become:
// v1beta1 as the reference's v1.0 conversion webhook converts it, v1alpha5
// by the field mapping of its v0.32 upgrade guide, then v1beta1's. Settle
// then makes the result what a user commits: the kubelet configuration a
// NodePool carried moves to its EC2NodeClass.
package convert

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
)

// Result is one converted document.
type Result struct {
	// Objects are the v1 objects the document became (a Provisioner with
	// an inline provider becomes a NodePool and an EC2NodeClass).
	Objects []runtime.Object
	// From is the document's apiVersion and kind; Notes say what
	// changed beyond the version, each a sentence.
	From  string
	Notes []string
}

// Converts reports whether apiVersion/kind is an older API's object
// this package converts.
func Converts(apiVersion, kind string) bool {
	_, ok := converters[apiVersion+"/"+kind]
	return ok
}

var converters = map[string]func([]byte) (*Result, error){
	"karpenter.sh/v1beta1/NodePool":              fromV1beta1NodePool,
	"karpenter.sh/v1beta1/NodeClaim":             fromV1beta1NodeClaim,
	"karpenter.k8s.aws/v1beta1/EC2NodeClass":     fromV1beta1NodeClass,
	"karpenter.sh/v1alpha5/Provisioner":          fromProvisioner,
	"karpenter.k8s.aws/v1alpha1/AWSNodeTemplate": fromAWSNodeTemplate,
}

// Document converts one document of an older API (its JSON or YAML).
func Document(apiVersion, kind string, doc []byte) (*Result, error) {
	convert, ok := converters[apiVersion+"/"+kind]
	if !ok {
		return nil, fmt.Errorf("%s %s is not an older API's object", apiVersion, kind)
	}
	return convert(doc)
}

// strict decodes a document into an older API's shape, refusing a field
// that shape never had (as the API server's strict field validation).
func strict(doc []byte, into any) error {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		// Named by path ("unknown field "spec.subnetSelectorTerms[0].name""),
		// as the API server's strict decoding names them.
		return fmt.Errorf("strict decoding error: %w (a field the older API did not have)", errors.Join(strictErrs...))
	}
	return nil
}

func fromV1beta1NodePool(doc []byte) (*Result, error) {
	var in nodePoolV1beta1
	if err := strict(doc, &in); err != nil {
		return nil, err
	}
	if d := in.Spec.Disruption; d != nil && d.ConsolidationPolicy == "WhenUnderutilized" && d.ConsolidateAfter != nil {
		return nil, fmt.Errorf("spec.disruption.consolidateAfter (%s) with consolidationPolicy WhenUnderutilized: v1beta1 refused the two together (its nodes were consolidated after 15s whatever it said); in v1 they are consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: %s, which does what it meant", *d.ConsolidateAfter, *d.ConsolidateAfter)
	}
	defaultPoolV1beta1(&in)
	out, err := nodePoolFromV1beta1(&in)
	if err != nil {
		return nil, err
	}
	return &Result{Objects: []runtime.Object{out}, From: "karpenter.sh/v1beta1 NodePool", Notes: poolNotes(&in)}, nil
}

// defaultPoolV1beta1 fills in what the v1beta1 CRD's schema defaulted.
func defaultPoolV1beta1(in *nodePoolV1beta1) {
	if in.Spec.Disruption == nil {
		in.Spec.Disruption = &disruptionV1beta1{ConsolidationPolicy: "WhenUnderutilized", ExpireAfter: ptrTo("720h")}
	}
	d := in.Spec.Disruption
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = "WhenUnderutilized"
	}
	if d.ExpireAfter == nil {
		d.ExpireAfter = ptrTo("720h")
	}
	if d.Budgets == nil {
		d.Budgets = []budgetV1beta1{{Nodes: "10%"}}
	}
	for i := range d.Budgets {
		if d.Budgets[i].Nodes == "" {
			d.Budgets[i].Nodes = "10%"
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// poolNotes say what a v1beta1 NodePool's conversion moved or renamed.
func poolNotes(in *nodePoolV1beta1) []string {
	var notes []string
	d := in.Spec.Disruption
	if d.ConsolidationPolicy == "WhenUnderutilized" {
		notes = append(notes, "consolidationPolicy WhenUnderutilized is WhenEmptyOrUnderutilized, with consolidateAfter: 0s")
	}
	notes = append(notes, fmt.Sprintf("spec.disruption.expireAfter (%s) is spec.template.spec.expireAfter", *d.ExpireAfter))
	if in.Spec.Template.Spec.Kubelet != nil {
		notes = append(notes, "spec.template.spec.kubelet moves to the EC2NodeClass's spec.kubelet")
	}
	if r := in.Spec.Template.Spec.NodeClassRef; r != nil && r.APIVersion != "" {
		notes = append(notes, "nodeClassRef.apiVersion "+r.APIVersion+" is nodeClassRef.group "+strings.Split(r.APIVersion, "/")[0])
	}
	return notes
}

func fromV1beta1NodeClaim(doc []byte) (*Result, error) {
	var in nodeClaimV1beta1
	if err := strict(doc, &in); err != nil {
		return nil, err
	}
	out, err := nodeClaimFromV1beta1(&in)
	if err != nil {
		return nil, err
	}
	return &Result{Objects: []runtime.Object{out}, From: "karpenter.sh/v1beta1 NodeClaim"}, nil
}

func fromV1beta1NodeClass(doc []byte) (*Result, error) {
	var in nodeClassV1beta1
	if err := strict(doc, &in); err != nil {
		return nil, err
	}
	hopLimitNote := in.Spec.MetadataOptions == nil || in.Spec.MetadataOptions.HTTPPutResponseHopLimit == nil
	defaultClassV1beta1(&in)
	out := nodeClassFromV1beta1(&in)
	notes := classNotes(&in, out)
	if hopLimitNote {
		notes = append(notes, "metadataOptions.httpPutResponseHopLimit is not set: v1 defaults it to 1, which v0.32 to v0.37 launched as 2, so pods off the host network (the EBS CSI driver, the load balancer controller, SDKs taking the node's credentials) no longer reach the instance metadata; set metadataOptions.httpPutResponseHopLimit: 2 where they need it")
	}
	return &Result{Objects: []runtime.Object{out}, From: "karpenter.k8s.aws/v1beta1 EC2NodeClass", Notes: notes}, nil
}

// defaultClassV1beta1 fills in what the v1beta1 CRD's schema defaulted:
// metadata options given in part get the rest of the defaults.
func defaultClassV1beta1(in *nodeClassV1beta1) {
	m := in.Spec.MetadataOptions
	if m == nil {
		in.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPEndpoint: ptrTo("enabled"), HTTPProtocolIPv6: ptrTo("disabled"),
			HTTPPutResponseHopLimit: ptrTo(int64(1)), HTTPTokens: ptrTo("required")}
		return
	}
	if m.HTTPEndpoint == nil {
		m.HTTPEndpoint = ptrTo("enabled")
	}
	if m.HTTPProtocolIPv6 == nil {
		m.HTTPProtocolIPv6 = ptrTo("disabled")
	}
	if m.HTTPPutResponseHopLimit == nil {
		m.HTTPPutResponseHopLimit = ptrTo(int64(2))
	}
	if m.HTTPTokens == nil {
		m.HTTPTokens = ptrTo("required")
	}
}

func classNotes(in *nodeClassV1beta1, out *awsv1.EC2NodeClass) []string {
	family := ""
	if in.Spec.AMIFamily != nil {
		family = *in.Spec.AMIFamily
	}
	switch {
	case family == "Ubuntu":
		note := "v1 has no Ubuntu family: amiFamily AL2 reads the user data as Ubuntu's EKS AMIs do"
		if out.Annotations[UbuntuAnnotation] != "" && strings.Contains(out.Annotations[UbuntuAnnotation], ubuntuIncompatible) {
			note += "; without amiSelectorTerms it has no AMI (the reference marks it incompatible and launches nothing with it): select Canonical's, such as {name: \"ubuntu-eks/k8s_1.31/images/*\", owner: \"099720109477\"}"
		}
		return []string{note}
	case len(in.Spec.AMISelectorTerms) == 0 && len(out.Spec.AMISelectorTerms) == 1 && out.Spec.AMISelectorTerms[0].Alias != "":
		return []string{fmt.Sprintf("amiFamily %s without amiSelectorTerms is amiSelectorTerms [{alias: %s}]", family, out.Spec.AMISelectorTerms[0].Alias)}
	case family == "" || family == awsv1.AMIFamilyCustom:
		return nil
	}
	return nil
}
