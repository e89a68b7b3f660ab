package whatif

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the plan for people.
func (r *PlanReport) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, section := range []func(io.Writer){r.writeChanges, r.writeDrift, r.writeRounds, r.writeOutcome} {
		section(tw)
	}
	return tw.Flush()
}

func (r *PlanReport) writeChanges(tw io.Writer) {
	fmt.Fprintln(tw, "Change:")
	for _, c := range r.Changes {
		what := strings.Join(c.Fields, ", ")
		switch {
		case c.New:
			what = "new"
		case what == "":
			what = "no field changes"
		}
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.Kind, c.Name, what)
	}
}

func (r *PlanReport) writeDrift(tw io.Writer) {
	n, unknown := 0, 0
	for _, node := range r.Nodes {
		switch {
		case node.Drifted:
			n++
		case node.Unknown != "":
			unknown++
		}
	}
	if unknown > 0 {
		fmt.Fprintf(tw, "Drift: %d of %d nodes, %d unknown offline\n", n, len(r.Nodes), unknown)
	} else {
		fmt.Fprintf(tw, "Drift: %d of %d nodes\n", n, len(r.Nodes))
	}
	for _, node := range r.Nodes {
		if !node.Drifted {
			state := "not drifted"
			if node.Unknown != "" {
				state = "unknown: " + node.Unknown
			}
			fmt.Fprintf(tw, "  %s\t%s\n", node.Node, state)
			continue
		}
		why := node.Reason + ": " + node.Message
		if len(node.Fields) > 0 {
			why += " (" + strings.Join(node.Fields, ", ") + ")"
		}
		if node.DriftedBefore {
			why += " [drifted before the change]"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", node.Node, why)
	}
}

func (r *PlanReport) writeRounds(tw io.Writer) {
	fmt.Fprintf(tw, "Rollout: %d round(s), about %s (an estimate; it assumes what is listed below)\n", len(r.Rounds), time.Duration(r.Duration.Seconds)*time.Second)
	for _, rd := range r.Rounds {
		if rd.WaitsFor != "" {
			fmt.Fprintf(tw, "  waits: %s\n", rd.WaitsFor)
		}
		nodes := make([]string, 0, len(rd.Nodes))
		for _, x := range rd.Nodes {
			nodes = append(nodes, fmt.Sprintf("%s (%d pods%s)", x.Node, x.Pods, withDevices(x.Devices)))
		}
		repl := make([]string, 0, len(rd.Replacements))
		for _, x := range rd.Replacements {
			repl = append(repl, fmt.Sprintf("%s %s %s $%.4f/h%s", x.InstanceType, x.CapacityType, x.Zone, x.PricePerHour, withDevices(x.Devices)))
		}
		if len(repl) == 0 {
			repl = append(repl, "no replacement")
		}
		if rd.SurplusReplacements > 0 {
			repl = append(repl, fmt.Sprintf("(%d left empty, for consolidation to remove)", rd.SurplusReplacements))
		}
		fmt.Fprintf(tw, "  round %d\t%s\t%s\t-> %s\t%d pods move\t$%.4f/h meanwhile\n", rd.Round, rd.StartsAt.UTC().Format(time.RFC3339),
			strings.Join(nodes, ", "), strings.Join(repl, ", "), rd.PodsMoved, rd.PricePerHour)
	}
}

func (r *PlanReport) writeOutcome(tw io.Writer) {
	if len(r.Blocked) > 0 {
		fmt.Fprintf(tw, "Not replaced: %d\n", len(r.Blocked))
		for _, b := range r.Blocked {
			until := ""
			if b.Until != nil {
				until = "\tuntil " + b.Until.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "  %s\t%s%s\n", b.Node, b.Reason, until)
		}
	}
	if len(r.Unplaced) > 0 {
		fmt.Fprintln(tw, "Pods without a place after the change:")
		for _, u := range r.Unplaced {
			fmt.Fprintf(tw, "  %s\t%d pod(s)\t%s\n", u.Workload, u.Pods, u.Reason)
		}
	}
	fmt.Fprintf(tw, "Price: $%.4f/h before, $%.4f/h in the dearest round, $%.4f/h after\n", r.Price.Before, r.Price.WorstRound, r.Price.After)
	fmt.Fprintln(tw, "The estimate assumes:")
	for _, a := range r.Duration.Assumptions {
		fmt.Fprintf(tw, "  - %s\n", a)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(tw, "warning: %s\n", warn)
	}
}

// withDevices prints devices by driver after a comma, "" for none.
func withDevices(devices map[string]int64) string {
	if len(devices) == 0 {
		return ""
	}
	return ", devices " + devicesText(devices)
}
