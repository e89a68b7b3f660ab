package userdata

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"mvdan.cc/sh/v3/syntax"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/boot"
	"github.com/nodewright/nodewright/internal/aws/boot/al2"
	"github.com/nodewright/nodewright/internal/aws/boot/al2023"
	"github.com/nodewright/nodewright/internal/aws/boot/bottlerocket"
	"github.com/nodewright/nodewright/internal/aws/boot/systemd"
)

// Validate finds the ways user data of an AMI family keeps nodes from
// registering with the taints they must carry, or drops taints the user
// asked for. Nodes of every family but Custom get nodewright's own
// registration (generated after the user's part); Custom user data must
// register karpenter.sh/unregistered:NoExecute itself.
func Validate(family, userData string) []Finding { return ValidateWith(family, userData, Known{}) }

// Known are the values nodewright's own configuration gives a node, when
// they are known: a user's setting equal to them loses nothing.
type Known struct {
	// ClusterDNS is the kube-dns address the generated configuration
	// sets (spec.kubelet.clusterDNS, else the cluster's); "" when not
	// known, and a user's clusterDNS is then not reported.
	ClusterDNS string
	// ImageFamily is the family whose boot the class's AMIs run, when
	// their names say so (boot.ImagesFamily); "" otherwise. A Custom AMI's
	// user data is read as that family reads it.
	ImageFamily string
}

// ValidateWith is Validate knowing what nodewright's own configuration
// sets.
func ValidateWith(family, userData string, known Known) []Finding {
	if strings.TrimSpace(userData) == "" {
		if family == awsv1.AMIFamilyCustom {
			return []Finding{missingUnregistered(nil, "the user data is empty")}
		}
		return nil
	}
	if f, over := sizeFinding(family, userData); over {
		return []Finding{f}
	}
	if windowsUserData(family, userData) {
		findings := validateWindows(family, userData).findings
		if o, ok := outcome(family, known.ImageFamily, userData); ok {
			findings = judged(findings, o)
		}
		return findings
	}
	o, modelled := outcome(family, known.ImageFamily, userData)
	var findings []Finding
	switch parts, err := Split([]byte(userData)); {
	case err != nil && family == awsv1.AMIFamilyCustom && modelled && o.Verdict != boot.NotModelled:
		// Launched as written: only what the node makes of it counts (the
		// outcome's finding says it), not Go's MIME reader.
	case err != nil:
		findings = []Finding{{Code: CodeUnreadable, Severity: Error, Message: fmt.Sprintf("the user data cannot be read as a MIME document: %v", err), Fix: mimeFix(err)}}
	default:
		v := &validation{family: family, known: known, boot: bootFamily(family, known.ImageFamily, userData)}
		if modelled && o.Verdict == boot.Joins {
			v.joins = &o
		}
		findings = v.validateParts(userData, parts).findings
	}
	if modelled {
		findings = judged(findings, o)
	}
	return findings
}

// TypicalCluster is a cluster of the sizes EKS gives, for user data sizes
// where the cluster is not known: its endpoint and CA certificate take
// their usual room.
var TypicalCluster = Cluster{Name: "a-cluster-name-of-typical-length", Endpoint: "https://0123456789ABCDEF0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com",
	CABundle: strings.Repeat("A", 1468), CIDR: "172.20.0.0/16", DNS: "172.20.0.10"}

// sizeFinding reports user data over EC2's limit as it is launched: merged
// with nodewright's bootstrap for a node of a typical cluster (what a
// MIME document's preamble or epilogue holds is not launched; a Custom
// AMI's user data is launched as it is). User data that cannot be merged
// is left to the other findings.
func sizeFinding(family, userData string) (Finding, bool) {
	_, err := Generate(family, TypicalCluster, Node{MaxPods: 110}, userData)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) {
		return Finding{}, false
	}
	what := fmt.Sprintf("the user data launched would be %d bytes with nodewright's bootstrap merged in (spec.userData is %d bytes)", tooLarge.Size, tooLarge.UserSize)
	if family == awsv1.AMIFamilyCustom {
		what = fmt.Sprintf("spec.userData is %d bytes, launched as it is", tooLarge.Size)
	}
	return Finding{Code: CodeTooLarge, Severity: Error,
		Message: what + fmt.Sprintf(", over EC2's limit of %d bytes before base64 encoding, so EC2 would refuse every launch", MaxSize),
		Fix:     fmt.Sprintf("shrink spec.userData by %d bytes or more: fetch large scripts or files at boot (from S3 or a container image) instead of inlining them, or compress them (gzip and base64)", tooLarge.Size-MaxSize)}, true
}

