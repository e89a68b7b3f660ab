package bottlerocket

import (
	"errors"
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// settingsTables are the top-level tables of the aws-k8s variants'
// settings (bottlerocket's sources/settings-plugins/aws-k8s, newer
// variants' plugins tables included: a table the node has that is not
// here would be a false block).
var settingsTables = []string{
	"motd", "kubernetes", "updates", "host-containers", "bootstrap-commands", "bootstrap-containers", "ntp", "network",
	"kernel", "boot", "aws", "metrics", "pki", "container-registry", "oci-defaults", "oci-hooks", "cloudformation", "dns",
	"container-runtime", "autoscaling", "container-runtime-plugins", "image-verifier-plugins",
}

// otherTables are the checks of settings tables besides kubernetes that
// users commonly get wrong: settings.kernel.sysctl's values are strings
// (an integer fails the whole PATCH: "invalid type: integer, expected a
// string").
var otherTables = map[string]rule{
	"kernel": func(v any) error {
		k, _ := v.(map[string]any)
		if sysctl, ok := k["sysctl"]; ok {
			if err := mapOf(singleLine, str(singleLine))(sysctl); err != nil {
				return fmt.Errorf("sysctl: %w", err)
			}
		}
		return nil
	},
}

// versionedFields are settings.kubernetes keys some Bottlerocket versions
// have and others refuse: no verdict either way.
var versionedFields = []string{
	"topology-manager-policy-options", "kubelet-extra-config", "container-runtime-endpoint",
	"memory-reservation-policy", "memory-throttling-factor",
}

const (
	i32Min, i32Max = math.MinInt32, math.MaxInt32
)

// kubernetesFields are the fields of settings.kubernetes
// (KubernetesSettingsV1 of bottlerocket-settings-sdk's settings models)
// and the rules of their types.
var kubernetesFields = map[string]rule{
	"cluster-name":                            str(clusterName),
	"cluster-certificate":                     str(validBase64),
	"server-certificate":                      str(validBase64),
	"server-key":                              str(validBase64),
	"api-server":                              str(urlValue),
	"provider-id":                             str(urlValue),
	"node-labels":                             mapOf(labelKey, str(labelValue)),
	"node-taints":                             nodeTaints,
	"static-pods":                             mapOf(identifier, structOf(map[string]rule{"enabled": boolean, "manifest": str(validBase64)})),
	"authentication-mode":                     str(oneOf("aws", "tls")),
	"bootstrap-token":                         str(matches(regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`), "a bootstrap token (6 and 16 lower-case letters or digits, joined by a dot)")),
	"standalone-mode":                         boolean,
	"server-tls-bootstrap":                    boolean,
	"cpu-cfs-quota-enforced":                  boolean,
	"seccomp-default":                         boolean,
	"device-ownership-from-security-context":  boolean,
	"single-process-oom-kill":                 boolean,
	"static-pods-enabled":                     boolean,
	"fail-cgroup-v1":                          boolean,
	"fail-cgroupv1":                           boolean,
	"eviction-hard":                           mapOf(evictionKey, str(threshold)),
	"eviction-soft":                           mapOf(evictionKey, str(threshold)),
	"eviction-soft-grace-period":              mapOf(evictionKey, str(duration)),
	"eviction-max-pod-grace-period":           integer(0, i32Max),
	"kube-reserved":                           mapOf(reservedKey, str(quantity)),
	"system-reserved":                         mapOf(reservedKey, str(quantity)),
	"allowed-unsafe-sysctls":                  listOf(str(singleLine)),
	"cloud-provider":                          str(oneOf("aws", "external", "", `""`)),
	"registry-qps":                            integer(i32Min, i32Max),
	"registry-burst":                          integer(i32Min, i32Max),
	"event-qps":                               integer(i32Min, i32Max),
	"event-burst":                             integer(i32Min, i32Max),
	"kube-api-qps":                            integer(i32Min, i32Max),
	"kube-api-burst":                          integer(i32Min, i32Max),
	"container-log-max-files":                 integer(i32Min, i32Max),
	"container-log-max-workers":               integer(i32Min, i32Max),
	"max-parallel-image-pulls":                integer(i32Min, i32Max),
	"container-log-max-size":                  str(quantity),
	"container-log-monitor-interval":          str(duration),
	"cpu-manager-reconcile-period":            str(duration),
	"image-minimum-gc-age":                    str(duration),
	"image-maximum-gc-age":                    str(duration),
	"shutdown-grace-period":                   str(duration),
	"shutdown-grace-period-for-critical-pods": str(duration),
	"cpu-manager-policy":                      str(oneOf("static", "Static", "none", "None")),
	"cpu-manager-policy-options":              listOf(str(oneOf("full-pcpus-only", "distribute-cpus-across-numa", "prefer-align-cpus-by-uncorecache", "strict-cpu-reservation"))),
	"topology-manager-scope":                  str(oneOf("container", "pod")),
	"topology-manager-policy":                 str(oneOf("none", "restricted", "best-effort", "single-numa-node")),
	"pod-pids-limit":                          integer(math.MinInt64, math.MaxInt64),
	"image-gc-high-threshold-percent":         integerPercent,
	"image-gc-low-threshold-percent":          integerPercent,
	"log-level":                               integer(0, math.MaxUint8),
	"credential-providers":                    mapOf(identifier, credentialProvider),
	"memory-manager-reserved-memory":          mapOf(identifier, memoryReservation),
	"memory-manager-policy":                   str(oneOf("Static", "static", "None", "none")),
	"reserved-cpus":                           str(cpuSet),
	"memory-swap-behavior":                    str(oneOf("NoSwap", "no-swap", "LimitedSwap", "limited-swap")),
	"hostname-override-source":                str(oneOf("private-dns-name", "instance-id")),
	"max-pods":                                integer(0, math.MaxUint32),
	"cluster-dns-ip":                          clusterDNSIP,
	"cluster-domain":                          str(dnsDomain),
	"node-ip":                                 str(ipAddress),
	"pod-infra-container-image":               str(singleLine),
	"hostname-override":                       str(linuxHostname),
	"ids-per-pod":                             idsPerPod,
}

func clusterName(s string) error {
	return matches(regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$`), "a cluster name (a letter or digit, then up to 99 letters, digits, '-' or '_')")(s)
}

func evictionKey(s string) error {
	return oneOf("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available")(s)
}

func reservedKey(s string) error { return oneOf("cpu", "memory", "ephemeral-storage")(s) }

var quantityPattern = regexp.MustCompile(`^([+-]?[0-9.]+)((e)?[0-9]*)$|^([+-]?[0-9.]+)((E|P|T|G|M|K)i?)?$|^([+-]?[0-9.]+)(n|u|m|k)?$`)

func quantity(s string) error {
	return matches(quantityPattern, "a quantity (100m, 512Mi, 2G)")(s)
}

// threshold is a percentage below 100, or a quantity.
func threshold(s string) error {
	if number, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(number, 32)
		if err != nil || strings.ContainsAny(number, "xXpP_") || math.IsNaN(f) || f < 0 || f >= 100 {
			return errors.New("not a percentage from 0 to below 100")
		}
		return nil
	}
	return quantity(s)
}

