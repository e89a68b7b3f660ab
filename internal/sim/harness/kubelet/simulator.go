package kubelet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// Machines are the instances the simulated kubelets run on, and what a
// node learns from its account: its image's family, its role's ARN and
// whether an EKS access entry admits it. A simulated account is one.
type Machines interface {
	Instances() []simaws.Instance
	// SetConsoleOutput records what an instance's kubelet printed.
	SetConsoleOutput(id, output string)
	// Family is the AMI family an instance boots as: how its user
	// data is read.
	Family(inst simaws.Instance) string
	// RoleARN is the ARN of an instance's role.
	RoleARN(role string) string
	AccessEntryType(principalARN string) (string, bool)
}

// UninitializedTaint is the taint a kubelet with --cloud-provider=external
// registers with until the cloud controller manager initialises the node.
const UninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// Simulator plays the kubelets of the simulated account's instances: once
// an instance has run for BootDelay it reads the instance's user data as
// the node would, authenticates with the instance profile's role against
// the cluster's aws-auth mapping, and registers the Node; it keeps its
// nodes Ready and runs the pods bound to them.
type Simulator struct {
	Kube client.Client
	// Reader lists pods, nodes and the aws-auth ConfigMap; Kube when nil.
	// A cache indexed by IndexPods keeps a large simulation from going
	// through every pod each tick: it lists only the pods its kubelets
	// have to start or remove.
	Reader client.Reader
	// Account holds the instances the kubelets run on: the simulated
	// account, or an EC2 endpoint's instances (EC2Machines).
	Account   Machines
	Clock     clock.PassiveClock
	BootDelay time.Duration
	// BootJitter adds up to this much to each instance's boot delay (the
	// same for an instance every time), so nodes become Ready at
	// different times.
	BootJitter time.Duration
	// Heartbeat is how often a node's Ready condition is reported again
	// (10 s when zero, as a kubelet's nodeStatusUpdateFrequency; a large
	// simulation reports less often, with kube-controller-manager's
	// node-monitor-grace-period raised to match).
	Heartbeat time.Duration
	// DRADelay is how long a DRA driver's kubelet plugin runs on a node
	// before it has published the node's devices (see DRADriverAnnotation).
	DRADelay time.Duration
	// Workers bounds the API writes a tick makes at once (64 when zero).
	Workers int
	Log     logr.Logger

	mu      sync.Mutex
	failed  map[string]string // instance id → why the kubelet never registered
	catalog map[string]instancetypes.Spec
	// started remembers the pods marked Running, by the resource version
	// the patch was based on, so a tick that reads a cache not yet showing
	// the patch does not send it again.
	started map[types.UID]string
	// windowsNodes are the nodes registered as Windows; noIP the pods on
	// them told they have no address (VPC CNI's Windows IPAM is off).
	windowsNodes map[string]bool
	noIP         map[types.UID]bool
}

func (s *Simulator) reader() client.Reader {
	if s.Reader != nil {
		return s.Reader
	}
	return s.Kube
}

// bootDelay is how long the instance takes to start its kubelet.
func (s *Simulator) bootDelay(instanceID string) time.Duration {
	if s.BootJitter <= 0 {
		return s.BootDelay
	}
	// A digest spreads instance ids that differ in one character over
	// the whole jitter (a 32-bit hash of them stays within 4.3 s).
	sum := sha256.Sum256([]byte(instanceID))
	spread := rand.New(rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:16])))
	return s.BootDelay + time.Duration(spread.Int64N(int64(s.BootJitter)))
}

// Failure says why an instance's kubelet did not register, if it did not.
func (s *Simulator) Failure(instanceID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	why, ok := s.failed[instanceID]
	return why, ok
}

