package runner

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nodewright/nodewright/internal/state"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
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
	// "nominated" (a node is planned or coming up for them),
	// "nominated-ready" (nominated to a node that is Ready and untainted:
	// waiting for kube-scheduler to bind them), "bound" (on a node, not
	// started yet) and "unscheduled" (none of these yet).
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
	// Terminating counts pods being deleted (their grace period running):
	// a change still in progress, which consolidation waits for.
	Terminating int `json:"terminating,omitempty"`
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

// WaitingFor are the keys of Snapshot.Waiting, in the order a pod goes
// through them.
var WaitingFor = []string{"unplaceable", "unscheduled", "nominated", "nominated-ready", "bound"}

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
	for _, why := range WaitingFor {
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
	parts := []string{fmt.Sprint(s.RunningPods, s.PendingPods, s.Terminating, s.Nodes, s.Disrupting, len(s.Disruptions))}
	for _, c := range s.NodeClaims {
		parts = append(parts, c.Name+c.Phase)
	}
	return strings.Join(append(parts, s.Problems...), "|")
}

// Snapshot reads the state of the simulation.
func (s *Sim) Snapshot(ctx context.Context, started time.Time) (*Snapshot, error) {
	r := &snapshotReader{sim: s, listed: map[string]bool{},
		snap: &Snapshot{Elapsed: time.Since(started).Round(time.Second), NodeClaims: []NodeClaim{}, Problems: []string{}}}
	// readNodes marks the NodeClaims readNodeClaims added: the order
	// matters.
	steps := []func(context.Context) error{r.readPods, r.readNodeClasses, r.readNodePools, r.readNodeClaims, r.readNodes, r.readDisruptions}
	for _, read := range steps {
		if err := read(ctx); err != nil {
			return nil, err
		}
	}
	return r.snap, nil
}

// snapshotReader fills in a snapshot from the simulation's cache, one
// kind of object after the other.
type snapshotReader struct {
	sim  *Sim
	snap *Snapshot
	// listed are the problems already in the snapshot: each is listed
	// once, where it was first found.
	listed map[string]bool
	// claims are the NodeClaims, sorted by name as the snapshot's are.
	claims []v1.NodeClaim
}

// problem lists a problem the first time it is found.
func (r *snapshotReader) problem(p string) {
	if !r.listed[p] {
		r.listed[p] = true
		r.snap.Problems = append(r.snap.Problems, p)
	}
}

// unplaceablePod is a pending pod with the reason nodewright gave for not
// placing it.
type unplaceablePod struct {
	pod    *corev1.Pod
	reason string
}

// readPods counts the pods outside kube-system, and lists why nodewright
// cannot place the pods it cannot.
func (r *snapshotReader) readPods(ctx context.Context) error {
	pods := &corev1.PodList{}
	if err := r.sim.cache.List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	reasons, err := r.sim.podReasons(ctx)
	if err != nil {
		return err
	}
	nodes := &corev1.NodeList{}
	if err := r.sim.cache.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	open := sets.New[string]()
	for i := range nodes.Items {
		if takesPods(&nodes.Items[i]) {
			open.Insert(nodes.Items[i].Name)
		}
	}
	var unplaceablePods []unplaceablePod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Namespace == "kube-system" {
			continue
		}
		if reason, unplaceable := r.snap.countPod(p, reasons, open); unplaceable {
			unplaceablePods = append(unplaceablePods, unplaceablePod{p, reason})
		}
	}
	// One line per workload and reason, however many pods it has.
	for _, g := range state.GroupPods(unplaceablePods, func(u unplaceablePod) *corev1.Pod { return u.pod }, func(u unplaceablePod) string { return u.reason }) {
		r.problem(g.Describe() + ": " + reasons[g.Pods[0].Namespace+"/"+g.Pods[0].Name])
	}
	return nil
}

// countPod counts a pod as running or pending, and a pending one by what
// it waits for. It returns the reason nodewright gave for not placing the
// pod, if it gave one.
func (s *Snapshot) countPod(p *corev1.Pod, reasons map[string]string, open sets.Set[string]) (string, bool) {
	if !p.DeletionTimestamp.IsZero() {
		s.Terminating++ // going: neither the workload's nor settled
		return "", false
	}
	s.Pods++
	if p.Status.Phase == corev1.PodRunning {
		s.RunningPods++
		return "", false
	}
	s.PendingPods++
	reason, unplaceable := reasons[p.Namespace+"/"+p.Name]
	s.wait(waitingFor(p, unplaceable, open))
	return reason, unplaceable
}

