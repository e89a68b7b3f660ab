// The kubelet's own command-line handling, for tests: for each argument
// list on standard input it parses the flags with the kubelet's flag set,
// checks them as the kubelet does before it starts (non-flag arguments,
// ValidateKubeletFlags, the configuration file with flags re-applied over
// it, ValidateKubeletConfiguration) and prints what the kubelet would
// register with, or the error it exits with. With the argument "flags" it
// prints every flag the kubelet defines: name, type and whether it needs a
// value.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	featuregate "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	_ "k8s.io/kubernetes/pkg/features" // registers the kubelet's feature gates
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
)

type input struct {
	Args []string `json:"args"`
	// Config is a KubeletConfiguration file (JSON or YAML) given with
	// --config, when not empty.
	Config string `json:"config,omitempty"`
}

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type output struct {
	Error          string            `json:"error,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Taints         []taint           `json:"taints,omitempty"`
	MaxPods        int32             `json:"maxPods"`
	PodsPerCore    int32             `json:"podsPerCore,omitempty"`
	ClusterDNS     []string          `json:"clusterDNS,omitempty"`
	KubeReserved   map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	EvictionHard   map[string]string `json:"evictionHard,omitempty"`
	CloudProvider  string            `json:"cloudProvider,omitempty"`
}

type flagInfo struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	NoValue  bool   `json:"noValue,omitempty"`
	Shortcut string `json:"shorthand,omitempty"`
}

func flagSet(flags *options.KubeletFlags, cfg *kubeletconfig.KubeletConfiguration) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	flags.AddFlags(fs)
	options.AddKubeletConfigFlags(fs, cfg)
	options.AddGlobalFlags(fs)
	fs.BoolP("help", "h", false, "help")
	return fs
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "flags" {
		cfg, _ := options.NewKubeletConfiguration()
		var out []flagInfo
		flagSet(options.NewKubeletFlags(), cfg).VisitAll(func(f *pflag.Flag) {
			out = append(out, flagInfo{Name: f.Name, Type: f.Value.Type(), NoValue: f.NoOptDefVal != "", Shortcut: f.Shorthand})
		})
		_ = json.NewEncoder(os.Stdout).Encode(out)
		return
	}
	var inputs []input
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "kubelet-oracle")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	out := make([]output, 0, len(inputs))
	for i, in := range inputs {
		out = append(out, run(in, filepath.Join(dir, fmt.Sprintf("config-%d.json", i))))
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func run(in input, configPath string) output {
	flags := options.NewKubeletFlags()
	cfg, err := options.NewKubeletConfiguration()
	if err != nil {
		panic(err)
	}
	args := in.Args
	if in.Config != "" {
		if err := os.WriteFile(configPath, []byte(in.Config), 0o600); err != nil {
			panic(err)
		}
		args = append([]string{"--config", configPath}, args...)
	}
	fs := flagSet(flags, cfg)
	if err := fs.Parse(args); err != nil {
		return output{Error: "failed to parse kubelet flag: " + err.Error()}
	}
	if rest := fs.Args(); len(rest) > 0 {
		return output{Error: fmt.Sprintf("unknown command %+s", rest[0])}
	}
	if help, _ := fs.GetBool("help"); help {
		return output{Error: "prints its help and exits"}
	}
	if v := fs.Lookup("version"); v != nil && v.Value.String() != "false" {
		return output{Error: "prints its version and exits"}
	}
	if err := options.ValidateKubeletFlags(flags); err != nil {
		return output{Error: "failed to validate kubelet flags: " + err.Error()}
	}
	if flags.KubeletConfigFile != "" {
		loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, flags.KubeletConfigFile)
		if err != nil {
			return output{Error: err.Error()}
		}
		loaded, err := loader.Load(context.Background())
		if err != nil {
			return output{Error: "failed to load kubelet config file: " + err.Error()}
		}
		cfg = loaded
		// Flags are applied again over the file, as the kubelet does.
		again := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
		again.SetOutput(io.Discard)
		again.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
		global := pflag.NewFlagSet("", pflag.ContinueOnError)
		options.AddGlobalFlags(global)
		global.VisitAll(func(f *pflag.Flag) { again.VarP(cliflag.NoOp{}, f.Name, f.Shorthand, f.Usage) })
		options.NewKubeletFlags().AddFlags(again)
		options.AddKubeletConfigFlags(again, cfg)
		again.BoolP("help", "h", false, "help")
		if err := again.Parse(args); err != nil {
			return output{Error: "failed to precedence kubeletConfigFlag: " + err.Error()}
		}
	}
	if err := kubeletconfigvalidation.ValidateKubeletConfiguration(cfg, featuregate.DefaultFeatureGate); err != nil {
		return output{Error: "failed to validate kubelet configuration: " + err.Error()}
	}
	o := output{Labels: flags.NodeLabels, MaxPods: cfg.MaxPods, PodsPerCore: cfg.PodsPerCore, ClusterDNS: cfg.ClusterDNS,
		KubeReserved: cfg.KubeReserved, SystemReserved: cfg.SystemReserved, EvictionHard: cfg.EvictionHard, CloudProvider: flags.CloudProvider}
	for _, t := range cfg.RegisterWithTaints {
		o.Taints = append(o.Taints, taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return o
}