// Run ticks every interval until ctx ends.
func (s *Simulator) Run(ctx context.Context, interval time.Duration) error {
	specs, err := instancetypes.Catalog()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.failed, s.catalog, s.started = map[string]string{}, map[string]instancetypes.Spec{}, map[types.UID]string{}
	s.windowsNodes, s.noIP = map[string]bool{}, map[types.UID]bool{}
	for _, sp := range specs {
		s.catalog[sp.Name] = sp
	}
	s.mu.Unlock()
	// Nodes and pods tick apart, as kubelets are apart: a node boots on
	// time while thousands of pods start on the nodes already up.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.every(gctx, interval, "simulated kubelets' nodes", s.tickNodes) })
	g.Go(func() error { return s.every(gctx, interval, "simulated kubelets' pods", s.tickPods) })
	g.Go(func() error { return s.every(gctx, interval, "simulated DRA drivers", s.tickDRA) })
	return g.Wait()
}

// every runs tick every interval until ctx ends, logging its errors.
func (s *Simulator) every(ctx context.Context, interval time.Duration, what string, tick func(context.Context) error) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := tick(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error(err, what)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// tickNodes boots due running instances, removes the nodes of terminated
// ones and keeps nodes of running ones Ready. Its API writes run on up to
// Workers goroutines.
func (s *Simulator) tickNodes(ctx context.Context) error {
	byProvider, err := s.nodesByProvider(ctx)
	if err != nil {
		return err
	}
	if r, ok := s.Account.(interface{ Refresh(context.Context) error }); ok {
		if err := r.Refresh(ctx); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(s.Workers, 64))
	for _, inst := range s.Account.Instances() {
		providerID := "aws:///" + aws.ToString(inst.Placement.AvailabilityZone) + "/" + aws.ToString(inst.InstanceId)
		s.tickInstance(gctx, g, inst, byProvider[providerID], providerID)
	}
	return g.Wait()
}

// tickPods starts the pods bound to simulated nodes and removes the ones
// being deleted, on up to Workers goroutines.
func (s *Simulator) tickPods(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(s.Workers, 64))
	if err := s.runPods(gctx, g); err != nil {
		return errors.Join(err, g.Wait())
	}
	return g.Wait()
}

// nodesByProvider lists the nodes by provider ID.
func (s *Simulator) nodesByProvider(ctx context.Context) (map[string]*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := s.reader().List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	byProvider := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byProvider[nodes.Items[i].Spec.ProviderID] = &nodes.Items[i]
	}
	return byProvider, nil
}

// tickInstance does on g what an instance's kubelet does this tick: the
// node of a terminated instance goes, a running one's boots when due, and
// reports its conditions when a heartbeat is due. node is the instance's
// node, nil when it has none.
func (s *Simulator) tickInstance(ctx context.Context, g *errgroup.Group, inst simaws.Instance, node *corev1.Node, providerID string) {
	switch {
	case inst.State.Name == ec2types.InstanceStateNameTerminated:
		if node != nil && node.DeletionTimestamp.IsZero() {
			g.Go(func() error { return client.IgnoreNotFound(s.Kube.Delete(ctx, node.DeepCopy())) })
		}
	case inst.State.Name != ec2types.InstanceStateNameRunning:
		// still pending, or shutting down: no kubelet runs
	case node == nil:
		if s.bootDue(inst) {
			g.Go(func() error { return s.boot(ctx, inst, providerID) })
		}
	case node.Status.NodeInfo.BootID != "" && node.Status.NodeInfo.BootID != bootID(inst):
		// The instance was rebooted: down until its boot delay has
		// passed since, then up with a new boot ID.
		switch {
		case s.Clock.Since(inst.RebootedAt) >= s.bootDelay(aws.ToString(inst.InstanceId)):
			g.Go(func() error { return s.bootAgain(ctx, inst, node.DeepCopy()) })
		case reportsReady(node):
			g.Go(func() error { return s.goDown(ctx, node.DeepCopy()) })
		}
	case s.heartbeatDue(node):
		g.Go(func() error { return s.heartbeat(ctx, node.DeepCopy()) })
	}
}

