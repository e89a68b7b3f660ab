package provisioning

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/nodepool"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// InstanceTypeSource gives the instance types and AMIs an EC2NodeClass can
// launch.
type InstanceTypeSource interface {
	InstanceTypes(ctx context.Context, class *awsv1.EC2NodeClass) ([]*scheduling.InstanceType, error)
}

// Provisioner batches pending pods and creates the NodeClaims the
// scheduling engine plans for them.
type Provisioner struct {
	Client   client.Client
	Types    InstanceTypeSource
	AMIs     func(*awsv1.EC2NodeClass) []scheduling.AMI
	Recorder record.EventRecorder
	Batcher  *Batcher
	// Retry is how long to wait before deciding again when a NodeClaim is
	// still launching or pods stayed pending.
	Retry   time.Duration
	Clock   clock.PassiveClock
	Metrics *metrics.Metrics
	Log     logr.Logger
}

// SetupWithManager watches pods (pending ones open a batch) and deleted
// NodeClaims and nodes (their pods need a new plan), and runs the batch
// loop with the manager.
func (p *Provisioner) SetupWithManager(mgr manager.Manager) error {
	deleted := handler.Funcs{DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		p.Batcher.Trigger()
	}}
	if err := builder.ControllerManagedBy(mgr).Named("provisioner.trigger").For(&corev1.Pod{}).
		Watches(&v1.NodeClaim{}, deleted).Watches(&corev1.Node{}, deleted).
		Complete(reconcile.Func(p.podChanged)); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(p.run))
}

func (p *Provisioner) podChanged(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := p.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pending(pod) {
		p.Batcher.Trigger()
	}
	return reconcile.Result{}, nil
}

func (p *Provisioner) run(ctx context.Context) error {
	for p.Batcher.Wait(ctx) {
		retry, err := p.Provision(ctx)
		if err != nil {
			p.Log.Error(err, "provisioning")
			retry = true
		}
		if retry {
			go func() {
				select {
				case <-time.After(p.Retry):
					p.Batcher.Trigger()
				case <-ctx.Done():
				}
			}()
		}
	}
	return nil
}

