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
	CodeTooLarge                  = "userdata-too-large"
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

// TaintsYAML is the NodePool snippet that registers taints (each
// "key[=value]:effect") as the NodePool's: a taint an agent removes once
// it is ready (a key such as node.cilium.io/agent-not-ready) as a startup
// taint, any other as a taint that stays.
func TaintsYAML(taints []string) string {
	var permanent, startup []string
	for _, t := range taints {
		key, _, _ := strings.Cut(strings.Trim(t, `"'`), ":")
		key, _, _ = strings.Cut(key, "=")
		if AgentTaint(key) {
			startup = append(startup, t)
		} else {
			permanent = append(permanent, t)
		}
	}
	var b strings.Builder
	b.WriteString("spec:\n  template:\n    spec:\n")
	for _, section := range []struct {
		field  string
		taints []string
	}{{"taints", permanent}, {"startupTaints", startup}} {
		if len(section.taints) == 0 {
			continue
		}
		fmt.Fprintf(&b, "      %s:\n", section.field)
		for _, t := range section.taints {
			kv, effect, _ := strings.Cut(strings.Trim(t, `"'`), ":")
			key, value, hasValue := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "        - key: %s\n", key)
			if hasValue && value != "" {
				fmt.Fprintf(&b, "          value: %q\n", value)
			}
			fmt.Fprintf(&b, "          effect: %s\n", effect)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// AgentTaint reports a taint key that names a component not ready yet
// (node.cilium.io/agent-not-ready, ebs.csi.aws.com/agent-not-ready,
// ...): the component removes it once it runs, so it belongs in a
// NodePool's startupTaints. Any other taint is meant to stay and
// belongs in its taints: as a startup taint nothing would remove it and
// the node would never initialize.
func AgentTaint(key string) bool {
	k := strings.ToLower(key)
	for _, word := range []string{"not-ready", "notready", "uninitialized", "startup", "agent"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return false
}