// bootDue reports whether a running instance's kubelet registers now: its
// boot delay has passed, and it has not failed to register.
func (s *Simulator) bootDue(inst simaws.Instance) bool {
	id := aws.ToString(inst.InstanceId)
	_, failed := s.Failure(id)
	return !failed && s.Clock.Since(aws.ToTime(inst.LaunchTime)) >= s.bootDelay(id)
}

// boot registers the node of an instance, or records why it cannot.
func (s *Simulator) boot(ctx context.Context, inst simaws.Instance, providerID string) error {
	id := aws.ToString(inst.InstanceId)
	fail := func(why string) error {
		s.mu.Lock()
		s.failed[id] = why
		s.mu.Unlock()
		s.Account.SetConsoleOutput(id, why)
		s.Log.Info("kubelet did not register", "instance", id, "reason", why)
		return nil
	}
	mapped, err := s.roleMapped(ctx, inst.Role)
	if err != nil {
		return err
	}
	if !mapped {
		return fail(fmt.Sprintf("kubelet: Unauthorized: the instance's role %s is not mapped in the cluster's aws-auth ConfigMap (mapRoles) or an access entry, so the API server refuses the node's credentials", inst.Role))
	}
	family := s.Account.Family(inst)
	reg, err := Read(family, inst.UserData)
	if err != nil {
		return fail(err.Error())
	}
	node := s.nodeFor(inst, providerID, reg, family)
	if reg.Windows {
		s.mu.Lock()
		s.windowsNodes[node.Name] = true
		s.mu.Unlock()
	}
	if err := s.Kube.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("registering node %s: %w", node.Name, err)
	}
	return s.heartbeat(ctx, node)
}

// roleMapped looks for an EC2_LINUX access entry of the role, then for
// the role with the system:nodes group in aws-auth mapRoles.
func (s *Simulator) roleMapped(ctx context.Context, role string) (bool, error) {
	arn := s.Account.RoleARN(role)
	if t, ok := s.Account.AccessEntryType(arn); ok && (t == "EC2_LINUX" || t == "EC2_WINDOWS") {
		return true, nil
	}
	cm := &corev1.ConfigMap{}
	if err := s.reader().Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "aws-auth"}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return mapsToNodes(cm.Data["mapRoles"], arn), nil
}

// mapsToNodes reports whether aws-auth's mapRoles puts the role in the
// system:nodes group. An unreadable mapping maps nothing.
func mapsToNodes(mapRoles, arn string) bool {
	var entries []struct {
		RoleARN string   `json:"rolearn"`
		Groups  []string `json:"groups"`
	}
	if err := yaml.Unmarshal([]byte(mapRoles), &entries); err != nil {
		return false
	}
	for _, e := range entries {
		if e.RoleARN == arn && slices.Contains(e.Groups, "system:nodes") {
			return true
		}
	}
	return false
}

