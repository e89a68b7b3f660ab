package disruption_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/referencetest"
)

// The reference's disruption suite (kubernetes-sigs/karpenter,
// pkg/controllers/disruption), restated case by case in nodewright's own
// terms: each case builds the cluster the reference's case builds (nodes,
// NodeClaims, pods, NodePools, budgets, PDBs) and checks the outcome the
// reference expects, with nodewright's decision or controller.
//
// Every case is one of four kinds:
//   - the same: run checks the reference's outcome;
//   - better: nodewright decides otherwise on purpose; run checks
//     nodewright's outcome and better says why;
//   - gap: nodewright does not yet do what the case expects; the case is
//     skipped, and gap says what is missing;
//   - moot: the case checks a mechanism of the reference's own code that
//     nodewright has no counterpart of (a helper's signature, a log line);
//     moot says what, and where nodewright's behaviour for the same concern
//     is checked.
//
// TestReferenceDisruptionSuiteIsWhole checks, against the reference's
// module, that every case of every file is restated here once.

// refCase is one restated case.
type refCase struct {
	// ref is the reference's case: "Describe > Context > It", its last
	// part the It's or Entry's title exactly.
	ref    string
	run    func(t *testing.T)
	better string
	gap    string
	moot   string
}

// referenceSuite holds the restated cases by reference file name.
var referenceSuite = map[string][]refCase{}

// restate adds a reference file's cases; each suite file calls it from a
// package variable's initialiser.
func restate(file string, cases ...refCase) bool {
	referenceSuite[file] = append(referenceSuite[file], cases...)
	return true
}

// notYetRestated are the reference's disruption test files whose cases
// are not restated yet, and what they cover: none.
var notYetRestated = map[string]string{}

// referenceCore is the reference's core module and the version the suite
// restates.
const (
	referenceCore        = "sigs.k8s.io/karpenter"
	referenceCoreVersion = "v1.15.0"
)

func TestReferenceDisruptionSuite(t *testing.T) {
	files := slices.Sorted(func(yield func(string) bool) {
		for f := range referenceSuite {
			if !yield(f) {
				return
			}
		}
	})
	for _, f := range files {
		t.Run(strings.TrimSuffix(f, "_test.go"), func(t *testing.T) {
			for _, c := range referenceSuite[f] {
				t.Run(c.ref, func(t *testing.T) {
					switch {
					case c.gap != "":
						t.Skip("differs from the reference: " + c.gap)
					case c.moot != "":
						t.Skip("no counterpart: " + c.moot)
					case c.run == nil:
						t.Fatal("a case without run must say why (gap or moot)")
					}
					c.run(t)
				})
			}
		})
	}
}

// caseTitle matches the title of a Ginkgo It or table Entry.
var caseTitle = regexp.MustCompile(`\b(?:It|Entry)\(("(?:[^"\\]|\\.)*")`)

// TestReferenceDisruptionSuiteIsWhole reads the reference's test files
// from its module and checks that each of their cases is restated once
// (by title, as many times as the file has it), and reports the counts.
func TestReferenceDisruptionSuiteIsWhole(t *testing.T) {
	dir := filepath.Join(referencetest.ModuleDir(t, referenceCore, referenceCoreVersion), "pkg", "controllers", "disruption")
	var total, same, better, gap, moot int
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s: %v", dir, err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		_, restated := referenceSuite[name]
		switch why, pending := notYetRestated[name]; {
		case restated && pending:
			t.Errorf("%s is restated: take it off notYetRestated", name)
		case pending:
			t.Logf("%s: not restated yet (%s)", name, why)
		case !restated && caseTitle.Match(src):
			t.Errorf("%s: the reference's cases in this file are not restated", name)
		}
	}
	for file, cases := range referenceSuite {
		src, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s: not a test file of the reference's disruption suite: %v", file, err)
			continue
		}
		want := map[string]int{}
		for _, m := range caseTitle.FindAllStringSubmatch(string(src), -1) {
			title, err := strconv.Unquote(m[1])
			if err != nil {
				t.Fatalf("%s: title %s: %v", file, m[1], err)
			}
			want[title]++
		}
		for _, c := range cases {
			parts := strings.Split(c.ref, " > ")
			want[parts[len(parts)-1]]--
			total++
			switch {
			case c.gap != "":
				gap++
			case c.moot != "":
				moot++
			case c.better != "":
				better++
			default:
				same++
			}
		}
		for title, n := range want {
			switch {
			case n > 0:
				t.Errorf("%s: %q is not restated (%d left)", file, title, n)
			case n < 0:
				t.Errorf("%s: %q is restated %d times more than the reference has it", file, title, -n)
			}
		}
	}
	if out := os.Getenv("REFERENCE_SUITE_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(differences()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("reference disruption suite (%s@%s): %d cases restated: %d decided as the reference, %d better on purpose, %d gaps, %d without a counterpart",
		referenceCore, referenceCoreVersion, total, same, better, gap, moot)
}

// differences lists, as Markdown, every restated case nodewright decides
// otherwise, by file: REFERENCE_SUITE_REPORT=path writes it (for the
// README's compatibility section).
func differences() string {
	var b strings.Builder
	files := slices.Sorted(maps.Keys(referenceSuite))
	for _, kind := range []string{"better", "gap", "moot"} {
		fmt.Fprintf(&b, "\n%s:\n\n", kind)
		for _, f := range files {
			for _, c := range referenceSuite[f] {
				text := map[string]string{"better": c.better, "gap": c.gap, "moot": c.moot}[kind]
				if text != "" && (kind != "better" || c.gap == "" && c.moot == "") {
					fmt.Fprintf(&b, "- `%s` %s: %s\n", f, c.ref, text)
				}
			}
		}
	}
	return b.String()
}

// launchLabels are the labels a launch gives a node's NodeClaim: the
// node's, the kubelet's own hostname aside.
func launchLabels(n *corev1.Node) map[string]string {
	out := make(map[string]string, len(n.Labels))
	for k, v := range n.Labels {
		if k != corev1.LabelHostname {
			out[k] = v
		}
	}
	return out
}