// validateParts reads the parts of user data as the node does and judges
// them: the findings, and the taints the node registers with beyond
// nodewright's.
func (v *validation) validateParts(userData string, parts []Part) *validation {
	for _, p := range parts {
		if p.ContentType == ContentTypeTOML {
			v.bottlerocket(p.Body)
		}
		v.format(p)
	}
	switch v.boot {
	case awsv1.AMIFamilyAL2:
		for _, r := range al2.Runs([]byte(userData)) {
			v.bootstrapRun(r)
		}
	case awsv1.AMIFamilyAL2023:
		v.nodeadm(userData)
	}
	if v.custom() && v.joins != nil && !v.joins.Registered() {
		// What the node registers with, as its boot model says (and what
		// the arguments meant, when it registers none).
		why := ""
		if len(v.joinsWith()) == 0 {
			why = v.whyUnregistered()
		}
		v.findings = append(v.findings, missingUnregistered(v.joinsWith(), why))
	}
	return v
}

// ExtraTaints are the taints a node of the family registers with from
// its user data beyond nodewright's own (karpenter.sh/unregistered and the
// NodePool's), when it registers as nodewright needs: a Custom node's own
// taints, or those a nodeadm flag adds beside karpenter.sh/unregistered.
// Nothing removes them, so every node of the EC2NodeClass has them.
func ExtraTaints(family, userData string) []corev1.Taint {
	key := family + "\x00" + userData
	extraTaintsCache.Lock()
	cached, ok := extraTaintsCache.m[key]
	extraTaintsCache.Unlock()
	if ok {
		return cached
	}
	var out []corev1.Taint
	switch {
	case strings.TrimSpace(userData) == "" || len(userData) > MaxSize:
	case windowsUserData(family, userData):
		for _, t := range validateWindows(family, userData).extra {
			if taint, err := ParseTaint(t); err == nil {
				out = append(out, taint)
			}
		}
	default:
		// What the node registers with, as its boot model reads the user
		// data, beside karpenter.sh/unregistered.
		if o, ok := Outcome(family, userData); ok && o.Registered() {
			for _, t := range o.Kubelet.RegisterWithTaints {
				if t.Key != boot.UnregisteredTaint.Key {
					out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
				}
			}
		}
	}
	extraTaintsCache.Lock()
	if len(extraTaintsCache.m) >= 512 || extraTaintsCache.m == nil {
		extraTaintsCache.m = map[string][]corev1.Taint{} // classes' user data changed that often: start again
	}
	extraTaintsCache.m[key] = out
	extraTaintsCache.Unlock()
	return out
}

// extraTaintsCache keeps ExtraTaints by family and user data: every
// snapshot asks for each EC2NodeClass's.
var extraTaintsCache struct {
	sync.Mutex
	m map[string][]corev1.Taint
}

// ParseTaint reads a kubelet taint, key[=value]:Effect.
func ParseTaint(s string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(s, ":")
	key, value, _ := strings.Cut(keyValue, "=")
	switch e := corev1.TaintEffect(effect); {
	case !ok || key == "":
		return corev1.Taint{}, fmt.Errorf("taint %q is not key[=value]:Effect", s)
	case e != corev1.TaintEffectNoSchedule && e != corev1.TaintEffectPreferNoSchedule && e != corev1.TaintEffectNoExecute:
		return corev1.Taint{}, fmt.Errorf("taint %q has no valid effect", s)
	}
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}, nil
}

