package whatif

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodewright/nodewright/api/autoscaling/v1beta1"
	"github.com/nodewright/nodewright/internal/state"
)

// workload is a workload's pod template and replicas, by namespace, kind
// and name, for a CapacityBuffer's scalableRef.
type workload struct {
	template corev1.PodTemplateSpec
	replicas int32
}

func workloadKey(namespace, kind, name string) string { return namespace + "/" + kind + "/" + name }

// addBuffer reads a CapacityBuffer.
func (o *Objects) addBuffer(b *v1beta1.CapacityBuffer) error {
	if b.Namespace == "" {
		b.Namespace = metav1.NamespaceDefault
	}
	if b.Spec.PodTemplateRef != nil && b.Spec.ScalableRef != nil {
		return fmt.Errorf("CapacityBuffer %s/%s: You must define either PodTemplateRef or ScalableRef, but not both", b.Namespace, b.Name)
	}
	o.CapacityBuffers = append(o.CapacityBuffers, b)
	return nil
}

// buffers are the CapacityBuffers as the controller resolves them: a
// buffer whose status is resolved (a dump's) as it is; one without a
// resolved status (a manifest) resolved here from the PodTemplates and
// workloads given, as its controller would; one that cannot be is left
// out, with a warning. It returns the PodTemplates the buffers use.
func (o *Objects) buffers() ([]*v1beta1.CapacityBuffer, []*corev1.PodTemplate, []string) {
	templates := append([]*corev1.PodTemplate(nil), o.PodTemplates...)
	var out []*v1beta1.CapacityBuffer
	var warnings []string
	for _, b := range o.CapacityBuffers {
		if meta.IsStatusConditionTrue(b.Status.Conditions, v1beta1.ConditionReadyForProvisioning) {
			out = append(out, b)
			continue
		}
		t, replicas, why := o.resolveBuffer(b)
		if why != "" {
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s keeps no room: %s", b.Namespace, b.Name, why))
			continue
		}
		n, err := state.BufferReplicas(b.Spec, &t.Template.Spec, replicas)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s keeps no room: %v", b.Namespace, b.Name, err))
			continue
		}
		if b.Spec.ScalableRef != nil {
			templates = append(templates, t)
		}
		r := b.DeepCopy()
		r.Status = v1beta1.CapacityBufferStatus{PodTemplateRef: &v1beta1.LocalObjectRef{Name: t.Name}, Replicas: ptr.To(n),
			Conditions: []metav1.Condition{{Type: v1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonResolved}}}
		out = append(out, r)
	}
	return out, templates, warnings
}

// resolveBuffer is the buffer's PodTemplate (its workload's, for a
// scalableRef) and its workload's replicas (-1 without), or why not.
func (o *Objects) resolveBuffer(b *v1beta1.CapacityBuffer) (*corev1.PodTemplate, int32, string) {
	if s := ptr.Deref(b.Spec.ProvisioningStrategy, v1beta1.ProvisioningStrategyActiveCapacity); s != v1beta1.ProvisioningStrategyActiveCapacity {
		return nil, 0, fmt.Sprintf("spec.provisioningStrategy %q is not served", s)
	}
	if ref := b.Spec.PodTemplateRef; ref != nil {
		for _, t := range o.PodTemplates {
			if t.Namespace == b.Namespace && t.Name == ref.Name {
				return t, -1, ""
			}
		}
		return nil, 0, fmt.Sprintf("PodTemplate %s/%s (spec.podTemplateRef) is not among the manifests", b.Namespace, ref.Name)
	}
	if ref := b.Spec.ScalableRef; ref != nil {
		w, ok := o.workloads[workloadKey(b.Namespace, ref.Kind, ref.Name)]
		if !ok {
			return nil, 0, fmt.Sprintf("%s %s/%s (spec.scalableRef) is not among the manifests", ref.Kind, b.Namespace, ref.Name)
		}
		t := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: "capacitybuffer-" + b.Name}, Template: w.template}
		return t, w.replicas, ""
	}
	return nil, 0, "set spec.podTemplateRef or spec.scalableRef"
}
