// Package kubelet simulates the node side of a launch: it reads an
// instance's user data the way the node would and decides how (and
// whether) the kubelet registers the Node.
package kubelet

import (
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	bootkubelet "github.com/nodewright/nodewright/internal/aws/boot/kubelet"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// Registration is how the kubelet registers its Node.
type Registration struct {
	Labels map[string]string
	Taints []corev1.Taint
	// MaxPods is the pod count the kubelet runs with (0: the instance
	// type's default); Reserved.MaxPods the one its kube-reserved was
	// worked out from.
	MaxPods int32
	// Reserved is what the kubelet keeps from pods, as it read it: its
	// kubeReserved, systemReserved, evictionHard and podsPerCore (the
	// rest of the configuration does not change the node's capacity).
	Reserved kubeletconfig.Config
	// Windows: the node runs Windows (its user data was PowerShell).
	Windows bool
	// ExternalCloudProvider: the kubelet runs with --cloud-provider=external
	// and so adds node.cloudprovider.kubernetes.io/uninitialized until the
	// cloud controller manager initialises the node.
	ExternalCloudProvider bool
}

// NoKubeletError says the user data never starts the kubelet.
type NoKubeletError struct{ Reason string }

func (e *NoKubeletError) Error() string { return "the kubelet never starts: " + e.Reason }

// Read interprets base64 user data of an AMI family as the node would.
func Read(family, encoded string) (*Registration, error) {
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, fmt.Errorf("user data is not base64: %w", err)
	}
	// The family's boot, or what a Custom AMI's user data is for, as the
	// node boots (package boot: the model validation and doctor judge the
	// user data by).
	o, model := userdata.Boot(family, data, 0)
	if model == "" {
		return nil, &NotModelledError{Reason: "no boot model reads user data for the " + family + " family"}
	}
	// bootstrap.sh and Start-EKSBootstrap.ps1 work the reservations out
	// from the instance type; nodeadm and Bottlerocket write the
	// configuration's.
	reg, err := fromOutcome(o, model != awsv1.AMIFamilyAL2 && !awsv1.IsWindows(model))
	if reg != nil {
		reg.Windows = awsv1.IsWindows(model)
	}
	return reg, err
}

// NotModelledError says the simulation cannot boot the user data: what
// the node does depends on something the boot model does not read.
type NotModelledError struct{ Reason string }

func (e *NotModelledError) Error() string { return "the boot is not modelled: " + e.Reason }

// fromOutcome is the registration of a boot outcome; configured says the
// image writes the reservations of the kubelet's configuration (nodeadm),
// not its own (bootstrap.sh works them out from the instance type).
func fromOutcome(o boot.Outcome, configured bool) (*Registration, error) {
	switch o.Verdict {
	case boot.NeverJoins:
		return nil, &NoKubeletError{Reason: o.Why}
	case boot.NotModelled:
		return nil, &NotModelledError{Reason: o.Why}
	}
	k := o.Kubelet
	reg := &Registration{Labels: k.Labels, Taints: k.RegisterWithTaints, MaxPods: k.MaxPods, ExternalCloudProvider: k.CloudProvider == "external"}
	if reg.Labels == nil {
		reg.Labels = map[string]string{}
	}
	reg.Reserved = kubeletconfig.Config{KubeReserved: given(k, "kube-reserved", k.KubeReserved), SystemReserved: given(k, "system-reserved", k.SystemReserved),
		EvictionHard: given(k, "eviction-hard", k.EvictionHard)}
	if configured {
		reg.Reserved.KubeReserved, reg.Reserved.SystemReserved, reg.Reserved.EvictionHard = k.KubeReserved, k.SystemReserved, k.EvictionHard
	}
	// nodeadm works out kube-reserved from the configuration's maxPods
	// (a --max-pods flag changes only the pod count); bootstrap.sh from
	// the instance type's ENI limit, and Reserved.MaxPods stays unset.
	if o.ReservedMaxPods > 0 {
		reg.Reserved.MaxPods = ptr.To(o.ReservedMaxPods)
	}
	if k.PodsPerCore > 0 {
		reg.Reserved.PodsPerCore = ptr.To(k.PodsPerCore)
	}
	return reg, nil
}

// given is a reservation the kubelet's flags set (the image's own
// defaults are the instance type's, as the simulation works them out).
func given(k *bootkubelet.Started, flag string, m map[string]string) map[string]string {
	if !k.Given.Has(flag) {
		return nil
	}
	return m
}