var durationPattern = regexp.MustCompile(`^(([0-9]+\.)?[0-9]+h)?(([0-9]+\.)?[0-9]+m)?(([0-9]+\.)?[0-9]+s)?(([0-9]+\.)?[0-9]+ms)?$`)

func duration(s string) error {
	if s == "" {
		return errors.New("empty; a duration is like 1h30m or 90s")
	}
	return matches(durationPattern, "a duration (1h30m, 90s, 500ms)")(s)
}

// controlFree refuses control characters (Bottlerocket's single-line
// types do).
func controlFree(s string) error {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("holds the control character %U", r)
		}
	}
	return nil
}

func singleLine(s string) error {
	if err := controlFree(s); err != nil {
		return err
	}
	if strings.ContainsAny(s, "\n\r\v\f\u0085") {
		return errors.New("holds a line break")
	}
	return nil
}

func identifier(s string) error {
	if len(s) > 76 {
		return errors.New("longer than 76 characters")
	}
	for _, r := range s {
		if (r >= 128 || !unicode.IsLetter(r) && !unicode.IsDigit(r)) && r != '-' {
			return fmt.Errorf("holds %q; an identifier is letters, digits and '-'", r)
		}
	}
	return nil
}

var cpuSetPattern = regexp.MustCompile(`^([0-9]+(-[0-9]+)?,?)*([0-9]+(-[0-9]+)?)+$`)

