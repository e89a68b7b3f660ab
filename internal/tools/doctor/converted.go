package doctor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nodewright/nodewright/internal/convert"
	"github.com/nodewright/nodewright/internal/manifest"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// Codes of the input's own shape.
const (
	// CodeConverted: an object of an older API (v1beta1, v1alpha5) was
	// read as the v1 object it converts to.
	CodeConverted = "converted-from-older-api"
	// CodeKubeletAnnotation: a NodePool carries the kubelet configuration
	// Karpenter v1.0's conversion kept in an annotation, which later
	// releases do not read.
	CodeKubeletAnnotation = "kubelet-in-conversion-annotation"
)

// conversionRule names every object read from an older API's document,
// with what its conversion changed, and the NodePools whose kubelet
// configuration still waits in the conversion's annotation.
func conversionRule(r *Report, o *whatif.Objects) {
	for _, c := range o.Conversions {
		if c.From == "" {
			continue // a v1 object Settle changed: its notes go with the kubelet rule below
		}
		kind, _, _ := strings.Cut(c.Object, "/")
		r.add(Finding{Code: CodeConverted, Severity: Warning, Object: c.Object,
			Message:  c.Object + " is read as the v1 object its " + strings.Join(strings.Fields(c.From)[:2], " ") + " converts to, and checked as that",
			Evidence: "converted from " + c.From + notes(c.Notes),
			Fix: fmt.Sprintf("run nodewright convert -f %s > converted.yaml and commit the v1 %s it prints in place of this document: Karpenter v1.1 and later (and nodewright) serve only v1, and kubectl apply refuses %s there",
				c.File, kind, strings.Fields(c.From)[0])})
	}
	classes := classesByName(o)
	for _, nc := range o.EC2NodeClasses {
		if strings.Contains(nc.Annotations[convert.UbuntuAnnotation], "incompatible") {
			r.add(Finding{Code: CodeAMINotFound, Severity: Error, Object: "EC2NodeClass/" + nc.Name,
				Message:  fmt.Sprintf("EC2NodeClass %s was amiFamily Ubuntu without amiSelectorTerms, which v1 cannot launch: it has no Ubuntu family or alias, so the class selects no AMI (the reference's conversion marks it incompatible and launches nothing with it)", nc.Name),
				Evidence: fmt.Sprintf("annotation %s: %s", convert.UbuntuAnnotation, nc.Annotations[convert.UbuntuAnnotation]),
				Fix:      fmt.Sprintf("set EC2NodeClass %s's spec.amiSelectorTerms to Canonical's EKS images, with amiFamily: AL2 (they boot as AL2's): - name: \"ubuntu-eks/k8s_1.31/images/hvm-ssd/ubuntu-jammy-22.04-*-server-*\" owner: \"099720109477\"", nc.Name)})
		}
	}
	for _, p := range o.NodePools {
		className := ""
		if ref := p.Spec.Template.Spec.NodeClassRef; ref != nil {
			className = ref.Name
		}
		kubelet, classKubelet, err := convert.Unsettled(p, classes[className])
		object := "NodePool/" + p.Name
		evidence := "annotation " + convert.KubeletAnnotation + ": " + p.Annotations[convert.KubeletAnnotation]
		switch {
		case err != nil:
			r.add(Finding{Code: CodeKubeletAnnotation, Severity: Error, Object: object,
				Message: "the kubelet configuration annotation cannot be read: " + err.Error(),
				Fix:     "remove annotation " + convert.KubeletAnnotation + " and set the EC2NodeClass's spec.kubelet"})
		case kubelet == "":
		case classes[className] != nil:
			r.add(Finding{Code: CodeKubeletAnnotation, Severity: Warning, Object: object,
				Message:  fmt.Sprintf("NodePool %s carries a kubelet configuration in an annotation that differs from EC2NodeClass %s's spec.kubelet: Karpenter v1.0 launches its nodes with the annotation's, v1.1 and later and nodewright with the class's", p.Name, className),
				Evidence: fmt.Sprintf("%s; EC2NodeClass %s spec.kubelet: %s", evidence, className, classKubelet),
				Fix:      fmt.Sprintf("remove annotation %s from NodePool %s, after making EC2NodeClass %s's spec.kubelet what its nodes need (a change there drifts them)", convert.KubeletAnnotation, p.Name, className)})
		default:
			class := "its EC2NodeClass"
			if className != "" {
				class = "EC2NodeClass " + className
			}
			r.add(Finding{Code: CodeKubeletAnnotation, Severity: Warning, Object: object,
				Message:  "NodePool " + p.Name + "'s nodes launch without the kubelet configuration its annotation holds: Karpenter v1.0 alone read it, v1.1 and later and nodewright read the class's spec.kubelet",
				Evidence: evidence,
				Fix: fmt.Sprintf("add spec.kubelet: %s to %s (a class of its own where its other NodePools differ) and remove the annotation from NodePool %s; given the class with -f, nodewright convert -f prints both",
					kubelet, class, p.Name)})
		}
	}
	for _, c := range o.Conversions {
		if c.From != "" || len(c.Notes) == 0 {
			continue
		}
		r.add(Finding{Code: CodeKubeletAnnotation, Severity: Warning, Object: c.Object,
			Message:  c.Object + " is read with the kubelet configuration its NodePools carried in annotation " + convert.KubeletAnnotation + " (read by Karpenter v1.0 alone)",
			Evidence: strings.Join(c.Notes, "; "),
			Fix:      "run nodewright convert -f on the files and commit the EC2NodeClass it prints (with that spec.kubelet) and the NodePools without the annotation"})
	}
}

func notes(n []string) string {
	if len(n) == 0 {
		return ""
	}
	return ": " + strings.Join(n, "; ")
}

// locate gives each finding the file and line of its object, when it was
// read from a file.
func locate(r *Report, o *whatif.Objects) {
	for i := range r.Findings {
		if file, line, ok := o.Where(r.Findings[i].Object); ok {
			r.Findings[i].File, r.Findings[i].Line = file, line
		}
	}
}

// CodeRegistrationStartupTaint is karpenter.sh/unregistered listed as a
// startup taint, which the controller adds and removes itself.
const CodeRegistrationStartupTaint = "startup-taint-is-registration-taint"

// CodeInputRefused is an input document that could not be read; nothing
// was checked.
const CodeInputRefused = "input-refused"

// Refused is the report of an input refused before any check ran, for
// structured output: one finding at the file and line the error names.
func Refused(err error) *Report {
	f := Finding{Code: CodeInputRefused, Severity: Error, Message: err.Error(),
		Fix: "correct the document's kind, apiVersion or the spec. field the message names, as it suggests (kubectl apply refuses it too), then run nodewright doctor again"}
	var at *manifest.Error
	if errors.As(err, &at) {
		f.File, f.Line, f.Message = at.File, at.Line, at.Message()
		f.Fix = fmt.Sprintf("correct line %d of %s: the kind, apiVersion or spec. field the message names, as it suggests (kubectl apply refuses it too), then run nodewright doctor again", at.Line, at.File)
	}
	return &Report{Summary: "the input was refused, so nothing was checked", Findings: []Finding{f}}
}