// familyFormats say, per AMI family, what its bootstrap does with each
// kind of user data part it does not read, and what to write instead; a
// part of a kind not listed is read (or, for AL2023 scripts, run).
var familyFormats = map[string]map[string]struct{ says, fix string }{
	awsv1.AMIFamilyAL2: {
		ContentTypeNodeadm: {"AL2 bootstraps with /etc/eks/bootstrap.sh and has no nodeadm: the NodeConfig is never read",
			"move its kubelet settings to the EC2NodeClass's spec.kubelet (or to a shell script part that sets them), or use amiFamily AL2023 (alias al2023@latest), whose nodeadm reads NodeConfigs"},
		ContentTypeTOML: {"AL2 does not read Bottlerocket TOML settings: they are never applied",
			"move the settings to the EC2NodeClass's spec.kubelet, or use amiFamily Bottlerocket"},
	},
	awsv1.AMIFamilyAL2023: {
		ContentTypeTOML: {"AL2023 does not read Bottlerocket TOML settings: they are never applied",
			"write them as a nodeadm NodeConfig (apiVersion: node.eks.aws/v1alpha1, kind: NodeConfig, spec.kubelet.config) or in the EC2NodeClass's spec.kubelet"},
	},
	awsv1.AMIFamilyBottlerocket: {
		ContentTypeShell: {"Bottlerocket reads only TOML settings from user data and runs no script: the script is never run",
			"write the settings as Bottlerocket TOML ([settings.kubernetes] ...) or in the EC2NodeClass's spec.kubelet; run host commands from a bootstrap container"},
		ContentTypeText: {"Bottlerocket reads only TOML settings from user data and runs no script: the script is never run",
			"write the settings as Bottlerocket TOML ([settings.kubernetes] ...) or in the EC2NodeClass's spec.kubelet; run host commands from a bootstrap container"},
		ContentTypeNodeadm: {"Bottlerocket has no nodeadm: the NodeConfig is never read",
			"write its kubelet settings as Bottlerocket TOML ([settings.kubernetes] ...) or in the EC2NodeClass's spec.kubelet"},
	},
}

// format reports a part the family's bootstrap never reads: the settings
// in it are silently lost.
func (v *validation) format(p Part) {
	if f, ok := familyFormats[v.family][p.ContentType]; ok {
		v.add(CodeFormatNotRead, Warning, fmt.Sprintf("the user data has a %s part: %s, so the settings in it are silently lost (the node registers without them)", p.ContentType, f.says), f.fix)
	}
}

// whyUnregistered explains why Custom user data that registers no taint
// may have meant to: it asks for taints only in arguments bootstrap.sh
// ignores. It is "" otherwise.
func (v *validation) whyUnregistered() string {
	if len(v.ignored) == 0 {
		return ""
	}
	why := "it asks for " + strings.Join(v.ignored, ", ") + " only in arguments bootstrap.sh ignores"
	if oldTaintName(v.ignored) {
		why += oldTaintNote
	}
	return why
}

type validation struct {
	family string
	// boot is the family whose boot reads the user data: the family's
	// own, or for Custom the one its image or user data is for.
	boot     string
	known    Known
	findings []Finding
	// registered are the taints Custom Windows user data registers with;
	// ignored are taints asked for in arguments bootstrap.sh does not
	// understand.
	registered, ignored []string
	// bootstrapped: a Start-EKSBootstrap.ps1 call has started the kubelet.
	bootstrapped bool
	// extra are taints the node registers with beyond nodewright's.
	extra []string
	// joins is the boot outcome when the node joins: what the messages say
	// it registers with.
	joins *boot.Outcome
}

// joinsWith are the taints the node joins with, as its boot model says.
func (v *validation) joinsWith() []string {
	out := make([]string, 0, len(v.joins.Kubelet.RegisterWithTaints))
	for _, t := range v.joins.Kubelet.RegisterWithTaints {
		out = append(out, t.ToString())
	}
	return out
}

func (v *validation) add(code string, severity Severity, message, fix string) {
	v.findings = append(v.findings, Finding{Code: code, Severity: severity, Message: message, Fix: fix})
}

