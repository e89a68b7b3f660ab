package doctor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
)

// CloudProviderTaint is the taint a kubelet with --cloud-provider=external
// registers with; the cloud controller manager removes it.
const CloudProviderTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// clusterStateRules read a cluster's nodes and NodeClaims: taints that
// should be gone, resources that never appeared, nodes that registered
// without karpenter.sh/unregistered.
func clusterStateRules(r *Report, in Input) error {
	gpus, err := gpuResources(in.Objects.Nodes)
	if err != nil {
		return err
	}
	checks := newNodeChecks(r, in, gpus)
	for _, node := range in.Objects.Nodes {
		checks.check(node)
	}
	nodeClaimStateRules(r, in)
	return nil
}

// gpuResources maps each instance type with GPUs to the resource its GPUs
// are reported as. The catalog is read only when there are nodes to check.
func gpuResources(nodes []*corev1.Node) (map[string]corev1.ResourceName, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	specs, err := instancetypes.Catalog()
	if err != nil {
		return nil, err
	}
	gpus := map[string]corev1.ResourceName{}
	for _, sp := range specs {
		if sp.GPU > 0 {
			if name := instancetypes.GPUResource(sp); name != "" {
				gpus[sp.Name] = name
			}
		}
	}
	return gpus, nil
}

// nodeChecks is what the node rules look up for every node, and the
// findings already made, so a node gets each code once.
type nodeChecks struct {
	r             *Report
	in            Input
	gpus          map[string]corev1.ResourceName
	claimOf       map[string]*v1.NodeClaim // by node name
	startupTaints map[string][]corev1.Taint
	seen          map[string]bool // code + node already reported
}

// newNodeChecks indexes the NodeClaims by node and the NodePools'
// startup taints by NodePool.
func newNodeChecks(r *Report, in Input, gpus map[string]corev1.ResourceName) *nodeChecks {
	c := &nodeChecks{r: r, in: in, gpus: gpus, claimOf: map[string]*v1.NodeClaim{},
		startupTaints: map[string][]corev1.Taint{}, seen: map[string]bool{}}
	for _, nc := range in.Objects.NodeClaims {
		if nc.Status.NodeName != "" {
			c.claimOf[nc.Status.NodeName] = nc
		}
	}
	for _, np := range in.Objects.NodePools {
		c.startupTaints[np.Name] = np.Spec.Template.Spec.StartupTaints
	}
	return c
}

// checkedNode is a node with what its findings name: the object (its
// NodeClaim when it has one), its age and a note on its NodeClaim's
// Initialized condition, if that is not True.
type checkedNode struct {
	node          *corev1.Node
	obj           string
	age           time.Duration
	conditionNote string
}

// report adds a finding unless the node already has one with its code.
func (c *nodeChecks) report(f Finding, node string) {
	if !c.seen[f.Code+"/"+node] {
		c.seen[f.Code+"/"+node] = true
		c.r.add(f)
	}
}

// check reports what keeps a node past its grace period from being
// usable. A node the cloud controller manager has not initialised gets
// only that finding.
func (c *nodeChecks) check(node *corev1.Node) {
	n := checkedNode{node: node, obj: "Node/" + node.Name}
	if nc := c.claimOf[node.Name]; nc != nil {
		n.obj = "NodeClaim/" + nc.Name
		n.conditionNote = initializedNote(nc)
	}
	n.age = c.in.Now.Sub(node.CreationTimestamp.Time)
	if n.age < c.in.Grace {
		return
	}
	if c.cloudProviderTaint(n) {
		return
	}
	if ready(node) {
		c.startupTaintsLeft(n)
	}
	c.missingResources(n)
}

// initializedNote quotes a NodeClaim's Initialized condition when it is
// there and not True.
func initializedNote(nc *v1.NodeClaim) string {
	if c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionInitialized); c != nil && c.Status != metav1.ConditionTrue {
		return fmt.Sprintf("; NodeClaim %s Initialized=False %s: %s", nc.Name, c.Reason, c.Message)
	}
	return ""
}