// takesPods reports a node that is Ready and has no taint that keeps
// pods off.
func takesPods(n *corev1.Node) bool {
	if _, failing := failingCondition(n); failing || !n.DeletionTimestamp.IsZero() || n.Spec.Unschedulable {
		return false
	}
	ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	fenced := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect != corev1.TaintEffectPreferNoSchedule })
	return ready && !fenced
}

// waitingFor is what a pending pod waits for, as Snapshot.Waiting counts
// it.
func waitingFor(p *corev1.Pod, unplaceable bool, open sets.Set[string]) string {
	switch {
	case p.Spec.NodeName != "":
		return "bound"
	case unplaceable:
		return "unplaceable"
	case open.Has(p.Status.NominatedNodeName):
		return "nominated-ready"
	case p.Status.NominatedNodeName != "":
		return "nominated"
	}
	return "unscheduled"
}

// readNodeClasses lists the EC2NodeClasses' conditions that are not True,
// Ready aside: the others say why it is not.
func (r *snapshotReader) readNodeClasses(ctx context.Context) error {
	classes := &awsv1.EC2NodeClassList{}
	if err := r.sim.cache.List(ctx, classes); err != nil {
		return err
	}
	for _, c := range classes.Items {
		for _, cond := range c.Status.Conditions {
			if cond.Status != metav1.ConditionTrue && cond.Type != awsv1.ConditionReady {
				r.problem(fmt.Sprintf("EC2NodeClass %s: %s=%s %s: %s", c.Name, cond.Type, cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	return nil
}

// readNodePools finds the NodePools' longest consolidateAfter.
func (r *snapshotReader) readNodePools(ctx context.Context) error {
	pools := &v1.NodePoolList{}
	if err := r.sim.cache.List(ctx, pools); err != nil {
		return err
	}
	for _, np := range pools.Items {
		if d, never, err := np.Spec.Disruption.ConsolidateAfter.Parse(); err == nil && !never {
			r.snap.ConsolidateAfter = max(r.snap.ConsolidateAfter, d)
		}
	}
	return nil
}

// readNodeClaims adds the NodeClaims, by name, with their price, when the
// first expires and what their conditions and kubelets say is wrong.
func (r *snapshotReader) readNodeClaims(ctx context.Context) error {
	claims := &v1.NodeClaimList{}
	if err := r.sim.cache.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	specs, err := instancetypes.Catalog()
	if err != nil {
		return err
	}
	onDemand := map[string]float64{}
	for _, sp := range specs {
		onDemand[sp.Name] = sp.OnDemand
	}
	sort.Slice(claims.Items, func(i, j int) bool { return claims.Items[i].Name < claims.Items[j].Name })
	for i := range claims.Items {
		r.readNodeClaim(&claims.Items[i], onDemand)
	}
	r.snap.PricePerHour = math.Round(r.snap.PricePerHour*1e4) / 1e4
	r.claims = claims.Items
	return nil
}

// readNodeClaim adds a NodeClaim to the snapshot.
func (r *snapshotReader) readNodeClaim(nc *v1.NodeClaim, onDemand map[string]float64) {
	view := NodeClaim{
		Name: nc.Name, NodePool: nc.Labels[v1.LabelNodePool], InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
		CapacityType: nc.Labels[v1.LabelCapacityType], Zone: nc.Labels[corev1.LabelTopologyZone], Phase: phase(nc),
	}
	r.snap.NodeClaims = append(r.snap.NodeClaims, view)
	r.snap.noteExpiry(nc)
	if price, ok := claimPrice(view, onDemand); ok {
		r.snap.PricePerHour += price
	}
	r.claimConditionProblems(nc)
	r.kubeletProblem(nc)
}

// noteExpiry keeps the earliest time a NodeClaim reaches its expireAfter.
func (s *Snapshot) noteExpiry(nc *v1.NodeClaim) {
	after, never, err := nc.Spec.ExpireAfter.Parse()
	if err != nil || never {
		return
	}
	if at := nc.CreationTimestamp.Add(after); s.NextExpiry.IsZero() || at.Before(s.NextExpiry) {
		s.NextExpiry = at
	}
}

// claimPrice is a NodeClaim's hourly price, when its instance type has
// one: on-demand, or the spot price in its zone.
func claimPrice(view NodeClaim, onDemand map[string]float64) (float64, bool) {
	price, ok := onDemand[view.InstanceType]
	if ok && view.CapacityType == v1.CapacityTypeSpot {
		price = instancetypes.SpotPrice(view.InstanceType, view.Zone, price)
	}
	return price, ok
}

// claimConditionProblems lists a NodeClaim's conditions that are not True
// and say why (Ready aside: the others explain it), and a node that
// registered without karpenter.sh/unregistered.
func (r *snapshotReader) claimConditionProblems(nc *v1.NodeClaim) {
	for _, cond := range nc.Status.Conditions {
		bad := cond.Status != metav1.ConditionTrue && cond.Type != v1.ConditionReady && cond.Message != ""
		if bad || cond.Reason == v1.ReasonUnregisteredTaintMissing {
			r.problem(fmt.Sprintf("NodeClaim %s: %s=%s %s: %s", nc.Name, cond.Type, cond.Status, cond.Reason, cond.Message))
		}
	}
}

// kubeletProblem lists why the simulated kubelet of a NodeClaim's
// instance failed, if it did.
func (r *snapshotReader) kubeletProblem(nc *v1.NodeClaim) {
	_, id, found := strings.Cut(strings.TrimPrefix(nc.Status.ProviderID, "aws:///"), "/")
	if !found {
		return
	}
	if why, failed := r.sim.Kubelets.Failure(id); failed {
		r.problem(fmt.Sprintf("instance %s of NodeClaim %s: %s", id, nc.Name, why))
	}
}

// readNodes counts the nodes and those being disrupted, and marks the
// NodeClaims whose node is failing.
func (r *snapshotReader) readNodes(ctx context.Context) error {
	nodes := &corev1.NodeList{}
	if err := r.sim.cache.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	r.snap.Nodes = len(nodes.Items)
	// A registered node whose kubelet does not report Ready (or reports a
	// failure) keeps its NodeClaim from counting as Ready.
	failing := failingNodes(nodes.Items)
	for i := range r.claims {
		if why, ok := failing[r.claims[i].Status.ProviderID]; ok && r.snap.NodeClaims[i].Phase == "Ready" {
			r.snap.NodeClaims[i].Phase = "NotReady"
			r.problem(fmt.Sprintf("NodeClaim %s: its node reports %s", r.claims[i].Name, why))
		}
	}
	for i := range nodes.Items {
		if disrupting(&nodes.Items[i]) {
			r.snap.Disrupting++
		}
	}
	return nil
}

// failingNodes maps the provider IDs of the nodes not being deleted that
// report a failing condition to the last such condition.
func failingNodes(nodes []corev1.Node) map[string]string {
	failing := map[string]string{}
	for i := range nodes {
		n := &nodes[i]
		if !n.DeletionTimestamp.IsZero() {
			continue
		}
		if why, ok := failingCondition(n); ok {
			failing[n.Spec.ProviderID] = why
		}
	}
	return failing
}

// failingCondition is the last of a node's conditions that says it is
// failing: Ready not True, or another ...Ready condition (an agent's)
// False.
func failingCondition(n *corev1.Node) (string, bool) {
	why, found := "", false
	for _, c := range n.Status.Conditions {
		notReady := c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue
		agentFailing := c.Type != corev1.NodeReady && strings.HasSuffix(string(c.Type), "Ready") && c.Status == corev1.ConditionFalse
		if notReady || agentFailing {
			why, found = fmt.Sprintf("%s=%s", c.Type, c.Status), true
		}
	}
	return why, found
}

// disrupting reports a node being disrupted: tainted karpenter.sh/disrupted
// (or karpenter.sh/rebooting) or being deleted.
func disrupting(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintKeyDisrupted || t.Key == v1.TaintKeyRebooting {
			return true
		}
	}
	return !n.DeletionTimestamp.IsZero()
}

// readDisruptions adds the disruption steps nodewright took.
func (r *snapshotReader) readDisruptions(ctx context.Context) error {
	disruptions, err := r.sim.disruptions(ctx)
	if err != nil {
		return err
	}
	r.snap.Disruptions = disruptions
	return nil
}

// disruptionReasons are the events that tell what disruption did.
var disruptionReasons = map[string]bool{"DisruptionLaunching": true, "DisruptionTerminating": true, "DisruptionRolledBack": true, "DisruptionCancelled": true,
	"StaticScaledDown": true, "NodeRepair": true, "SpotInterrupted": true, "SpotRebalanceRecommendation": true, "CapacityReservationInterrupted": true,
	"InstanceScheduledChange": true, "InstanceStopping": true, "InstanceTerminating": true,
	"NodeRebooting": true, "NodeRebooted": true, "NodeRebootFailed": true}

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
		if cur, ok := latest[key]; !ok || Newer(ev, cur) {
			latest[key] = ev
		}
	}
	out := map[string]string{}
	for k, ev := range latest {
		out[k] = ev.Message
	}
	return out, nil
}

// Newer reports whether event a was last said after event b. Their
// lastTimestamps count whole seconds: two reasons given within one second
// are told apart by the order of their writes (resourceVersion, which
// this simulation's etcd numbers in order).
func Newer(a, b corev1.Event) bool {
	if !a.LastTimestamp.Equal(&b.LastTimestamp) {
		return a.LastTimestamp.After(b.LastTimestamp.Time)
	}
	ra, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return errA == nil && errB == nil && ra > rb
}

// Watch takes a snapshot every second and hands it to progress, until
// the cluster has settled (every pod runs on Ready NodeClaims, none is
// terminating, no node has been disrupted for the Settle time of the
// simulation's options plus the NodePools' longest consolidateAfter, and no
// NodeClaim expires before the timeout), nothing has changed for stall,
// or timeout passes.
func (s *Sim) Watch(ctx context.Context, timeout, stall time.Duration, progress func(*Snapshot)) (*Snapshot, error) {
	return s.watch(ctx, timeout, stall, progress, nil)
}

// watch is Watch that, with until, is settled only once until holds.
func (s *Sim) watch(ctx context.Context, timeout, stall time.Duration, progress func(*Snapshot), until func(*Snapshot) bool) (*Snapshot, error) {
	w := &watch{started: time.Now(), timeout: timeout, stall: stall, settle: s.settle, until: until}
	w.lastChange = w.started
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		snap, err := s.Snapshot(ctx, w.started)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(snap)
		}
		s.measure(snap)
		w.observe(snap)
		if w.over(snap) {
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-ticker.C:
		}
	}
}

