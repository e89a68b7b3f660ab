package command

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/operator"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// Decisions are the controller's settings that change what it decides:
// the offline tools decide as a controller does when they read them from
// its Deployment.
type Decisions struct {
	IgnoreDRARequests       bool
	VMMemoryOverheadPercent float64
	ReservedENIs            int
	Policy                  scheduling.Policy
	minValues, preferences  string
}

// addFlags adds the settings' flags to f, each defaulting to its
// environment variable (env) when set, else to the default
// (ignoreDRA: --ignore-dra-requests's).
func (d *Decisions) addFlags(f *pflag.FlagSet, env func(string) string, ignoreDRA bool) {
	f.BoolVar(&d.IgnoreDRARequests, "ignore-dra-requests", envBool(env, "IGNORE_DRA_REQUESTS", ignoreDRA),
		"launch nothing for pods with resource claims (DRA), as Karpenter does by default (environment IGNORE_DRA_REQUESTS); by default nodewright plans nodes whose devices satisfy the claims")
	f.Float64Var(&d.VMMemoryOverheadPercent, "vm-memory-overhead-percent", envFloat(env, "VM_MEMORY_OVERHEAD_PERCENT", instancetypes.DefaultVMMemoryOverheadPercent),
		"the share of an instance's memory its VM keeps from the node (0.075 is 7.5%), taken from every instance type's memory (environment VM_MEMORY_OVERHEAD_PERCENT)")
	f.IntVar(&d.ReservedENIs, "reserved-enis", envInt(env, "RESERVED_ENIS", 0),
		"network interfaces of the default card the VPC CNI does not give pods (custom networking), taken from every instance type's pod limit (environment RESERVED_ENIS)")
	f.StringVar(&d.minValues, "min-values-policy", envString(env, "MIN_VALUES_POLICY", scheduling.MinValuesStrict),
		"Strict: a NodePool whose instance types offer fewer values than a requirement's minValues launches nothing; BestEffort: it launches on the types that fit, the NodeClaim's minValues lowered to what they offer and annotated karpenter.sh/nodeclaim-min-values-relaxed (environment MIN_VALUES_POLICY)")
	f.StringVar(&d.preferences, "preference-policy", envString(env, "PREFERENCE_POLICY", scheduling.PreferencesRespect),
		"Respect: pods' preferred node and pod affinity and ScheduleAnyway spread constraints are tried first and relaxed one at a time; Ignore: only their required terms count, in provisioning and disruption (environment PREFERENCE_POLICY)")
}

// check validates the settings read and parses the policies.
func (d *Decisions) check() error {
	if d.VMMemoryOverheadPercent < 0 || d.VMMemoryOverheadPercent >= 1 {
		return fmt.Errorf("--vm-memory-overhead-percent %g: give a share of memory from 0 up to (not including) 1, such as 0.075 for 7.5%%", d.VMMemoryOverheadPercent)
	}
	if d.ReservedENIs < 0 {
		return fmt.Errorf("--reserved-enis %d: use 0 or more", d.ReservedENIs)
	}
	policy, err := scheduling.ParsePolicy(d.minValues, d.preferences)
	if err != nil {
		return fmt.Errorf("--min-values-policy, --preference-policy: %w", err)
	}
	d.Policy = policy
	return nil
}

// apply sets them on a controller's configuration.
func (d *Decisions) apply(cfg *operator.Config) {
	cfg.IgnoreDRARequests, cfg.VMMemoryOverheadPercent, cfg.ReservedENIs, cfg.Policy = d.IgnoreDRARequests, d.VMMemoryOverheadPercent, d.ReservedENIs, d.Policy
}

// DefaultVMMemoryOverheadPercent is --vm-memory-overhead-percent's
// default.
const DefaultVMMemoryOverheadPercent = instancetypes.DefaultVMMemoryOverheadPercent

// AddDecisionFlags adds the settings' flags to f with their defaults (the
// environment is not read), for tools that decide as a controller does;
// once f is parsed, Apply sets what they hold on a configuration.
func AddDecisionFlags(f *pflag.FlagSet) *Decisions {
	d := &Decisions{}
	d.addFlags(f, func(string) string { return "" }, false)
	return d
}

// Apply checks the settings parsed and sets them on cfg.
func (d *Decisions) Apply(cfg *operator.Config) error {
	if err := d.check(); err != nil {
		return err
	}
	d.apply(cfg)
	return nil
}

// IsDecisionFlag reports whether a flag is one of the settings'.
func IsDecisionFlag(name string) bool {
	switch name {
	case "ignore-dra-requests", "vm-memory-overhead-percent", "reserved-enis", "min-values-policy", "preference-policy":
		return true
	}
	return false
}

// ControllerDecisions reads the settings as a controller started with
// args and env would: nodewright's controller, or Karpenter's
// (karpenter: its --ignore-dra-requests defaults to true). Other flags in
// args are passed over.
func ControllerDecisions(args []string, env map[string]string, karpenter bool) (Decisions, error) {
	var d Decisions
	f := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	f.ParseErrorsAllowlist.UnknownFlags = true
	f.SetOutput(nilWriter{})
	d.addFlags(f, func(name string) string { return env[name] }, karpenter)
	if err := f.Parse(args); err != nil {
		return d, err
	}
	return d, d.check()
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

// envString, envBool, envFloat and envInt are flags' defaults from the
// environment (Karpenter's settings are environment variables): the
// value when it is set and reads, else def.
func envString(env func(string) string, name, def string) string {
	if v := env(name); v != "" {
		return v
	}
	return def
}

func envBool(env func(string) string, name string, def bool) bool {
	if v, err := strconv.ParseBool(env(name)); err == nil {
		return v
	}
	return def
}

func envFloat(env func(string) string, name string, def float64) float64 {
	if v, err := strconv.ParseFloat(env(name), 64); err == nil {
		return v
	}
	return def
}

func envInt(env func(string) string, name string, def int) int {
	if v, err := strconv.Atoi(env(name)); err == nil {
		return v
	}
	return def
}

var osEnv = os.Getenv