// cloudProviderTaint reports a node the cloud controller manager has not
// initialised, and whether it did.
func (c *nodeChecks) cloudProviderTaint(n checkedNode) bool {
	node := n.node
	t, ok := taint(node, CloudProviderTaint)
	if !ok {
		return false
	}
	c.report(Finding{Code: CodeCloudProviderTaint, Severity: Error, Object: n.obj,
		Message:  fmt.Sprintf("node %s still has taint %s %s after it registered: the cloud controller manager (aws-cloud-controller-manager, or the cloud-node controller of the control plane) removes it once it has initialised the node, and has not, so pods that do not tolerate it never schedule there", node.Name, t.ToString(), n.age.Round(time.Second)),
		Evidence: fmt.Sprintf("Node %s spec.taints: %s%s", node.Name, t.ToString(), n.conditionNote),
		Fix:      cloudProviderFix(node)}, node.Name)
	return true
}

// startupTaintsLeft reports the startup taints of the node's NodePool that
// a Ready node still has.
func (c *nodeChecks) startupTaintsLeft(n checkedNode) {
	node := n.node
	pool := node.Labels[v1.LabelNodePool]
	for _, st := range c.startupTaints[pool] {
		t, ok := taint(node, st.Key)
		if !ok || t.Effect != st.Effect {
			continue
		}
		c.report(Finding{Code: CodeStartupTaintNotRemoved, Severity: Warning, Object: n.obj,
			Message:  fmt.Sprintf("node %s is Ready but still has startup taint %s of NodePool %s %s after it registered, so nodewright does not count it initialized and pods that do not tolerate the taint do not schedule there", node.Name, t.ToString(), pool, n.age.Round(time.Second)),
			Evidence: fmt.Sprintf("Node %s spec.taints: %s%s", node.Name, t.ToString(), n.conditionNote),
			Fix:      fmt.Sprintf("check that the component that removes %s (a CNI agent or device plugin DaemonSet) runs on the node and tolerates its taints; if nothing removes it, take it out of NodePool %s's startupTaints", st.Key, pool)}, node.Name)
	}
}

// missingResources reports the extended resources the node should have
// and does not report.
func (c *nodeChecks) missingResources(n checkedNode) {
	node := n.node
	for _, name := range extendedResources(node, c.claimOf[node.Name], c.gpus) {
		if have, ok := node.Status.Allocatable[name]; ok && !have.IsZero() {
			continue
		}
		c.report(Finding{Code: CodeExtendedResource, Severity: Warning, Object: n.obj,
			Message:  fmt.Sprintf("node %s is a %s but does not report %s %s after it registered, so pods requesting it never schedule there and nodewright does not count the node initialized", node.Name, node.Labels[corev1.LabelInstanceTypeStable], name, n.age.Round(time.Second)),
			Evidence: fmt.Sprintf("Node %s status.allocatable has no %s%s", node.Name, name, n.conditionNote),
			Fix:      fmt.Sprintf("install the device plugin that advertises %s (for nvidia.com/gpu the NVIDIA device plugin DaemonSet, or the GPU operator) with tolerations for the node's taints, and use an AMI with the driver (the EKS-optimized accelerated AMIs)", name)}, node.Name)
	}
}

// nodeClaimStateRules read the NodeClaims' conditions: user data that
// drops karpenter.sh/unregistered, and why a NodeClaim whose node is not
// among the inputs never initialized.
func nodeClaimStateRules(r *Report, in Input) {
	nodes := map[string]bool{}
	for _, node := range in.Objects.Nodes {
		nodes[node.Name] = true
	}
	for _, nc := range in.Objects.NodeClaims {
		unregisteredTaintRule(r, nc)
		// The node rules cover NodeClaims whose node is among the
		// inputs; for the others the NodeClaim's condition says why.
		if !nodes[nc.Status.NodeName] {
			uninitializedClaimRule(r, in, nc)
		}
	}
}

