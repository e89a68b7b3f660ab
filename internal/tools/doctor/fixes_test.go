package doctor

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// seen are the findings of every diagnosis the rule tests made.
var seen []Finding

// After the rule tests, every finding code has been seen, and each
// finding's fix is an action — an object or field to change, with what to
// do — not the message restated.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		if problems := checkFixes(seen); len(problems) > 0 {
			fmt.Fprintln(os.Stderr, "FAIL: findings whose fix is not an action:\n  "+strings.Join(problems, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

var (
	verbs  = regexp.MustCompile(`(?i)\b(add|set|remove|change|raise|lower|create|delete|drop|use|give|map|replace|tag|allow|let|move|wait|correct|point|make|select|install|label|mark|keep|restart|check|write|quote|run|shrink)\b`)
	fields = regexp.MustCompile(`\b(spec|data|metadata|status)\.|\b(NodePool|EC2NodeClass|ConfigMap|PodDisruptionBudget|Deployment|StatefulSet|Pod|pod|node|Node|DaemonSet|access entry|role|toleration|taint|annotation|label|user ?data|userData)\b`)
)

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') }) {
		if len(w) > 3 {
			out[w] = true
		}
	}
	return out
}

// restates reports a fix that is mostly the message's own words.
func restates(message, fix string) bool {
	m, f := words(message), words(fix)
	if len(f) == 0 {
		return true
	}
	shared := 0
	for w := range f {
		if m[w] {
			shared++
		}
	}
	return float64(shared)/float64(len(f)) > 0.7
}

func checkFixes(findings []Finding) []string {
	var problems []string
	codes := map[string]bool{}
	for _, f := range findings {
		codes[f.Code] = true
		switch {
		case strings.TrimSpace(f.Fix) == "":
			problems = append(problems, f.Code+": no fix")
		case strings.Contains(f.Message, f.Fix) || strings.Contains(f.Fix, f.Message):
			problems = append(problems, f.Code+": the fix is the message: "+f.Fix)
		case restates(f.Message, f.Fix):
			problems = append(problems, f.Code+": the fix restates the message: "+f.Fix)
		case !verbs.MatchString(f.Fix) || !fields.MatchString(f.Fix):
			problems = append(problems, f.Code+": the fix names no action on an object or field: "+f.Fix)
		}
	}
	for _, c := range Codes {
		if !codes[c] {
			problems = append(problems, c+": no test produces this finding")
		}
	}
	return problems
}

// The check itself: a fix that restates the message, or names nothing to
// change, is caught.
func TestCheckFixesCatchesRestatedFixes(t *testing.T) {
	msg := "make the pod and NodePool np agree: no instance type fits 1 CPU / 4Gi / 1 nvidia.com/gpu"
	bad := []Finding{
		{Code: "x", Message: "pod fits no NodePool: no instance type fits 1 CPU / 4Gi / 1 nvidia.com/gpu", Fix: msg},
		{Code: "y", Message: "something is wrong", Fix: ""},
		{Code: "z", Message: "something is wrong", Fix: "it is a problem"},
	}
	if got := checkFixes(bad); len(got) < 3 {
		t.Errorf("checkFixes passed a restated, an empty or an empty-handed fix: %v", got)
	}
	good := Finding{Code: "ok", Message: "pods of Deployment web fit no NodePool", Fix: "add the toleration {key: gpu, operator: Exists} to Deployment default/web's spec.tolerations"}
	for _, p := range checkFixes([]Finding{good}) {
		if strings.HasPrefix(p, "ok:") {
			t.Errorf("a fix that is an action was refused: %s", p)
		}
	}
}
