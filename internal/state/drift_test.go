package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// classDrift is a cloud's drift rule for the test: an instance label
// "image" other than "new" has drifted.
type classDrift struct{}

func (classDrift) Drifted(_ *v1.NodeClaim, labels map[string]string, _ *cloudprovider.Instance) cloudprovider.Drift {
	if img, ok := labels["image"]; ok && img != "new" {
		return cloudprovider.Drift{Reason: "ImageDrifted", Message: "image " + img}
	}
	return cloudprovider.Drift{}
}

// Every node's drift and expiry are worked out by the snapshot from the
// objects alone — NodeClaims with their nodes, and nodes without one
// (a cluster dump of Nodes) — so the controller and the offline tools
// agree on what gets replaced.
func TestDriftAndExpiryInTheSnapshot(t *testing.T) {
	category := "karpenter.k8s.aws/instance-category"
	pool := func(mutate ...func(*v1.NodePool)) *v1.NodePool {
		np := nodePool("default", "default")
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: category, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}}
		np.Spec.Template.Spec.ExpireAfter = "720h"
		for _, m := range mutate {
			m(np)
		}
		return np
	}
	class := &cloudprovider.NodeClass{Kind: "EC2NodeClass", Name: "default",
		InstanceTypes: []*scheduling.InstanceType{{Name: "m5.large", Offerings: []scheduling.Offering{{Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand}}}},
		Stamp:         cloudprovider.Stamp{HashAnnotation: "class-hash", VersionAnnotation: "class-hash-version", Hash: "h2", Version: "v1"}, Drift: classDrift{}}
	made := func(np *v1.NodePool, c *cloudprovider.NodeClass) func(*v1.NodeClaim) {
		return func(nc *v1.NodeClaim) {
			stamped := state.NodeClaimFor(np, c, &scheduling.PlannedNodeClaim{})
			nc.Annotations, nc.Spec.ExpireAfter = stamped.Annotations, stamped.Spec.ExpireAfter
			nc.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
		}
	}
	labelled := func(kv ...string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			for i := 0; i < len(kv); i += 2 {
				n.Labels[kv[i]] = kv[i+1]
			}
		}
	}
	oldClass := *class
	oldClass.Stamp.Hash = "h1"
	drifted := func(nc *v1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "SubnetDrift", Message: "subnet"})
	}
	registered := labelled(v1.LabelRegistered, "true")
	for name, tc := range map[string]struct {
		pool    *v1.NodePool
		claim   []func(*v1.NodeClaim) // nil: a node without a NodeClaim
		node    []func(*corev1.Node)
		want    string
		expires bool
	}{
		"matches":                                {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), class)}},
		"instance type no longer offered there":  {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), class)}, node: []func(*corev1.Node){labelled(corev1.LabelTopologyZone, "us-east-1b")}, want: v1.ReasonInstanceTypeNotFound},
		"instance type no longer offered":        {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), class)}, node: []func(*corev1.Node){labelled(corev1.LabelInstanceTypeStable, "m4.large")}, want: v1.ReasonInstanceTypeNotFound},
		"requirements no longer admit it":        {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), class)}, node: []func(*corev1.Node){labelled(category, "c")}, want: v1.ReasonRequirementsDrifted},
		"template changed since":                 {pool: pool(func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "b"} }), claim: []func(*v1.NodeClaim){made(pool(), class)}, want: v1.ReasonNodePoolDrifted},
		"node class changed since":               {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), &oldClass)}, want: v1.ReasonNodeClassDrifted},
		"the cloud's rule":                       {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), class)}, node: []func(*corev1.Node){labelled("image", "old")}, want: "ImageDrifted"},
		"what only the lifecycle sees":           {pool: pool(), claim: []func(*v1.NodeClaim){made(pool(), class), drifted}, want: "SubnetDrift"},
		"node only, initialized":                 {pool: pool(), node: []func(*corev1.Node){registered, labelled(v1.LabelInitialized, "true", category, "c")}, want: v1.ReasonRequirementsDrifted},
		"node only, not initialized":             {pool: pool(), node: []func(*corev1.Node){registered, labelled(category, "c")}},
		"node only, never registered by one":     {pool: pool(), node: []func(*corev1.Node){labelled(category, "c")}, want: v1.ReasonRequirementsDrifted},
		"NodeClaim past its expireAfter":         {pool: pool(func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = "1h" }), claim: []func(*v1.NodeClaim){made(pool(func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = "1h" }), class)}, expires: true},
		"node only, past its pool's expireAfter": {pool: pool(func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = "30m" }), node: []func(*corev1.Node){labelled(v1.LabelInitialized, "true")}, expires: true},
	} {
		// An m5.large on demand in us-east-1a, unless the case says otherwise.
		launched := labelled(category, "m", corev1.LabelInstanceTypeStable, "m5.large", corev1.LabelTopologyZone, "us-east-1a", v1.LabelCapacityType, v1.CapacityTypeOnDemand)
		objs := state.Objects{NodePools: []*v1.NodePool{tc.pool}, Nodes: []*corev1.Node{node("n", "default", append([]func(*corev1.Node){launched}, tc.node...)...)}}
		if tc.claim != nil {
			objs.NodeClaims = []*v1.NodeClaim{claim("c", "default", append([]func(*v1.NodeClaim){launchedAs("n"), initialized(now.Add(-time.Hour))}, tc.claim...)...)}
			objs.NodeClaims[0].Spec.NodeClassRef = tc.pool.Spec.Template.Spec.NodeClassRef
			// The launch labelled the NodeClaim as its node.
			for k, v := range objs.Nodes[0].Labels {
				objs.NodeClaims[0].Labels[k] = v
			}
		}
		s := state.Build(objs, state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": class}, NodesWithoutClaims: true})
		n := s.Nodes[0]
		if got := n.Drift().Reason; got != tc.want {
			t.Errorf("%s: drift %q (%s), want %q", name, got, n.Drift().Message, tc.want)
		}
		at, ok := n.ExpiresAt()
		if expired := ok && !now.Before(at); expired != tc.expires {
			t.Errorf("%s: expired %v (at %s), want %v", name, expired, at, tc.expires)
		}
	}
}

