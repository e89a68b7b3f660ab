package scheduling

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// SpreadDefaults are the topology spread constraints kube-scheduler gives
// a pod that sets none of its own (its PodTopologySpread plugin's default
// constraints): the scheduler plans such pods spread as kube-scheduler
// will place them.
type SpreadDefaults []corev1.TopologySpreadConstraint

// SystemSpreadDefaults are kube-scheduler's own defaults (defaultingType
// System): soft spreading over hosts (skew 3) and zones (skew 5).
var SystemSpreadDefaults = SpreadDefaults{
	{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{MaxSkew: 5, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
}

// ReadSpreadDefaults reads the default constraints from a scheduler
// configuration (name labels errors): a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1: the default-scheduler profile's
// PodTopologySpread arguments, defaultingType List with its
// defaultConstraints, or System, kube-scheduler's default, with
// SystemSpreadDefaults), or Karpenter's own scheduler configuration
// (podTopologySpread.defaultConstraints).
func ReadSpreadDefaults(name string, data []byte) (SpreadDefaults, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out SpreadDefaults
	var err error
	if head.Kind == "KubeSchedulerConfiguration" {
		out, err = fromKubeScheduler(data)
	} else {
		var doc struct {
			PodTopologySpread struct {
				DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints"`
			} `json:"podTopologySpread"`
		}
		err = yaml.UnmarshalStrict(data, &doc)
		out = doc.PodTopologySpread.DefaultConstraints
	}
	if err == nil {
		err = out.validate()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

func fromKubeScheduler(data []byte) (SpreadDefaults, error) {
	var cfg struct {
		APIVersion string `json:"apiVersion"`
		Profiles   []struct {
			SchedulerName string `json:"schedulerName"`
			PluginConfig  []struct {
				Name string `json:"name"`
				Args struct {
					DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints"`
					DefaultingType     string                            `json:"defaultingType"`
				} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, err
	}
	if cfg.APIVersion != "kubescheduler.config.k8s.io/v1" {
		return nil, fmt.Errorf("apiVersion %q: write kubescheduler.config.k8s.io/v1", cfg.APIVersion)
	}
	for _, p := range cfg.Profiles {
		if p.SchedulerName != "" && p.SchedulerName != corev1.DefaultSchedulerName {
			continue
		}
		for _, pc := range p.PluginConfig {
			if pc.Name != "PodTopologySpread" {
				continue
			}
			switch pc.Args.DefaultingType {
			case "List":
				return pc.Args.DefaultConstraints, nil
			case "", "System":
				if len(pc.Args.DefaultConstraints) > 0 {
					return nil, errors.New("profiles[].pluginConfig PodTopologySpread: defaultConstraints need defaultingType: List")
				}
				return SystemSpreadDefaults, nil
			default:
				return nil, fmt.Errorf("profiles[].pluginConfig PodTopologySpread: defaultingType %q: write List or System", pc.Args.DefaultingType)
			}
		}
	}
	return SystemSpreadDefaults, nil
}

// validate refuses what kube-scheduler refuses in default constraints.
func (d SpreadDefaults) validate() error {
	seen := map[[2]string]int{}
	for i, c := range d {
		at := fmt.Sprintf("defaultConstraints[%d]", i)
		switch {
		case c.MaxSkew <= 0:
			return fmt.Errorf("%s.maxSkew must be greater than 0", at)
		case c.TopologyKey == "":
			return fmt.Errorf("%s.topologyKey must be set", at)
		case len(validation.IsQualifiedName(c.TopologyKey)) > 0:
			return fmt.Errorf("%s.topologyKey %q is not a label key", at, c.TopologyKey)
		case c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway:
			return fmt.Errorf("%s.whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway", at)
		case c.LabelSelector != nil:
			return fmt.Errorf("%s.labelSelector must not be set: each pod's own selector is used", at)
		case len(c.MatchLabelKeys) > 0:
			return fmt.Errorf("%s.matchLabelKeys must not be set", at)
		}
		key := [2]string{c.TopologyKey, string(c.WhenUnsatisfiable)}
		if j, dup := seen[key]; dup {
			return fmt.Errorf("%s is a duplicate of defaultConstraints[%d]", at, j)
		}
		seen[key] = i
	}
	return nil
}

// apply reports whether the defaults spread the pod: it sets no
// constraints, and a controller owns it and its labels.
func (d SpreadDefaults) apply(p *corev1.Pod) bool {
	return len(p.Spec.TopologySpreadConstraints) == 0 && len(d) > 0 && metav1.GetControllerOf(p) != nil && len(p.Labels) > 0
}

// For are the constraints a pod is scheduled with: its own, or, when it
// sets none and a controller owns it, the defaults selecting the pods of
// its controller (its labels, which hold its ReplicaSet's or
// StatefulSet's selector). A pod without a controller (nor so a selector
// kube-scheduler could deduce) gets none.
func (d SpreadDefaults) For(p *corev1.Pod) []corev1.TopologySpreadConstraint {
	if !d.apply(p) {
		return p.Spec.TopologySpreadConstraints
	}
	out := slices.Clone(d)
	for i := range out {
		out[i].LabelSelector = &metav1.LabelSelector{MatchLabels: maps.Clone(p.Labels)}
	}
	return out
}
