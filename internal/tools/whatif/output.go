package whatif

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nodewright/nodewright/internal/state"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/internal/scheduling"
)

// Report is the JSON form of a simulation (schema in docs/tools/simulate.md).
type Report struct {
	NodeClaims        []NodeClaimReport     `json:"nodeClaims"`
	ExistingNodes     []ExistingNodeReport  `json:"existingNodes"`
	Unschedulable     []UnschedulableReport `json:"unschedulable"`
	Warnings          []string              `json:"warnings"`
	TotalPricePerHour float64               `json:"totalPricePerHour"`
}

// NodeClaimReport is one planned NodeClaim.
type NodeClaimReport struct {
	Name          string              `json:"name"`
	NodePool      string              `json:"nodePool"`
	InstanceType  string              `json:"instanceType"`
	CapacityType  string              `json:"capacityType"`
	Zone          string              `json:"zone"`
	PricePerHour  float64             `json:"pricePerHour"`
	InstanceTypes []string            `json:"instanceTypes"`
	Requests      corev1.ResourceList `json:"requests"`
	Pods          []string            `json:"pods"`
	// Devices are the devices its pods' resource claims take, by DRA
	// driver.
	Devices map[string]int64 `json:"devices,omitempty"`
	// BufferPods counts the CapacityBuffers' pods it keeps room for.
	BufferPods int `json:"bufferPods,omitempty"`
	// MinValuesRelaxed says, under --min-values-policy=BestEffort, which
	// minValues the NodeClaim relaxes ("" when none).
	MinValuesRelaxed string `json:"minValuesRelaxed,omitempty"`
}

// ExistingNodeReport lists the pending pods planned onto an existing node.
type ExistingNodeReport struct {
	Name string   `json:"name"`
	Pods []string `json:"pods"`
}

// UnschedulableReport is a pod that cannot be placed, and why.
type UnschedulableReport struct {
	Pod string `json:"pod"`
	// Workload is what the pod belongs to ("Deployment default/web").
	Workload string `json:"workload"`
	Reason   string `json:"reason"`
	pod      *corev1.Pod
}

// NewReport converts a result.
func NewReport(res *Result) *Report {
	r := &Report{
		NodeClaims: []NodeClaimReport{}, ExistingNodes: []ExistingNodeReport{},
		Unschedulable: []UnschedulableReport{}, Warnings: append([]string{}, res.Warnings...),
	}
	for _, c := range res.Plan.NodeClaims {
		names := make([]string, len(c.InstanceTypes))
		for i, it := range c.InstanceTypes {
			names[i] = it.Name
		}
		r.NodeClaims = append(r.NodeClaims, NodeClaimReport{
			Name: c.Name, NodePool: c.NodePool, InstanceType: c.InstanceType.Name,
			CapacityType: c.Offering.CapacityType, Zone: c.Offering.Zone, PricePerHour: c.Offering.Price,
			InstanceTypes: names, Requests: c.Requests.List(), Pods: podNames(c.Pods), BufferPods: buffered(c.Pods),
			Devices: c.Requests.Devices(),
		})
		r.NodeClaims[len(r.NodeClaims)-1].MinValuesRelaxed = c.MinValuesRelaxed
	}
	for _, e := range res.Plan.Existing {
		if len(e.Pods) > 0 {
			r.ExistingNodes = append(r.ExistingNodes, ExistingNodeReport{Name: e.Node, Pods: podNames(e.Pods)})
		}
	}
	for _, u := range res.Plan.Unschedulable {
		r.Unschedulable = append(r.Unschedulable, UnschedulableReport{Pod: u.Pod.Namespace + "/" + u.Pod.Name,
			Workload: state.WorkloadOf(u.Pod).String(), Reason: res.Snapshot.ReasonFor(u.Reason), pod: u.Pod})
	}
	r.TotalPricePerHour = math.Round(res.Plan.Price()*1e5) / 1e5
	return r
}

// podNames names the pods that are not a CapacityBuffer's.
func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		if !state.Virtual(p) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out
}

// buffered counts the CapacityBuffers' pods.
func buffered(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if state.Virtual(p) {
			n++
		}
	}
	return n
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	pods, buffer := 0, 0
	if len(r.NodeClaims) > 0 {
		fmt.Fprintln(tw, "NODECLAIM\tNODEPOOL\tINSTANCE TYPE\tCAPACITY\tZONE\t$/HOUR\tPODS\tREQUESTS")
		for _, c := range r.NodeClaims {
			pods, buffer = pods+len(c.Pods), buffer+c.BufferPods
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.4f\t%d\t%s\n", c.Name, c.NodePool, c.InstanceType, c.CapacityType, c.Zone, c.PricePerHour, len(c.Pods), strings.TrimSpace(scheduling.MustResources(c.Requests)+" "+devicesText(c.Devices)))
		}
	}
	for _, e := range r.ExistingNodes {
		pods += len(e.Pods)
		fmt.Fprintf(tw, "%s\t(existing)\t\t\t\t\t%d\t\n", e.Name, len(e.Pods))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	room := ""
	if buffer > 0 {
		room = fmt.Sprintf(", room for %d CapacityBuffer pods", buffer)
	}
	fmt.Fprintf(w, "\n%d NodeClaims, %d pods placed%s, $%.4f/hour\n", len(r.NodeClaims), pods, room, r.TotalPricePerHour)
	for _, c := range r.NodeClaims {
		if c.MinValuesRelaxed != "" {
			fmt.Fprintf(w, "NodeClaim %s: minValues relaxed (--min-values-policy=BestEffort): %s\n", c.Name, c.MinValuesRelaxed)
		}
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	if len(r.Unschedulable) > 0 {
		fmt.Fprintf(w, "\n%d pods cannot be scheduled:\n", len(r.Unschedulable))
		groups := state.GroupPods(r.Unschedulable, func(u UnschedulableReport) *corev1.Pod { return u.pod }, func(u UnschedulableReport) string { return u.Reason })
		reasons := map[*corev1.Pod]string{}
		for _, u := range r.Unschedulable {
			reasons[u.pod] = u.Reason
		}
		for _, g := range groups {
			fmt.Fprintf(w, "  %s: %s\n", g.Describe(), reasons[g.Pods[0]])
		}
	}
	return nil
}

// devicesText prints devices by driver, such as "gpu.nvidia.com=2".
func devicesText(devices map[string]int64) string {
	parts := make([]string, 0, len(devices))
	for _, driver := range slices.Sorted(maps.Keys(devices)) {
		parts = append(parts, fmt.Sprintf("%s=%d", driver, devices[driver]))
	}
	return strings.Join(parts, " ")
}