// missingColon is the line Go's MIME reader took for a header.
var missingColon = regexp.MustCompile(`missing colon: "([^"]*)"`)

// mimeFix says what a MIME document that cannot be read lacks: most
// often the empty line that ends a header block (the document's, before
// its first boundary, or a part's, before its body).
func mimeFix(err error) string {
	msg := err.Error()
	switch m := missingColon.FindStringSubmatch(msg); {
	case m != nil && strings.HasPrefix(m[1], "--"):
		return fmt.Sprintf("add an empty line between the document's headers (MIME-Version, Content-Type) and its first boundary line %s: the header block ends at the first empty line", m[1])
	case m != nil:
		return fmt.Sprintf("add an empty line between the part's headers (Content-Type) and its body, before %q: a part's headers end at the first empty line", m[1])
	case strings.Contains(msg, "without a boundary"):
		return `give the multipart Content-Type its boundary (Content-Type: multipart/mixed; boundary="//") and begin each part with a line --// (the last one ending --//--)`
	case strings.Contains(msg, "malformed header line"):
		return "add an empty line between the document's headers (MIME-Version, Content-Type) and its first boundary line: the header block ends at the first empty line"
	}
	return fixUnreadable
}

// folded adds to a fix of Bottlerocket settings that could not be read
// that their lines were joined, when they were: YAML's folded scalar
// (userData: >) joins lines into one.
func folded(userData, fix string) string {
	if t := strings.TrimSpace(userData); !strings.Contains(t, "\n") && strings.Count(t, " = ") > 1 {
		return "write spec.userData as a literal block (userData: |), not a folded one (userData: >), which joins its lines into one so Bottlerocket reads no settings; then " + fix
	}
	return fix
}

const fixUnreadable = "correct the EC2NodeClass's spec.userData so that it is what the AMI family expects (a MIME multi-part document, a shell script, a nodeadm NodeConfig or Bottlerocket TOML)"

func (v *validation) custom() bool { return v.family == awsv1.AMIFamilyCustom }

func (v *validation) registersUnregistered() bool {
	for _, t := range v.registered {
		if t == UnregisteredTaint || strings.HasPrefix(t, "karpenter.sh/unregistered=") && strings.HasSuffix(t, ":NoExecute") {
			return true
		}
	}
	return false
}

const oldTaintNote = " (karpenter.sh/uninitialized is the old name; the required taint is " + UnregisteredTaint + ")"

func oldTaintName(taints []string) bool {
	for _, t := range taints {
		if strings.HasPrefix(strings.Trim(t, `"'`), "karpenter.sh/uninitialized") {
			return true
		}
	}
	return false
}

func missingUnregistered(registered []string, why string) Finding {
	msg := "with amiFamily Custom the user data must register the node with the taint " + UnregisteredTaint + " (nodewright removes it once the node is matched to its NodeClaim)"
	switch {
	case why != "":
		msg += "; " + why
	case len(registered) == 0:
		msg += "; it registers no taints"
	default:
		msg += "; it registers only " + strings.Join(registered, ", ")
		if oldTaintName(registered) {
			msg += oldTaintNote
		}
	}
	fix := "register the node with " + UnregisteredTaint + " in the kubelet's arguments, next to any taint of your own (bootstrap.sh: --kubelet-extra-args '--register-with-taints=" + UnregisteredTaint + "'; nodeadm: add {key: karpenter.sh/unregistered, effect: NoExecute} to spec.kubelet.config.registerWithTaints)"
	return Finding{Code: CodeCustomMissingUnregistered, Severity: Error, Message: msg, Fix: fix}
}

