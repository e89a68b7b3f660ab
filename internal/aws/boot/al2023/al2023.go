// Package al2023 is the boot of an Amazon Linux 2023 EKS node: nodeadm's
// config phase reads the user data before cloud-init runs; cloud-init runs
// the user data's scripts and cloud-config in the sandboxed shell
// (boot/shell), where they may write drop-ins to /etc/eks/nodeadm.d or run
// nodeadm themselves; nodeadm's run phase then reads the user data and the
// drop-ins (they come after, so they win), merges them as nodeadm does,
// and starts the kubelet, read by the kubelet's own flag handling
// (boot/kubelet) over the configuration nodeadm writes.
package al2023

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/cloudinit"
	"github.com/nodewright/nodewright/internal/aws/boot/kubelet"
	"github.com/nodewright/nodewright/internal/aws/boot/shell"
	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
)

// Machine is what the node knows of itself that its boot reads.
type Machine struct {
	// MaxPods is the pod limit nodeadm works out for the instance type
	// when the configuration sets none (0: the kubelet's default).
	MaxPods int32
}

// kubeletArgs are the flags nodeadm gives the kubelet itself, before the
// NodeConfig's spec.kubelet.flags.
var kubeletArgs = []string{
	"--config=/etc/kubernetes/kubelet/config.json", "--config-dir=/etc/kubernetes/kubelet/config.json.d",
	"--kubeconfig=/var/lib/kubelet/kubeconfig", "--image-credential-provider-bin-dir=/etc/eks/image-credential-provider",
	"--image-credential-provider-config=/etc/eks/image-credential-provider/config.json",
	"--node-ip=10.0.0.1", "--cloud-provider=external", "--hostname-override=i-0123456789abcdef0",
	"--runtime-cgroups=/runtime.slice/containerd.service",
}

// Reading is what an AL2023 node reads of its user data before its
// kubelet starts: what nodeadm's config phase makes of it, what the
// scripts cloud-init runs do, and the configuration the kubelet is
// started from.
type Reading struct {
	// ConfigPhase is why nodeadm's config phase (nodeadm-config.service,
	// before cloud-init) fails, nil when it goes through; the run phase,
	// which starts the kubelet, needs it.
	ConfigPhase error
	// Stopped names what the scripts do that the model does not read
	// ("" when it reads all of it).
	Stopped string
	// Started names what starts the kubelet: nodeadm's run phase, or a
	// script's own `nodeadm init`.
	Started string
	// Config is the configuration it reads (its sources in order,
	// merged), nil when they cannot be read (Err says why); Err is also
	// why a configuration that merges fails nodeadm's checks.
	Config *NodeConfig
	Err    error
	// BootstrapCalls are the scripts' runs of /etc/eks/bootstrap.sh,
	// which AL2023 does not have.
	BootstrapCalls []shell.Call
	// Unread name the NodeConfigs nodeadm never reads: a later YAML
	// document of a part, a part of a nested multipart.
	Unread []string
	// Notes are what else the reading saw that its author may not expect.
	Notes []string
}

// Read reads an AL2023 node's user data as its boot does, up to the
// configuration the kubelet is started from.
func Read(userData []byte) Reading {
	var r Reading
	if _, err := read(userDataSource(userData)); err != nil {
		r.ConfigPhase = err
	}
	r.Unread = unread(userData)
	files, inits, notes, stopped := runScripts(userData, &r.BootstrapCalls)
	r.Notes = notes
	if r.Stopped = stopped; stopped != "" {
		return r
	}
	sources := []source{userDataSource(userData), dropInSource(files)}
	r.Started = "nodeadm's run phase (nodeadm-run.service, after cloud-init)"
	if len(inits) > 0 {
		// A script that runs nodeadm init starts the kubelet before the
		// run phase does, with the sources it names (the user data alone
		// by default); the Node registers then.
		sources = inits[0].sources(userData, files)
		r.Started = "the user data's own `" + strings.Join(inits[0].args, " ") + "`"
	}
	r.Config, r.Err = chain(sources...)
	if r.Err == nil {
		r.Err = validate(r.Config)
	}
	return r
}

// KubeletFlags are the kubelet's words from spec.kubelet.flags, as
// systemd splits the variable nodeadm writes them to.
func (n *NodeConfig) KubeletFlags() []string {
	return systemd.Words(strings.Join(n.Spec.Kubelet.Flags, " "))
}

// KubeletConfig is spec.kubelet.config as a document.
func (n *NodeConfig) KubeletConfig() (map[string]any, error) { return document(n.Spec.Kubelet.Config) }

// Boot is what an AL2023 node makes of its user data.
func Boot(userData []byte, m Machine) boot.Outcome {
	r := Read(userData)
	switch {
	case r.ConfigPhase != nil:
		return boot.Never("nodeadm's config phase (nodeadm-config.service) fails, and its run phase, which starts the kubelet, needs it: " + r.ConfigPhase.Error())
	case r.Stopped != "":
		return boot.Unmodelled(r.Stopped + "; run the user data on an AL2023 node to see what it does")
	case r.Err != nil:
		return boot.Never(r.Started + " fails: " + r.Err.Error())
	}
	args := slices.Clone(kubeletArgs)
	args = append(args, r.Config.KubeletFlags()...)
	file, err := configFile(r.Config, m)
	if err != nil {
		return boot.Never(r.Started + " writes a kubelet configuration the kubelet cannot read: " + err.Error())
	}
	k, err := kubelet.Start(args, file)
	if err != nil {
		return boot.Never(err.Error() + " (started by " + r.Started + ")")
	}
	return boot.Outcome{Verdict: boot.Joins, Kubelet: k, Notes: slices.Concat(r.Unread, r.Notes), ReservedMaxPods: file.MaxPods}
}

