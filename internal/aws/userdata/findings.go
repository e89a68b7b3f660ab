package userdata

import (
	"fmt"
	"strings"
)

// Severity says whether a finding stops launches.
type Severity string

// Severities.
const (
	// Error: nodes launched with this user data will not register as
	// required; nothing is launched from the EC2NodeClass.
	Error Severity = "Error"
	// Warning: nodes register, but something the user asked for is lost.
	Warning Severity = "Warning"
)

// Finding codes, shared with `nodewright doctor`.
const (
	CodeFlagsOverrideTaints       = "userdata-overrides-registration-taints"
	CodeConfigTaintsReplaced      = "userdata-register-taints-replaced"
	CodeUserCallsBootstrap        = "al2-user-calls-bootstrap"
	CodeBootstrapArgsMalformed    = "al2-bootstrap-args-malformed"
	CodeCustomMissingUnregistered = "custom-userdata-missing-unregistered-taint"
	CodeBottlerocketTaints        = "bottlerocket-node-taints-replaced"
	CodeUnreadable                = "userdata-unreadable"
	CodeFormatNotRead             = "userdata-format-not-read-by-family"
	CodeSettingOverridden         = "userdata-kubelet-setting-overridden"
)

// UnregisteredTaint is the taint every node must register with.
const UnregisteredTaint = "karpenter.sh/unregistered:NoExecute"

// Finding is one problem in user data.
type Finding struct {
	Code     string
	Severity Severity
	// Message says what is wrong and quotes the offending text.
	Message string
	// Fix is the concrete change that removes the problem.
	Fix string
}

// Explain is the message and its fix, for conditions and events.
func (f Finding) Explain() string { return f.Message + ". Fix: " + f.Fix }

func (f Finding) String() string { return fmt.Sprintf("%s %s: %s", f.Severity, f.Code, f.Explain()) }

// StartupTaintsYAML is the NodePool snippet that registers taints (each
// "key[=value]:effect") as startupTaints.
func StartupTaintsYAML(taints []string) string {
	var b strings.Builder
	b.WriteString("spec:\n  template:\n    spec:\n      startupTaints:\n")
	for _, t := range taints {
		kv, effect, _ := strings.Cut(strings.Trim(t, `"'`), ":")
		key, value, hasValue := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "        - key: %s\n", key)
		if hasValue && value != "" {
			fmt.Fprintf(&b, "          value: %q\n", value)
		}
		fmt.Fprintf(&b, "          effect: %s\n", effect)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