// nodeadm reads the user data as an AL2023 node's boot reads it
// (al2023.Read): on AL2023 as nodewright merges it (the user's parts at
// the top level, nodewright's NodeConfig last, here a placeholder), on
// Custom as written. What keeps the node from joining is the outcome's to
// say; here, what the user sets that nodeadm drops or nodewright's
// configuration replaces.
func (v *validation) nodeadm(userData string) {
	data := []byte(userData)
	if !v.custom() {
		merged, err := mimeDocument(userData, ContentTypeNodeadm, generatedPlaceholder)
		if err != nil {
			return // reported as unreadable already
		}
		data = []byte(merged)
	}
	r := al2023.Read(data)
	for _, u := range r.Unread {
		v.add(CodeFormatNotRead, Warning, u+", so the settings in it are silently lost",
			"put each NodeConfig in a MIME part of its own (Content-Type: application/node.eks.aws) at the top level of the user data, one YAML document per part")
	}
	if !v.custom() && len(r.BootstrapCalls) > 0 {
		v.add(CodeFormatNotRead, Warning,
			fmt.Sprintf("the user data script runs %s, which AL2023 does not have (nodeadm bootstraps it from NodeConfig documents): the call fails and the kubelet settings passed to it are silently lost", r.BootstrapCalls[0].Args[0]),
			"remove the bootstrap.sh call; write its kubelet settings as a nodeadm NodeConfig part (apiVersion: node.eks.aws/v1alpha1, kind: NodeConfig, spec.kubelet.config and spec.kubelet.flags) or in the EC2NodeClass's spec.kubelet")
	}
	if v.custom() || r.Config == nil {
		return
	}
	v.nodeadmFlags(r.Config.KubeletFlags())
	if config, err := r.Config.KubeletConfig(); err == nil {
		v.nodeadmConfig(config)
	}
}

// generatedPlaceholder stands for the NodeConfig nodewright merges last:
// it sets what the validation does not judge.
const generatedPlaceholder = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"

// nodeadmFlags: the kubelet registers with the taints of the last
// --register-with-taints flag, which beats the configuration nodewright
// generates. A flag that keeps karpenter.sh/unregistered registers the
// node as nodewright needs (nodewright adds the NodePool's taints when it
// registers the node); its other taints are then unknown to the NodePool.
func (v *validation) nodeadmFlags(words []string) {
	if flags := registerFlags(words); len(flags) > 0 {
		v.registerFlag(flags[len(flags)-1])
	}
	for _, s := range []struct{ flag, field string }{{"--max-pods", "spec.kubelet.maxPods"}, {"--cluster-dns", "spec.kubelet.clusterDNS"}} {
		if values := FlagValues(words, s.flag); len(values) > 0 && !v.sameAsGenerated(strings.TrimPrefix(s.flag, "--"), values[len(values)-1]) {
			v.add(CodeSettingOverridden, Warning,
				fmt.Sprintf("spec.kubelet.flags passes %s=%s: a kubelet flag beats every configuration file, the one nodewright generates included, so the node runs with it while nodewright plans with %s's value", s.flag, values[len(values)-1], s.field),
				fmt.Sprintf("remove %s from the NodeConfig's spec.kubelet.flags and set the EC2NodeClass's %s instead", s.flag, s.field))
		}
	}
}

// registerFlag judges the --register-with-taints flag the kubelet uses.
func (v *validation) registerFlag(last flagValue) {
	taints := splitTaints(last.value)
	switch {
	case !contains(taints, UnregisteredTaint):
		v.add(CodeFlagsOverrideTaints, Error,
			fmt.Sprintf("spec.kubelet.flags passes %q: nodeadm appends user flags after the configuration nodewright generates, and a kubelet flag overrides the configuration's registerWithTaints, so the node would register with only %s and lose %s (and every NodePool taint and startupTaint) — it would never be matched to its NodeClaim",
				last.text, strings.Join(taints, ", "), UnregisteredTaint),
			fmt.Sprintf("remove %q from the nodeadm NodeConfig's spec.kubelet.flags and move %s to the NodePool (taints that stay in spec.template.spec.taints, taints an agent removes in startupTaints):\n%s",
				last.text, strings.Join(taints, ", "), TaintsYAML(taints)))
	case len(taints) > 1:
		others := slices.DeleteFunc(slices.Clone(taints), func(t string) bool { return t == UnregisteredTaint })
		v.extra = others
		v.add(CodeConfigTaintsReplaced, Warning,
			fmt.Sprintf("spec.kubelet.flags passes %q: the node registers with %s (so nodewright still matches it to its NodeClaim and adds the NodePool's taints), but %s are not the NodePool's: they stay on every node of the EC2NodeClass, so nodewright places on its NodePools only pods that tolerate them",
				last.text, UnregisteredTaint, strings.Join(others, ", ")),
			fmt.Sprintf("remove %q from the NodeConfig's spec.kubelet.flags and move %s to the NodePool:\n%s", last.text, strings.Join(others, ", "), TaintsYAML(others)))
	}
}