// nodeFor builds the Node a kubelet registers: the name and provider ID of
// the instance, its labels and the well-known ones, the registration taints
// (plus the cloud provider's uninitialized taint), capacity and
// allocatable of the instance type.
func (s *Simulator) nodeFor(inst simaws.Instance, providerID string, reg *Registration, family string) *corev1.Node {
	windowsBuild := awsv1.WindowsBuild(family)
	name := aws.ToString(inst.PrivateDnsName)
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	os := "linux"
	if reg.Windows {
		os = "windows"
	}
	labels := map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: os, corev1.LabelTopologyZone: zone,
		corev1.LabelTopologyRegion: account.Region, corev1.LabelInstanceTypeStable: string(inst.InstanceType),
	}
	spec := s.catalog[string(inst.InstanceType)]
	if reg.Windows && windowsBuild != "" {
		labels[corev1.LabelWindowsBuild] = windowsBuild // the kubelet reads it from the host
	}
	for k, v := range reg.Labels {
		labels[k] = v
	}
	labels[corev1.LabelArchStable] = spec.Arch
	// The deprecated labels the kubelet (os, arch) and the cloud node
	// controller (zone, region, instance type) still set beside the
	// current ones.
	labels["beta.kubernetes.io/os"], labels["beta.kubernetes.io/arch"] = os, spec.Arch
	labels[corev1.LabelFailureDomainBetaZone], labels[corev1.LabelFailureDomainBetaRegion] = zone, account.Region
	labels[corev1.LabelInstanceType] = string(inst.InstanceType)
	taints := append([]corev1.Taint(nil), reg.Taints...)
	if reg.ExternalCloudProvider {
		taints = append(taints, corev1.Taint{Key: UninitializedTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	// The kubelet keeps what it was told to reserve: the node's
	// allocatable follows the user data, whatever nodewright planned.
	// Its pod count is the one it runs with (a --max-pods flag
	// included); its kube-reserved was worked out by the bootstrap from
	// the configuration's.
	reserved := reg.Reserved
	needs := instancetypes.Needs{Windows: reg.Windows && spec.Arch == "amd64", EphemeralStorage: launchedEphemeral(inst, family), Family: family}
	it := instancetypes.InstanceTypes([]instancetypes.Spec{spec}, instancetypes.Options{Zones: []string{zone}, Kubelet: &reserved, Needs: needs})[0]
	capacity, allocatable := it.Capacity.List(), it.Allocatable.List()
	for name, q := range allocatable {
		if q.Sign() < 0 {
			allocatable[name] = *resource.NewQuantity(0, q.Format) // the kubelet reserves no more than there is
		}
	}
	if reg.MaxPods > 0 {
		capacity[corev1.ResourcePods], allocatable[corev1.ResourcePods] = *resource.NewQuantity(int64(reg.MaxPods), resource.DecimalSI), *resource.NewQuantity(int64(reg.MaxPods), resource.DecimalSI)
	}
	// The EFA device plugin advertises the EFA interfaces the instance
	// was launched with.
	delete(capacity, instancetypes.EFAResource)
	delete(allocatable, instancetypes.EFAResource)
	if n := efaInterfaces(inst); n > 0 {
		capacity[instancetypes.EFAResource], allocatable[instancetypes.EFAResource] = *resource.NewQuantity(int64(n), resource.DecimalSI), *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: allocatable,
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.3", OperatingSystem: os, Architecture: spec.Arch, BootID: bootID(inst)},
		},
	}
}

// bootID is the boot ID of an instance's current boot: another after
// each reboot.
func bootID(inst simaws.Instance) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", aws.ToString(inst.InstanceId), inst.Reboots))
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

func reportsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// goDown reports a node whose instance is rebooting not Ready, as
// kube-controller-manager would once its kubelet stops reporting.
func (s *Simulator) goDown(ctx context.Context, node *corev1.Node) error {
	before := node.DeepCopy()
	now := metav1.NewTime(s.Clock.Now())
	for i := range node.Status.Conditions {
		if c := &node.Status.Conditions[i]; c.Type == corev1.NodeReady {
			c.Status, c.Reason, c.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "the simulated kubelet stopped posting node status: the instance is rebooting"
			c.LastHeartbeatTime, c.LastTransitionTime = now, now
		}
	}
	return client.IgnoreNotFound(s.Kube.Status().Patch(ctx, node, client.MergeFrom(before)))
}

// bootAgain brings a rebooted node back: the reboot mended what the
// node's ConditionsAnnotation had it report, and its kubelet reports a
// new boot ID and Ready.
func (s *Simulator) bootAgain(ctx context.Context, inst simaws.Instance, node *corev1.Node) error {
	if _, ok := node.Annotations[ConditionsAnnotation]; ok {
		before := node.DeepCopy()
		delete(node.Annotations, ConditionsAnnotation)
		if err := s.Kube.Patch(ctx, node, client.MergeFrom(before)); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	before := node.DeepCopy()
	node.Status.NodeInfo.BootID = bootID(inst)
	if err := s.Kube.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.Log.Info("node booted again", "Node", node.Name, "instance", aws.ToString(inst.InstanceId), "bootID", node.Status.NodeInfo.BootID)
	return s.heartbeat(ctx, node)
}

// ConditionsAnnotation on a Node makes its simulated kubelet report those
// conditions ("Ready=False", "KernelReady=False,ContainerRuntimeReady=False",
// a reason after a slash: "AcceleratedHardwareReady=False/NvidiaXID63Error")
// instead of a healthy node's: a kubelet or node monitoring agent that
// found its node broken.
const ConditionsAnnotation = "sim.nodewright.dev/conditions"

// reported are the conditions a node's kubelet reports: Ready=True unless
// the node's ConditionsAnnotation says otherwise, and what it adds.
func reported(node *corev1.Node) map[corev1.NodeConditionType]corev1.ConditionStatus {
	out := map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue}
	for k, v := range reasons(node) {
		out[k] = v.status
	}
	return out
}

type reportedCondition struct {
	status corev1.ConditionStatus
	reason string
}

// reasons are the conditions the node's ConditionsAnnotation names, with
// their reasons ("SimulatedKubelet" unless it gives one).
func reasons(node *corev1.Node) map[corev1.NodeConditionType]reportedCondition {
	out := map[corev1.NodeConditionType]reportedCondition{}
	for _, kv := range strings.Split(node.Annotations[ConditionsAnnotation], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k != "" {
			status, reason, _ := strings.Cut(v, "/")
			out[corev1.NodeConditionType(k)] = reportedCondition{corev1.ConditionStatus(status), cmp.Or(reason, "SimulatedKubelet")}
		}
	}
	return out
}

// heartbeatDue reports whether a node's conditions are to be reported
// again: every Heartbeat, and at once when they are not what its kubelet
// reports.
func (s *Simulator) heartbeatDue(node *corev1.Node) bool {
	every := cmp.Or(s.Heartbeat, 10*time.Second)
	want := reported(node)
	fresh := 0
	for _, c := range node.Status.Conditions {
		st, ok := want[c.Type]
		if !ok || st != c.Status {
			return true
		}
		if s.Clock.Since(c.LastHeartbeatTime.Time) < every {
			fresh++
		}
	}
	return fresh != len(want) || len(node.Status.Conditions) != len(want)
}

// heartbeat reports a node's conditions, as the kubelet's status updates
// would: Ready, unless told otherwise.
func (s *Simulator) heartbeat(ctx context.Context, node *corev1.Node) error {
	now := metav1.NewTime(s.Clock.Now())
	before := node.DeepCopy()
	want, why := reported(node), reasons(node)
	conds := make([]corev1.NodeCondition, 0, len(want))
	for _, t := range slices.Sorted(maps.Keys(want)) {
		c := corev1.NodeCondition{Type: t, Status: want[t], Reason: cmp.Or(why[t].reason, "SimulatedKubelet"), Message: "the simulated kubelet reports " + string(t) + "=" + string(want[t]),
			LastHeartbeatTime: now, LastTransitionTime: now}
		if t == corev1.NodeReady && want[t] == corev1.ConditionTrue {
			c.Reason, c.Message = "KubeletReady", "kubelet is posting ready status"
		}
		for _, old := range node.Status.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		conds = append(conds, c)
	}
	node.Status.Conditions = conds
	if len(node.Status.Allocatable) == 0 {
		return nil
	}
	return client.IgnoreNotFound(s.Kube.Status().Patch(ctx, node, client.MergeFrom(before)))
}

// PodWork indexes the pods on simulated nodes by what their kubelet has
// to do: "start" (not Running yet) or "remove" (being deleted).
const PodWork = "simulated.kubelet/work"

// IndexPods registers the PodWork index of pods on a cache.
func IndexPods(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Pod{}, PodWork, func(o client.Object) []string {
		pod := o.(*corev1.Pod)
		switch {
		case !onSimulatedNode(pod):
			return nil
		case !pod.DeletionTimestamp.IsZero():
			return []string{"remove"}
		case pod.Status.Phase != corev1.PodRunning:
			return []string{"start"}
		}
		return nil
	})
}

