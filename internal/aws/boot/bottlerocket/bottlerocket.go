// Package bottlerocket is the boot of a Bottlerocket node: its
// early-boot-config reads the user data as one TOML document (gzip
// undone, nothing else), takes its settings table and PATCHes it to the
// node's API server, which decodes it into its settings model — strict:
// an unknown key, a value of another type or one its type refuses fails
// the whole PATCH, the units that need it fail, and the kubelet never
// starts. The kubelet then starts with the configuration Bottlerocket
// renders from settings.kubernetes, read by the kubelet's own flag
// handling (boot/kubelet).
package bottlerocket

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
)

// Machine is what the node works out for itself.
type Machine struct {
	// MaxPods is the pod limit Bottlerocket works out for the instance
	// type when settings.kubernetes.max-pods is not set; 0 when not known.
	MaxPods int32
}

// kubeletArgs are the kubelet's own arguments on a Bottlerocket node,
// before the node labels.
var kubeletArgs = []string{
	"--cloud-provider=external", "--kubeconfig=/etc/kubernetes/kubelet/kubeconfig",
	"--config=/etc/kubernetes/kubelet/config", "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
	"--hostname-override=ip-10-0-0-1.ec2.internal", "--node-ip=10.0.0.1", "--v=2",
}

// Boot is what a Bottlerocket node makes of its user data.
func Boot(userData []byte, m Machine) boot.Outcome {
	k, notes, err := Read(userData)
	var unmodelled *NotModelledError
	if errors.As(err, &unmodelled) {
		o := boot.Unmodelled(unmodelled.Reason + "; launch a node from the EC2NodeClass and read its console (early-boot-config) and journalctl -u kubelet")
		o.Notes = notes
		return o
	}
	if err != nil {
		o := boot.Never("early-boot-config cannot apply the user data's settings, so the units that need them fail and the kubelet never starts: " + err.Error())
		o.Notes = notes
		return o
	}
	for _, key := range []string{"cluster-name", "api-server", "cluster-certificate"} {
		if _, ok := k[key]; !ok && !standalone(k) {
			o := boot.Never("settings.kubernetes." + key + " is not set: the kubelet has no cluster to join")
			o.Notes = notes
			return o
		}
	}
	file, labels := kubeletConfig(k, m)
	args := slices.Clone(kubeletArgs)
	if len(labels) > 0 {
		args = append(args, "--node-labels="+labels)
	}
	started, err := kubelet.Start(args, file)
	if err != nil {
		o := boot.Never(err.Error() + " (its configuration from settings.kubernetes)")
		o.Notes = notes
		return o
	}
	return boot.Outcome{Verdict: boot.Joins, Kubelet: started, Notes: notes, ReservedMaxPods: file.MaxPods}
}

func standalone(k map[string]any) bool { b, _ := k["standalone-mode"].(bool); return b }

// Read reads user data as early-boot-config and the API server do:
// settings.kubernetes as decoded (keys checked against the settings
// model), notes on what is dropped, or why the settings are refused.
func Read(userData []byte) (kubernetes map[string]any, notes []string, err error) {
	data := userData
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		r, gzErr := gzip.NewReader(bytes.NewReader(data))
		if gzErr != nil {
			return nil, nil, fmt.Errorf("the user data starts as gzip but does not decompress: %w", gzErr)
		}
		if data, err = io.ReadAll(io.LimitReader(r, 16<<20)); err != nil {
			return nil, nil, fmt.Errorf("the user data starts as gzip but does not decompress: %w", err)
		}
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil, []string{"the user data is empty: early-boot-config applies no settings"}, fmt.Errorf("no settings: nothing says which cluster to join")
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("the user data is not TOML: %w", err)
	}
	raw, ok := doc["settings"]
	if !ok {
		return nil, nil, fmt.Errorf("the TOML has no settings table")
	}
	settings, ok := raw.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("settings is %s, not a table", kind(raw))
	}
	for _, key := range slices.Sorted(maps.Keys(doc)) {
		if key != "settings" {
			notes = append(notes, fmt.Sprintf("the top-level key %q is not read: early-boot-config applies only the settings table", key))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(settings)) {
		if !slices.Contains(settingsTables, key) {
			return nil, notes, fmt.Errorf("settings.%s: the settings model has no such table (%s)", key, closest(key, settingsTables))
		}
		if _, isTable := settings[key].(map[string]any); !isTable && key != "motd" {
			return nil, notes, fmt.Errorf("settings.%s is %s, not a table", key, kind(settings[key]))
		}
		if check, ok := otherTables[key]; ok {
			if err := check(settings[key]); err != nil {
				return nil, notes, fmt.Errorf("settings.%s: %w", key, err)
			}
		}
		if key != "kubernetes" {
			notes = append(notes, fmt.Sprintf("settings.%s is applied as written: its values are checked here only where named (settings.kernel.sysctl's)", key))
		}
	}
	k, _ := settings["kubernetes"].(map[string]any)
	if err := checkKubernetes(k); err != nil {
		return nil, notes, err
	}
	return k, notes, nil
}

// kubeletConfig is the kubelet configuration Bottlerocket renders from
// settings.kubernetes, and its --node-labels.
func kubeletConfig(k map[string]any, m Machine) (*kubelet.Config, string) {
	c := &kubelet.Config{MaxPods: m.MaxPods, ClusterDNS: []string{"10.100.0.10"}}
	if v, ok := k["max-pods"].(int64); ok {
		c.MaxPods = int32(v) //nolint:gosec // checked to be a u32 that fits
	}
	switch dns := k["cluster-dns-ip"].(type) {
	case string:
		c.ClusterDNS = []string{dns}
	case []any:
		c.ClusterDNS = nil
		for _, ip := range dns {
			c.ClusterDNS = append(c.ClusterDNS, ip.(string))
		}
	}
	c.KubeReserved, c.SystemReserved, c.EvictionHard = stringMap(k["kube-reserved"]), stringMap(k["system-reserved"]), stringMap(k["eviction-hard"])
	if taints, ok := k["node-taints"].(map[string]any); ok {
		for _, key := range slices.Sorted(maps.Keys(taints)) {
			for _, v := range taintValues(taints[key]) {
				value, effect, _ := strings.Cut(v, ":")
				c.RegisterWithTaints = append(c.RegisterWithTaints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
			}
		}
	}
	var labels []string
	if l, ok := k["node-labels"].(map[string]any); ok {
		for _, key := range slices.Sorted(maps.Keys(l)) {
			labels = append(labels, key+"="+l[key].(string))
		}
	}
	return c, strings.Join(labels, ",")
}

// Taints are settings.kubernetes.node-taints as the kubelet registers
// them ("key=value:Effect", or "key:Effect"), sorted.
func Taints(k map[string]any) []string {
	c, _ := kubeletConfig(k, Machine{})
	out := make([]string, len(c.RegisterWithTaints))
	for i, t := range c.RegisterWithTaints {
		out[i] = t.ToString()
	}
	slices.Sort(out)
	return out
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// taintValues are a node-taints entry's "value:Effect" strings (one
// string, or a list of them).
func taintValues(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, s := range t {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}