// In a live cluster a node of a NodePool without a NodeClaim is not
// nodewright's to replace: it neither drifts nor expires, whatever its
// labels and age (a dump that leaves NodeClaims out says so, and its
// nodes stand for them).
func TestNodesWithoutClaimsOnlyInDumps(t *testing.T) {
	np := nodePool("default", "default")
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}}
	np.Spec.Template.Spec.ExpireAfter = "30m"
	objs := state.Objects{NodePools: []*v1.NodePool{np}, Nodes: []*corev1.Node{node("n", "default", func(n *corev1.Node) {
		n.Labels["karpenter.k8s.aws/instance-category"] = "c"
		n.Labels[v1.LabelInitialized] = "true"
	})}}
	for _, dump := range []bool{false, true} {
		n := state.Build(objs, state.Options{Now: now, NodesWithoutClaims: dump}).Nodes[0]
		_, expires := n.ExpiresAt()
		if n.Drift().Drifted() != dump || expires != dump {
			t.Errorf("dump %v: drifted %v, expires %v; want both %v", dump, n.Drift().Drifted(), expires, dump)
		}
	}
}

// A NodeClaim launched from an old template has drifted before its node
// initializes, as the reference marks it; one not launched yet has not.
func TestLaunchedNodeClaimsDrift(t *testing.T) {
	old := nodePool("default", "default")
	changed := nodePool("default", "default")
	changed.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "b"}
	class := &cloudprovider.NodeClass{Kind: "EC2NodeClass", Name: "default", InstanceTypes: []*scheduling.InstanceType{{Name: "m5.large"}}}
	stamped := state.NodeClaimFor(old, class, &scheduling.PlannedNodeClaim{})
	for name, tc := range map[string]struct {
		mutate []func(*v1.NodeClaim)
		want   bool
	}{
		"launched, no node yet": {mutate: []func(*v1.NodeClaim){launchedAs("n")}, want: true},
		"not launched":          {},
	} {
		nc := claim("c", "default", tc.mutate...)
		nc.Annotations, nc.Spec.NodeClassRef = stamped.Annotations, changed.Spec.Template.Spec.NodeClassRef
		s := state.Build(state.Objects{NodePools: []*v1.NodePool{changed}, NodeClaims: []*v1.NodeClaim{nc}},
			state.Options{Now: now, NodeClasses: map[string]*cloudprovider.NodeClass{"default": class}})
		if got := s.Nodes[0].Drift().Reason == v1.ReasonNodePoolDrifted; got != tc.want {
			t.Errorf("%s: drifted %t (%+v), want %t", name, got, s.Nodes[0].Drift(), tc.want)
		}
	}
}
