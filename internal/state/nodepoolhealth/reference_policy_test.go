package nodepoolhealth_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/referencetest"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// refPolicy and refCase are what the oracle (testdata/oracle) reads.
type refPolicy struct {
	Condition  corev1.NodeConditionType `json:"condition"`
	Status     corev1.ConditionStatus   `json:"status"`
	Reason     string                   `json:"reason"`
	Toleration time.Duration            `json:"toleration"`
	DrainBound *time.Duration           `json:"drainBound"`
	Priority   int                      `json:"priority"`
	Action     string                   `json:"action"`
}

type refCase struct {
	Policies    []refPolicy `json:"policies"`
	Node        corev1.Node `json:"node"`
	RebootEnded time.Time   `json:"rebootEnded"`
	Now         time.Time   `json:"now"`
}

type refResult struct {
	Error      string                   `json:"error,omitempty"`
	Matches    int                      `json:"matches"`
	Action     string                   `json:"action"`
	Condition  corev1.NodeConditionType `json:"condition"`
	DrainBound *time.Duration           `json:"drainBound"`
	Score      float64                  `json:"score"`
}

// policyOracle builds the reference's repair policy matcher (core
// v1.15.0, pkg/controllers/node/health) under testdata/oracle.
func policyOracle(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	main, err := os.ReadFile(filepath.Join(filepath.Dir(here), "testdata", "oracle", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod := "module nodewright.local/repair-policy-oracle\n\ngo 1.26.9\n\nrequire sigs.k8s.io/karpenter v1.15.0\n"
	return referencetest.Oracle{Name: "repair-policy-v1.15.0", GoMod: goMod, Files: map[string]string{"main.go": string(main)},
		Toolchain: referencetest.Toolchain, TestDepsMissing: true}.Build(t)
}

// genCase is a set of policies (now and then one the reference refuses)
// and a node with failing conditions, as a provider and the node
// monitoring agent make them.
func genCase(r *rand.Rand, now time.Time) refCase {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	types := []string{"Ready", "AcceleratedHardwareReady", "KernelReady", "Diagnostic"}
	statuses := []string{"False", "False", "Unknown", "True"}
	durations := []time.Duration{0, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}
	var c refCase
	c.Now = now
	n := 1 + r.IntN(6)
	fallback := r.IntN(n)
	for i := range n {
		p := refPolicy{Condition: corev1.NodeConditionType(pick(types...)), Status: corev1.ConditionStatus(pick(statuses...)),
			Toleration: durations[r.IntN(len(durations))], Priority: []int{0, 0, 10, 50, 90, 100}[r.IntN(6)],
			Action: pick(string(nodepoolhealth.Replace), string(nodepoolhealth.Replace), string(nodepoolhealth.Reboot))}
		if i != fallback {
			p.Reason = pick(".*", "^FastFailure$", "Fast", "XID(63|79)", `.*XID(46|48|54|62|63).*`, "^$", "Other|Fast")
		} else {
			p.Action = string(nodepoolhealth.Replace)
		}
		if r.IntN(3) > 0 {
			d := []time.Duration{0, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute}[r.IntN(4)]
			p.DrainBound = &d
		}
		c.Policies = append(c.Policies, p)
	}
	switch r.IntN(20) {
	case 0:
		c.Policies[r.IntN(n)].Reason = "" // two fallbacks, or one moved
	case 1:
		c.Policies[r.IntN(n)].Priority = 101
	case 2:
		c.Policies[r.IntN(n)].Reason = "("
	case 3:
		c.Policies[fallback].Action = string(nodepoolhealth.Reboot)
	case 4:
		c.Policies[r.IntN(n)].Status = "Maybe"
	}
	created := now.Add(-time.Duration(r.IntN(300)) * time.Minute)
	c.Node = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{v1.LabelNodePool: "np"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-n"}}
	for _, t := range types {
		if r.IntN(2) == 0 {
			continue
		}
		since := now.Add(-time.Duration(r.IntN(360)) * time.Minute)
		if r.IntN(10) == 0 {
			since = time.Time{}
		}
		c.Node.Status.Conditions = append(c.Node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeConditionType(t), Status: corev1.ConditionStatus(pick(statuses...)),
			Reason: pick("", "FastFailure", "PrefixFastFailureSuffix", "NvidiaXID63Error", "NvidiaXID79Error", "Other", "KubeletNotReady"), LastTransitionTime: metav1.NewTime(since)})
	}
	if r.IntN(4) == 0 {
		c.RebootEnded = now.Add(-time.Duration(r.IntN(120)) * time.Minute)
	}
	return c
}

// nodewrights is what nodepoolhealth decides of a case: the error of the
// set, else the node's health.
func nodewrights(c refCase) (*nodepoolhealth.Unhealthy, error) {
	var policies []nodepoolhealth.Policy
	for _, p := range c.Policies {
		policies = append(policies, nodepoolhealth.Policy{Condition: p.Condition, Status: p.Status, Reason: p.Reason, Toleration: p.Toleration,
			Action: nodepoolhealth.Action(p.Action), DrainBound: p.DrainBound, Priority: p.Priority})
	}
	if err := nodepoolhealth.ValidatePolicies(policies); err != nil {
		return nil, err
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc"}, Status: v1.NodeClaimStatus{ProviderID: c.Node.Spec.ProviderID}}
	if !c.RebootEnded.IsZero() {
		nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionRebooting, Status: metav1.ConditionFalse, Reason: v1.ReasonRebootSucceeded, LastTransitionTime: metav1.NewTime(c.RebootEnded)}}
	}
	pools := nodepoolhealth.Assess([]*v1.NodeClaim{nc}, []*corev1.Node{&c.Node}, policies, c.Now)
	if p := pools["np"]; p != nil && len(p.Unhealthy) == 1 {
		return &p.Unhealthy[0], nil
	}
	return nil, nil
}

// The repair policy matcher decides as the reference's: on generated
// policy sets and nodes, the same sets are refused, and of the others the
// same nodes match, with the same action, governing condition, drain
// bound and score. REPAIR_POLICY_CASES sets how many (default 400).
func TestPoliciesDecideAsTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reference's matcher")
	}
	count := 400
	if v := os.Getenv("REPAIR_POLICY_CASES"); v != "" {
		var err error
		if count, err = strconv.Atoi(v); err != nil {
			t.Fatalf("REPAIR_POLICY_CASES=%q: %v", v, err)
		}
	}
	bin := policyOracle(t)
	r := rand.New(rand.NewPCG(62, 1))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := make([]refCase, count)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i := range cases {
		cases[i] = genCase(r, now)
		if err := enc.Encode(cases[i]); err != nil {
			t.Fatal(err)
		}
	}
	lines := referencetest.RunLines(t, bin, in.Bytes())
	i, refused, eligible, wrong := 0, 0, 0, 0
	for ; i < len(lines); i++ {
		var want refResult
		if err := json.Unmarshal(lines[i], &want); err != nil {
			t.Fatal(err)
		}
		c := cases[i]
		if why := differs(c, want); why != "" {
			wrong++
			if wrong <= 10 {
				js, _ := json.Marshal(c)
				t.Errorf("case %d: %s\n%s", i, why, js)
			}
		}
		if want.Error != "" {
			refused++
		} else if want.Action != "" {
			eligible++
		}
	}
	if i != len(cases) {
		t.Fatalf("the oracle answered %d of %d cases", i, len(cases))
	}
	t.Logf("%d cases: %d sets refused, %d nodes due for repair; %d differ", len(cases), refused, eligible, wrong)
	if refused == 0 || eligible == 0 || eligible == len(cases)-refused {
		t.Errorf("the generator made %d refused sets and %d due nodes: it must make some of each, and some nodes not due", refused, eligible)
	}
}

