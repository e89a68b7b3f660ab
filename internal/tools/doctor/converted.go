package doctor

import (
	"strings"

	"github.com/nodewright/nodewright/internal/convert"
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
		fix := "run nodewright convert -f " + c.File + " > converted.yaml and commit its v1 objects: the API server of Karpenter v1.1 and later (and nodewright) refuses " + strings.Fields(c.From)[0]
		r.add(Finding{Code: CodeConverted, Severity: Warning, Object: c.Object,
			Message:  c.Object + " is read as the v1 object its " + strings.Join(strings.Fields(c.From)[:2], " ") + " converts to, and checked as that",
			Evidence: "converted from " + c.From + notes(c.Notes),
			Fix:      fix})
	}
	for _, p := range o.NodePools {
		text, err := convert.Unsettled(p)
		if err != nil {
			r.add(Finding{Code: CodeKubeletAnnotation, Severity: Error, Object: "NodePool/" + p.Name,
				Message: "the kubelet configuration annotation cannot be read: " + err.Error(),
				Fix:     "remove annotation " + convert.KubeletAnnotation + " and set the EC2NodeClass's spec.kubelet"})
			continue
		}
		if text == "" {
			continue
		}
		r.add(Finding{Code: CodeKubeletAnnotation, Severity: Warning, Object: "NodePool/" + p.Name,
			Message:  "NodePool " + p.Name + "'s nodes launch without the kubelet configuration it carries: " + text,
			Evidence: "annotation " + convert.KubeletAnnotation + ": " + p.Annotations[convert.KubeletAnnotation],
			Fix:      "give the EC2NodeClass with -f too and run nodewright convert on both, or " + text[strings.LastIndex(text, "add spec.kubelet"):]})
	}
	for _, c := range o.Conversions {
		if c.From != "" || len(c.Notes) == 0 {
			continue
		}
		r.add(Finding{Code: CodeKubeletAnnotation, Severity: Warning, Object: c.Object,
			Message:  c.Object + " is read with the kubelet configuration its NodePools carried in annotation " + convert.KubeletAnnotation + " (read by Karpenter v1.0 alone)",
			Evidence: strings.Join(c.Notes, "; "),
			Fix:      "run nodewright convert -f on the files and commit the objects it prints"})
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
