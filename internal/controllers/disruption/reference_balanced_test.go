package disruption_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// The reference's Balanced consolidation suites: balanced_test.go,
// balanced_scoring_test.go, balanced_integration_test.go and
// balanced_adversarial_test.go.
//
// Most of the reference's cases call its scoring function with made-up
// NodePool totals. nodewright has no exported scoring function: it
// scores each consolidation command of a Balanced NodePool as it weighs
// it and keeps the score in Decision.Scores (karpenter_consolidation_score).
// Each such case is restated as a cluster that gives the case's totals:
// the reference's RFC pool (eight m7i.xlarge and two m7i.2xlarge
// on-demand nodes, $58.08 a day) is made of those real instance types,
// whose on-demand prices are the RFC's. Only the nodes a case moves are
// left free; the others carry karpenter.sh/do-not-disrupt (they still
// count in the NodePool's totals and still take pods). The NodePool
// launches on-demand m7i nodes only, so a replacement is the m7i size
// the pods need, at the RFC's prices.
//
// nodewright scores as the reference's ScoreMove over its
// computeNodePoolTotals: the share of the NodePool's cost a command saves
// over the share of its disruption cost the command takes (1 per node +
// each pod's eviction cost, over the NodePool's sum of the same),
// approved at 1/k = 1/2 or more (v1.BalancedK = 2). The expected scores
// below are that formula on each case's cluster.

const (
	rbSM  = "ScoreMove > "
	rbBS  = "Balanced Scoring > "
	rbBC  = "Balanced Consolidation > "
	rbAdv = "Adversarial > "
)

var _ = restate("balanced_test.go",
	refCase{ref: rbSM + "when the move has clear savings > should approve an oversized node consolidation",
		run: func(t *testing.T) {
			// An m7i.2xlarge with 3 pods that an m7i.large holds: saves
			// $7.26 of $58.08 a day taking 4 of the 90 of disruption cost
			// (10 nodes, 80 pods).
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.2xlarge")
			rbPods(c, "cand", 3, 600)
			rbPinned(c, rbRFCOthers("m7i.2xlarge"), 77, true)
			d := c.decide()
			if got := commands(d); got != "Underutilized[cand] +m7i.large" {
				t.Fatalf("commands %q, want cand replaced by an m7i.large", got)
			}
			if s := d.Commands[0].Savings; math.Abs(s-(0.4032-0.1008)) > 1e-6 {
				t.Errorf("savings $%.4f/h, want $0.3024/h ($7.26 a day)", s)
			}
			rbWantScore(t, d, 3, (0.3024/rbRFCCost)/(4.0/90), true)
		}},
	refCase{ref: rbSM + "when the move has clear savings > should approve a spare capacity delete",
		run: func(t *testing.T) {
			// An m7i.xlarge whose 4 pods fit on the others: saves $4.84 of
			// $58.08 a day taking 5 of 90.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 4, 100)
			rbPinned(c, rbRFCOthers("m7i.xlarge"), 76, false)
			d := c.decide()
			if got := commands(d); got != "Underutilized[cand]" {
				t.Fatalf("commands %q, want cand deleted", got)
			}
			rbWantScore(t, d, 4, (0.2016/rbRFCCost)/(5.0/90), true)
		}},
	refCase{ref: rbSM + "when the move is marginal or harmful > should reject a marginal move",
		run: func(t *testing.T) { rbMarginal(t) }},
	refCase{ref: rbSM + "when the move is marginal or harmful > should reject a well-packed node with zero savings",
		run: func(t *testing.T) { rbWellPacked(t) }},
	refCase{ref: rbSM + "when the pool is uniform > should approve a replace in a uniform pool",
		run: func(t *testing.T) {
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 8, 200)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 72, true)
			d := c.decide()
			if got := commands(d); got != "Underutilized[cand] +m7i.large" {
				t.Errorf("commands %q (cand: %q), want cand replaced by an m7i.large", got, blocked(d, "cand"))
			}
		}},
	refCase{ref: rbSM + "when disruption costs vary across nodes > should approve low-disruption nodes and reject high-disruption nodes",
		run: func(t *testing.T) {
			// The RFC pool with 107 pods: node A has 4, node B 31; each
			// alone may go (its pods fit on the others).
			het := func(free string) *decide.Decision {
				c := rbCluster(t)
				for name, pods := range map[string]int{"a": 4, "b": 31} {
					if name == free {
						rbNode(c, name, "m7i.xlarge")
					} else {
						rbNode(c, name, "m7i.xlarge", rbPin)
					}
					rbPods(c, name, pods, 100)
				}
				rbPinned(c, append(slices.Repeat([]string{"m7i.xlarge"}, 6), "m7i.2xlarge", "m7i.2xlarge"), 72, false)
				return c.decide()
			}
			d := het("a")
			if got := commands(d); got != "Underutilized[a]" {
				t.Errorf("A free: commands %q, want A deleted", got)
			}
			rbWantScore(t, d, 4, (0.2016/rbRFCCost)/(5.0/117), true)
			d = het("b")
			if got := commands(d); got != "" {
				t.Errorf("B free: commands %q, want none", got)
			}
			rbWantScore(t, d, 31, (0.2016/rbRFCCost)/(32.0/117), false)
		}},
	refCase{ref: rbSM + "scale invariance > should produce the same score regardless of pool size",
		run: func(t *testing.T) {
			// The oversized m7i.2xlarge (3 pods) in the RFC pool and in one
			// ten times as large.
			score := func(scale int) float64 {
				c := rbCluster(t)
				rbNode(c, "cand", "m7i.2xlarge")
				rbPods(c, "cand", 3, 600)
				var others []string
				for range scale {
					others = append(others, rbRFCOthers("m7i.2xlarge")...)
				}
				others = append(others, slices.Repeat([]string{"m7i.2xlarge"}, scale-1)...)
				rbPinned(c, others, 80*scale-3, true)
				return rbWantScore(t, c.decide(), 3, (0.3024/(rbRFCCost*float64(scale)))/(4.0/float64(90*scale)), true).Score
			}
			if s1, s10 := score(1), score(10); math.Abs(s1-s10) > 0.01 {
				t.Errorf("10 nodes score %.3f, 100 nodes %.3f", s1, s10)
			}
		}},
	refCase{ref: rbSM + "edge cases with zero values > should approve with +Inf score when move disruption is zero and savings positive",
		run: func(t *testing.T) {
			// A node that moves nothing goes whatever the totals: nodewright
			// does not score a command that moves no pod.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPinned(c, rbRFCOthers("m7i.xlarge"), 80, false)
			d := c.decide()
			if got := commands(d); got != "Empty[cand]" {
				t.Errorf("commands %q, want cand deleted", got)
			}
			if len(d.Scores) != 0 {
				t.Errorf("scores %+v, want none", d.Scores)
			}
		}},
	refCase{ref: rbSM + "edge cases with zero values > should reject when both savings and disruption are zero",
		moot: "the reference's scoring function's guard for a move that saves nothing and disrupts nothing, which no cluster gives it (every node counts 1 in its disruption cost; a node without pods is emptiness's, which is not scored); nodewright makes no consolidation command that saves less than decide.MinSavings before it scores one (\"should reject a well-packed node with zero savings\" here)"},
	refCase{ref: rbSM + "edge cases with zero values > should reject when nodepool cost is zero",
		run: func(t *testing.T) {
			// A NodePool whose nodes cost nothing (their offerings' price
			// is 0): moving a node's pods saves nothing.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 2, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 4), 8, false)
			d := rbDecideTypes(c, func(it *scheduling.InstanceType) {
				if it.Name == "m7i.xlarge" {
					for i := range it.Offerings {
						it.Offerings[i].Price = 0
					}
				}
			})
			if got := commands(d); got != "" || len(d.Scores) != 0 {
				t.Errorf("commands %q, scores %+v; want none", got, d.Scores)
			}
			if got := blocked(d, "cand"); !strings.Contains(got, "no cheaper placement") {
				t.Errorf("cand: %q", got)
			}
		}},
	refCase{ref: rbSM + "edge cases with zero values > should approve when move disruption is zero (division by zero guard)",
		run: func(t *testing.T) {
			// A node with only a DaemonSet's pods moves nothing: it goes.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 2, 100, daemon)
			rbPinned(c, rbRFCOthers("m7i.xlarge"), 80, false)
			d := c.decide()
			if got := commands(d); got != "Empty[cand]" {
				t.Errorf("commands %q, want cand deleted", got)
			}
			for _, s := range d.Scores {
				if !s.Approved {
					t.Errorf("a rejected score %+v", s)
				}
			}
		}},
	refCase{ref: rbSM + "consolidation threshold tuning > should reject at k=2 for a marginal move",
		run: func(t *testing.T) { rbMarginal(t) }},
	refCase{ref: rbSM + "consolidation threshold tuning > should approve at k=3 for the same move",
		moot: "the reference's scoring function takes k, but its NodePools cannot set it (v1.BalancedK is the constant 2); nodewright's k is the same constant (decide.BalancedK)"},
	refCase{ref: rbSM + "consolidation threshold tuning > should reject at k=1 for the same move",
		run: func(t *testing.T) {
			// The marginal move scores 0.42: below 1/2, and below 1/1 too.
			d := rbMarginal(t)
			if len(d.Scores) > 0 && d.Scores[0].Score >= 1 {
				t.Errorf("score %.3f", d.Scores[0].Score)
			}
		}},
	refCase{ref: rbSM + "cross-NodePool scoring > should produce identical scores for proportionally equivalent moves",
		run: func(t *testing.T) {
			// An on-demand NodePool and a spot one, ten m7i.xlarge and 80
			// pods each; in each a node with 3 pods could go.
			c := rbCluster(t)
			c.pool.Name = "od"
			rbPool(c, "spot", func(np *v1.NodePool) {
				np.Spec.Template.Spec.Requirements = rbRequirements(v1.CapacityTypeSpot)
			})
			rbNode(c, "od-cand", "m7i.xlarge", rbIn("od"))
			rbPods(c, "od-cand", 3, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 77, false, rbIn("od"))
			c.node("spot-cand", "m7i.xlarge", rbIn("spot"))
			rbPods(c, "spot-cand", 3, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 77, false, rbIn("spot"), rbSpot)
			d := c.decide(rbNoMulti)
			want := (1.0 / 10) / (4.0 / 90)
			scores := map[string]decide.Score{}
			for _, s := range d.Scores {
				scores[s.NodePool] = s
			}
			for _, pool := range []string{"od", "spot"} {
				if s, ok := scores[pool]; !ok || !s.Approved || math.Abs(s.Score-want) > 0.01 {
					t.Errorf("%s: score %+v (found %v), want %.3f approved", pool, s, ok, want)
				}
			}
		}},
)