func cpuSet(s string) error {
	if err := controlFree(s); err != nil {
		return err
	}
	return matches(cpuSetPattern, "a CPU set (0-3,7)")(s)
}

var hostnamePattern = regexp.MustCompile(`^[0-9a-z.-]{1,253}$`)

func linuxHostname(s string) error {
	if err := controlFree(s); err != nil {
		return err
	}
	if !hostnamePattern.MatchString(s) || strings.HasPrefix(s, "-") || strings.HasPrefix(s, ".") {
		return errors.New("not a host name (lower-case letters, digits, '-' and '.')")
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") {
			return errors.New("not a host name: each part between dots is 1 to 63 characters and does not start with '-'")
		}
	}
	return nil
}

// dnsDomain takes a domain name (not an address, not starting with a
// dot).
func dnsDomain(s string) error {
	if err := controlFree(s); err != nil {
		return err
	}
	if s == "" || strings.HasPrefix(s, ".") {
		return errors.New("not a domain name")
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	last := labels[len(labels)-1]
	if _, err := strconv.ParseUint(last, 0, 64); err == nil || net.ParseIP(strings.Trim(s, "[]")) != nil {
		return errors.New("an address, not a domain name")
	}
	for _, label := range labels {
		if label == "" || strings.ContainsAny(label, " #%/:<>?@[\\]^|") {
			return errors.New("not a domain name")
		}
	}
	return nil
}

// credentialProvider is a table of enabled and image-patterns (both
// needed), cache-duration and environment; other keys are passed over.
func credentialProvider(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%v is %s; the setting takes a table", show(v), kind(v))
	}
	for _, need := range []string{"enabled", "image-patterns"} {
		if _, ok := m[need]; !ok {
			return fmt.Errorf("%s is missing (a credential provider needs enabled and image-patterns)", need)
		}
	}
	checks := map[string]rule{"enabled": boolean, "image-patterns": listOf(str(singleLine)), "cache-duration": str(duration), "environment": mapOf(singleLine, str(singleLine))}
	for k, check := range checks {
		if x, ok := m[k]; ok {
			if err := check(x); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	return nil
}

// memoryReservation is a table of enabled (needed) and quantities of
// memory and huge pages.
func memoryReservation(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%v is %s; the setting takes a table", show(v), kind(v))
	}
	if _, ok := m["enabled"]; !ok {
		return errors.New("enabled is missing")
	}
	for k, x := range m {
		var err error
		switch k {
		case "enabled":
			err = boolean(x)
		case "memory", "hugepages-2Mi", "hugepages-1Gi":
			err = str(quantity)(x)
		default:
			err = errors.New("the settings model has no such field (memory, hugepages-2Mi, hugepages-1Gi)")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// idsPerPod is a multiple of 65536 below 2^32.
func idsPerPod(v any) error {
	i, ok := v.(int64)
	if !ok {
		return fmt.Errorf("%v is %s; the setting takes an integer", show(v), kind(v))
	}
	if i%65536 != 0 || i >= 1<<32 {
		return fmt.Errorf("%d is not a multiple of 65536 below 4294967296", i)
	}
	return nil
}