// runPods marks the pods bound to simulated nodes Running and Ready, and
// removes the pods being deleted from them, on g.
func (s *Simulator) runPods(ctx context.Context, g *errgroup.Group) error {
	pods, err := s.podsWithWork(ctx)
	if err != nil {
		return err
	}
	remove, start := s.podsToChange(pods)
	for _, pod := range remove {
		g.Go(func() error {
			return client.IgnoreNotFound(s.Kube.Delete(ctx, pod.DeepCopy(), client.GracePeriodSeconds(0)))
		})
	}
	start, err = s.withAddresses(ctx, g, start)
	if err != nil {
		return err
	}
	for _, pod := range start {
		g.Go(func() error { return s.start(ctx, pod.DeepCopy()) })
	}
	return nil
}

// podsWithWork are the pods the kubelets may have to start or remove: on
// a Reader, those PodWork indexes (the cache's objects, copied before any
// change); without one, every pod.
func (s *Simulator) podsWithWork(ctx context.Context) ([]corev1.Pod, error) {
	if s.Reader == nil {
		all := &corev1.PodList{}
		if err := s.Kube.List(ctx, all); err != nil {
			return nil, err
		}
		return all.Items, nil
	}
	var pods []corev1.Pod
	for _, work := range []string{"remove", "start"} {
		some := &corev1.PodList{}
		if err := s.Reader.List(ctx, some, client.MatchingFields{PodWork: work}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the pods to %s (a Reader needs IndexPods' index): %w", work, err)
		}
		pods = append(pods, some.Items...)
	}
	return pods, nil
}

// podsToChange sorts out the pods on simulated nodes: those being deleted
// are to be removed, those not yet running (nor just started, which the
// cache may not show yet) to be started. It remembers the ones started.
func (s *Simulator) podsToChange(pods []corev1.Pod) (remove, start []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := make(map[types.UID]string, len(s.started))
	for i := range pods {
		pod := &pods[i]
		switch {
		case !onSimulatedNode(pod):
		case !pod.DeletionTimestamp.IsZero():
			remove = append(remove, pod) // the kubelet has stopped the containers: the pod goes
		case pod.Status.Phase == corev1.PodRunning:
		case s.started[pod.UID] == pod.ResourceVersion:
			live[pod.UID] = pod.ResourceVersion // the cache has not caught up with the patch yet
		default:
			live[pod.UID] = pod.ResourceVersion
			start = append(start, pod)
		}
	}
	s.started = live
	return remove, start
}

// WindowsIPAMKey is the setting of the VPC CNI's ConfigMap
// (kube-system/amazon-vpc-cni) that gives Windows pods IP addresses.
const WindowsIPAMKey = "enable-windows-ipam"

// withAddresses keeps the pods that get an IP address: a pod on a
// Windows node gets one only when the VPC CNI's Windows IPAM is on;
// otherwise its sandbox is never created (a warning event says so, once
// per pod) and it stays Pending, as on EKS.
func (s *Simulator) withAddresses(ctx context.Context, g *errgroup.Group, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	s.mu.Lock()
	var windows []*corev1.Pod
	out := slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool {
		if s.windowsNodes[p.Spec.NodeName] {
			windows = append(windows, p)
			return true
		}
		return false
	})
	s.mu.Unlock()
	if len(windows) == 0 {
		return out, nil
	}
	cm := &corev1.ConfigMap{}
	err := s.Kube.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "amazon-vpc-cni"}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading ConfigMap kube-system/amazon-vpc-cni: %w", err)
	}
	if err == nil && cm.Data[WindowsIPAMKey] == "true" {
		return append(out, windows...), nil
	}
	for _, pod := range windows {
		s.mu.Lock()
		told := s.noIP[pod.UID]
		s.noIP[pod.UID] = true
		delete(s.started, pod.UID) // not started: tried again next tick
		s.mu.Unlock()
		if !told {
			g.Go(func() error { return s.noAddress(ctx, pod) })
		}
	}
	return out, nil
}