var _ = restate("balanced_test.go",
	refCase{ref: "ConsolidationPolicy.IsBalanced > should be true for Balanced policy",
		run: func(t *testing.T) {
			d := rbPolicy(t, v1.ConsolidationPolicyBalanced)
			if len(d.Scores) == 0 || d.Scores[0].NodePool != "default" {
				t.Errorf("scores %+v, want the command scored", d.Scores)
			}
		}},
	refCase{ref: "ConsolidationPolicy.IsBalanced > should be false for WhenEmptyOrUnderutilized policy",
		run: func(t *testing.T) {
			d := rbPolicy(t, v1.ConsolidationPolicyWhenEmptyOrUnderutilized)
			if len(d.Scores) != 0 || commands(d) != "Underutilized[cand]" {
				t.Errorf("commands %q, scores %+v; want cand deleted unscored", commands(d), d.Scores)
			}
		}},
	refCase{ref: "ConsolidationPolicy.IsBalanced > should be false for WhenEmpty policy",
		run: func(t *testing.T) {
			d := rbPolicy(t, v1.ConsolidationPolicyWhenEmpty)
			if len(d.Scores) != 0 || commands(d) != "" || !strings.Contains(blocked(d, "cand"), "consolidationPolicy is WhenEmpty") {
				t.Errorf("commands %q, scores %+v, cand %q", commands(d), d.Scores, blocked(d, "cand"))
			}
		}},
)

