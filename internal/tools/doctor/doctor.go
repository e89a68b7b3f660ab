// Package doctor explains why nodes will not register, initialize or
// schedule: rules over manifests or a cluster's state produce findings
// with the evidence and the fix. It reuses the controller's own code
// (user data validation, AMI resolution, the scheduling engine).
package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/internal/aws/userdata"
)

// Severity of a finding.
type Severity string

// Severities, most serious first.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// Finding codes.
const (
	CodeUserDataOverridesTaints   = "userdata-overrides-registration-taints"
	CodeBootstrapArgsMalformed    = "al2-bootstrap-args-malformed"
	CodeCustomMissingUnregistered = "custom-userdata-missing-unregistered-taint"
	CodeNodeRoleNotMapped         = "node-role-not-mapped"
	CodeAMIArchitectureMismatch   = "ami-architecture-mismatch"
	CodePodIncompatible           = "pod-incompatible-with-nodepools"
	CodeCloudProviderTaint        = "cloud-provider-taint-not-removed"
	CodeStartupTaintNotRemoved    = "startup-taint-not-removed"
	CodeExtendedResource          = "extended-resource-not-registered"
	CodeRegistrationTimeouts      = "registration-timeouts-repeating"
	CodePDBNeverAllows            = "pdb-never-allows-disruption"
	CodeNodeNeverDisrupted        = "node-not-initialized-never-disrupted"
	CodeNodeUnhealthy             = "node-unhealthy"
	CodeNodeRepairHeld            = "node-repair-held"
	CodeCheckFailed               = "check-failed"
	CodeStalePrices               = "prices-not-current"
	CodeUserDataFormatNotRead     = "userdata-format-not-read-by-family"
	CodeUserDataSettingOverridden = "userdata-kubelet-setting-overridden"
	CodeStartupTaintNeverRemoved  = "startup-taint-never-removed"
	CodeNodeRebootFailed          = "node-reboot-failed"
	CodeCapacityBufferNotReady    = "capacity-buffer-not-ready"
	CodeAMINotFound               = "ami-not-found"
	CodeNotChecked                = "not-checked"
	CodeNodeClassNotFound         = "nodeclass-not-found"
	CodeKubeletConfigRefused      = "kubelet-configuration-refused"
	CodeUserDataTooLarge          = "userdata-too-large"
	CodeClaimsUnsatisfiable       = "resource-claims-unsatisfiable"
	CodeDRADriverMissing          = "dra-driver-not-running"
	CodeWindowsUserDataUnparsable = userdata.CodeWindowsUnparsable
	CodeWindowsBootstrapCallFails = userdata.CodeWindowsBootstrapArgsFailed
	CodeNodeNeverJoins            = userdata.CodeNeverJoins
	CodeUserDataUnreadable        = userdata.CodeUnreadable
	CodeBootNotModelled           = userdata.CodeNotModelled
)

// Codes are every finding code.
var Codes = []string{
	CodeUserDataOverridesTaints, CodeBootstrapArgsMalformed, CodeCustomMissingUnregistered, CodeNodeRoleNotMapped,
	CodeAMIArchitectureMismatch, CodePodIncompatible, CodeCloudProviderTaint, CodeStartupTaintNotRemoved,
	CodeExtendedResource, CodeRegistrationTimeouts, CodePDBNeverAllows, CodeNodeNeverDisrupted, CodeNodeUnhealthy, CodeNodeRepairHeld,
	CodeCheckFailed, CodeStalePrices, CodeUserDataFormatNotRead, CodeUserDataSettingOverridden, CodeStartupTaintNeverRemoved,
	CodeNodeRebootFailed, CodeCapacityBufferNotReady, CodeAMINotFound, CodeNotChecked,
	CodeNodeClassNotFound, CodeKubeletConfigRefused, CodeUserDataTooLarge, CodeClaimsUnsatisfiable, CodeDRADriverMissing,
	CodeNodeNeverJoins, CodeBootNotModelled, CodeConverted, CodeKubeletAnnotation, CodeAMIFamilyContradicted, CodeAliasMalformed, CodeInputRefused, CodeRegistrationStartupTaint, CodeIdentityNotAName, CodeControllerRoleAsNodeRole, CodeTemplated, CodeUserDataUnreadable, CodeRequirementOnNoLabel,
	CodeWindowsUserDataUnparsable, CodeWindowsBootstrapCallFails, CodeWindowsIPAMOff, CodeWindowsProxyGroup, CodeLinuxPodOnWindows, CodeDaemonSetOnWindows, CodeWindowsPodOnLinux,
}

// Finding is one diagnosis.
type Finding struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	// Object is "Kind/name" or "Kind/namespace/name".
	Object   string `json:"object"`
	Message  string `json:"message"`
	Evidence string `json:"evidence"`
	Fix      string `json:"fix"`
	// File and Line are where the object was read, for manifests.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Report is the findings, most serious first.
type Report struct {
	// Summary counts the findings and says when a check did not run.
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings"`
}

// HasErrors reports whether any finding is an error.
func (r *Report) HasErrors() bool {
	for _, f := range r.Findings {
		if f.Severity == Error {
			return true
		}
	}
	return false
}

func (r *Report) add(f Finding) { r.Findings = append(r.Findings, f) }

// sort orders findings by severity, then object, then code.
func (r *Report) sort() {
	rank := map[Severity]int{Error: 0, Warning: 1, Info: 2}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		return a.Code < b.Code
	})
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	r.Summary = r.Counts()
}

// Counts counts the findings by severity, and the checks that did not
// run: "no findings" is said only when there are none at all.
func (r *Report) Counts() string {
	counts := map[Severity]int{}
	notChecked := 0
	for _, f := range r.Findings {
		if f.Code == CodeNotChecked || f.Code == CodeCheckFailed {
			notChecked++
		}
		counts[f.Severity]++
	}
	parts := []string{plural(counts[Error], "error"), plural(counts[Warning], "warning"), plural(counts[Info], "note")}
	s := strings.Join(parts, ", ")
	if notChecked > 0 {
		s += fmt.Sprintf("; %s did not run (%s, %s), so this is not a clean bill of health", plural(notChecked, "check"), CodeNotChecked, CodeCheckFailed)
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// WriteTable prints findings for people.
func (r *Report) WriteTable(w interface{ Write([]byte) (int, error) }) {
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "no findings: every check ran, and nothing keeps nodes from registering, initializing or scheduling")
		return
	}
	fmt.Fprintln(w, r.Counts())
	fmt.Fprintln(w)
	for _, f := range r.Findings {
		at := ""
		if f.File != "" {
			at = fmt.Sprintf("  (%s:%d)", f.File, f.Line)
		}
		fmt.Fprintf(w, "%s  %s  %s%s\n", strings.ToUpper(string(f.Severity)), f.Code, f.Object, at)
		fmt.Fprintf(w, "  %s\n", wrap(f.Message, "  "))
		if f.Evidence != "" {
			fmt.Fprintf(w, "  evidence: %s\n", wrap(f.Evidence, "            "))
		}
		if f.Fix != "" {
			fmt.Fprintf(w, "  fix: %s\n", strings.ReplaceAll(f.Fix, "\n", "\n       "))
		}
		fmt.Fprintln(w)
	}
}

// wrap breaks text into lines of about 100 columns at spaces, indenting
// continuation lines.
func wrap(text, indent string) string {
	const width = 100
	var b strings.Builder
	col := len(indent)
	for i, word := range strings.Fields(text) {
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteString("\n" + indent)
				col = len(indent)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}
