package al2

import (
	"slices"
	"strings"

	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
)

// valueOptions are the options of /etc/eks/bootstrap.sh that take the
// next word as their value, and the variable each sets; a variable not set
// by an option is taken from the environment (bootstrap.sh defaults each
// with ${NAME:-...}).
var valueOptions = map[string]string{
	"--use-max-pods": "USE_MAX_PODS", "--b64-cluster-ca": "B64_CLUSTER_CA", "--apiserver-endpoint": "APISERVER_ENDPOINT",
	"--kubelet-extra-args": "KUBELET_EXTRA_ARGS", "--enable-docker-bridge": "ENABLE_DOCKER_BRIDGE",
	"--aws-api-retry-attempts": "API_RETRY_ATTEMPTS", "--docker-config-json": "DOCKER_CONFIG_JSON",
	"--containerd-config-file": "CONTAINERD_CONFIG_FILE", "--pause-container-account": "PAUSE_CONTAINER_ACCOUNT",
	"--pause-container-version": "PAUSE_CONTAINER_VERSION", "--dns-cluster-ip": "DNS_CLUSTER_IP",
	"--container-runtime": "CONTAINER_RUNTIME", "--ip-family": "IP_FAMILY", "--service-ipv4-cidr": "SERVICE_IPV4_CIDR",
	"--service-ipv6-cidr": "SERVICE_IPV6_CIDR", "--enable-local-outpost": "ENABLE_LOCAL_OUTPOST", "--cluster-id": "CLUSTER_ID",
	"--mount-bpf-fs": "MOUNT_BPF_FS", "--local-disks": "LOCAL_DISKS",
}

// defaults are the settings bootstrap.sh gives what neither an option nor
// the environment sets (${NAME:-default}).
var defaults = map[string]string{"USE_MAX_PODS": "true", "API_RETRY_ATTEMPTS": "3", "PAUSE_CONTAINER_VERSION": "3.5", "ENABLE_DOCKER_BRIDGE": "false"}

// Bootstrap is what bootstrap.sh makes of one run: its arguments walked
// once (an option that takes a value takes the next word, whatever it is;
// a later one replaces an earlier one; -h or --help exits with an error;
// any other word is positional, the first the cluster name) and its
// environment for what no option set.
type Bootstrap struct {
	ClusterName string
	// Vars are the script's settings, by variable name, from options or
	// the environment.
	Vars map[string]string
	// From says where each setting came from: "--option" or "environment".
	From map[string]string
	// Positional are the words taken as positional arguments (an
	// --option=VALUE word among them: bootstrap.sh does not understand it).
	Positional []string
	// Exits says why the script stops before it starts the kubelet.
	Exits string
	// KubeletArgs are the kubelet's words from KUBELET_EXTRA_ARGS, as
	// systemd reads the drop-in bootstrap.sh writes
	// (Environment='KUBELET_EXTRA_ARGS=VALUE') and splits the variable.
	KubeletArgs []string
	// Intended are the words KUBELET_EXTRA_ARGS means read on its own
	// (its quotes grouping); they differ from KubeletArgs when a single
	// quote inside the value ends the drop-in's quoting and cuts it.
	Intended []string
	// Replaced are earlier --kubelet-extra-args values a later one
	// replaced, in order.
	Replaced []string
	// Joined are the positional words written --option=VALUE for an
	// option bootstrap.sh takes as two words: it does not understand them.
	Joined []string
}

// Read reads a run of bootstrap.sh: its arguments (the command name
// excluded) and its environment.
func Read(args []string, env map[string]string) *Bootstrap {
	b := &Bootstrap{Vars: map[string]string{}, From: map[string]string{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, isOption := valueOptions[arg]
		switch {
		case arg == "-h" || arg == "--help":
			b.Exits = arg + " prints the help and exits with an error"
			return b
		case isOption:
			if i+1 >= len(args) {
				b.Exits = arg + " is the last argument, with no value after it: the script exits on the unbound $2 (set -o nounset)"
				return b
			}
			if prev, set := b.Vars[name]; set && name == "KUBELET_EXTRA_ARGS" {
				b.Replaced = append(b.Replaced, prev)
			}
			b.Vars[name], b.From[name] = args[i+1], arg
			i++
		default:
			b.Positional = append(b.Positional, arg)
			if option, _, ok := strings.Cut(arg, "="); ok && valueOptions[option] != "" {
				b.Joined = append(b.Joined, arg)
			}
		}
	}
	for _, name := range valueOptions {
		if _, set := b.Vars[name]; !set {
			if v, ok := env[name]; ok && v != "" {
				b.Vars[name], b.From[name] = v, "environment"
			} else if def, ok := defaults[name]; ok {
				b.Vars[name], b.From[name] = def, "default"
			}
		}
	}
	if len(b.Positional) > 0 {
		b.ClusterName = b.Positional[0]
	}
	if b.ClusterName == "" {
		b.Exits = "no cluster name is given (its first positional argument): it logs \"cluster name is not defined\" and exits"
		return b
	}
	if extra := b.Vars["KUBELET_EXTRA_ARGS"]; extra != "" {
		b.KubeletArgs = systemd.Words(systemd.Environment("'KUBELET_EXTRA_ARGS=" + extra + "'")["KUBELET_EXTRA_ARGS"])
		b.Intended = systemd.Words(extra)
	}
	return b
}

// Cut reports a KUBELET_EXTRA_ARGS the drop-in's quoting gives the
// kubelet differently from what it means on its own.
func (b *Bootstrap) Cut() bool { return !slices.Equal(b.KubeletArgs, b.Intended) }

// LooksUpCluster reports a run that finds the cluster's endpoint or CA
// with `aws eks describe-cluster` (neither was given), which needs the
// node role to be allowed eks:DescribeCluster.
func (b *Bootstrap) LooksUpCluster() bool {
	return b.Vars["B64_CLUSTER_CA"] == "" || b.Vars["APISERVER_ENDPOINT"] == ""
}