var _ = restate("balanced_scoring_test.go",
	refCase{ref: rbBS + "computeNodePoolTotals > should produce totals from ALL candidates, not just a filtered subset",
		run: func(t *testing.T) {
			// Five m7i.xlarge; the one that may go has 2 of the 6 pods. Its
			// score counts all five nodes and six pods: (1/5)/(3/11).
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 2, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 4), 4, false)
			d := c.decide()
			rbWantScore(t, d, 2, 0.2/(3.0/11), true)
		}},
	refCase{ref: rbBS + "computeNodePoolTotals > should accumulate disruption from zero-priced candidates",
		run: func(t *testing.T) {
			// Three nodes of a pod each, one of an instance type the
			// NodePool does not know (no price): it adds its node and pod to
			// the NodePool's disruption but nothing to its cost: (1/2)/(2/6).
			c := rbCluster(t)
			rbNode(c, "good-1", "m7i.xlarge")
			rbPods(c, "good-1", 1, 100)
			rbNode(c, "unknown", "m7i.xlarge", rbUnknownType)
			rbPods(c, "unknown", 1, 100)
			rbNode(c, "good-2", "m7i.xlarge", rbPin)
			rbPods(c, "good-2", 1, 100)
			d := c.decide()
			rbWantScore(t, d, 1, 0.5/(2.0/6), true)
			if got := blocked(d, "unknown"); !strings.Contains(got, "savings cannot be measured") {
				t.Errorf("unknown: %q", got)
			}
		}},
	refCase{ref: rbBS + "EvaluateBalancedMove > should reject when command has zero candidates",
		moot: "the reference's scoring function's guard for a Command value without candidates; every nodewright command has nodes (a NodePool without a node that may go has no command and no score: \"should reject a well-packed node with zero savings\" here)"},
	refCase{ref: rbBS + "EvaluateBalancedMove > should skip non-Balanced pools and approve unconditionally",
		run: func(t *testing.T) {
			// A WhenEmptyOrUnderutilized NodePool of five m7i.xlarge, a pod
			// each; two may go.
			c := rbCluster(t)
			c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
			for _, n := range []string{"n0", "n1"} {
				rbNode(c, n, "m7i.xlarge")
				rbPods(c, n, 1, 100)
			}
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 3), 3, false)
			d := c.decide()
			if got := commands(d); got != "Underutilized[n0 n1]" || len(d.Scores) != 0 {
				t.Errorf("commands %q, scores %+v; want both deleted, unscored", got, d.Scores)
			}
		}},
	refCase{ref: rbBS + "EvaluateBalancedMove > should reject when candidate NodePool is missing from totals map",
		moot: "the reference scores against NodePool totals computed beforehand into a map, and guards against a NodePool missing from it; nodewright computes a command's NodePool totals as it scores it, from the same snapshot, so none can be missing"},
	refCase{ref: rbBS + "EvaluateBalancedMove > should approve a delete command for a single Balanced NodePool",
		run: func(t *testing.T) {
			// Ten m7i.xlarge, a pod each; deleting one saves 1/10 of the
			// cost taking 2 of 20 of the disruption: score 1.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 1, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 9, false)
			d := c.decide()
			if got := commands(d); got != "Underutilized[cand]" {
				t.Errorf("commands %q (cand %q), want cand deleted", got, blocked(d, "cand"))
			}
			rbWantScore(t, d, 1, 1, true)
		}},
	refCase{ref: rbBS + "EvaluateBalancedMove > should attribute savings proportionally in cross-NodePool scenarios",
		run: func(t *testing.T) {
			// A Balanced NodePool and a WhenEmptyOrUnderutilized one, five
			// m7i.xlarge with a pod each; one of each may go. The command
			// taking both saves the balanced NodePool half its savings, 1/5
			// of its cost, taking 2 of its 10 of disruption: 1.
			c := rbCluster(t)
			c.pool.Name = "balanced"
			rbPool(c, "other", func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
			})
			for _, pool := range []string{"balanced", "other"} {
				rbNode(c, pool+"-0", "m7i.xlarge", rbIn(pool))
				rbPods(c, pool+"-0", 1, 100)
				rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 4), 4, false, rbIn(pool))
			}
			d := c.decide()
			if got := commands(d); got != "Underutilized[balanced-0 other-0]" {
				t.Errorf("commands %q, want both deleted", got)
			}
			rbWantScore(t, d, 1, 1, true)
		}},
	refCase{ref: rbBS + "EvaluateBalancedMove > AllPoolsMustApprove > should reject when any Balanced pool rejects",
		run: func(t *testing.T) {
			// NodePool a: ten m7i.xlarge, one with a pod, nine with 40;
			// NodePool b: three m7i.large, one with 20 pods, two with one.
			// The nodes that may go are a's with one pod and b's with 20.
			c := rbCluster(t)
			c.pool.Name = "a"
			rbPool(c, "b", nil)
			rbNode(c, "a-0", "m7i.xlarge", rbIn("a"))
			rbPods(c, "a-0", 1, 50)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 360, false, rbIn("a"))
			rbNode(c, "b-heavy", "m7i.large", rbIn("b"))
			rbPods(c, "b-heavy", 20, 50)
			rbPinned(c, []string{"m7i.large", "m7i.large"}, 2, false, rbIn("b"))
			// Multi-node consolidation alone, which takes both.
			d := c.decide(func(o *decide.Options) { o.MaxSingleNode = 0 })
			for _, cmd := range d.Commands {
				if slices.Contains(cmd.NodeNames(), "b-heavy") {
					t.Errorf("command %q takes b's node, which b's part rejects", commands(d))
				}
			}
		}},
	refCase{ref: rbBS + "sumCandidatePrices > should return 0 for nil instanceType",
		run: func(t *testing.T) {
			// A node of an instance type the NodePool does not know costs
			// nothing in its NodePool's cost, and is not consolidated.
			c := rbCluster(t)
			rbNode(c, "known", "m7i.xlarge", rbPin)
			rbPods(c, "known", 1, 100)
			rbNode(c, "unknown", "m7i.xlarge", rbUnknownType)
			rbPods(c, "unknown", 1, 100)
			d := c.decide()
			if got := d.CostPerHour["default"]; math.Abs(got-0.2016) > 1e-9 {
				t.Errorf("NodePool cost $%.4f/h, want the known node's $0.2016/h", got)
			}
			if got := blocked(d, "unknown"); !strings.Contains(got, "savings cannot be measured") {
				t.Errorf("unknown: %q", got)
			}
		}},
	refCase{ref: rbBS + "sumCandidatePrices > should return the offering price for a valid instanceType",
		run: func(t *testing.T) {
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 1, 100)
			rbPinned(c, []string{"m7i.xlarge"}, 1, false)
			d := c.decide()
			if len(d.Commands) != 1 || math.Abs(d.Commands[0].PricePerHour-0.2016) > 1e-9 {
				t.Fatalf("commands %q, want cand deleted at its on-demand price", commands(d))
			}
			if got := d.CostPerHour["default"]; math.Abs(got-2*0.2016) > 1e-9 {
				t.Errorf("NodePool cost $%.4f/h", got)
			}
		}},
	refCase{ref: rbBS + "Candidate.SavingsRatio > should compute expected ratios for different configurations",
		moot: "the reference's ratio of a node's price to (1 + its pods' eviction costs), by which it orders Balanced candidates; nodewright orders candidates by their disruption cost, then the dearest first, and has no such ratio: the order users see is checked by the \"sortCandidates\" cases here"},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should compute correct scores > high savings low disruption",
		run: func(t *testing.T) {
			// Saves 1/5 of the cost taking 2 of 25 of the disruption: 2.5.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 1, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 4), 19, false)
			d := c.decide()
			if got := commands(d); got != "Underutilized[cand]" {
				t.Errorf("commands %q", got)
			}
			rbWantScore(t, d, 1, 0.2/(2.0/25), true)
		}},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should compute correct scores > equal fractions",
		run: func(t *testing.T) {
			// Saves 1/5 of the cost taking 5 of 25 of the disruption: 1.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 4, 100)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 4), 16, false)
			d := c.decide()
			if got := commands(d); got != "Underutilized[cand]" {
				t.Errorf("commands %q (cand %q)", got, blocked(d, "cand"))
			}
			rbWantScore(t, d, 4, 1, true)
		}},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should compute correct scores > low savings high disruption",
		run: func(t *testing.T) {
			// Ten m7i.xlarge; one replaced by an m7i.large saves 1/20 of the
			// cost taking 10 of 28 of the disruption: 0.14.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 9, 200)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 9, true)
			d := c.decide()
			if got := commands(d); got != "" {
				t.Errorf("commands %q", got)
			}
			rbWantScore(t, d, 9, 0.05/(10.0/28), false)
		}},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should compute correct scores > zero disruption cost",
		run: func(t *testing.T) {
			// Ten m7i.xlarge, one without pods: it goes, unscored.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 9), 9, false)
			d := c.decide()
			if got := commands(d); got != "Empty[cand]" || len(d.Scores) != 0 {
				t.Errorf("commands %q, scores %+v", got, d.Scores)
			}
		}},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should compute correct scores > zero savings",
		run: func(t *testing.T) { rbWellPacked(t) }},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should compute correct scores > negative savings",
		run: func(t *testing.T) {
			// A spot m7i.large in the zone where it costs least: any
			// replacement, spot in either zone or on-demand, costs more.
			c := rbCluster(t)
			c.pool.Spec.Template.Spec.Requirements = rbRequirements(v1.CapacityTypeSpot, v1.CapacityTypeOnDemand)
			c.node("cand", "m7i.large", rbZoneB)
			rbFill(c, "cand", "m7i.large", 10)
			rbPinned(c, slices.Repeat([]string{"m7i.xlarge"}, 4), 8, true)
			d := c.decide()
			if got := commands(d); got != "" || len(d.Scores) != 0 {
				t.Errorf("commands %q, scores %+v", got, d.Scores)
			}
			if got := blocked(d, "cand"); !strings.Contains(got, "no cheaper placement") {
				t.Errorf("cand: %q", got)
			}
		}},
	refCase{ref: rbBS + "ScoreMove (SavingsRatio) > should REJECT a move when EstimatedSavings excludes spot offerings for an on-demand-only NodePool",
		run: func(t *testing.T) {
			// An on-demand-only NodePool of three m7i.xlarge; one, with 16
			// of the 40 pods, could be replaced by an m7i.large: $0.1008/h
			// saved at its on-demand price, 1/6 of the cost, taking 17 of
			// 43 of the disruption, scores 0.42; at a spot price ($0.0629
			// or $0.0313) it would score 0.58 or more.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 16, 100)
			rbPinned(c, []string{"m7i.xlarge", "m7i.xlarge"}, 24, true)
			d := c.decide()
			if got := commands(d); got != "" {
				t.Errorf("commands %q", got)
			}
			rbWantScore(t, d, 16, (0.1008/(3*0.2016))/(17.0/43), false)
		}},
	refCase{ref: rbBS + "ShouldDisrupt > should accept Balanced candidates",
		run: func(t *testing.T) {
			d := rbPolicy(t, v1.ConsolidationPolicyBalanced)
			if d.EligibleBy[v1.DisruptionReasonUnderutilized] != 1 || len(d.Scores) != 1 {
				t.Errorf("eligible %v, scores %+v; want cand eligible and weighed", d.EligibleBy, d.Scores)
			}
		}},
	refCase{ref: rbBS + "ShouldDisrupt > should accept WhenEmptyOrUnderutilized candidates",
		run: func(t *testing.T) {
			d := rbPolicy(t, v1.ConsolidationPolicyWhenEmptyOrUnderutilized)
			if d.EligibleBy[v1.DisruptionReasonUnderutilized] != 1 || commands(d) != "Underutilized[cand]" {
				t.Errorf("eligible %v, commands %q", d.EligibleBy, commands(d))
			}
		}},
	refCase{ref: rbBS + "sortCandidates > should sort Balanced candidates by savings ratio (highest first)",
		run: func(t *testing.T) {
			// A: dear, 1 pod; C: medium, 3 pods; B: cheap, 8 pods. nodewright
			// looks at the cheapest to disrupt first (fewest pods), which
			// here is the reference's order by price over disruption: A, C, B.
			c := rbCluster(t)
			for _, n := range []struct {
				name, it string
				pods     int
			}{{"b", "m7i.large", 8}, {"c", "m7i.2xlarge", 3}, {"a", "m7i.4xlarge", 1}} {
				rbNode(c, n.name, n.it)
				rbPods(c, n.name, n.pods, 100)
			}
			rbWantOrder(t, c, "a", "c", "b")
		}},
	refCase{ref: rbBS + "sortCandidates > should sort non-Balanced candidates by savings ratio descending",
		run: func(t *testing.T) {
			// Three m7i.xlarge: B without pods, C with 4, A with 9. B goes
			// as empty; consolidation looks at C, then A.
			c := rbCluster(t)
			c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
			rbNode(c, "b", "m7i.xlarge")
			for name, pods := range map[string]int{"a": 9, "c": 4} {
				rbNode(c, name, "m7i.xlarge")
				rbPods(c, name, pods, 100)
			}
			d := c.decide(redSingleOnly(1))
			if !strings.HasPrefix(commands(d), "Empty[b]") {
				t.Errorf("commands %q, want the empty B first", commands(d))
			}
			if !strings.Contains(blocked(d, "a"), "not evaluated this round") || strings.Contains(blocked(d, "c"), "not evaluated") {
				t.Errorf("one node a round: a %q, c %q; want C looked at, A not", blocked(d, "a"), blocked(d, "c"))
			}
		}},
	refCase{ref: rbBS + "sortCandidates > should sort all candidates by savings ratio when any uses Balanced",
		run: func(t *testing.T) {
			// A Balanced NodePool's m7i.4xlarge and a default NodePool's
			// m7i.large, a pod each: the dearer first.
			c := rbCluster(t)
			c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
			rbPool(c, "balanced", func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
			})
			rbNode(c, "node-balanced", "m7i.4xlarge", rbIn("balanced"))
			rbPods(c, "node-balanced", 1, 100)
			rbNode(c, "node-default", "m7i.large")
			rbPods(c, "node-default", 1, 100)
			d := c.decide(redSingleOnly(1))
			if !strings.Contains(blocked(d, "node-default"), "not evaluated this round") || strings.Contains(blocked(d, "node-balanced"), "not evaluated") {
				t.Errorf("one node a round: balanced %q, default %q; want the Balanced one looked at first", blocked(d, "node-balanced"), blocked(d, "node-default"))
			}
		}},
	refCase{ref: rbBS + "EmitBalancedMultiNodeEvents > should emit approved event for approved pool results",
		run: func(t *testing.T) {
			// Through the controller: a Balanced NodePool of two m5.large
			// with a pod each, both replaced by one small spot node: 98% of
			// the cost saved for all of the disruption (score 0.98). The
			// command's start tells the NodePool the score (a command of
			// one node tells the node and its NodeClaim).
			e := startController(t)
			np := &v1.NodePool{}
			if err := e.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, np); err != nil {
				t.Fatal(err)
			}
			np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
			if err := e.kube.Update(context.Background(), np); err != nil {
				t.Fatal(err)
			}
			e.node(t, "a", "m5.large", nil)
			e.node(t, "b", "m5.large", nil)
			e.reconcile(t)
			e.clock.Step(16 * time.Second)
			e.reconcile(t)
			events := e.events()
			if !has(events, "ConsolidationApproved", "Balanced NodePool default", "a score of 0.98, at least 0.50 (k 2)", "kind=NodePool") {
				t.Errorf("events %v, want ConsolidationApproved with the score on the NodePool", events)
			}
			if has(events, "ConsolidationApproved", "kind=NodeClaim") {
				t.Errorf("events %v: a command of two nodes is told on its NodePool, not its NodeClaims", events)
			}
		}},
	refCase{ref: rbBS + "EmitBalancedMultiNodeEvents > should not emit events for rejected pool results",
		better: "as the reference, no approval event for a rejected command; but where the reference tells nothing of a rejection (metrics only), nodewright tells each node's NodeClaim once (DisruptionBlocked, told again only when the reason changes) that it stays because \"consolidationPolicy is Balanced and the command scores S ... it needs 0.50\", so a user sees why a Balanced NodePool is not consolidated, without a flood of events",
		run: func(t *testing.T) {
			// Two m7i.xlarge with 4 pods of 400m, and a full m7i.4xlarge
			// with one pod. Deleting one of the two saves 1/10 of the cost
			// taking 5 of 12 of the disruption (0.24); replacing both by one
			// m7i.xlarge saves 1/10 taking 10 of 12 (0.12): every command
			// is rejected.
			c := rbCluster(t)
			for _, n := range []string{"n0", "n1"} {
				rbNode(c, n, "m7i.xlarge")
				rbPods(c, n, 4, 400)
			}
			rbPinned(c, []string{"m7i.4xlarge"}, 1, true)
			d := c.decide()
			if got := commands(d); got != "" {
				t.Fatalf("commands %q, want none", got)
			}
			multi := false
			for _, s := range d.Scores {
				multi = multi || s.Moves == 8
				if s.Approved {
					t.Errorf("an approved score %+v", s)
				}
			}
			if !multi {
				t.Errorf("scores %+v: no multi-node command weighed", d.Scores)
			}
			for _, n := range []string{"n0", "n1"} {
				if got := blocked(d, n); !strings.Contains(got, "consolidationPolicy is Balanced and the command scores") {
					t.Errorf("%s: %q", n, got)
				}
			}
		}},
	refCase{ref: rbBS + "EmitBalancedMultiNodeEvents > should skip pools missing from perPoolResults",
		run: func(t *testing.T) {
			// A command across a Balanced NodePool and another is scored
			// for the Balanced one only, and told there only.
			events := rbMixed(t)
			if !has(events, "ConsolidationApproved", "Balanced NodePool default") || has(events, "ConsolidationApproved", "NodePool other") {
				t.Errorf("events %v, want ConsolidationApproved for NodePool default alone", events)
			}
		}},
)

