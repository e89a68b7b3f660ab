package userdata

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
)

// Cluster is what a node needs to know of its cluster.
type Cluster struct {
	Name     string
	Endpoint string
	// CABundle is the cluster CA certificate, base64-encoded.
	CABundle string
	// CIDR is the Service CIDR; DNS the kube-dns ClusterIP.
	CIDR, DNS string
}

// Node is what the user data registers the node with.
type Node struct {
	Labels map[string]string
	// Taints are the NodePool's taints and startupTaints; the
	// karpenter.sh/unregistered taint is added by Generate.
	Taints  []corev1.Taint
	MaxPods int32
	// Kubelet are the EC2NodeClass's kubelet settings nodewright reads;
	// KubeletFields its other kubelet fields, which only AL2023 applies
	// (the EC2NodeClass is not ready for another family that has any).
	Kubelet       *kubeletconfig.Config
	KubeletFields map[string]any
}

// boundary separates the parts of generated MIME documents.
const boundary = "//"

// Generate returns the user data (not base64-encoded) a node of the AMI
// family is launched with: the user's userData merged with nodewright's
// bootstrap, user parts first, generated parts last. Custom user data is
// returned unchanged.
func Generate(family string, c Cluster, n Node, userData string) (string, error) {
	out, err := generate(family, c, n, userData)
	if err != nil {
		return "", err
	}
	if len(out) > MaxSize {
		return "", &TooLargeError{Size: len(out), UserSize: len(userData)}
	}
	return out, nil
}

// MaxSize is the most user data EC2 accepts, in bytes before base64
// encoding (16 KB); RunInstances, CreateFleet and launch templates refuse
// more.
const MaxSize = 16 * 1024

// TooLargeError is user data over MaxSize once nodewright's bootstrap is
// merged into the EC2NodeClass's.
type TooLargeError struct{ Size, UserSize int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the user data would be %d bytes with nodewright's bootstrap merged in (spec.userData is %d of them), over EC2's limit of %d bytes before base64 encoding, so EC2 would refuse every launch; "+
		"shrink spec.userData by %d bytes or more: fetch large scripts or files at boot (from S3 or a container image) instead of inlining them, or compress them (gzip and base64)",
		e.Size, e.UserSize, MaxSize, e.Size-MaxSize)
}

func generate(family string, c Cluster, n Node, userData string) (string, error) {
	taints := append(append([]corev1.Taint(nil), n.Taints...), corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute})
	labels := kubeletLabels(n.Labels)
	switch family {
	case awsv1.AMIFamilyCustom:
		return userData, nil
	case awsv1.AMIFamilyAL2:
		return mimeDocument(userData, ContentTypeShell, al2Bootstrap(c, n, labels, taints))
	case awsv1.AMIFamilyAL2023:
		nodeConfig, err := al2023NodeConfig(c, n, labels, taints)
		if err != nil {
			return "", err
		}
		return mimeDocument(userData, ContentTypeNodeadm, nodeConfig)
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocketSettings(c, n, labels, taints, userData)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return windowsScript(c, n, labels, taints, userData), nil
	}
	return "", fmt.Errorf("user data for amiFamily %s is not supported", family)
}

// kubeletLabels drops labels in the kubernetes.io and k8s.io domains: the
// kubelet may not set them; nodewright applies them after registration.
func kubeletLabels(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		domain, _, hasDomain := strings.Cut(k, "/")
		if hasDomain && (domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") || domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io")) {
			continue
		}
		out[k] = v
	}
	return out
}

func sortedLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

func taintList(taints []corev1.Taint) string {
	parts := make([]string, len(taints))
	for i, t := range taints {
		parts[i] = t.ToString()
	}
	return strings.Join(parts, ",")
}