// generatedBottlerocket are the [settings.kubernetes] keys nodewright
// overwrites when it merges its settings into a Bottlerocket node's.
var generatedBottlerocket = []struct{ key, source, fix string }{
	{"max-pods", "the instance type", " and set the EC2NodeClass's spec.kubelet.maxPods instead"},
	{"cluster-dns-ip", "the cluster's kube-dns Service", " and set the EC2NodeClass's spec.kubelet.clusterDNS instead"},
	{"cluster-name", "the cluster it runs in", ""},
	{"api-server", "the cluster it runs in", ""},
	{"cluster-certificate", "the cluster it runs in", ""},
}

// generatedSettings are the kubelet settings nodewright's own NodeConfig,
// which nodeadm merges after the user's, always sets.
var generatedSettings = []struct{ key, field string }{{"maxPods", "spec.kubelet.maxPods"}, {"clusterDNS", "spec.kubelet.clusterDNS"}}

// sameAsGenerated reports a user's kubelet setting that equals what the
// generated configuration sets, or, for clusterDNS, one whose generated
// value is not known: nothing is lost, or nothing can be said.
func (v *validation) sameAsGenerated(key string, value any) bool {
	switch key {
	case "clusterDNS":
		list, _ := value.([]any)
		return v.known.ClusterDNS == "" || len(list) == 1 && fmt.Sprint(list[0]) == v.known.ClusterDNS
	case "cluster-dns":
		return v.known.ClusterDNS == "" || fmt.Sprint(value) == v.known.ClusterDNS
	case "cluster-dns-ip":
		return v.known.ClusterDNS == "" || fmt.Sprint(value) == v.known.ClusterDNS
	}
	return false
}

func (v *validation) nodeadmConfig(config map[string]any) {
	for _, s := range generatedSettings {
		if value, ok := config[s.key]; ok && !v.sameAsGenerated(s.key, value) {
			v.add(CodeSettingOverridden, Warning,
				fmt.Sprintf("kubelet %s = %v in the user data's NodeConfig never takes effect: nodeadm merges the NodeConfig nodewright generates after it, and that one always sets %s", s.key, value, s.key),
				fmt.Sprintf("remove %s from the NodeConfig's spec.kubelet.config and set the EC2NodeClass's %s instead", s.key, s.field))
		}
	}
	raw, ok := config["registerWithTaints"]
	if !ok {
		return
	}
	list, _ := raw.([]any)
	var taints []string
	for _, item := range list {
		m, _ := item.(map[string]any)
		key, _ := m["key"].(string)
		value, _ := m["value"].(string)
		effect, _ := m["effect"].(string)
		t := key
		if value != "" {
			t += "=" + value
		}
		taints = append(taints, t+":"+effect)
	}
	v.add(CodeConfigTaintsReplaced, Warning,
		fmt.Sprintf("spec.kubelet.config.registerWithTaints (%s) is replaced by the list nodewright generates (nodeadm merges documents in order and replaces lists), so these taints are silently dropped",
			strings.Join(taints, ", ")),
		"remove registerWithTaints from the nodeadm NodeConfig and move the taints to the NodePool (taints that stay in spec.template.spec.taints, taints an agent removes in startupTaints):\n"+TaintsYAML(taints))
}

