package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
)

// Copy is an EC2NodeClass Settle made: a copy of class Of.
type Copy struct {
	Of    string
	Class *awsv1.EC2NodeClass
}

// Note is something Settle changed, on one object.
type Note struct {
	// Object is "Kind/name".
	Object string
	Text   string
}

// Unsettled is, for a NodePool still carrying the kubelet annotation
// (Settle left it: its class, nil when not among the objects, has a
// kubelet configuration of its own that differs), the annotation's
// configuration and the class's, as JSON; "" when it carries none.
func Unsettled(p *v1.NodePool, class *awsv1.EC2NodeClass) (kubelet, classKubelet string, err error) {
	raw, ok := p.Annotations[KubeletAnnotation]
	if !ok {
		return "", "", nil
	}
	k, err := kubeletJSON(raw)
	if err != nil {
		return "", "", err
	}
	if class != nil {
		classKubelet = compact(class.Spec.Kubelet)
	}
	return compact(k), classKubelet, nil
}

// Settle makes converted objects what a user commits, as v1.1 and later
// read them: a NodePool's kubelet configuration (its v1beta1
// spec.template.spec.kubelet, kept by the conversion in an annotation
// Karpenter v1.0 alone read) moves to its EC2NodeClass's spec.kubelet,
// and when NodePools sharing a class had different ones, each differing
// NodePool gets a copy of the class of its own (named <class>-<nodepool>);
// (a NodePool whose class is not among them keeps it: Unsettled);
// NodeClaims converted from v1beta1 expire as their NodePool does; the
// conversion's bookkeeping annotations go. It returns the classes it
// added, which the caller adds to the objects.
func Settle(pools []*v1.NodePool, classes []*awsv1.EC2NodeClass, claims []*v1.NodeClaim) ([]Copy, []Note, error) {
	var notes []Note
	byName := map[string]*awsv1.EC2NodeClass{}
	for _, c := range classes {
		byName[c.Name] = c
	}
	poolsOf := map[string][]*v1.NodePool{}
	kubelets := map[*v1.NodePool]awsv1.KubeletConfiguration{}
	for _, p := range pools {
		delete(p.Annotations, NodeClassRefAnnotation)
		raw, ok := p.Annotations[KubeletAnnotation]
		ref := p.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Name == "" {
			continue
		}
		poolsOf[ref.Name] = append(poolsOf[ref.Name], p)
		if !ok {
			continue
		}
		k, err := kubeletJSON(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("NodePool %s: %w", p.Name, err)
		}
		kubelets[p] = k
	}
	var added []Copy
	for _, name := range sortedPoolKeys(poolsOf) {
		copies, classNotes := settleClass(byName[name], poolsOf[name], kubelets)
		added = append(added, copies...)
		notes = append(notes, classNotes...)
	}
	settleClaims(pools, claims)
	return added, notes, nil
}

// effective is the kubelet configuration a NodePool's nodes had.
func effective(p *v1.NodePool, kubelets map[*v1.NodePool]awsv1.KubeletConfiguration, class *awsv1.EC2NodeClass) awsv1.KubeletConfiguration {
	if k, ok := kubelets[p]; ok {
		return k
	}
	return class.Spec.Kubelet
}

func sameKubelet(a, b awsv1.KubeletConfiguration) bool {
	return bytes.Equal(canonical(a), canonical(b))
}

func canonical(k awsv1.KubeletConfiguration) []byte {
	if len(k) == 0 {
		return nil
	}
	data, _ := json.Marshal(k)
	var v any
	_ = json.Unmarshal(data, &v)
	out, _ := json.Marshal(v)
	return out
}

func compact(k awsv1.KubeletConfiguration) string {
	return string(canonical(k))
}

func sortedPoolKeys(m map[string][]*v1.NodePool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// settleClaims gives NodeClaims converted from v1beta1 their NodePool's
// expireAfter, as the reference's conversion looks it up, and drops the
// conversion's annotations; a NodeClaim whose NodePool is not (yet)
// among the objects keeps them, and the reference's fallback, Never.
func settleClaims(pools []*v1.NodePool, claims []*v1.NodeClaim) {
	poolByName := map[string]*v1.NodePool{}
	for _, p := range pools {
		poolByName[p.Name] = p
	}
	for _, c := range claims {
		if _, converted := c.Annotations[NodeClassRefAnnotation]; !converted {
			continue
		}
		p := poolByName[c.Labels[v1.LabelNodePool]]
		if p == nil {
			continue // its NodePool may be read later (another file of a dump)
		}
		delete(c.Annotations, NodeClassRefAnnotation)
		delete(c.Annotations, KubeletAnnotation)
		if p.Spec.Template.Spec.ExpireAfter != "" {
			c.Spec.ExpireAfter = p.Spec.Template.Spec.ExpireAfter
		}
	}
}

// settleClass moves the kubelet configurations of the NodePools sharing
// a class (nil: not among the objects) to it, or to copies of it.
func settleClass(class *awsv1.EC2NodeClass, sharing []*v1.NodePool, kubelets map[*v1.NodePool]awsv1.KubeletConfiguration) ([]Copy, []Note) {
	var added []Copy
	var notes []Note
	// A class with a kubelet configuration of its own is a v1 class its
	// user wrote: what it says is what v1.1 and later launch with, and
	// an annotation that differs stays, to be reported (Unsettled).
	written := class != nil && len(class.Spec.Kubelet) > 0
	// What each NodePool's nodes launched with: its own kubelet
	// configuration, else the class's.
	for i, p := range sharing {
		k, has := kubelets[p]
		if !has {
			continue
		}
		if class == nil {
			continue // the annotation stays: the class may be read later (Unsettled)
		}
		if sameKubelet(class.Spec.Kubelet, k) {
			delete(p.Annotations, KubeletAnnotation)
			continue
		}
		if written {
			continue
		}
		delete(p.Annotations, KubeletAnnotation)
		othersAgree := true
		for j, q := range sharing {
			if j != i && !sameKubelet(effective(q, kubelets, class), k) {
				othersAgree = false
			}
		}
		if othersAgree {
			class.Spec.Kubelet = k
			notes = append(notes, Note{Object: "EC2NodeClass/" + class.Name, Text: "spec.kubelet is the kubelet configuration its NodePools had: " + compact(k)})
			continue
		}
		copyName := class.Name + "-" + p.Name
		own := class.DeepCopy()
		own.Name, own.ResourceVersion, own.UID, own.Status = copyName, "", "", awsv1.EC2NodeClassStatus{}
		own.Spec.Kubelet = k
		added = append(added, Copy{Of: class.Name, Class: own})
		p.Spec.Template.Spec.NodeClassRef.Name = copyName
		notes = append(notes, Note{Object: "NodePool/" + p.Name,
			Text: fmt.Sprintf("its kubelet configuration differs from the other NodePools' of EC2NodeClass %s: it gets EC2NodeClass %s, a copy of %s with spec.kubelet: %s", class.Name, copyName, class.Name, compact(k))})
	}
	return added, notes
}