var _ = restate("balanced_adversarial_test.go",
	refCase{ref: rbAdv + "should not allow NaN price to poison NodePool totals",
		run: func(t *testing.T) {
			// The RFC pool with the m7i.2xlarge's on-demand price NaN: the
			// m7i.xlarge that may go is still scored, by a number.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.xlarge")
			rbPods(c, "cand", 4, 100)
			rbPinned(c, rbRFCOthers("m7i.xlarge"), 76, false)
			d := rbDecideTypes(c, func(it *scheduling.InstanceType) {
				if it.Name == "m7i.2xlarge" {
					for i := range it.Offerings {
						it.Offerings[i].Price = math.NaN()
					}
				}
			})
			for _, s := range d.Scores {
				if math.IsNaN(s.Score) {
					t.Errorf("a NaN score %+v", s)
				}
			}
			if math.IsNaN(d.CostPerHour["default"]) {
				t.Errorf("NodePool cost NaN")
			}
			if got := commands(d); got != "Underutilized[cand]" {
				t.Errorf("commands %q (cand %q), want cand deleted", got, blocked(d, "cand"))
			}
		}},
	refCase{ref: rbAdv + "should populate perPool entries for all pools even on early return",
		moot: "the reference's map of per-NodePool results that feeds its ConsolidationApproved events (an entry, with its k, for every NodePool of the command); nodewright scores a command once and publishes no such event (\"should reject when any Balanced pool rejects\" and the EmitBalancedMultiNodeEvents cases in balanced_scoring_test.go say what differs for users)"},
	refCase{ref: rbAdv + "should sum candidate costs correctly with nil instanceType",
		run: func(t *testing.T) {
			// Two m7i.xlarge that may go, and a node of an instance type the
			// NodePool does not know, which takes their pods: the command's
			// price is the two known nodes', the unknown one costs nothing.
			c := rbCluster(t)
			for _, n := range []string{"good-1", "good-2"} {
				rbNode(c, n, "m7i.xlarge")
				rbPods(c, n, 1, 100)
			}
			rbNode(c, "unknown", "m7i.xlarge", rbUnknownType)
			rbPods(c, "unknown", 1, 100)
			d := c.decide()
			if got := commands(d); got != "Underutilized[good-1 good-2]" {
				t.Fatalf("commands %q", got)
			}
			if got := d.Commands[0].PricePerHour; math.Abs(got-2*0.2016) > 1e-9 {
				t.Errorf("command's price $%.4f/h, want $0.4032/h", got)
			}
			if got := d.CostPerHour["default"]; math.Abs(got-2*0.2016) > 1e-9 {
				t.Errorf("NodePool cost $%.4f/h, want $0.4032/h", got)
			}
		}},
	refCase{ref: rbAdv + "should use source pricing that ignores availability",
		run: func(t *testing.T) {
			// The node's own offering (on-demand in us-east-1a) can no
			// longer be launched, and the other zone's costs five times as
			// much: the node costs what its own offering costs.
			c := rbCluster(t)
			rbNode(c, "cand", "m7i.2xlarge")
			rbPods(c, "cand", 1, 100)
			rbPinned(c, []string{"m7i.xlarge"}, 1, false)
			d := rbDecideTypes(c, func(it *scheduling.InstanceType) {
				if it.Name != "m7i.2xlarge" {
					return
				}
				for i, o := range it.Offerings {
					if o.CapacityType == v1.CapacityTypeOnDemand && o.Zone == "us-east-1a" {
						it.Offerings[i].Available = false
					} else if o.CapacityType == v1.CapacityTypeOnDemand {
						it.Offerings[i].Price = 5 * o.Price
					}
				}
			})
			if got := commands(d); got != "Underutilized[cand]" {
				t.Fatalf("commands %q (cand %q)", got, blocked(d, "cand"))
			}
			if got := d.Commands[0].PricePerHour; math.Abs(got-0.4032) > 1e-9 {
				t.Errorf("the node's price $%.4f/h, want its offering's $0.4032/h", got)
			}
		}},
	refCase{ref: rbAdv + "should approve single-node pool DELETE with expected scoring",
		run: func(t *testing.T) {
			// A Balanced NodePool of one m7i.xlarge with one pod, which fits
			// on another NodePool's node: deleting it saves all the
			// NodePool's cost taking all its disruption: score 1.
			c := rbCluster(t)
			rbPool(c, "other", func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty
			})
			rbNode(c, "only", "m7i.xlarge")
			rbPods(c, "only", 1, 100)
			rbNode(c, "elsewhere", "m7i.xlarge", rbIn("other"))
			rbPods(c, "elsewhere", 1, 100)
			d := c.decide()
			if got := commands(d); got != "Underutilized[only]" {
				t.Errorf("commands %q (only %q)", got, blocked(d, "only"))
			}
			rbWantScore(t, d, 1, 1, true)
		}},
)