// bootstrapRun checks a run of bootstrap.sh the user data's scripts make
// on an AL2 node (al2.Runs), read as the script reads its arguments:
// what it makes of them differently from what their author meant, and on
// AL2 a run that starts the kubelet before nodewright's own call.
func (v *validation) bootstrapRun(r al2.Run) {
	b, name := r.Bootstrap, r.Call.Args[0]
	if b.Exits != "" {
		v.add(CodeBootstrapArgsMalformed, Error,
			fmt.Sprintf("%s stops before it starts the kubelet: %s, so the node never joins", name, b.Exits),
			"correct the call to the form /etc/eks/bootstrap.sh CLUSTER_NAME --kubelet-extra-args '...', each option followed by its value")
	}
	for _, word := range b.Joined {
		option, value, _ := strings.Cut(word, "=")
		v.joinedOption(word, option, value, len(b.Positional) > 0 && b.Positional[0] == word)
	}
	if len(b.Replaced) > 0 {
		all := append(slices.Clone(b.Replaced), b.Vars["KUBELET_EXTRA_ARGS"])
		v.add(CodeBootstrapArgsMalformed, Warning,
			fmt.Sprintf("bootstrap.sh is given --kubelet-extra-args %d times and keeps only the last: the kubelet never gets %s",
				len(all), quoteEach(systemd.Words(strings.Join(b.Replaced, " ")))),
			fmt.Sprintf("replace them with one option: --kubelet-extra-args '%s'", strings.Join(all, " ")))
	}
	if b.Cut() {
		severity := Warning
		if !slices.Equal(lastTaints(b.KubeletArgs), lastTaints(b.Intended)) {
			severity = Error
		}
		v.add(CodeBootstrapArgsMalformed, severity,
			fmt.Sprintf("a single-quoted part of --kubelet-extra-args holds a space: bootstrap.sh writes the value inside single quotes in a systemd drop-in (Environment='KUBELET_EXTRA_ARGS=...'), where that quote ends the quoting and the space cuts the value, so the kubelet never gets %s",
				quoteEach(slices.DeleteFunc(slices.Clone(b.Intended), func(w string) bool { return slices.Contains(b.KubeletArgs, w) }))),
			fmt.Sprintf("write the value with double quotes inside: --kubelet-extra-args '%s'", strings.ReplaceAll(b.Vars["KUBELET_EXTRA_ARGS"], `'`, `"`)))
	}
	if v.family == awsv1.AMIFamilyAL2 && b.Exits == "" {
		v.userCallsBootstrap(name, lastTaints(b.KubeletArgs))
	}
}

// lastTaints are the taints of the last --register-with-taints flag in
// kubelet arguments: the kubelet keeps the last value of a flag.
func lastTaints(args []string) []string {
	values := FlagValues(args, "--register-with-taints")
	if len(values) == 0 {
		return nil
	}
	return splitTaints(values[len(values)-1])
}

func quoteEach(words []string) string {
	if len(words) == 0 {
		return "nothing"
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = fmt.Sprintf("%q", w)
	}
	return "[" + strings.Join(quoted, " ") + "]"
}

// joinedOption reports a bootstrap.sh option written as --name=VALUE,
// which bootstrap.sh does not understand and keeps as a positional
// argument (the cluster name, when it comes first); taints in ignored
// kubelet arguments are remembered for the explanation of a Custom node's
// missing taint.
func (v *validation) joinedOption(word, name, value string, first bool) {
	taken := "so it ignores it"
	if first {
		taken = "so it takes it as the cluster name"
	}
	quoted, err := syntax.Quote(word, syntax.LangBash)
	if err != nil {
		quoted = fmt.Sprintf("%q", word)
	}
	v.add(CodeBootstrapArgsMalformed, Error,
		fmt.Sprintf("bootstrap.sh is called with the word %s (as the shell passes it): bootstrap.sh takes its options as two words (%s VALUE), and does not understand the %s=VALUE form, %s",
			quoted, name, name, taken),
		fmt.Sprintf("write %s '%s'", name, strings.NewReplacer(`'`, "", `"`, "", "karpenter.sh/uninitialized", "karpenter.sh/unregistered").Replace(value)))
	if name != "--kubelet-extra-args" {
		return
	}
	for _, flag := range registerFlags(systemd.Words(value)) {
		v.ignored = append(v.ignored, splitTaints(flag.value)...)
	}
}