// differs says how nodewright's decision of a case differs from the
// reference's, or "".
func differs(c refCase, want refResult) string {
	u, err := nodewrights(c)
	switch {
	case (err != nil) != (want.Error != ""):
		return fmt.Sprintf("set refused: nodewright %v, reference %q", err, want.Error)
	case err != nil:
		return ""
	case (u != nil) != (want.Matches > 0):
		return fmt.Sprintf("node matched: nodewright %v, reference %d matches", u != nil, want.Matches)
	case u == nil:
		return ""
	case u.Eligible != (want.Action != ""):
		return fmt.Sprintf("due for repair: nodewright %v, reference action %q", u.Eligible, want.Action)
	case !u.Eligible:
		return ""
	case string(u.Action) != want.Action || u.Condition.Type != want.Condition:
		return fmt.Sprintf("action %s for %s, reference %s for %s", u.Action, u.Condition.Type, want.Action, want.Condition)
	case (u.DrainBound == nil) != (want.DrainBound == nil) || u.DrainBound != nil && *u.DrainBound != *want.DrainBound:
		return fmt.Sprintf("drain bound %v, reference %v", u.DrainBound, want.DrainBound)
	case math.Abs(u.Score-want.Score) > 1e-9:
		return fmt.Sprintf("score %v, reference %v", u.Score, want.Score)
	}
	return ""
}