// noAddress records why a pod on a Windows node does not start.
func (s *Simulator) noAddress(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.NewTime(s.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Type:           corev1.EventTypeWarning, Reason: "FailedCreatePodSandBox",
		Message: "Failed to create pod sandbox: the VPC CNI assigns no IP address to pods on Windows nodes: ConfigMap kube-system/amazon-vpc-cni does not set " + WindowsIPAMKey + `: "true"`,
		Source:  corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	return s.Kube.Create(ctx, ev)
}

// onSimulatedNode reports whether a pod is bound to a node of the
// simulated instances, which are named ip-....
func onSimulatedNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && strings.HasPrefix(pod.Spec.NodeName, "ip-")
}

// start marks a pod Running and Ready.
func (s *Simulator) start(ctx context.Context, pod *corev1.Pod) error {
	before := pod.DeepCopy()
	now := metav1.NewTime(s.Clock.Now())
	s.Log.V(1).Info("started pod", "pod", pod.Namespace+"/"+pod.Name, "Node", pod.Spec.NodeName, "nominated", pod.Status.NominatedNodeName)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = append(pod.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now})
	return client.IgnoreNotFound(s.Kube.Status().Patch(ctx, pod, client.MergeFrom(before)))
}

// CloudControllerManager removes the uninitialized taint from nodes after
// Delay, as the cloud controller manager does once it has initialised a
// node; Enabled false simulates one that is not running (S2).
type CloudControllerManager struct {
	Kube client.Client
	// Reader lists the nodes; Kube when nil.
	Reader  client.Reader
	Clock   clock.PassiveClock
	Delay   time.Duration
	Enabled bool
}

