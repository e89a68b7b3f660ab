package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nodewright/nodewright/internal/state"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// Snapshot is the state of a simulation, as `nodewright sim` reports it.
type Snapshot struct {
	Elapsed     time.Duration `json:"elapsed"`
	Pods        int           `json:"pods"`
	RunningPods int           `json:"runningPods"`
	PendingPods int           `json:"pendingPods"`
	// Waiting counts the pending pods by what they wait for: "unplaceable"
	// (nodewright said why it cannot place them: see Problems),
	// "nominated" (a node is planned or coming up for them), "bound" (on
	// a node, not started yet) and "unscheduled" (none of these yet).
	Waiting      map[string]int `json:"waiting,omitempty"`
	NodeClaims   []NodeClaim    `json:"nodeClaims"`
	Nodes        int            `json:"nodes"`
	PricePerHour float64        `json:"pricePerHour"`
	// Problems explain everything that is not working: conditions that
	// are not True, kubelets that did not register, pods nodewright cannot
	// place.
	Problems []string `json:"problems"`
	// Disrupting counts nodes being disrupted now (tainted
	// karpenter.sh/disrupted or being deleted).
	Disrupting int `json:"disrupting"`
	// Disruptions are the disruption steps nodewright took, oldest first:
	// "NodeClaim default-x: DisruptionTerminating: Underutilized: ...".
	Disruptions []string `json:"disruptions"`
	// NextExpiry is when the first NodeClaim reaches its expireAfter
	// (zero when none expires).
	NextExpiry time.Time `json:"nextExpiry,omitzero"`
	// ConsolidateAfter is the longest consolidateAfter of the NodePools
	// (Never aside): how long a node may wait before consolidation looks.
	ConsolidateAfter time.Duration `json:"-"`
}

// NodeClaim is one NodeClaim in a snapshot.
type NodeClaim struct {
	Name         string `json:"name"`
	NodePool     string `json:"nodePool"`
	InstanceType string `json:"instanceType"`
	CapacityType string `json:"capacityType"`
	Zone         string `json:"zone"`
	// Phase is Launching, Registering, Initializing, Ready or NotReady
	// (initialized, its node now failing).
	Phase string `json:"phase"`
}

func (s *Snapshot) wait(why string) {
	if s.Waiting == nil {
		s.Waiting = map[string]int{}
	}
	s.Waiting[why]++
}

// NotConvergedError says a simulation step ended before its workload
// ran: what is still pending and why.
type NotConvergedError struct {
	Step     string
	Snapshot *Snapshot
}

func (e *NotConvergedError) Error() string {
	s := e.Snapshot
	phases := map[string]int{}
	for _, c := range s.NodeClaims {
		phases[c.Phase]++
	}
	var waiting, claims []string
	for _, why := range []string{"unplaceable", "nominated", "bound", "unscheduled"} {
		if n := s.Waiting[why]; n > 0 {
			waiting = append(waiting, fmt.Sprintf("%d %s", n, why))
		}
	}
	for _, ph := range []string{"Launching", "Registering", "Initializing", "NotReady"} {
		if n := phases[ph]; n > 0 {
			claims = append(claims, fmt.Sprintf("%d %s", n, ph))
		}
	}
	msg := fmt.Sprintf("%s did not converge after %s: %d of %d pods Running", e.Step, s.Elapsed, s.RunningPods, s.Pods)
	if len(waiting) > 0 {
		msg += "; pending: " + strings.Join(waiting, ", ")
	}
	if len(claims) > 0 {
		msg += "; NodeClaims not Ready: " + strings.Join(claims, ", ")
	}
	if len(s.Problems) > 0 {
		msg += fmt.Sprintf("; %d problems listed under Why", len(s.Problems))
	}
	return msg
}

// Done reports whether every pod runs on Ready NodeClaims.
func (s *Snapshot) Done() bool {
	if s.Pods == 0 || s.RunningPods != s.Pods {
		return false
	}
	for _, c := range s.NodeClaims {
		if c.Phase != "Ready" {
			return false
		}
	}
	return true
}

