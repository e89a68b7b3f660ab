// Package windows is the boot of an EKS-optimized Windows node:
// EC2Launch runs the PowerShell between the first <powershell> and
// </powershell> tags, parsed as a whole before any of it runs (Read); the
// first call of Start-EKSBootstrap.ps1 that PowerShell runs starts the
// kubelet with the words of its -KubeletExtraArgs, read by the kubelet's
// own flag handling (boot/kubelet).
package windows

import (
	"fmt"
	"regexp"
	"strings"
)

// ScriptName is the bootstrap script's file name.
const ScriptName = "start-eksbootstrap.ps1"

// BootstrapParameters are the parameters of Start-EKSBootstrap.ps1
// (the EKS user guide's "bootstrap script configuration parameters" of
// the Windows AMIs), in the order they are declared.
var BootstrapParameters = []string{
	"EKSClusterName", "KubeletExtraArgs", "KubeProxyExtraArgs", "APIServerEndpoint", "Base64ClusterCA",
	"DNSClusterIP", "ContainerRuntime", "ServiceCIDR", "ExcludedSnatCIDRs",
}

// PowerShell is what a Windows node makes of its user data.
type PowerShell struct {
	// Tagged: the user data has a <powershell> block; EC2Launch runs
	// nothing else.
	Tagged bool
	// Unparsable says why PowerShell cannot parse the script it is
	// given ("" when it can): then none of it runs.
	Unparsable string
	// Calls are the calls of Start-EKSBootstrap.ps1, in order: the first
	// joins the cluster and starts the kubelet.
	Calls []Bootstrap
}

// Bootstrap is one call of Start-EKSBootstrap.ps1 as the script
// binds it.
type Bootstrap struct {
	// Text is the call as written.
	Text string
	// Params are the bound parameters, by their declared names.
	Params map[string]string
	// KubeletArgs are the words of -KubeletExtraArgs as the kubelet
	// service receives them.
	KubeletArgs []string
	// Fails says why PowerShell does not run the script ("" when it
	// does): an unknown or ambiguous parameter, no cluster name.
	Fails string
	// Unsure says why the call's parameters are not known here (splatted
	// from a hashtable): it may well run.
	Unsure string
}

var powershellBlock = regexp.MustCompile(`(?is)<powershell>(.*?)</powershell>`)

// Read reads Windows user data as EC2Launch and PowerShell do:
// the script between the first <powershell> and </powershell> tags
// (the whole text when it has none), parsed as a whole before any of it
// runs.
func Read(data []byte) *PowerShell {
	text := string(data)
	out := &PowerShell{}
	if m := powershellBlock.FindStringSubmatch(text); m != nil {
		out.Tagged, text = true, m[1]
	}
	statements, err := psStatements(text)
	if err != nil {
		out.Unparsable = err.Error()
		return out
	}
	vars := map[string]string{"env:programfiles": `C:\Program Files`}
	for _, st := range statements {
		if name, value, ok := psAssignment(st, vars); ok {
			vars[name] = value
			continue
		}
		if call, ok := psBootstrapCall(st, vars); ok {
			out.Calls = append(out.Calls, call)
		}
	}
	return out
}

// IsPowerShell reports whether user data is a Windows <powershell> block.
func IsPowerShell(data []byte) bool { return powershellBlock.Match(data) }

// psWord is one word of a PowerShell statement: its value (quotes
// removed, escapes and known variables expanded) and its text.
type psWord struct {
	value, text string
	// quoted: the word was a string, never a parameter name.
	quoted bool
	// unknown: it expands a variable whose value is not known.
	unknown bool
}