// unregisteredTaintRule reports a NodeClaim whose node registered without
// karpenter.sh/unregistered.
func unregisteredTaintRule(r *Report, nc *v1.NodeClaim) {
	c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionRegistered)
	if c == nil || c.Reason != v1.ReasonUnregisteredTaintMissing {
		return
	}
	r.add(Finding{Code: CodeUserDataOverridesTaints, Severity: Error, Object: "NodeClaim/" + nc.Name, Message: c.Message,
		Evidence: fmt.Sprintf("NodeClaim %s Registered=%s %s", nc.Name, c.Status, c.Reason),
		Fix:      "fix the EC2NodeClass's userData so the node registers with karpenter.sh/unregistered:NoExecute (nodewright doctor -f on the EC2NodeClass names the line); move custom taints to the NodePool's startupTaints"})
}

// uninitializedClaimRule reports a NodeClaim that has not initialized for
// longer than the grace period, for the reasons the node rules cover.
func uninitializedClaimRule(r *Report, in Input, nc *v1.NodeClaim) {
	c := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionInitialized)
	if c == nil || c.Status == metav1.ConditionTrue || in.Now.Sub(c.LastTransitionTime.Time) < in.Grace {
		return
	}
	obj := "NodeClaim/" + nc.Name
	evidence := fmt.Sprintf("NodeClaim %s Initialized=False %s since %s", nc.Name, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339))
	switch {
	case c.Reason == v1.ReasonEphemeralTaintsExist && strings.Contains(c.Message, CloudProviderTaint):
		r.add(Finding{Code: CodeCloudProviderTaint, Severity: Error, Object: obj, Message: c.Message, Evidence: evidence,
			Fix: cloudProviderFix(nil)})
	case c.Reason == v1.ReasonStartupTaintsExist:
		r.add(Finding{Code: CodeStartupTaintNotRemoved, Severity: Warning, Object: obj, Message: c.Message, Evidence: evidence,
			Fix: "check that the component that removes the NodePool's startupTaint (a CNI or device plugin DaemonSet) runs on the node; if nothing removes it, take it out of the NodePool's startupTaints"})
	case c.Reason == v1.ReasonResourceNotRegistered:
		r.add(Finding{Code: CodeExtendedResource, Severity: Warning, Object: obj, Message: c.Message, Evidence: evidence,
			Fix: "install the device plugin that advertises the resource (for GPUs, the NVIDIA device plugin DaemonSet) with tolerations for the node's taints"})
	}
}

func taint(node *corev1.Node, key string) (corev1.Taint, bool) {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

func ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// extendedResources are the resources other than cpu, memory, pods and
// storage the node should report: from its NodeClaim's capacity, else from
// its instance type's GPUs.
func extendedResources(node *corev1.Node, nc *v1.NodeClaim, gpus map[string]corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	if nc != nil {
		for name, q := range nc.Status.Capacity {
			switch name {
			case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
			default:
				if !q.IsZero() {
					out = append(out, name)
				}
			}
		}
		return out
	}
	if gpu, ok := gpus[node.Labels[corev1.LabelInstanceTypeStable]]; ok {
		out = append(out, gpu)
	}
	return out
}

// registrationTimeoutRule reports NodePools whose NodeClaims keep timing
// out before their node registers, with the most likely cause: a finding
// already made for their EC2NodeClass, else what the instances printed.
func registrationTimeoutRule(ctx context.Context, r *Report, in Input) error {
	for _, np := range in.Objects.NodePools {
		c := meta.FindStatusCondition(np.Status.Conditions, v1.ConditionNodeRegistrationHealthy)
		if c == nil || c.Status != metav1.ConditionFalse {
			continue
		}
		class := ""
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			class = ref.Name
		}
		cause, fix := "", ""
		for _, f := range r.Findings {
			if f.Severity == Error && f.Object == "EC2NodeClass/"+class {
				cause = fmt.Sprintf("most likely cause: %s on EC2NodeClass %s: %s", f.Code, class, f.Message)
				fix = f.Fix
				break
			}
		}
		console, err := consoleOfUnregistered(ctx, in, func(nc *v1.NodeClaim) bool { return nc.Labels[v1.LabelNodePool] == np.Name })
		if err != nil {
			return err
		}
		if cause == "" && console != "" {
			cause = "most likely cause, from the instance's console: " + console
			fix = fmt.Sprintf("correct what the console names in EC2NodeClass %s (spec.userData, spec.role, spec.securityGroupSelectorTerms) or in the cluster's access entries", class)
		}
		if cause == "" {
			cause = "no user data or role problem was found"
			fix = fmt.Sprintf("allow the instances of EC2NodeClass %s to reach the API server: its spec.securityGroupSelectorTerms must select a group that allows 443 to the cluster, its spec.subnetSelectorTerms subnets need a route to the endpoint; aws ec2 get-console-output shows what the kubelet says", class)
		}
		evidence := fmt.Sprintf("NodePool %s NodeRegistrationHealthy=False %s: %s", np.Name, c.Reason, c.Message)
		if n, latest := timeoutEvents(in.Events, np.Name); n > 0 {
			evidence += fmt.Sprintf("; %d RegistrationTimeout event(s), the latest: %s", n, latest)
		}
		if console != "" {
			evidence += "; console: " + console
		}
		r.add(Finding{Code: CodeRegistrationTimeouts, Severity: Error, Object: "NodePool/" + np.Name,
			Message:  fmt.Sprintf("NodeClaims of NodePool %s keep timing out before their node registers; %s", np.Name, cause),
			Evidence: evidence,
			Fix:      fix + " (the NodePool launches again with back-off; its NodeRegistrationHealthy condition turns True once a node registers)"})
	}
	return nil
}

