package whatif

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Settings are the controller's settings decisions depend on: what
// --ignore-dra-requests, --min-values-policy, --preference-policy,
// --vm-memory-overhead-percent and --reserved-enis (or Karpenter's
// environment variables of the same names) set.
type Settings struct {
	IgnoreDRARequests bool
	Policy            scheduling.Policy
	// VMMemoryOverheadPercent is nil for the default (0.075).
	VMMemoryOverheadPercent *float64
	ReservedENIs            int
}

// Controller is a nodewright or Karpenter controller Deployment read:
// its container's arguments and environment say how it decides.
type Controller struct {
	// Name is "namespace/name".
	Name string
	// Karpenter: Karpenter's controller, not nodewright's.
	Karpenter bool
	Args      []string
	Env       map[string]string
	// Unresolved are environment variables set from a ConfigMap, a
	// Secret or a field, whose values are not in the Deployment.
	Unresolved []string
	// ServiceAccount is "namespace/name" of the ServiceAccount its pods
	// run as: its IAM role is the controller's.
	ServiceAccount string
}

// ControllerOf reads a Deployment as a controller's, when it is one:
// its pods are labelled app.kubernetes.io/name nodewright or karpenter,
// or run Karpenter's controller image.
func ControllerOf(d *appsv1.Deployment) (*Controller, bool) {
	name := d.Spec.Template.Labels["app.kubernetes.io/name"]
	for _, c := range d.Spec.Template.Spec.Containers {
		karpenter := strings.Contains(c.Image, "karpenter/controller") || name == "karpenter" && c.Name == "controller"
		nodewright := name == "nodewright" && len(c.Args) > 0 && c.Args[0] == "controller"
		if !karpenter && !nodewright {
			continue
		}
		ctl := &Controller{Name: d.Namespace + "/" + d.Name, Karpenter: karpenter, Args: c.Args, Env: map[string]string{},
			ServiceAccount: cmp.Or(d.Namespace, "default") + "/" + cmp.Or(d.Spec.Template.Spec.ServiceAccountName, "default")}
		if nodewright {
			ctl.Args = c.Args[1:]
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				ctl.Unresolved = append(ctl.Unresolved, e.Name)
				continue
			}
			ctl.Env[e.Name] = e.Value
		}
		return ctl, true
	}
	return nil, false
}

// settingNames are the environment variables the settings come from.
var settingNames = []string{"IGNORE_DRA_REQUESTS", "MIN_VALUES_POLICY", "PREFERENCE_POLICY", "VM_MEMORY_OVERHEAD_PERCENT", "RESERVED_ENIS"}

// Unread says which of the settings' environment variables the
// Deployment sets from elsewhere, which the tools cannot read.
func (c *Controller) Unread() []string {
	var out []string
	for _, name := range c.Unresolved {
		if slices.Contains(settingNames, name) {
			out = append(out, name)
		}
	}
	return out
}

func (c *Controller) String() string {
	kind := "nodewright's"
	if c.Karpenter {
		kind = "Karpenter's"
	}
	return fmt.Sprintf("Deployment %s (%s controller)", c.Name, kind)
}

// Describe says what the settings are, as the controller's flags.
func (s Settings) Describe() string {
	minValues, preferences := s.Policy.Names()
	share := instancetypes.DefaultVMMemoryOverheadPercent
	if s.VMMemoryOverheadPercent != nil {
		share = *s.VMMemoryOverheadPercent
	}
	return fmt.Sprintf("--min-values-policy=%s --preference-policy=%s --ignore-dra-requests=%t --vm-memory-overhead-percent=%g --reserved-enis=%d",
		minValues, preferences, s.IgnoreDRARequests, share, s.ReservedENIs)
}

// typeOptions are instance-type options with the settings' VM share and
// reserved interfaces.
func (o *Objects) typeOptions(opts instancetypes.Options) instancetypes.Options {
	opts.VMMemoryOverheadPercent, opts.ReservedENIs = o.Settings.VMMemoryOverheadPercent, o.Settings.ReservedENIs
	return opts
}