// pending reports a pod the scheduler could not place and nodewright
// should: not bound, marked Unschedulable, not a DaemonSet's, not done.
func pending(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return false
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// Provision makes one decision. It returns retry=true when it had to wait
// (a NodeClaim without a provider ID yet) or left pods pending.
func (p *Provisioner) Provision(ctx context.Context) (bool, error) {
	claims := &v1.NodeClaimList{}
	if err := p.Client.List(ctx, claims); err != nil {
		return false, err
	}
	for _, nc := range claims.Items {
		if nc.Status.ProviderID == "" && nc.DeletionTimestamp.IsZero() {
			return true, nil // deciding now could launch twice
		}
	}
	pods := &corev1.PodList{}
	if err := p.Client.List(ctx, pods); err != nil {
		return false, err
	}
	in := scheduling.Input{}
	bound := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		switch {
		case pending(pod):
			in.Pods = append(in.Pods, pod)
		case pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			bound[pod.Spec.NodeName] = append(bound[pod.Spec.NodeName], pod)
		}
	}
	if len(in.Pods) == 0 {
		return false, nil
	}
	pools, skipped, err := p.nodePools(ctx, claims.Items)
	if err != nil {
		return false, err
	}
	in.NodePools = pools
	nodes := &corev1.NodeList{}
	if err := p.Client.List(ctx, nodes); err != nil {
		return false, err
	}
	claimOf := map[string]*v1.NodeClaim{}
	for i := range claims.Items {
		claimOf[claims.Items[i].Status.ProviderID] = &claims.Items[i]
	}
	registered := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		registered[n.Spec.ProviderID] = true
		if n.Spec.Unschedulable || !n.DeletionTimestamp.IsZero() {
			continue
		}
		node := scheduling.NodeFromObject(n, bound[n.Name])
		if nc, ok := claimOf[n.Spec.ProviderID]; ok && !meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionInitialized) {
			node.Taints = initializingTaints(n.Spec.Taints, nc)
		}
		in.Nodes = append(in.Nodes, node)
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if registered[nc.Status.ProviderID] || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		in.Nodes = append(in.Nodes, inFlight(nc))
	}
	daemonSets := &appsv1.DaemonSetList{}
	if err := p.Client.List(ctx, daemonSets); err != nil {
		return false, err
	}
	for i := range daemonSets.Items {
		in.DaemonSets = append(in.DaemonSets, &daemonSets.Items[i])
	}
	started := p.Clock.Now()
	plan := scheduling.Solve(in)
	took := p.Clock.Since(started)
	p.Metrics.Decision(took, len(plan.Unschedulable))
	p.Log.Info("computed a plan", "pendingPods", len(in.Pods), "newNodeClaims", len(plan.NodeClaims), "unschedulablePods", len(plan.Unschedulable), "duration", took)
	byName := map[string]*v1.NodePool{}
	poolList := &v1.NodePoolList{}
	if err := p.Client.List(ctx, poolList); err != nil {
		return false, err
	}
	for i := range poolList.Items {
		byName[poolList.Items[i].Name] = &poolList.Items[i]
	}
	for _, planned := range plan.NodeClaims {
		nc := nodeClaimFor(byName[planned.NodePool], planned)
		if err := p.Client.Create(ctx, nc); err != nil {
			return false, fmt.Errorf("creating a NodeClaim for NodePool %s: %w", planned.NodePool, err)
		}
		p.Metrics.NodeClaimCreated(planned.NodePool)
		p.Log.Info("created NodeClaim", "NodeClaim", nc.Name, "nodePool", planned.NodePool, "pods", len(planned.Pods),
			"cheapestInstanceType", planned.InstanceType.Name, "instanceTypes", len(planned.InstanceTypes), "requests", planned.Requests.String())
		for _, pod := range planned.Pods {
			p.Recorder.Eventf(pod, corev1.EventTypeNormal, "Nominated", "pod should schedule on NodeClaim %s (%s)", nc.Name, planned.InstanceType.Name)
		}
	}
	for _, u := range plan.Unschedulable {
		reason := u.Reason
		switch {
		case skipped != "" && len(pools) == 0:
			reason = skipped
		case skipped != "":
			reason += "; " + skipped
		}
		p.Recorder.Event(u.Pod, corev1.EventTypeWarning, "FailedScheduling", "nodewright cannot launch a node for this pod: "+reason)
		p.Log.V(1).Info("pod cannot be scheduled", "pod", client.ObjectKeyFromObject(u.Pod), "reason", reason)
	}
	return len(plan.Unschedulable) > 0, nil
}

// nodePools converts the NodePools whose EC2NodeClass is ready; the others
// are described for the pods' events.
func (p *Provisioner) nodePools(ctx context.Context, claims []v1.NodeClaim) ([]*scheduling.NodePool, string, error) {
	pools := &v1.NodePoolList{}
	if err := p.Client.List(ctx, pools); err != nil {
		return nil, "", err
	}
	usage := map[string]corev1.ResourceList{}
	for _, nc := range claims {
		pool := nc.Labels[v1.LabelNodePool]
		usage[pool] = scheduling.AddNodeUsage(usage[pool], nc.Status.Capacity)
	}
	var out []*scheduling.NodePool
	var skipped []string
	sort.Slice(pools.Items, func(i, j int) bool { return pools.Items[i].Name < pools.Items[j].Name })
	for i := range pools.Items {
		np := &pools.Items[i]
		if !np.DeletionTimestamp.IsZero() {
			continue
		}
		if until, failures := nodepool.BackedOffUntil(np); p.Clock.Now().Before(until) {
			skipped = append(skipped, fmt.Sprintf("NodePool %s: launches back off until %s after %d registration timeout(s) in a row (see its NodeRegistrationHealthy condition)",
				np.Name, until.UTC().Format(time.RFC3339), failures))
			continue
		}
		ref := np.Spec.Template.Spec.NodeClassRef
		class := &awsv1.EC2NodeClass{}
		if err := p.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, "", err
			}
			skipped = append(skipped, fmt.Sprintf("NodePool %s: EC2NodeClass %s does not exist", np.Name, ref.Name))
			continue
		}
		if c := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			why := "has not been resolved yet"
			if c != nil {
				why = "is not ready: " + c.Message
				for _, cc := range class.Status.Conditions {
					if cc.Type != awsv1.ConditionReady && cc.Status == metav1.ConditionFalse {
						why = fmt.Sprintf("is not ready (%s: %s)", cc.Reason, cc.Message)
						break
					}
				}
			}
			skipped = append(skipped, fmt.Sprintf("NodePool %s: EC2NodeClass %s %s", np.Name, ref.Name, why))
			continue
		}
		types, err := p.Types.InstanceTypes(ctx, class)
		if err != nil {
			return nil, "", err
		}
		out = append(out, scheduling.NodePoolFromObject(np, types, p.AMIs(class), usage[np.Name]))
	}
	joined := ""
	for i, s := range skipped {
		if i > 0 {
			joined += "; "
		}
		joined += s
	}
	return out, joined, nil
}