// watch is what Watch remembers between snapshots to tell when to stop.
type watch struct {
	started                time.Time
	timeout, stall, settle time.Duration
	lastKey                string
	lastChange             time.Time
	calmSince              time.Time // zero while pods wait or nodes are disrupted
	until                  func(*Snapshot) bool
}

// observe notes whether a snapshot differs from the last one, and whether
// the cluster is calm: every pod Running on Ready NodeClaims, no node
// disrupted.
func (w *watch) observe(snap *Snapshot) {
	if k := snap.key(); k != w.lastKey {
		w.lastKey, w.lastChange = k, time.Now()
	}
	switch {
	case !snap.Done() || snap.Disrupting > 0 || snap.Terminating > 0:
		w.calmSince = time.Time{}
	case w.calmSince.IsZero():
		w.calmSince = time.Now()
	}
}

// over reports whether Watch is done with this snapshot: the cluster has
// settled, the timeout has passed, or an unfinished cluster stopped
// changing. A NodeClaim due to expire before the timeout is a change
// still to come, so it is waited for.
func (w *watch) over(snap *Snapshot) bool {
	expiring := !snap.NextExpiry.IsZero() && snap.NextExpiry.Before(w.started.Add(w.timeout))
	return w.settled(snap, expiring) || time.Since(w.started) > w.timeout || w.stalled(snap, expiring)
}

// settled reports a cluster calm for long enough — the settle time
// and the NodePools' longest consolidateAfter, so that a consolidation
// due is seen before the step is called settled — with no NodeClaim
// expiring before the timeout.
func (w *watch) settled(snap *Snapshot, expiring bool) bool {
	return !w.calmSince.IsZero() && time.Since(w.calmSince) >= w.settle+snap.ConsolidateAfter && !expiring && (w.until == nil || w.until(snap))
}

// stalled reports an unfinished cluster that has not changed for the
// stall time.
func (w *watch) stalled(snap *Snapshot, expiring bool) bool {
	return time.Since(w.lastChange) > w.stall && snap.Pods > 0 && !snap.Done() && !expiring
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
	fmt.Fprintf(w, "Figures: first node Ready after %s, every pod Running after %s; %d NodeClaims; peak RSS %d MiB, %.1f CPU seconds (%s)\n",
		since(f.FirstNodeReady), since(f.AllRunning), f.NodeClaims, f.PeakRSS>>20, f.CPUSeconds, f.Process)
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
