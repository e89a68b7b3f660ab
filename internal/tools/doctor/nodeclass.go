package doctor

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/tools/whatif"
)

// kubeletRule reports an EC2NodeClass whose spec.kubelet the controller
// refuses (ValidationSucceeded=False, with the controller's reason): the
// API accepts it, and nothing is launched from the class.
// registerWithTaints there is S1 in another shape: the taints go on the
// NodePool.
func kubeletRule(r *Report, o *whatif.Objects) {
	for _, nc := range o.EC2NodeClasses {
		v := nodeclass.OfflineValidation(nc)
		if v.Status == metav1.ConditionTrue || v.Reason == awsv1.ReasonUserDataInvalid {
			continue
		}
		f := Finding{Code: CodeKubeletConfigRefused, Severity: Error, Object: "EC2NodeClass/" + nc.Name,
			Message:  fmt.Sprintf("EC2NodeClass %s would be ValidationSucceeded=False %s, so nothing is launched from it: %s", nc.Name, v.Reason, v.Message),
			Evidence: "spec.kubelet: " + describeKubelet(nc.Spec.Kubelet),
			Fix:      fmt.Sprintf("in EC2NodeClass %s's spec.kubelet, correct or remove the fields the message names", nc.Name)}
		if taints := registerWithTaints(nc.Spec.Kubelet); taints != nil {
			f.Code = CodeUserDataOverridesTaints
			f.Fix = fmt.Sprintf("remove registerWithTaints from EC2NodeClass %s's spec.kubelet (nodewright registers every node with karpenter.sh/unregistered and its NodePool's taints) and set the taints on the NodePools that use it:\n%s",
				nc.Name, userdata.TaintsYAML(taints))
		}
		r.add(f)
	}
}

// registerWithTaints are the taints spec.kubelet.registerWithTaints
// lists ("key[=value]:effect"); nil when it is not set.
func registerWithTaints(k awsv1.KubeletConfiguration) []string {
	raw, ok := k["registerWithTaints"]
	if !ok {
		return nil
	}
	var list []map[string]any
	_ = json.Unmarshal(raw.Raw, &list)
	out := []string{}
	for _, t := range list {
		s := fmt.Sprint(t["key"])
		if v, ok := t["value"].(string); ok && v != "" {
			s += "=" + v
		}
		out = append(out, s+":"+fmt.Sprint(t["effect"]))
	}
	return out
}

func describeKubelet(k awsv1.KubeletConfiguration) string {
	parts := make([]string, 0, len(k))
	for _, key := range slices.Sorted(maps.Keys(k)) {
		parts = append(parts, key+": "+string(k[key].Raw))
	}
	return strings.Join(parts, ", ")
}

// userDataSizeRule reports an EC2NodeClass whose user data, with
// nodewright's bootstrap merged in as for a node of a NodePool, is over
// EC2's limit: every launch would be refused. It stands for the
// validation's finding of the same (merged for a node without the
// NodePool's labels and taints), naming the NodePool.
func userDataSizeRule(r *Report, o *whatif.Objects) {
	done := map[string]bool{}
	for _, np := range o.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || done[ref.Name] {
			continue
		}
		tooLarge := mergedTooLarge(o, np.Name)
		if tooLarge == nil {
			continue
		}
		done[ref.Name] = true
		r.add(Finding{Code: CodeUserDataTooLarge, Severity: Error, Object: "EC2NodeClass/" + ref.Name,
			Message:  fmt.Sprintf("EC2NodeClass %s's user data is %d bytes once nodewright's bootstrap is merged in for a node of NodePool %s (with an EKS endpoint and CA of the usual size), over EC2's limit of %d bytes, so EC2 would refuse every launch", ref.Name, tooLarge.Size, np.Name, userdata.MaxSize),
			Evidence: fmt.Sprintf("spec.userData: %d bytes; launched: %d bytes; limit %d", tooLarge.UserSize, tooLarge.Size, userdata.MaxSize),
			Fix:      fmt.Sprintf("shrink EC2NodeClass %s's spec.userData by %d bytes or more: fetch large scripts or files at boot (from S3 or a container image) instead of inlining them, or compress them (gzip and base64)", ref.Name, tooLarge.Size-userdata.MaxSize)})
	}
}

// mergedTooLarge is the size error of the user data a node of the NodePool
// is launched with, nil when it is within EC2's limit (or cannot be
// rendered: other rules say why).
func mergedTooLarge(o *whatif.Objects, nodePool string) *userdata.TooLargeError {
	_, err := whatif.RenderUserData(o, nodePool, "", userdata.TypicalCluster)
	var tooLarge *userdata.TooLargeError
	if !errors.As(err, &tooLarge) {
		return nil
	}
	return tooLarge
}

// sizeRuleReports says whether userDataSizeRule reports the EC2NodeClass:
// some NodePool of it launches user data over the limit.
func sizeRuleReports(o *whatif.Objects, class string) bool {
	for _, np := range o.NodePools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == class && mergedTooLarge(o, np.Name) != nil {
			return true
		}
	}
	return false
}