// psStatements splits a script into statements of words: newlines and
// semicolons end a statement (a backtick at the end of a line continues
// it); # starts a comment, <# ... #> a block comment. A '<' that starts
// a word (a tag such as <powershell> or <persist>) is a parse error in
// PowerShell, as is a string left open.
func psStatements(script string) ([][]psWord, error) {
	var out [][]psWord
	var cur []psWord
	line := 1
	for i := 0; i < len(script); {
		if n, err := psSpace(script[i:]); err != nil || n > 0 {
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			line += strings.Count(script[i:i+n], "\n")
			i += n
			continue
		}
		switch c := script[i]; c {
		case '\n', ';':
			if c == '\n' {
				line++
			}
			if len(cur) > 0 {
				out, cur = append(out, cur), []psWord{}
			}
			i++
		case '<':
			tag, _, _ := strings.Cut(script[i:], "\n")
			return nil, fmt.Errorf("line %d: %q: PowerShell reserves the '<' operator, so a tag inside the script does not parse", line, strings.TrimSpace(tag))
		default:
			w, n, err := psReadWord(script[i:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			line += strings.Count(script[i:i+n], "\n")
			cur = append(cur, w)
			i += n
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// psSpace is how much of s is space between words: blanks, a backtick
// that continues the line, a comment to the end of the line (not the
// newline) or a block comment; 0 when s starts with something else.
func psSpace(s string) (int, error) {
	switch {
	case s[0] == ' ' || s[0] == '\t' || s[0] == '\r':
		return 1, nil
	case strings.HasPrefix(s, "`\r\n"):
		return 3, nil
	case strings.HasPrefix(s, "`\n") || strings.HasPrefix(s, "`\r"):
		return 2, nil
	case strings.HasPrefix(s, "<#"):
		j := strings.Index(s, "#>")
		if j < 0 {
			return 0, fmt.Errorf("the block comment <# is never closed")
		}
		return j + 2, nil
	case s[0] == '#':
		n := strings.IndexByte(s, '\n')
		if n < 0 {
			return len(s), nil
		}
		return n, nil
	}
	return 0, nil
}

// psReadWord reads one word: bare text, a single-quoted string (two
// quotes are one), a double-quoted string (`x escapes, two quotes are
// one, $variables expand) or a mix of them with nothing between; or a
// here-string (@' or @" to a line that starts with '@ or "@).
func psReadWord(s string) (psWord, int, error) {
	var w psWord
	if strings.HasPrefix(s, "@'") || strings.HasPrefix(s, `@"`) {
		return psHereString(s)
	}
	var val strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';':
			w.value, w.text = val.String(), s[:i]
			return w, i, nil
		case c == '\'':
			j, err := psSingle(s[i:], &val)
			if err != nil {
				return w, 0, err
			}
			w.quoted = true
			i += j
		case c == '"':
			j, err := psDouble(s[i:], &val, &w)
			if err != nil {
				return w, 0, err
			}
			w.quoted = true
			i += j
		case c == '`' && i+1 < len(s):
			val.WriteByte(s[i+1])
			i += 2
		default:
			val.WriteByte(c)
			i++
		}
	}
	w.value, w.text = val.String(), s
	return w, i, nil
}

// psHereString reads a here-string: its text is the lines between the
// opening line and the line that starts with the closing quote and @.
func psHereString(s string) (psWord, int, error) {
	quote := s[1]
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return psWord{}, 0, fmt.Errorf("the here-string %s is never closed", firstLine(s))
	}
	closing := "\n" + string(quote) + "@"
	body, n := "", nl+3
	if !strings.HasPrefix(s[nl+1:], string(quote)+"@") {
		j := strings.Index(s[nl:], closing)
		if j < 0 {
			return psWord{}, 0, fmt.Errorf("the here-string %s is never closed", firstLine(s))
		}
		body, n = strings.TrimSuffix(s[nl+1:nl+j], "\r"), nl+j+len(closing)
	}
	return psWord{value: body, text: s[:n], quoted: true, unknown: quote == '"' && strings.Contains(body, "$")}, n, nil
}

func psSingle(s string, val *strings.Builder) (int, error) {
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			val.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			val.WriteByte('\'')
			i++
			continue
		}
		return i + 1, nil
	}
	return 0, fmt.Errorf("the string %s is never closed", firstLine(s))
}