// timeoutEvents counts the RegistrationTimeout events of the NodePool's
// NodeClaims (named after the NodePool) and returns the latest message.
func timeoutEvents(events []corev1.Event, pool string) (int, string) {
	n, latest, at := 0, "", time.Time{}
	for _, e := range events {
		if e.Reason != v1.ReasonRegistrationTimeout || e.InvolvedObject.Kind != "NodeClaim" || !strings.HasPrefix(e.InvolvedObject.Name, pool+"-") {
			continue
		}
		n += max(int(e.Count), 1)
		if t := eventTime(e); !t.Before(at) {
			latest, at = e.Message, t
		}
	}
	return n, latest
}

func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// consoleOfUnregistered is the console output of a launched, unregistered
// instance of a NodeClaim that matches, when the account can be asked.
func consoleOfUnregistered(ctx context.Context, in Input, match func(*v1.NodeClaim) bool) (string, error) {
	if in.Cloud == nil || in.Cloud.Console == nil {
		return "", nil
	}
	for _, nc := range in.Objects.NodeClaims {
		if !match(nc) || nc.Status.ProviderID == "" || meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionRegistered) {
			continue
		}
		id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
		out, err := in.Cloud.Console.GetConsoleOutput(ctx, &ec2.GetConsoleOutputInput{InstanceId: aws.String(id), Latest: aws.Bool(true)})
		if err != nil {
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && strings.HasPrefix(apiErr.ErrorCode(), "InvalidInstanceID") {
				continue
			}
			return "", fmt.Errorf("reading the console output of instance %s (NodeClaim %s): %w", id, nc.Name, err)
		}
		text, err := base64.StdEncoding.DecodeString(aws.ToString(out.Output))
		if err != nil || len(text) == 0 {
			continue
		}
		return fmt.Sprintf("instance %s (NodeClaim %s): %s", id, nc.Name, lastLines(string(text), 5)), nil
	}
	return "", nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// cloudProviderFix is what to check when the cloud controller manager
// has not initialised a node: on EKS (its kubelet's version says so) it
// runs in the control plane, where no pod of it can be looked for.
func cloudProviderFix(node *corev1.Node) string {
	const keep = "; do not remove the taint by hand or tolerate it: the node's provider ID, addresses and zone labels come with its removal"
	eks := "on EKS the cloud controller manager runs in the control plane, not as a pod: check that the node's spec.providerID is aws:///<zone>/<instance-id> of an instance in the cluster's account and VPC, and that the node's name is the instance's private DNS name (as nodeadm and bootstrap.sh set it; a --hostname-override in the user data breaks the match)"
	own := "on a cluster you run yourself, make sure aws-cloud-controller-manager runs (kubectl -n kube-system get pods | grep cloud-controller) and can reach the node and the EC2 API"
	switch {
	case node != nil && strings.Contains(node.Status.NodeInfo.KubeletVersion, "-eks-"):
		return eks + keep
	case node != nil:
		return own + keep
	}
	return eks + "; " + own + keep
}