func (s *Snapshot) key() string {
	parts := []string{fmt.Sprint(s.RunningPods, s.PendingPods, s.Nodes, s.Disrupting, len(s.Disruptions))}
	for _, c := range s.NodeClaims {
		parts = append(parts, c.Name+c.Phase)
	}
	return strings.Join(append(parts, s.Problems...), "|")
}

// Snapshot reads the state of the simulation.
func (s *Sim) Snapshot(ctx context.Context, started time.Time) (*Snapshot, error) {
	snap := &Snapshot{Elapsed: time.Since(started).Round(time.Second), NodeClaims: []NodeClaim{}, Problems: []string{}}
	problems := map[string]bool{}
	add := func(p string) {
		if !problems[p] {
			problems[p] = true
			snap.Problems = append(snap.Problems, p)
		}
	}
	pods := &corev1.PodList{}
	if err := s.cache.List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	reasons, err := s.podReasons(ctx)
	if err != nil {
		return nil, err
	}
	type unplaceablePod struct {
		pod    *corev1.Pod
		reason string
	}
	var unplaceablePods []unplaceablePod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Namespace == "kube-system" {
			continue
		}
		snap.Pods++
		if p.Status.Phase == corev1.PodRunning {
			snap.RunningPods++
			continue
		}
		snap.PendingPods++
		r, unplaceable := reasons[p.Namespace+"/"+p.Name]
		switch {
		case p.Spec.NodeName != "":
			snap.wait("bound")
		case unplaceable:
			snap.wait("unplaceable")
		case p.Status.NominatedNodeName != "":
			snap.wait("nominated")
		default:
			snap.wait("unscheduled")
		}
		if unplaceable {
			unplaceablePods = append(unplaceablePods, unplaceablePod{&pods.Items[i], r})
		}
	}
	// One line per workload and reason, however many pods it has.
	for _, g := range state.GroupPods(unplaceablePods, func(u unplaceablePod) *corev1.Pod { return u.pod }, func(u unplaceablePod) string { return u.reason }) {
		add(g.Describe() + ": " + reasons[g.Pods[0].Namespace+"/"+g.Pods[0].Name])
	}
	classes := &awsv1.EC2NodeClassList{}
	if err := s.cache.List(ctx, classes); err != nil {
		return nil, err
	}
	for _, c := range classes.Items {
		for _, cond := range c.Status.Conditions {
			if cond.Status != metav1.ConditionTrue && cond.Type != awsv1.ConditionReady {
				add(fmt.Sprintf("EC2NodeClass %s: %s=%s %s: %s", c.Name, cond.Type, cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	pools := &v1.NodePoolList{}
	if err := s.cache.List(ctx, pools); err != nil {
		return nil, err
	}
	for _, np := range pools.Items {
		if d, never, err := np.Spec.Disruption.ConsolidateAfter.Parse(); err == nil && !never {
			snap.ConsolidateAfter = max(snap.ConsolidateAfter, d)
		}
	}
	claims := &v1.NodeClaimList{}
	if err := s.cache.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	specs, err := instancetypes.Catalog()
	if err != nil {
		return nil, err
	}
	onDemand := map[string]float64{}
	for _, sp := range specs {
		onDemand[sp.Name] = sp.OnDemand
	}
	sort.Slice(claims.Items, func(i, j int) bool { return claims.Items[i].Name < claims.Items[j].Name })
	for _, nc := range claims.Items {
		view := NodeClaim{
			Name: nc.Name, NodePool: nc.Labels[v1.LabelNodePool], InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
			CapacityType: nc.Labels[v1.LabelCapacityType], Zone: nc.Labels[corev1.LabelTopologyZone], Phase: phase(&nc),
		}
		snap.NodeClaims = append(snap.NodeClaims, view)
		if after, never, err := nc.Spec.ExpireAfter.Parse(); err == nil && !never {
			if at := nc.CreationTimestamp.Add(after); snap.NextExpiry.IsZero() || at.Before(snap.NextExpiry) {
				snap.NextExpiry = at
			}
		}
		if price, ok := onDemand[view.InstanceType]; ok {
			if view.CapacityType == v1.CapacityTypeSpot {
				price = instancetypes.SpotPrice(view.InstanceType, view.Zone, price)
			}
			snap.PricePerHour += price
		}
		for _, cond := range nc.Status.Conditions {
			bad := cond.Status != metav1.ConditionTrue && cond.Type != v1.ConditionReady && cond.Message != ""
			if bad || cond.Reason == v1.ReasonUnregisteredTaintMissing {
				add(fmt.Sprintf("NodeClaim %s: %s=%s %s: %s", nc.Name, cond.Type, cond.Status, cond.Reason, cond.Message))
			}
		}
		if _, id, found := strings.Cut(strings.TrimPrefix(nc.Status.ProviderID, "aws:///"), "/"); found {
			if why, failed := s.Kubelets.Failure(id); failed {
				add(fmt.Sprintf("instance %s of NodeClaim %s: %s", id, nc.Name, why))
			}
		}
	}
	snap.PricePerHour = math.Round(snap.PricePerHour*1e4) / 1e4
	nodes := &corev1.NodeList{}
	if err := s.cache.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	snap.Nodes = len(nodes.Items)
	// A registered node whose kubelet does not report Ready (or reports a
	// failure) keeps its NodeClaim from counting as Ready.
	failing := map[string]string{}
	for _, n := range nodes.Items {
		if !n.DeletionTimestamp.IsZero() {
			continue
		}
		for _, c := range n.Status.Conditions {
			notReady := c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue
			agentFailing := c.Type != corev1.NodeReady && strings.HasSuffix(string(c.Type), "Ready") && c.Status == corev1.ConditionFalse
			if notReady || agentFailing {
				failing[n.Spec.ProviderID] = fmt.Sprintf("%s=%s", c.Type, c.Status)
			}
		}
	}
	for i := range claims.Items {
		if why, ok := failing[claims.Items[i].Status.ProviderID]; ok && snap.NodeClaims[i].Phase == "Ready" {
			snap.NodeClaims[i].Phase = "NotReady"
			add(fmt.Sprintf("NodeClaim %s: its node reports %s", claims.Items[i].Name, why))
		}
	}
	for _, n := range nodes.Items {
		disrupted := false
		for _, t := range n.Spec.Taints {
			disrupted = disrupted || t.Key == v1.TaintKeyDisrupted
		}
		if disrupted || !n.DeletionTimestamp.IsZero() {
			snap.Disrupting++
		}
	}
	if snap.Disruptions, err = s.disruptions(ctx); err != nil {
		return nil, err
	}
	return snap, nil
}

// disruptionReasons are the events that tell what disruption did.
var disruptionReasons = map[string]bool{"DisruptionLaunching": true, "DisruptionTerminating": true, "DisruptionRolledBack": true, "DisruptionCancelled": true,
	"StaticScaledDown": true, "NodeRepair": true, "SpotInterrupted": true, "SpotRebalanceRecommendation": true, "CapacityReservationInterrupted": true,
	"InstanceScheduledChange": true, "InstanceStopping": true, "InstanceTerminating": true}

// disruptions lists the disruption events on NodeClaims, oldest first.
func (s *Sim) disruptions(ctx context.Context) ([]string, error) {
	events := &corev1.EventList{}
	if err := s.cache.List(ctx, events, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var picked []corev1.Event
	for _, ev := range events.Items {
		if ev.Source.Component == "nodewright" && ev.InvolvedObject.Kind == "NodeClaim" && disruptionReasons[ev.Reason] {
			picked = append(picked, ev)
		}
	}
	sort.SliceStable(picked, func(i, j int) bool {
		if !picked[i].FirstTimestamp.Equal(&picked[j].FirstTimestamp) {
			return picked[i].FirstTimestamp.Before(&picked[j].FirstTimestamp)
		}
		return picked[i].InvolvedObject.Name < picked[j].InvolvedObject.Name
	})
	out := []string{}
	for _, ev := range picked {
		out = append(out, fmt.Sprintf("NodeClaim %s: %s: %s", ev.InvolvedObject.Name, ev.Reason, ev.Message))
	}
	return out, nil
}

func phase(nc *v1.NodeClaim) string {
	switch {
	case meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionReady):
		return "Ready"
	case meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionRegistered):
		return "Initializing"
	case meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionLaunched):
		return "Registering"
	}
	return "Launching"
}

// podReasons returns the latest reason nodewright gave for each pod it
// could not place.
func (s *Sim) podReasons(ctx context.Context) (map[string]string, error) {
	events := &corev1.EventList{}
	if err := s.cache.List(ctx, events, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	latest := map[string]corev1.Event{}
	for _, ev := range events.Items {
		if ev.Source.Component != "nodewright" || ev.Reason != "FailedScheduling" || ev.InvolvedObject.Kind != "Pod" {
			continue
		}
		key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
		if cur, ok := latest[key]; !ok || ev.LastTimestamp.After(cur.LastTimestamp.Time) {
			latest[key] = ev
		}
	}
	out := map[string]string{}
	for k, ev := range latest {
		out[k] = ev.Message
	}
	return out, nil
}

// Watch takes a snapshot every second and hands it to progress, until
// the cluster has settled (every pod runs on Ready NodeClaims, no node
// has been disrupted for the Settle time of the simulation's options plus
// the NodePools' longest consolidateAfter, up to a minute, and no
// NodeClaim expires before the timeout), nothing has changed for stall,
// or timeout passes.
func (s *Sim) Watch(ctx context.Context, timeout, stall time.Duration, progress func(*Snapshot)) (*Snapshot, error) {
	started := time.Now()
	lastChange, lastKey, calmSince := started, "", time.Time{}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		snap, err := s.Snapshot(ctx, started)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(snap)
		}
		s.measure(snap)
		if k := snap.key(); k != lastKey {
			lastKey, lastChange = k, time.Now()
		}
		switch {
		case !snap.Done() || snap.Disrupting > 0:
			calmSince = time.Time{}
		case calmSince.IsZero():
			calmSince = time.Now()
		}
		expiring := !snap.NextExpiry.IsZero() && snap.NextExpiry.Before(started.Add(timeout))
		settled := !calmSince.IsZero() && time.Since(calmSince) >= s.settle+min(snap.ConsolidateAfter, time.Minute) && !expiring
		if settled || time.Since(started) > timeout || (time.Since(lastChange) > stall && snap.Pods > 0 && !snap.Done() && !expiring) {
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-ticker.C:
		}
	}
}

// measure records the step's figures from a snapshot.
func (s *Sim) measure(snap *Snapshot) {
	if s.claims == nil {
		s.claims = map[string]bool{}
	}
	ready := false
	for _, c := range snap.NodeClaims {
		s.claims[c.Name] = true
		ready = ready || c.Phase == "Ready"
	}
	s.figures.NodeClaims = len(s.claims)
	if ready && s.figures.FirstNodeReady == 0 {
		s.figures.FirstNodeReady = snap.Elapsed
	}
	if snap.Pods > 0 && snap.RunningPods == snap.Pods && s.figures.AllRunning == 0 {
		s.figures.AllRunning = snap.Elapsed
	}
}

// WriteSummary prints a snapshot for people.
func WriteSummary(w io.Writer, scenario string, snap *Snapshot) {
	verdict := "every pod is Running"
	if !snap.Done() {
		verdict = fmt.Sprintf("%d of %d pods are Running", snap.RunningPods, snap.Pods)
	}
	fmt.Fprintf(w, "\n%s: %s after %s\n", scenario, verdict, snap.Elapsed)
	byType := map[string]int{}
	for _, c := range snap.NodeClaims {
		byType[fmt.Sprintf("%s %s (%s)", c.InstanceType, c.CapacityType, c.Phase)]++
	}
	keys := make([]string, 0, len(byType))
	for k := range byType {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "NodeClaims: %d, nodes: %d, $%.4f/hour\n", len(snap.NodeClaims), snap.Nodes, snap.PricePerHour)
	for _, k := range keys {
		fmt.Fprintf(w, "  %d × %s\n", byType[k], k)
	}
	if len(snap.Disruptions) > 0 {
		fmt.Fprintln(w, "Disruptions:")
		for _, d := range snap.Disruptions {
			fmt.Fprintf(w, "  - %s\n", d)
		}
	}
	if len(snap.Problems) > 0 {
		fmt.Fprintln(w, "Why:")
		for _, p := range snap.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
}

// WriteSteps prints the summary of the last step and, when there were
// several, one line per step with the disruptions during it.
func WriteSteps(w io.Writer, results []StepResult) {
	last := results[len(results)-1]
	if len(results) == 1 {
		WriteSummary(w, last.Name, last.Snapshot)
		WriteFigures(w, last.Figures)
		return
	}
	fmt.Fprintln(w, "\nSteps:")
	for i, r := range results {
		s := r.Snapshot
		fmt.Fprintf(w, "  %d. %s: %d/%d pods Running, %d nodes, $%.4f/hour, after %s\n", i+1, r.Name, s.RunningPods, s.Pods, s.Nodes, s.PricePerHour, s.Elapsed)
		for _, d := range r.Disruptions {
			fmt.Fprintf(w, "       %s\n", d)
		}
	}
	defer WriteFigures(w, last.Figures)
	WriteSummary(w, last.Name, &Snapshot{Elapsed: last.Snapshot.Elapsed, Pods: last.Snapshot.Pods, RunningPods: last.Snapshot.RunningPods,
		PendingPods: last.Snapshot.PendingPods, NodeClaims: last.Snapshot.NodeClaims, Nodes: last.Snapshot.Nodes, PricePerHour: last.Snapshot.PricePerHour,
		Problems: last.Snapshot.Problems})
}

// WriteFigures prints a step's figures.
func WriteFigures(w io.Writer, f Figures) {
	since := func(d time.Duration) string {
		if d == 0 {
			return "never"
		}
		return d.String()
	}
	fmt.Fprintf(w, "Figures: first node Ready after %s, every pod Running after %s; %d NodeClaims; peak RSS %d MiB (%s)\n",
		since(f.FirstNodeReady), since(f.AllRunning), f.NodeClaims, f.PeakRSS>>20, f.Process)
	keys := make([]string, 0, len(f.Requests))
	total := 0.0
	for k, n := range f.Requests {
		keys = append(keys, k)
		total += n
	}
	sort.Slice(keys, func(i, j int) bool { return f.Requests[keys[i]] > f.Requests[keys[j]] })
	fmt.Fprintf(w, "API requests by nodewright: %.0f, %.1f per NodeClaim\n", total, f.RequestsPerNodeClaim())
	for _, k := range keys {
		fmt.Fprintf(w, "  %8.0f  %s\n", f.Requests[k], k)
	}
	if f.ExternalAWS != "" {
		fmt.Fprintf(w, "AWS calls: not counted (the account at %s)\n", f.ExternalAWS)
		return
	}
	fmt.Fprintf(w, "AWS calls: %s; throttled: %s\n", byCount(f.AWSCalls), byCount(f.AWSThrottled))
}

// byCount writes counts by name, largest first: "12 (CreateFleet 10, GetParameter 2)".
func byCount(counts map[string]int) string {
	total := 0
	keys := make([]string, 0, len(counts))
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// Progress prints one line per snapshot.
func Progress(w io.Writer) func(*Snapshot) {
	return func(s *Snapshot) {
		phases := map[string]int{}
		for _, c := range s.NodeClaims {
			phases[c.Phase]++
		}
		fmt.Fprintf(w, "%6s  pods %d/%d running  NodeClaims launching %d registering %d initializing %d ready %d  disrupting %d  $%.4f/h\n",
			s.Elapsed, s.RunningPods, s.Pods, phases["Launching"], phases["Registering"], phases["Initializing"], phases["Ready"], s.Disrupting, s.PricePerHour)
	}
}