var _ = restate("balanced_integration_test.go",
	refCase{ref: rbBC + "Single-Node > should approve replacing an oversized node",
		run: func(t *testing.T) {
			c := rbCluster(t)
			rbNode(c, "big", "m7i.8xlarge")
			rbPods(c, "big", 1, 500)
			d := c.decide()
			if got := commands(d); got != "Underutilized[big] +m7i.large" {
				t.Errorf("commands %q (big %q), want it replaced", got, blocked(d, "big"))
			}
		}},
	refCase{ref: rbBC + "Single-Node > should reject replacing a well-packed node",
		run: func(t *testing.T) {
			// 8 pods of 3500m on an m7i.8xlarge: no cheaper m7i holds them.
			c := rbCluster(t)
			rbNode(c, "packed", "m7i.8xlarge")
			rbPods(c, "packed", 8, 3500)
			d := c.decide()
			if got := commands(d); got != "" || len(d.Scores) != 0 {
				t.Errorf("commands %q, scores %+v", got, d.Scores)
			}
			if got := blocked(d, "packed"); !strings.Contains(got, "no cheaper placement") {
				t.Errorf("packed: %q", got)
			}
		}},
	refCase{ref: rbBC + "Multi-Node > should approve consolidating multiple underutilized nodes",
		run: func(t *testing.T) {
			// Three m7i.8xlarge, one 1-CPU pod each.
			c := rbCluster(t)
			for i := range 3 {
				n := fmt.Sprintf("n%d", i)
				rbNode(c, n, "m7i.8xlarge")
				rbPods(c, n, 1, 1000)
			}
			d := c.decide()
			if len(d.Commands) != 1 || len(d.Commands[0].Nodes) < 2 {
				t.Errorf("commands %q, scores %+v; want one taking two or more", commands(d), d.Scores)
			}
		}},
	refCase{ref: rbBC + "Budgets > should block disruption when budget is 0%",
		run: func(t *testing.T) {
			// An m7i.8xlarge whose pod fits on another node: Balanced
			// approves deleting it, but the budget is 0%.
			build := func(nodes string) *decide.Decision {
				c := rbCluster(t)
				c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: nodes}}
				rbNode(c, "big", "m7i.8xlarge")
				rbPods(c, "big", 1, 500)
				rbPinned(c, []string{"m7i.xlarge"}, 1, false)
				return c.decide()
			}
			if got := commands(build("100%")); got != "Underutilized[big]" {
				t.Fatalf("budget 100%%: commands %q, want big deleted", got)
			}
			d := build("0%")
			if got := commands(d); got != "" {
				t.Errorf("budget 0%%: commands %q", got)
			}
			if got := blocked(d, "big"); !strings.Contains(got, "allows 0 of 0%") {
				t.Errorf("big: %q", got)
			}
		}},
	refCase{ref: rbBC + "Priority Ordering > should consolidate empty nodes before non-empty nodes when budget is limited",
		run: func(t *testing.T) {
			c := rbCluster(t)
			c.pool.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
			rbNode(c, "empty", "m7i.8xlarge")
			rbNode(c, "underutilized", "m7i.8xlarge")
			rbPods(c, "underutilized", 1, 500)
			d := c.decide()
			if got := commands(d); got != "Empty[empty]" {
				t.Errorf("commands %q, want only the empty node deleted", got)
			}
		}},
	refCase{ref: rbBC + "Decision and Savings > should choose delete when pods fit on existing nodes",
		run: func(t *testing.T) {
			// Two m7i.8xlarge: A with a 1-CPU pod, B with 30; A's pod fits
			// on B.
			c := rbCluster(t)
			rbNode(c, "a", "m7i.8xlarge")
			rbPods(c, "a", 1, 1000)
			rbNode(c, "b", "m7i.8xlarge")
			rbPods(c, "b", 30, 1000)
			d := c.decide()
			if got := commands(d); got != "Underutilized[a]" {
				t.Fatalf("commands %q, want A deleted", got)
			}
			if got := d.Commands[0].Savings; math.Abs(got-1.6128) > 1e-9 {
				t.Errorf("savings $%.4f/h, want the node's $1.6128/h", got)
			}
		}},
	refCase{ref: rbBC + "Decision and Savings > should choose replace when pods need a new cheaper node",
		run: func(t *testing.T) {
			c := rbCluster(t)
			rbNode(c, "big", "m7i.8xlarge")
			rbPods(c, "big", 1, 2000)
			d := c.decide()
			if got := commands(d); got != "Underutilized[big] +m7i.xlarge" {
				t.Errorf("commands %q (big %q), want it replaced", got, blocked(d, "big"))
			}
		}},
	refCase{ref: rbBC + "Ratio Sort in Multi-Node > should select highest-ratio candidates first when nodes have heterogeneous prices and pod counts",
		better: "candidates are ordered by the same ratio (price over 1 + pods' eviction costs: B, then A, then C), but of the commands it weighs nodewright takes the one that saves most for each pod it moves, not the largest batch: A alone, deleted as its 10 pods fit on B ($1.61/h saved), before the batch of all three ($2.52/h for 19 pods); B and C go in later rounds",
		run: func(t *testing.T) {
			// A: m7i.8xlarge, 10 pods; B: m7i.4xlarge, 1 pod; C: m7i.xlarge,
			// 8 pods (100m each).
			c := rbCluster(t)
			for _, n := range []struct {
				name, it string
				pods     int
			}{{"a", "m7i.8xlarge", 10}, {"b", "m7i.4xlarge", 1}, {"c", "m7i.xlarge", 8}} {
				rbNode(c, n.name, n.it)
				rbPods(c, n.name, n.pods, 100)
			}
			d := c.decide()
			if got := commands(d); got != "Underutilized[a]" {
				t.Errorf("commands %q, want A deleted first", got)
			}
		}},
	refCase{ref: rbBC + "Mixed-Policy NodePools > should apply scoring to Balanced pools while non-Balanced pools consolidate normally",
		run: func(t *testing.T) {
			// rbMixed checks both nodes go; the Balanced NodePool's scored
			// approval is told.
			if events := rbMixed(t); !has(events, "ConsolidationApproved", "Balanced NodePool default", "(k 2)") {
				t.Errorf("events %v, want the Balanced NodePool's ConsolidationApproved", events)
			}
		}},
)