// userCallsBootstrap reports AL2 user data that runs bootstrap.sh itself,
// registering the node before nodewright's own call can.
func (v *validation) userCallsBootstrap(name string, taints []string) {
	if v.joins != nil {
		taints = v.joinsWith()
	}
	registers := registersWith(taints)
	v.add(CodeUserCallsBootstrap, Error,
		fmt.Sprintf("the user data runs %s itself: it starts the kubelet before the bootstrap.sh call nodewright generates, and the node registers %s — not with %s or the NodePool's taints — so it would never be matched to its NodeClaim",
			name, registers, UnregisteredTaint),
		"remove the bootstrap.sh call from spec.userData; put kubelet settings in the EC2NodeClass's spec.kubelet and taints in the NodePool's startupTaints (or taints)")
}

// registersWith says what a kubelet registers with, for messages.
func registersWith(taints []string) string {
	if len(taints) == 0 {
		return "without any taint"
	}
	return "with only " + strings.Join(taints, ", ")
}

func (v *validation) bottlerocket(body []byte) {
	k, _, err := bottlerocket.Read(body)
	var unmodelled *bottlerocket.NotModelledError
	switch {
	case errors.As(err, &unmodelled):
		return // the boot outcome names it
	case err != nil:
		if v.family == awsv1.AMIFamilyBottlerocket || v.custom() {
			v.add(CodeUnreadable, Error, "Bottlerocket refuses the user data's settings, so the node never joins: "+err.Error(), folded(string(body), fixBottlerocket))
		}
		return
	}
	if !v.custom() {
		for _, s := range generatedBottlerocket {
			if value, ok := k[s.key]; ok && !v.sameAsGenerated(s.key, value) {
				v.add(CodeSettingOverridden, Warning,
					fmt.Sprintf("settings.kubernetes.%s = %v in the user data never takes effect: nodewright overwrites it with the value it works out from %s when it merges its own settings into the node's", s.key, value, s.source),
					fmt.Sprintf("remove %s from [settings.kubernetes]%s", s.key, s.fix))
			}
		}
	}
	taints := bottlerocket.Taints(k)
	if len(taints) == 0 || v.custom() {
		return // a Custom node registers with them: the outcome judges it
	}
	v.add(CodeBottlerocketTaints, Warning,
		fmt.Sprintf("settings.kubernetes.node-taints (%s) is replaced by the taints nodewright generates, so these taints are silently dropped",
			strings.Join(taints, ", ")),
		"remove settings.kubernetes.node-taints and move the taints to the NodePool (taints that stay in spec.template.spec.taints, taints an agent removes in startupTaints):\n"+TaintsYAML(taints))
}

// fixBottlerocket is the fix of settings Bottlerocket refuses.
const fixBottlerocket = "correct the EC2NodeClass's spec.userData so that Bottlerocket's settings model takes every value (the setting named: its key spelt as Bottlerocket spells it, its value of the type it takes — max-pods = 110, not \"110\"); Bottlerocket applies none of the settings when one is refused"

// flagValue is a --register-with-taints flag and its value.
type flagValue struct{ text, value string }

// registerFlags finds --register-with-taints in kubelet arguments, as
// --register-with-taints=VALUE or as two words.
func registerFlags(words []string) []flagValue { return flagValues(words, "--register-with-taints") }

// FlagValues returns the values of a kubelet flag, given as --flag=VALUE or
// as two words, in order.
func FlagValues(words []string, flag string) []string {
	values := flagValues(words, flag)
	out := make([]string, 0, len(values))
	for _, f := range values {
		out = append(out, f.value)
	}
	return out
}

func flagValues(words []string, flag string) []flagValue {
	var out []flagValue
	for i := 0; i < len(words); i++ {
		w := words[i]
		if value, ok := strings.CutPrefix(w, flag+"="); ok {
			out = append(out, flagValue{text: w, value: value})
		} else if w == flag && i+1 < len(words) {
			out = append(out, flagValue{text: w + " " + words[i+1], value: words[i+1]})
			i++
		}
	}
	return out
}

func splitTaints(value string) []string {
	var out []string
	for _, t := range strings.Split(value, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