// Tick initialises the nodes that are due.
func (c *CloudControllerManager) Tick(ctx context.Context) error {
	if !c.Enabled {
		return nil
	}
	nodes := &corev1.NodeList{}
	if err := c.reader().List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if c.Clock.Since(node.CreationTimestamp.Time) < c.Delay {
			continue
		}
		if !slices.ContainsFunc(node.Spec.Taints, isUninitialized) {
			continue
		}
		g.Go(func() error { return c.removeTaint(gctx, node.Name) })
	}
	return g.Wait()
}

// reader is what lists the nodes: Reader, else Kube.
func (c *CloudControllerManager) reader() client.Reader {
	if c.Reader != nil {
		return c.Reader
	}
	return c.Kube
}

// removeTaint removes the uninitialized taint as the cloud node
// controller does: on the node read afresh, written back with its
// resourceVersion, read and written again when others changed the node
// meanwhile (nodewright taking it over, the kubelet's heartbeat).
func (c *CloudControllerManager) removeTaint(ctx context.Context, name string) error {
	return client.IgnoreNotFound(retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node := &corev1.Node{}
		if err := c.Kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), isUninitialized)
		if len(taints) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = taints
		return c.Kube.Update(ctx, node)
	}))
}

func isUninitialized(t corev1.Taint) bool { return t.Key == UninitializedTaint }

// launchedEphemeral is the size of the volume the kubelet's root
// directory is on, as the instance was launched: the family's ephemeral
// device (for a Custom AMI, the last volume); 0 when it launched without
// one (the image's own volume, which the catalog's default stands for).
func launchedEphemeral(inst simaws.Instance, family string) int64 {
	mappings := inst.Launched.BlockDeviceMappings
	device := instancetypes.EphemeralDevice(family)
	for i := range mappings {
		m := mappings[i]
		last := device == "" && i == len(mappings)-1
		if (aws.ToString(m.DeviceName) == device || last) && m.Ebs != nil && m.Ebs.VolumeSize != nil {
			return int64(*m.Ebs.VolumeSize) << 30
		}
	}
	return 0
}