func psDouble(s string, val *strings.Builder, w *psWord) (int, error) {
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '`' && i+1 < len(s):
			val.WriteString(psEscape(s[i+1]))
			i++
		case c == '"' && i+1 < len(s) && s[i+1] == '"':
			val.WriteByte('"')
			i++
		case c == '"':
			return i + 1, nil
		case c == '$':
			name, n := psVariableName(s[i+1:])
			if name == "" {
				val.WriteByte('$')
				continue
			}
			val.WriteString("${" + name + "}")
			w.unknown = true
			i += n
		default:
			val.WriteByte(c)
		}
	}
	return 0, fmt.Errorf("the string %s is never closed", firstLine(s))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// psEscape is what a backtick escape in a double-quoted string stands for.
func psEscape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case '0':
		return "\x00"
	}
	return string(c)
}

var psVariable = regexp.MustCompile(`^(?:\{([^}]+)\}|((?i:env:)?[A-Za-z_][A-Za-z0-9_]*))`)

// psVariableName reads the name of a variable after '$': $name, $env:NAME,
// ${name}; the name (lower case) and the characters read.
func psVariableName(s string) (string, int) {
	m := psVariable.FindStringSubmatch(s)
	if m == nil {
		return "", 0
	}
	return strings.ToLower(m[1] + m[2]), len(m[0])
}

// psExpand replaces the ${name} a double-quoted string left with the
// values of known variables; ok is false when one is not known.
func psExpand(w psWord, vars map[string]string) (string, bool) {
	if !w.unknown {
		if name, n := psVariableName(strings.TrimPrefix(w.value, "$")); strings.HasPrefix(w.value, "$") && !w.quoted && n == len(w.value)-1 {
			v, ok := vars[name]
			return v, ok
		}
		return w.value, true
	}
	ok := true
	out := psReference.ReplaceAllStringFunc(w.value, func(ref string) string {
		v, known := vars[ref[2:len(ref)-1]]
		ok = ok && known
		return v
	})
	return out, ok
}

// psAssignment reads `[type]$name = value` (spaces around = or none)
// with a value known here.
func psAssignment(st []psWord, vars map[string]string) (string, string, bool) {
	texts := make([]string, len(st))
	for i, w := range st {
		texts[i] = w.text
	}
	m := psAssign.FindStringSubmatch(strings.Join(texts, " "))
	if m == nil {
		return "", "", false
	}
	w, n, err := psReadWord(m[2])
	if err != nil || n != len(m[2]) {
		return "", "", false
	}
	value, known := psExpand(w, vars)
	return strings.ToLower(m[1]), value, known
}

// psReference is a variable a double-quoted string left as ${name}.
var psReference = regexp.MustCompile(`\$\{([^}]+)\}`)

var psAssign = regexp.MustCompile(`^(?:\[[A-Za-z.\[\]]+\]\s*)?\$((?i:env:)?[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S.*)$`)

// psBootstrapCall reads a statement that runs Start-EKSBootstrap.ps1 (by
// its path, or a variable that holds it, after & or . or alone) and binds
// its parameters as PowerShell does: -Name value or -Name:value, names in
// any case and shortened to a unique prefix; a value without a name goes
// to the next parameter not bound, in declared order.
func psBootstrapCall(st []psWord, vars map[string]string) (Bootstrap, bool) {
	words, ok := psCallOfScript(st, vars)
	if !ok {
		return Bootstrap{}, false
	}
	texts := make([]string, len(st))
	for i, w := range st {
		texts[i] = w.text
	}
	call := Bootstrap{Text: strings.Join(texts, " "), Params: map[string]string{}}
	positional, stop := call.bindNamed(words[1:], vars)
	if stop {
		return call, true
	}
	for _, v := range positional {
		if !call.bindNext(v) {
			call.Fails = fmt.Sprintf("a positional value %q matches no parameter (PowerShell stops)", v)
			return call, true
		}
	}
	if strings.TrimSpace(call.Params["EKSClusterName"]) == "" {
		call.Fails = "-EKSClusterName, which the script requires, is not given"
		return call, true
	}
	call.KubeletArgs = ServiceWords(call.Params["KubeletExtraArgs"])
	return call, true
}