// rbRFCCost is the RFC pool's cost per hour: eight m7i.xlarge and two
// m7i.2xlarge on demand ($58.08 a day).
const rbRFCCost = 8*0.2016 + 2*0.4032

// rbRFCOthers are the RFC pool's nodes but one of the type.
func rbRFCOthers(without string) []string {
	types := append(slices.Repeat([]string{"m7i.xlarge"}, 8), "m7i.2xlarge", "m7i.2xlarge")
	i := slices.Index(types, without)
	return slices.Delete(types, i, i+1)
}

const rbFamily = "karpenter.k8s.aws/instance-family"

// rbRequirements are a NodePool's requirements for m7i nodes of the
// capacity types.
func rbRequirements(capacityTypes ...string) []v1.NodeSelectorRequirementWithMinValues {
	return []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
		{Key: rbFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i"}},
	}
}

// rbCluster is a cluster whose NodePool "default" is Balanced and
// launches on-demand m7i nodes.
func rbCluster(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	c.pool.Spec.Template.Spec.Requirements = rbRequirements(v1.CapacityTypeOnDemand)
	return c
}

// rbPool adds a NodePool like the cluster's first one.
func rbPool(c *cluster, name string, mutate func(*v1.NodePool)) {
	np := c.pool.DeepCopy()
	np.Name = name
	if mutate != nil {
		mutate(np)
	}
	c.objs.NodePools = append(c.objs.NodePools, np)
}

