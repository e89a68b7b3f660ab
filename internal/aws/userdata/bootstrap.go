package userdata

import (
	"slices"
	"strings"

	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
)

// bootstrapValueOptions are the options of AL2's /etc/eks/bootstrap.sh
// that take the next word as their value. Anything else that is not -h or
// --help (an --option=VALUE word included) is kept as a positional
// argument, and the first positional argument is the cluster name.
var bootstrapValueOptions = []string{
	"--use-max-pods", "--b64-cluster-ca", "--apiserver-endpoint", "--kubelet-extra-args", "--enable-docker-bridge",
	"--aws-api-retry-attempts", "--docker-config-json", "--containerd-config-file", "--pause-container-account",
	"--pause-container-version", "--dns-cluster-ip", "--container-runtime", "--ip-family", "--service-ipv4-cidr",
	"--service-ipv6-cidr", "--enable-local-outpost", "--cluster-id", "--mount-bpf-fs", "--local-disks",
}

// Bootstrap is what AL2's bootstrap.sh makes of one call, by its own
// rules: it walks its arguments once; an option that takes a value takes
// the next word, whatever it is, and a later occurrence replaces an
// earlier one; -h or --help ends the script with an error; every other
// word is positional. The value of --kubelet-extra-args is written into a
// systemd drop-in as Environment='KUBELET_EXTRA_ARGS=VALUE' and the kubelet
// gets it through $KUBELET_EXTRA_ARGS, after every argument of its own, so
// its flags win.
type Bootstrap struct {
	// ClusterName is the first positional argument.
	ClusterName string
	// ExtraArgs is the value bootstrap.sh keeps for --kubelet-extra-args
	// (the last one given); Set says one was given.
	ExtraArgs string
	Set       bool
	// KubeletArgs are the kubelet's words from ExtraArgs, as systemd
	// reads the drop-in and splits the variable.
	KubeletArgs []string
	// Intended are the words ExtraArgs means when read on its own (quotes
	// grouping); they differ from KubeletArgs when a single quote inside
	// the value ends the drop-in's quoting and cuts it.
	Intended []string
	// Replaced are earlier --kubelet-extra-args values a later one
	// replaced.
	Replaced []string
	// Positional are the words bootstrap.sh does not take as an option,
	// with Raw their text as written; JoinedOptions are those of them
	// written --option=VALUE for an option bootstrap.sh knows.
	Positional, JoinedOptions []int
	// Fails says why the script stops before it starts the kubelet ("" when
	// it does not): --help, or an option with no value after it.
	Fails string
}

// ReadBootstrap reads a call of bootstrap.sh as the script reads its
// arguments.
func ReadBootstrap(c Command) *Bootstrap {
	b := &Bootstrap{}
	for i := 0; i < len(c.Args); i++ {
		arg := c.Args[i]
		switch {
		case arg == "-h" || arg == "--help":
			b.Fails = arg + " prints the help and exits with an error"
			return b
		case slices.Contains(bootstrapValueOptions, arg):
			if i+1 >= len(c.Args) {
				// set -o nounset: $2 is unbound and the script exits.
				b.Fails = arg + " is the last argument, with no value after it: the script exits on the unbound $2"
				return b
			}
			if arg == "--kubelet-extra-args" {
				if b.Set {
					b.Replaced = append(b.Replaced, b.ExtraArgs)
				}
				b.ExtraArgs, b.Set = c.Args[i+1], true
			}
			i++
		default:
			if b.ClusterName == "" && len(b.Positional) == 0 {
				b.ClusterName = arg
			}
			b.Positional = append(b.Positional, i)
			if name, _, ok := strings.Cut(arg, "="); ok && slices.Contains(bootstrapValueOptions, name) {
				b.JoinedOptions = append(b.JoinedOptions, i)
			}
		}
	}
	if b.Set {
		b.KubeletArgs = SystemdWords(SystemdEnvironment("'KUBELET_EXTRA_ARGS=" + b.ExtraArgs + "'")["KUBELET_EXTRA_ARGS"])
		b.Intended = SystemdWords(b.ExtraArgs)
	}
	return b
}

// Cut reports whether the drop-in's quoting changes the kubelet's words
// from what the value means on its own.
func (b *Bootstrap) Cut() bool { return !slices.Equal(b.KubeletArgs, b.Intended) }

// SystemdEnvironment reads the value of a systemd Environment= setting.
func SystemdEnvironment(line string) map[string]string { return systemd.Environment(line) }
