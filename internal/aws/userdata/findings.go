package userdata

import "fmt"

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
)

// UnregisteredTaint is the taint every node must register with.
const UnregisteredTaint = "karpenter.sh/unregistered:NoExecute"

// Finding is one problem in user data.
type Finding struct {
	Code     string
	Severity Severity
	// Message says what is wrong, quotes the offending text and says what
	// to do instead.
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%s %s: %s", f.Severity, f.Code, f.Message) }