// rbIn puts a node in a NodePool.
func rbIn(pool string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, nc *v1.NodeClaim) {
		n.Labels[v1.LabelNodePool] = pool
		nc.Labels[v1.LabelNodePool] = pool
	}
}

// rbPin marks a node karpenter.sh/do-not-disrupt: it stays, counts in its
// NodePool's totals and takes pods.
func rbPin(n *corev1.Node, _ *v1.NodeClaim) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[v1.AnnotationDoNotDisrupt] = "true"
}

func rbSpot(n *corev1.Node, _ *v1.NodeClaim) {
	n.Labels[v1.LabelCapacityType] = v1.CapacityTypeSpot
}

// rbZoneB moves a node to us-east-1b.
func rbZoneB(n *corev1.Node, _ *v1.NodeClaim) {
	n.Labels[corev1.LabelTopologyZone] = "us-east-1b"
}

// rbUnknownType labels a node with an instance type no NodePool knows.
func rbUnknownType(n *corev1.Node, nc *v1.NodeClaim) {
	n.Labels[corev1.LabelInstanceTypeStable] = "m7i.unknown"
	madeRecently(n, nc)
}

// rbNode adds an on-demand node (in the cluster's first NodePool unless
// mutate says otherwise).
func rbNode(c *cluster, name, instanceType string, mutate ...func(*corev1.Node, *v1.NodeClaim)) string {
	if c.pool.Name != "default" {
		mutate = append([]func(*corev1.Node, *v1.NodeClaim){rbIn(c.pool.Name)}, mutate...)
	}
	return c.node(name, instanceType, append([]func(*corev1.Node, *v1.NodeClaim){onDemand}, mutate...)...)
}

var rbSeq int

// rbPods adds n pods of milli millicores (and 64Mi) to a node.
func rbPods(c *cluster, node string, n int, milli int64, mutate ...func(*corev1.Pod)) {
	if n == 0 {
		return
	}
	rbSeq++
	seq := rbSeq
	name := func(p *corev1.Pod) { p.Name = fmt.Sprintf("%s-%d", p.Name, seq) }
	c.pods(node, n, fmt.Sprintf("%dm", milli), "64Mi", append([]func(*corev1.Pod){name}, mutate...)...)
}

