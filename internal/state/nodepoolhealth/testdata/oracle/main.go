// Command oracle runs the reference's repair policy matcher
// (sigs.k8s.io/karpenter pkg/controllers/node/health) on the cases it
// reads, one JSON object a line, and prints what it decides of each, one
// JSON object a line.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/operator/options"
)

type policy struct {
	Condition  corev1.NodeConditionType `json:"condition"`
	Status     corev1.ConditionStatus   `json:"status"`
	Reason     string                   `json:"reason"`
	Toleration time.Duration            `json:"toleration"`
	DrainBound *time.Duration           `json:"drainBound"`
	Priority   int                      `json:"priority"`
	Action     string                   `json:"action"`
}

type input struct {
	Policies    []policy    `json:"policies"`
	Node        corev1.Node `json:"node"`
	RebootEnded time.Time   `json:"rebootEnded"`
	Now         time.Time   `json:"now"`
}

type output struct {
	Error      string                   `json:"error,omitempty"`
	Matches    int                      `json:"matches"`
	Action     string                   `json:"action"`
	Condition  corev1.NodeConditionType `json:"condition"`
	DrainBound *time.Duration           `json:"drainBound"`
	Score      float64                  `json:"score"`
}

// provider is a cloud provider of repair policies alone: the matcher asks
// for nothing else.
type provider struct {
	cloudprovider.CloudProvider
	policies []cloudprovider.RepairPolicy
}

func (p provider) RepairPolicies() []cloudprovider.RepairPolicy { return p.policies }

func main() {
	ctx := options.ToContext(context.Background(), &options.Options{FeatureGates: options.FeatureGates{NodeRepair: true}})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		p := provider{}
		for _, x := range c.Policies {
			p.policies = append(p.policies, cloudprovider.RepairPolicy{ConditionType: x.Condition, ConditionStatus: x.Status, ReasonRegex: x.Reason,
				TolerationDuration: x.Toleration, TerminationGracePeriod: x.DrainBound, Priority: x.Priority, Action: cloudprovider.RepairAction(x.Action)})
		}
		var o output
		m, err := health.NewRepairPolicyMatcher(ctx, p)
		if err != nil {
			o.Error = err.Error()
		} else {
			matches := m.Match(&c.Node)
			r := health.Resolve(matches, c.Now, c.RebootEnded)
			o = output{Matches: len(matches), Action: string(r.Action), Condition: r.Condition, DrainBound: r.TerminationGracePeriod, Score: r.ScoreAt(c.Now)}
		}
		if err := out.Encode(o); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}