// mimeDocument puts the user's parts (a plain document becomes one part of
// the family's default type) before the generated part.
func mimeDocument(userData, defaultType, generated string) (string, error) {
	parts := make([]Part, 0, 2)
	if strings.TrimSpace(userData) != "" {
		if looksLikeMIME([]byte(userData)) {
			user, err := Split([]byte(userData))
			if err != nil {
				return "", fmt.Errorf("reading the EC2NodeClass userData: %w", err)
			}
			parts = append(parts, user...)
		} else {
			ct := sniff([]byte(userData))
			if ct == ContentTypeText {
				ct = defaultType
			}
			parts = append(parts, Part{ContentType: ct, Body: []byte(userData)})
		}
	}
	parts = append(parts, Part{ContentType: defaultType, Body: []byte(generated)})
	var b strings.Builder
	fmt.Fprintf(&b, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", boundary)
	for _, p := range parts {
		fmt.Fprintf(&b, "--%s\nContent-Type: %s; charset=\"us-ascii\"\n\n", boundary, p.ContentType)
		b.Write(p.Body)
		if !bytes.HasSuffix(p.Body, []byte("\n")) {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "--%s--\n", boundary)
	return b.String(), nil
}

func al2Bootstrap(c Cluster, n Node, labels map[string]string, taints []corev1.Taint) string {
	extra := []string{}
	if len(labels) > 0 {
		extra = append(extra, fmt.Sprintf("--node-labels=%q", sortedLabels(labels)))
	}
	extra = append(extra, fmt.Sprintf("--register-with-taints=%q", taintList(taints)), fmt.Sprintf("--max-pods=%d", n.MaxPods))
	extra = append(extra, kubeletFlags(n.Kubelet)...)
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' --b64-cluster-ca '%s' \\\n", c.Name, c.Endpoint, c.CABundle)
	fmt.Fprintf(&b, "--dns-cluster-ip '%s' \\\n--use-max-pods false \\\n", clusterDNS(c, n))
	fmt.Fprintf(&b, "--kubelet-extra-args '%s'\n", strings.Join(extra, " "))
	return b.String()
}

// kubeletFlags are the kubelet flags of the settings AL2's bootstrap.sh
// has no option for.
func kubeletFlags(k *kubeletconfig.Config) []string {
	if k == nil {
		return nil
	}
	var out []string
	if k.PodsPerCore != nil {
		out = append(out, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	for _, f := range []struct {
		flag, sep string
		m         map[string]string
	}{{"--system-reserved", "=", k.SystemReserved}, {"--kube-reserved", "=", k.KubeReserved}, {"--eviction-hard", "<", k.EvictionHard}, {"--eviction-soft", "<", k.EvictionSoft}} {
		if len(f.m) > 0 {
			out = append(out, f.flag+"="+joinMap(f.m, f.sep))
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		periods := make(map[string]string, len(k.EvictionSoftGracePeriod))
		for signal, d := range k.EvictionSoftGracePeriod {
			periods[signal] = d.Duration.String()
		}
		out = append(out, "--eviction-soft-grace-period="+joinMap(periods, "="))
	}
	if k.EvictionMaxPodGracePeriod != nil {
		out = append(out, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		out = append(out, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		out = append(out, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		out = append(out, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return out
}

// joinMap writes a map as the kubelet's key<sep>value,... flag value,
// sorted.
func joinMap(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+sep+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func clusterDNS(c Cluster, n Node) string {
	if n.Kubelet != nil && len(n.Kubelet.ClusterDNS) > 0 {
		return n.Kubelet.ClusterDNS[0]
	}
	return c.DNS
}

func al2023NodeConfig(c Cluster, n Node, labels map[string]string, taints []corev1.Taint) (string, error) {
	// Fields nodewright does not read go to nodeadm as given; those it
	// reads are written from what it read.
	config := make(map[string]any, len(n.KubeletFields)+3)
	for k, v := range n.KubeletFields {
		config[k] = v
	}
	config["clusterDNS"], config["maxPods"], config["registerWithTaints"] = []string{clusterDNS(c, n)}, n.MaxPods, taints
	if k := n.Kubelet; k != nil {
		if len(k.ClusterDNS) > 0 {
			config["clusterDNS"] = k.ClusterDNS
		}
		setIf(config, "podsPerCore", k.PodsPerCore)
		setMap(config, "systemReserved", k.SystemReserved)
		setMap(config, "kubeReserved", k.KubeReserved)
		setMap(config, "evictionHard", k.EvictionHard)
		setMap(config, "evictionSoft", k.EvictionSoft)
		if len(k.EvictionSoftGracePeriod) > 0 {
			config["evictionSoftGracePeriod"] = k.EvictionSoftGracePeriod
		}
		setIf(config, "evictionMaxPodGracePeriod", k.EvictionMaxPodGracePeriod)
		setIf(config, "imageGCHighThresholdPercent", k.ImageGCHighThresholdPercent)
		setIf(config, "imageGCLowThresholdPercent", k.ImageGCLowThresholdPercent)
		if k.CPUCFSQuota != nil {
			config["cpuCFSQuota"] = *k.CPUCFSQuota
		}
	}
	kubelet := map[string]any{"config": config}
	if len(labels) > 0 {
		kubelet["flags"] = []string{"--node-labels=" + sortedLabels(labels)}
	}
	doc := map[string]any{
		"apiVersion": "node.eks.aws/v1alpha1",
		"kind":       "NodeConfig",
		"spec": map[string]any{
			"cluster": map[string]any{
				"name": c.Name, "apiServerEndpoint": c.Endpoint, "certificateAuthority": c.CABundle, "cidr": c.CIDR,
			},
			"kubelet": kubelet,
		},
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return "# generated by nodewright\n" + string(out), nil
}

func setIf(m map[string]any, key string, v *int32) {
	if v != nil {
		m[key] = *v
	}
}

func setMap(m map[string]any, key string, v map[string]string) {
	if len(v) > 0 {
		m[key] = v
	}
}

// bottlerocketSettings merges the user's TOML with the generated settings:
// cluster settings are overwritten, node-labels merged (generated wins),
// node-taints replaced.
func bottlerocketSettings(c Cluster, n Node, labels map[string]string, taints []corev1.Taint, userData string) (string, error) {
	doc := map[string]any{}
	if strings.TrimSpace(userData) != "" {
		if err := toml.Unmarshal([]byte(userData), &doc); err != nil {
			return "", fmt.Errorf("reading the EC2NodeClass userData as Bottlerocket TOML: %w", err)
		}
	}
	settings := child(doc, "settings")
	k8s := child(settings, "kubernetes")
	k8s["cluster-name"] = c.Name
	k8s["api-server"] = c.Endpoint
	k8s["cluster-certificate"] = c.CABundle
	k8s["cluster-dns-ip"] = clusterDNS(c, n)
	k8s["max-pods"] = n.MaxPods
	bottlerocketKubelet(k8s, n.Kubelet)
	nodeLabels := child(k8s, "node-labels")
	for k, v := range labels {
		nodeLabels[k] = v
	}
	nodeTaints := map[string]any{}
	for _, t := range taints {
		list, _ := nodeTaints[t.Key].([]string)
		nodeTaints[t.Key] = append(list, t.Value+":"+string(t.Effect))
	}
	k8s["node-taints"] = nodeTaints
	out, err := toml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// bottlerocketKubelet writes the kubelet settings Bottlerocket has
// settings for (all that nodewright reads but podsPerCore).
func bottlerocketKubelet(k8s map[string]any, k *kubeletconfig.Config) {
	if k == nil {
		return
	}
	for key, m := range map[string]map[string]string{
		"system-reserved": k.SystemReserved, "kube-reserved": k.KubeReserved, "eviction-hard": k.EvictionHard, "eviction-soft": k.EvictionSoft,
	} {
		if len(m) > 0 {
			k8s[key] = m
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		periods := make(map[string]string, len(k.EvictionSoftGracePeriod))
		for signal, d := range k.EvictionSoftGracePeriod {
			periods[signal] = d.Duration.String()
		}
		k8s["eviction-soft-grace-period"] = periods
	}
	for key, v := range map[string]*int32{
		"eviction-max-pod-grace-period": k.EvictionMaxPodGracePeriod, "image-gc-high-threshold-percent": k.ImageGCHighThresholdPercent,
		"image-gc-low-threshold-percent": k.ImageGCLowThresholdPercent,
	} {
		if v != nil {
			k8s[key] = *v
		}
	}
	if k.CPUCFSQuota != nil {
		k8s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
}

// child returns m[key] as a table, creating it when missing.
func child(m map[string]any, key string) map[string]any {
	if c, ok := m[key].(map[string]any); ok {
		return c
	}
	c := map[string]any{}
	m[key] = c
	return c
}