// rbFill adds n pods that leave less than 100m of the node's CPU free.
func rbFill(c *cluster, node, instanceType string, n int) {
	rbPods(c, node, n, (c.types[instanceType].Allocatable.CPU()-100)/int64(n))
}

// rbPinned adds do-not-disrupt nodes of the types that share pods pods;
// full: the pods fill them (under 100m left), else they are 100m each.
func rbPinned(c *cluster, types []string, pods int, full bool, mutate ...func(*corev1.Node, *v1.NodeClaim)) {
	rbSeq++
	for i, it := range types {
		name := fmt.Sprintf("pinned-%d-%d", rbSeq, i)
		share := pods / len(types)
		if i < pods%len(types) {
			share++
		}
		if len(mutate) == 0 {
			rbNode(c, name, it, rbPin)
		} else {
			c.node(name, it, append(append([]func(*corev1.Node, *v1.NodeClaim){onDemand}, mutate...), rbPin)...)
		}
		switch {
		case share == 0:
		case full:
			rbFill(c, name, it, share)
		default:
			rbPods(c, name, share, 100)
		}
	}
}

// rbNoMulti turns multi-node consolidation off.
func rbNoMulti(o *decide.Options) { o.MaxMultiNode = 1 }

// rbMixed runs the controller on a Balanced NodePool (default) and a
// WhenEmptyOrUnderutilized one (other), an m5.2xlarge with a small pod in
// each, until both nodes are consolidated (their replacements launched),
// and returns the events told.
func rbMixed(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	e := startController(t)
	np := &v1.NodePool{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	other := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: *np.Spec.DeepCopy()}
	other.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	e.create(t, other)
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	if err := e.kube.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	rrEnvNodeIn(t, e, "default", "bal", "m5.2xlarge", false, nil)
	rrEnvNodeIn(t, e, "other", "oth", "m5.2xlarge", false, nil)
	var events []string
	for range 4 {
		rrDecideAndStart(t, e)
		for _, nc := range rrMade(t, e) {
			if nc.Status.NodeName == "" {
				rrLaunch(t, e, nc)
			}
		}
		e.reconcile(t)
		events = append(events, e.events()...)
		if rrGone(t, e, "nc-bal") && rrGone(t, e, "nc-oth") {
			return events
		}
	}
	t.Fatalf("after four rounds: bal gone %v, oth gone %v; events %v", rrGone(t, e, "nc-bal"), rrGone(t, e, "nc-oth"), events)
	return nil
}

// rbWantScore checks that a command moving moves pods was scored want
// (to 0.01), approved or not, and returns the score.
func rbWantScore(t *testing.T, d *decide.Decision, moves int, want float64, approved bool) decide.Score {
	t.Helper()
	for _, s := range d.Scores {
		if s.Moves == moves {
			if math.Abs(s.Score-want) > 0.01 || s.Approved != approved {
				t.Errorf("score %+v, want %.3f approved=%v", s, want, approved)
			}
			return s
		}
	}
	t.Errorf("scores %+v: none moves %d pods (commands %q)", d.Scores, moves, commands(d))
	return decide.Score{}
}

// rbMarginal: the RFC pool, one m7i.xlarge with 8 of the 80 pods that an
// m7i.large holds: saves $2.42 of $58.08 a day taking 9 of 90 of the
// disruption, 0.42.
func rbMarginal(t *testing.T) *decide.Decision {
	c := rbCluster(t)
	rbNode(c, "cand", "m7i.xlarge")
	rbPods(c, "cand", 8, 200)
	rbPinned(c, rbRFCOthers("m7i.xlarge"), 72, true)
	d := c.decide()
	if got := commands(d); got != "" {
		t.Errorf("commands %q, want none", got)
	}
	rbWantScore(t, d, 8, (0.1008/rbRFCCost)/(9.0/90), false)
	if got := blocked(d, "cand"); !strings.Contains(got, "consolidationPolicy is Balanced and the command scores 0.42") {
		t.Errorf("cand: %q", got)
	}
	return d
}

// rbWellPacked: an m7i.large, the cheapest m7i, full with 10 pods that fit
// nowhere else: nothing cheaper holds them, no command, nothing scored.
func rbWellPacked(t *testing.T) {
	c := rbCluster(t)
	rbNode(c, "cand", "m7i.large")
	rbFill(c, "cand", "m7i.large", 10)
	rbPinned(c, rbRFCOthers("m7i.xlarge"), 70, true)
	d := c.decide()
	if got := commands(d); got != "" || len(d.Scores) != 0 {
		t.Errorf("commands %q, scores %+v; want none", got, d.Scores)
	}
	if got := blocked(d, "cand"); !strings.Contains(got, "no cheaper placement") {
		t.Errorf("cand: %q", got)
	}
}

// rbPolicy: a NodePool of the policy, two m7i.xlarge of a pod each, one
// of them free to go.
func rbPolicy(t *testing.T, policy v1.ConsolidationPolicy) *decide.Decision {
	c := rbCluster(t)
	c.pool.Spec.Disruption.ConsolidationPolicy = policy
	rbNode(c, "cand", "m7i.xlarge")
	rbPods(c, "cand", 1, 100)
	rbPinned(c, []string{"m7i.xlarge"}, 1, false)
	return c.decide()
}

// rbWantOrder checks single-node consolidation looks at the nodes in the
// order: with n nodes a round, the ones after the n-th are left.
func rbWantOrder(t *testing.T, c *cluster, order ...string) {
	t.Helper()
	for n := 1; n < len(order); n++ {
		d := c.decide(redSingleOnly(n))
		for i, name := range order {
			if left := strings.Contains(blocked(d, name), "not evaluated this round"); left != (i >= n) {
				t.Errorf("%d a round: %s %q", n, name, blocked(d, name))
			}
		}
	}
}

// rbDecideTypes decides with the catalog's instance types changed (on
// copies).
func rbDecideTypes(c *cluster, change func(*scheduling.InstanceType)) *decide.Decision {
	types := make([]*scheduling.InstanceType, len(c.all))
	for i, it := range c.all {
		cp := *it
		cp.Offerings = slices.Clone(it.Offerings)
		change(&cp)
		types[i] = &cp
	}
	o := decide.DefaultOptions()
	o.SpotToSpot = true
	s := state.Build(c.objs, state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": {InstanceTypes: types,
		AMIs: []scheduling.AMI{{ID: "ami-1", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}})}}}}})
	return decide.Decide(s, o)
}
