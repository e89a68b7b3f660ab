package whatif

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// DisruptionReport is what the disruption controller would do now with
// the objects given (JSON schema in docs/tools/simulate.md): the commands, and why
// every other node of a NodePool stays.
type DisruptionReport struct {
	Disruptions       []DisruptionCommand `json:"disruptions"`
	Blocked           []BlockedNode       `json:"blocked"`
	PricePerHour      float64             `json:"pricePerHour"`
	PricePerHourAfter float64             `json:"pricePerHourAfter"`
	Warnings          []string            `json:"warnings"`
}

// DisruptionCommand is one command: its reason, the Nodes it removes, the
// nodes it launches first and what it saves.
type DisruptionCommand struct {
	Reason         string        `json:"reason"`
	Nodes          []string      `json:"nodes"`
	Replacements   []Replacement `json:"replacements"`
	SavingsPerHour float64       `json:"savingsPerHour"`
}

// Replacement is a node launched before the disrupted ones go: its
// cheapest offering.
type Replacement struct {
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	PricePerHour float64 `json:"pricePerHour"`
	// Devices are the devices (DRA) the pods it is for claim, by driver.
	Devices map[string]int64 `json:"devices,omitempty"`
}

// BlockedNode is a node that stays, and why.
type BlockedNode struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// Gates are the controller's feature gates that change what disruption
// decides, so that a dry run decides as the controller it stands for.
type Gates struct {
	// SpotToSpotConsolidation: consolidation replaces spot nodes with
	// cheaper spot nodes (off, as in the controller, by default).
	SpotToSpotConsolidation bool
}

// Disrupt decides disruption for the objects (Nodes with their bound
// pods, NodeClaims, PodDisruptionBudgets, NodePools, EC2NodeClasses) at
// the objects' time, resolving EC2NodeClasses as RunWith does, with the
// controller's feature gates.
func Disrupt(o *Objects, resolver *nodeclass.Resolver, gates Gates) (*DisruptionReport, error) {
	snap, warnings, err := Snapshot(o, resolver)
	if err != nil {
		return nil, err
	}
	// Node repair at its default tolerations is the first method, as in
	// the controller (a node pairs with its NodeClaim to be repaired).
	opts := decide.DefaultOptions()
	opts.Repair = nodepoolhealth.DefaultTolerations().Policies()
	opts.SpotToSpot = gates.SpotToSpotConsolidation
	d := decide.Decide(snap, opts)
	r := &DisruptionReport{Disruptions: []DisruptionCommand{}, Blocked: []BlockedNode{}, Warnings: append([]string{}, warnings...),
		PricePerHour: round(d.PricePerHour), PricePerHourAfter: round(d.PricePerHourAfter)}
	for _, c := range d.Commands {
		cmd := DisruptionCommand{Reason: string(c.Reason), Nodes: c.NodeNames(), Replacements: []Replacement{}, SavingsPerHour: round(c.Savings)}
		for _, p := range c.Replacements {
			cmd.Replacements = append(cmd.Replacements, Replacement{InstanceType: p.InstanceType.Name, CapacityType: p.Offering.CapacityType, Zone: p.Offering.Zone, PricePerHour: round(p.Offering.Price),
				Devices: p.Requests.Devices()})
		}
		r.Disruptions = append(r.Disruptions, cmd)
	}
	for _, b := range d.Blocked {
		r.Blocked = append(r.Blocked, BlockedNode{Node: b.Node, Reason: b.String()})
	}
	return r, nil
}

func round(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// WriteTable writes the report for people.
func (r *DisruptionReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Disruptions now: %d\n", len(r.Disruptions))
	for _, c := range r.Disruptions {
		repl := "no replacement"
		if len(c.Replacements) > 0 {
			parts := make([]string, 0, len(c.Replacements))
			for _, p := range c.Replacements {
				parts = append(parts, fmt.Sprintf("%s %s %s $%.4f/h", p.InstanceType, p.CapacityType, p.Zone, p.PricePerHour))
			}
			repl = "replaced by " + strings.Join(parts, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\tsaves $%.4f/h\n", c.Reason, strings.Join(c.Nodes, ", "), repl, c.SavingsPerHour)
	}
	fmt.Fprintf(tw, "Nodes kept: %d\n", len(r.Blocked))
	for _, b := range r.Blocked {
		fmt.Fprintf(tw, "  %s\t%s\n", b.Node, b.Reason)
	}
	fmt.Fprintf(tw, "Price: $%.4f/hour now, $%.4f/hour after\n", r.PricePerHour, r.PricePerHourAfter)
	for _, warn := range r.Warnings {
		fmt.Fprintf(tw, "warning: %s\n", warn)
	}
	return tw.Flush()
}