// configFile is the kubelet configuration nodeadm writes: its defaults,
// then the merged spec.kubelet.config over them.
func configFile(nc *NodeConfig, m Machine) (*kubelet.Config, error) {
	doc, err := document(nc.Spec.Kubelet.Config)
	if err != nil {
		return nil, err
	}
	c := &kubelet.Config{MaxPods: m.MaxPods, ClusterDNS: []string{"10.100.0.10"}}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var user struct {
		MaxPods            *int32            `json:"maxPods"`
		PodsPerCore        *int32            `json:"podsPerCore"`
		ClusterDNS         []string          `json:"clusterDNS"`
		KubeReserved       map[string]string `json:"kubeReserved"`
		SystemReserved     map[string]string `json:"systemReserved"`
		EvictionHard       map[string]string `json:"evictionHard"`
		RegisterWithTaints []corev1.Taint    `json:"registerWithTaints"`
	}
	if err := json.Unmarshal(raw, &user); err != nil {
		return nil, fmt.Errorf("spec.kubelet.config: %w", err)
	}
	if user.MaxPods != nil {
		c.MaxPods = *user.MaxPods
	}
	if user.PodsPerCore != nil {
		c.PodsPerCore = *user.PodsPerCore
	}
	if user.ClusterDNS != nil {
		c.ClusterDNS = user.ClusterDNS
	}
	c.KubeReserved, c.SystemReserved, c.EvictionHard, c.RegisterWithTaints = user.KubeReserved, user.SystemReserved, user.EvictionHard, user.RegisterWithTaints
	return c, nil
}

// nodeadmInit is a run of nodeadm init by a script.
type nodeadmInit struct {
	args    []string
	sources func(userData []byte, files map[string][]byte) []source
}

// runScripts runs what cloud-init runs (boot/cloudinit), in its order,
// on one machine: the files they leave, the nodeadm init runs that would
// start the kubelet, notes, and why the reading stopped (what cloud-init
// or a script does that is not modelled).
func runScripts(userData []byte, bootstrapCalls *[]shell.Call) (files map[string][]byte, inits []nodeadmInit, notes []string, stopped string) {
	plan := cloudinit.Read(userData)
	if len(plan.Unmodelled) > 0 {
		return nil, nil, nil, "cloud-init reads " + strings.Join(plan.Unmodelled, "; ")
	}
	notes = plan.Notes
	for _, p := range plan.Parts {
		if cloudinit.Type(p) == cloudinit.ContentTypeTOML {
			notes = append(notes, fmt.Sprintf("%s is Bottlerocket settings, which AL2023 does not read", p.Filename))
		}
	}
	files = map[string][]byte{"/etc/eks/bootstrap.sh": []byte("#!/usr/bin/env bash\nexit 1\n")}
	files, ran, err := plan.Run(files, func(s cloudinit.Script, files map[string][]byte) (map[string][]byte, error) {
		res := shell.Run(s.Body, shell.Options{
			Commands: map[string]shell.Handler{
				"nodeadm": func(c shell.Call) uint8 {
					if init, ok := readInit(c.Args); ok {
						inits = append(inits, init)
					}
					return 0
				},
				"/etc/eks/bootstrap.sh": func(c shell.Call) uint8 {
					if bootstrapCalls != nil {
						*bootstrapCalls = append(*bootstrapCalls, c)
					}
					notes = append(notes, "the user data runs /etc/eks/bootstrap.sh, which AL2023 does not have (it prints that nodeadm bootstraps the node and exits 1)")
					return 1
				},
			},
			Files: files,
		})
		return res.Files, res.Err
	})
	notes = append(notes, ran...)
	if err != nil {
		return files, inits, notes, err.Error()
	}
	return files, inits, notes, ""
}

// readInit reads `nodeadm init` and its config sources (-c,
// --config-source; imds://user-data by default); --skip run starts no
// kubelet.
func readInit(args []string) (nodeadmInit, bool) {
	if len(args) < 2 || args[1] != "init" {
		return nodeadmInit{}, false
	}
	var uris []string
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-c" || a == "--config-source") && i+1 < len(args):
			uris = append(uris, args[i+1])
			i++
		case strings.HasPrefix(a, "--config-source="):
			uris = append(uris, strings.TrimPrefix(a, "--config-source="))
		case (a == "-s" || a == "--skip") && i+1 < len(args) && strings.Contains(args[i+1], "run"):
			return nodeadmInit{}, false
		}
	}
	if len(uris) == 0 {
		uris = []string{"imds://user-data"}
	}
	return nodeadmInit{args: args, sources: func(userData []byte, files map[string][]byte) []source {
		var out []source
		for _, u := range uris {
			switch {
			case u == "imds://user-data":
				out = append(out, userDataSource(userData))
			case strings.TrimSuffix(u, "/") == "file://"+DropInDir:
				out = append(out, dropInSource(files))
			default:
				out = append(out, func() (*NodeConfig, error) { return nil, fmt.Errorf("config source %q is not modelled", u) })
			}
		}
		return out
	}}, true
}
