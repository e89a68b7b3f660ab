// Package boot is what a node makes of the user data it is launched
// with, read as the node reads it: one model per AMI family (a folder
// each), built on the real components' code where it can be imported — the
// kubelet's flag handling (boot/kubelet), a real shell interpreter in a
// sandbox (boot/shell), cloud-init's reading of MIME documents
// (boot/cloudinit). Its Outcome is the one value validation, doctor and the
// simulated kubelet all judge a launch by.
package boot

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
)

// Verdict is whether a node joins the cluster.
type Verdict string

// Verdicts.
const (
	// Joins: the kubelet starts and registers the Node (Kubelet says how).
	Joins Verdict = "joins"
	// NeverJoins: the boot stops before the kubelet registers (Why says
	// where).
	NeverJoins Verdict = "never joins"
	// NotModelled: what the node does depends on something the model does
	// not read (Why names it and says how to check); no verdict either way.
	NotModelled Verdict = "not modelled"
)

// UnregisteredTaint is the taint a node must register with for nodewright
// to match it to its NodeClaim.
var UnregisteredTaint = corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}

// Outcome is what a node makes of its user data.
type Outcome struct {
	Verdict Verdict
	// Why says, for NeverJoins, what stops the boot, and for NotModelled,
	// what the model does not read and how to check it.
	Why string
	// Kubelet is what the kubelet starts with, when the node joins.
	Kubelet *kubelet.Started
	// ReservedMaxPods is the pod count the image works the kubelet's
	// kube-reserved out from, when it takes it from the configuration
	// (nodeadm); 0 when it takes the instance type's ENI limit (AL2).
	ReservedMaxPods int32
	// Notes are what the reading saw that its author may not expect: a
	// part the family does not read, a setting replaced by a later one.
	Notes []string
}

// Registered reports whether the node joins with karpenter.sh/unregistered,
// as nodewright needs.
func (o Outcome) Registered() bool {
	if o.Verdict != Joins || o.Kubelet == nil {
		return false
	}
	return slices.ContainsFunc(o.Kubelet.RegisterWithTaints, func(t corev1.Taint) bool {
		return t.Key == UnregisteredTaint.Key && t.Effect == UnregisteredTaint.Effect
	})
}

// Blocks reports an outcome a launch must not go ahead with: the node
// never joins, or joins without karpenter.sh/unregistered.
func (o Outcome) Blocks() bool {
	return o.Verdict == NeverJoins || o.Verdict == Joins && !o.Registered()
}

// Summary says the outcome in a line.
func (o Outcome) Summary() string {
	switch {
	case o.Verdict == NeverJoins:
		return "never joins: " + o.Why
	case o.Verdict == NotModelled:
		return "not modelled: " + o.Why
	case o.Registered():
		return "joins with " + UnregisteredTaint.ToString() + " (taints " + taintList(o.Kubelet.RegisterWithTaints) + ")"
	default:
		return "joins without " + UnregisteredTaint.ToString() + " (taints " + taintList(o.Kubelet.RegisterWithTaints) + ")"
	}
}

func taintList(taints []corev1.Taint) string {
	if len(taints) == 0 {
		return "none"
	}
	out := make([]string, len(taints))
	for i, t := range taints {
		out[i] = t.ToString()
	}
	return strings.Join(out, ", ")
}

// Never is the outcome of a boot that stops.
func Never(why string) Outcome { return Outcome{Verdict: NeverJoins, Why: why} }

// Unmodelled is the outcome of a boot that depends on what the model does
// not read.
func Unmodelled(why string) Outcome { return Outcome{Verdict: NotModelled, Why: why} }
