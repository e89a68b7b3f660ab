package disruption_test

import (
	"strings"
	"testing"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The reference's singlenodeconsolidation_test.go: the order in which
// single-node consolidation looks at its candidates, and how it resumes
// after running out of time. The reference bounds a round by time (3
// minutes) and sorts by price over disruption cost; nodewright bounds it
// by count (Options.MaxSingleNode, 25) and looks at the cheapest to
// disrupt first, the most expensive of equal cost first. With
// MaxSingleNode 1 (and multi-node consolidation off) the node looked at
// is the first of that order: the others are told they were not
// evaluated this round.

const redSingle = "SingleNodeConsolidation > Candidate Shuffling > "

var _ = restate("singlenodeconsolidation_test.go",
	refCase{ref: redSingle + "should sort candidates by savings ratio descending",
		run: func(t *testing.T) {
			// Equal disruption cost (one pod each): the dearest node first.
			c := newCluster(t)
			for name, it := range map[string]string{"small": "m5.xlarge", "big": "m5.4xlarge", "mid": "m5.2xlarge"} {
				c.node(name, it, onDemand)
				c.pods(name, 1, "100m", "128Mi")
			}
			d := c.decide(redSingleOnly(1))
			if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "big" {
				t.Errorf("commands %q, want the m5.4xlarge looked at first", commands(d))
			}
			for _, n := range []string{"small", "mid"} {
				if !strings.Contains(blocked(d, n), "not evaluated this round") {
					t.Errorf("%s: %q", n, blocked(d, n))
				}
			}
		}},
	refCase{ref: redSingle + "should prioritize nodepools that timed out in previous runs",
		run: func(t *testing.T) {
			// nodepool-1's node, first in the candidate order (its price
			// over its disruption cost is the higher), is of the cheapest
			// type that holds its pod (which only nodepool-1 may run);
			// nodepool-2's could be replaced by a cheaper one. One node a
			// round: the first round reaches nodepool-1 only, and says
			// nodepool-2 was not reached; the next looks at it first.
			c := newCluster(t)
			c.pool.Spec.Template.Spec.Requirements = append(c.pool.Spec.Template.Spec.Requirements,
				v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}})
			c.objs.NodePools = nil
			redPool(c, "nodepool-1", nil)
			redPool(c, "nodepool-2", nil)
			c.node("full", c.cheapestSpot(scheduling.MustParseResources("cpu=15,memory=8Gi,pods=3")), redIn("nodepool-1"))
			c.pods("full", 1, "15", "8Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelNodePool: "nodepool-1"} })
			c.node("idle", "m5.4xlarge", onDemand, redIn("nodepool-2"))
			c.pods("idle", 30, "100m", "128Mi")
			first := c.decide(redSingleOnly(1))
			if len(first.Commands) != 0 || !first.Unreached["nodepool-2"] || first.Unreached["nodepool-1"] {
				t.Fatalf("first round: %q, unreached %v; want nothing done and nodepool-2 not reached", commands(first), first.Unreached)
			}
			next := c.decide(redSingleOnly(1), func(o *decide.Options) { o.Unreached = first.Unreached })
			if len(next.Commands) != 1 || next.Commands[0].NodeNames()[0] != "idle" {
				t.Errorf("next round: %q (idle %q), want nodepool-2's node looked at first and replaced", commands(next), blocked(next, "idle"))
			}
			if again := c.decide(redSingleOnly(1)); len(again.Commands) != 0 {
				t.Errorf("without the record: %q, want nodepool-1's node looked at first again", commands(again))
			}
		}},
	refCase{ref: redSingle + "should sort candidates by savings ratio with different disruption costs",
		run: func(t *testing.T) {
			// Equal prices, disruption costs 1, 5 and 20 (one pod each).
			c := newCluster(t)
			for name, pods := range map[string]int{"cost20": 20, "cost5": 5, "cost1": 1} {
				c.node(name, "m5.4xlarge", onDemand)
				c.pods(name, pods, "100m", "128Mi")
			}
			d := c.decide(redSingleOnly(1))
			if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "cost1" {
				t.Errorf("one node a round: %q, want cost1 looked at first", commands(d))
			}
			d = c.decide(redSingleOnly(2))
			if !strings.Contains(blocked(d, "cost20"), "not evaluated this round") {
				t.Errorf("two nodes a round: cost20 %q, want it the one left", blocked(d, "cost20"))
			}
			for _, n := range []string{"cost1", "cost5"} {
				if strings.Contains(blocked(d, n), "not evaluated") {
					t.Errorf("two nodes a round: %s %q, want it looked at", n, blocked(d, n))
				}
			}
		}},
	refCase{ref: redSingle + "should reset timed out nodepools when all nodepools are evaluated",
		moot: "the reference's record of the NodePools its single-node consolidation did not reach before its time ran out (PreviouslyUnseenNodePools), cleared once all are seen; nodewright's record is each decision's own (Decision.Unreached, empty when every NodePool was reached), which the controller hands the next one (\"should prioritize nodepools that timed out in previous runs\" here)"},
	refCase{ref: redSingle + "should mark nodepools as timed out when timeout occurs",
		moot: "the reference's single-node consolidation stops after a time (3 minutes) and records the NodePools it did not reach; nodewright bounds a round by count (Options.MaxSingleNode) and tells each node left over that it was not evaluated this round (checked by \"should sort candidates by savings ratio descending\" here)"},
)

// redSingleOnly: single-node consolidation alone, looking at n nodes a
// round.
func redSingleOnly(n int) func(*decide.Options) {
	return func(o *decide.Options) { o.MaxSingleNode, o.MaxMultiNode = n, 1 }
}