// initializingTaints are the taints a node still initializing will keep:
// the taints that other components remove once it is ready (startup and
// known ephemeral taints) are left out, so pods are planned onto it rather
// than onto new NodeClaims.
func initializingTaints(taints []corev1.Taint, nc *v1.NodeClaim) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if ephemeralTaint(t.Key) || startupTaint(nc, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func ephemeralTaint(key string) bool {
	switch key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, "node.cloudprovider.kubernetes.io/uninitialized", v1.TaintKeyUnregistered:
		return true
	}
	return strings.HasPrefix(key, "readiness.k8s.io/")
}

func startupTaint(nc *v1.NodeClaim, t corev1.Taint) bool {
	for _, s := range nc.Spec.StartupTaints {
		if s.Key == t.Key && s.Effect == t.Effect {
			return true
		}
	}
	return false
}

// inFlight is a launched NodeClaim whose node has not registered: pods
// can be planned onto it.
func inFlight(nc *v1.NodeClaim) *scheduling.Node {
	reqs := scheduling.LabelRequirements(nc.Labels)
	for _, r := range nc.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	alloc, _ := scheduling.ParseResources(nc.Status.Allocatable)
	taints := append([]corev1.Taint(nil), nc.Spec.Taints...)
	return &scheduling.Node{Name: nc.Name, Requirements: reqs, Taints: taints, Allocatable: alloc}
}

// nodeClaimFor makes the NodeClaim of a planned node.
func nodeClaimFor(np *v1.NodePool, planned *scheduling.PlannedNodeClaim) *v1.NodeClaim {
	labels := map[string]string{v1.LabelNodePool: np.Name}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range np.Spec.Template.ObjectMeta.Annotations {
		annotations[k] = v
	}
	minValues := map[string]*int{}
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.MinValues != nil {
			minValues[r.Key] = r.MinValues
		}
	}
	selectors := planned.Requirements.NodeSelectorRequirements()
	reqs := make([]v1.NodeSelectorRequirementWithMinValues, 0, len(selectors))
	for _, r := range selectors {
		reqs = append(reqs, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values, MinValues: minValues[r.Key]})
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: np.Name + "-", Labels: labels, Annotations: annotations},
		Spec: v1.NodeClaimSpec{
			Requirements:           reqs,
			Resources:              v1.ResourceRequirements{Requests: planned.Requests.List()},
			Taints:                 np.Spec.Template.Spec.Taints,
			StartupTaints:          np.Spec.Template.Spec.StartupTaints,
			NodeClassRef:           np.Spec.Template.Spec.NodeClassRef,
			ExpireAfter:            np.Spec.Template.Spec.ExpireAfter,
			TerminationGracePeriod: np.Spec.Template.Spec.TerminationGracePeriod,
		},
	}
}