// psCallOfScript returns the words of a statement that runs
// Start-EKSBootstrap.ps1, the script's first: `& SCRIPT ...`,
// `. SCRIPT ...`, `&$script ...` or `SCRIPT ...`.
func psCallOfScript(st []psWord, vars map[string]string) ([]psWord, bool) {
	words := st
	switch first := words[0].text; {
	case len(words) > 1 && (first == "&" || first == "."):
		words = words[1:]
	case len(first) > 1 && (first[0] == '&' || first[0] == '.' && first[1] == '$'):
		words = append([]psWord{{value: first[1:], text: first[1:]}}, words[1:]...)
	}
	target, _ := psExpand(words[0], vars)
	target = strings.ToLower(strings.ReplaceAll(target, "/", `\`))
	return words, strings.HasSuffix(target, `\`+ScriptName) || target == ScriptName
}

// bindNamed binds -Name value and -Name:value arguments and returns the
// values given without a name; stop when binding ended the call (Fails
// or Unsure says why). A pipe ends the arguments; redirections are not
// arguments.
func (call *Bootstrap) bindNamed(args []psWord, vars map[string]string) (positional []string, stop bool) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w.text == "|":
			return positional, false // a pipeline: what follows is another command's
		case psRedirection.MatchString(w.text):
			if strings.HasSuffix(w.text, ">") {
				i++ // the file redirected to
			}
			continue
		case strings.HasPrefix(w.text, "@") && !w.quoted:
			call.Unsure = fmt.Sprintf("its parameters are splatted (%s), which is not read here", w.text)
			return nil, true
		case !strings.HasPrefix(w.text, "-") || len(w.text) < 2 || !isLetter(w.text[1]):
			v, _ := psExpand(w, vars)
			positional = append(positional, v)
			continue
		}
		name, inline, hasInline := strings.Cut(w.text[1:], ":")
		param, why := psParameter(name)
		switch {
		case why != "":
			call.Fails = why
			return nil, true
		case hasInline:
			v, _, err := psReadWord(inline)
			if err != nil {
				call.Fails = err.Error()
				return nil, true
			}
			call.Params[param], _ = psExpand(v, vars)
		case i+1 >= len(args):
			call.Fails = fmt.Sprintf("-%s is given no value (PowerShell stops: missing an argument for parameter '%s')", name, param)
			return nil, true
		default:
			i++
			call.Params[param], _ = psExpand(args[i], vars)
		}
	}
	return positional, false
}

// bindNext binds a value given without a name to the first parameter not
// bound yet, in declared order; false when every one is.
func (call *Bootstrap) bindNext(v string) bool {
	for _, p := range BootstrapParameters {
		if _, ok := call.Params[p]; !ok {
			call.Params[p] = v
			return true
		}
	}
	return false
}

// psRedirection matches a redirection word: >, >>, 2>, 3>&1, *>&1, 2>file.
var psRedirection = regexp.MustCompile(`^[1-6*]?>>?(&[12]|.*)$`)

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// psParameter is the declared parameter a name given to the script
// binds to: the same name in any case, or the one parameter it is a
// prefix of; why says why PowerShell refuses it.
func psParameter(name string) (string, string) {
	var matches []string
	for _, p := range BootstrapParameters {
		if strings.EqualFold(p, name) {
			return p, ""
		}
		if len(name) <= len(p) && strings.EqualFold(p[:len(name)], name) {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], ""
	case 0:
		return "", fmt.Sprintf("-%s is not a parameter of Start-EKSBootstrap.ps1 (PowerShell stops: a parameter cannot be found that matches parameter name '%s'); it takes -%s", name, name, strings.Join(BootstrapParameters, ", -"))
	}
	return "", fmt.Sprintf("-%s is ambiguous: it could be -%s (PowerShell stops)", name, strings.Join(matches, " or -"))
}

// ServiceWords splits a Windows service's command line as the program
// receives it: words apart at spaces, double quotes group and are
// removed (\" is a quote), single quotes are characters like any other.
func ServiceWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '"':
			cur.WriteByte('"')
			inWord = true
			i++
		case c == '"':
			quoted, inWord = !quoted, true
		case (c == ' ' || c == '\t' || c == '\n' || c == '\r') && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
