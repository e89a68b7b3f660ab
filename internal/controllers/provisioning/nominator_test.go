package provisioning_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodewright/nodewright/internal/controllers/provisioning"
	"github.com/nodewright/nodewright/internal/sim/harness/controlplane"
	"github.com/nodewright/nodewright/internal/sim/harness/optest"
)

// A decision made while more pods than MaxPods wait for a node is
// remembered (its pods stay planned onto their NodeClaim) but writes
// nothing to the pods; one made within the limit has its pods nominated
// to the node once it exists. A bound pod leaves either plan.
func TestPodsAreNotNominatedWhileManyWait(t *testing.T) {
	plane := controlplane.StartForTest(t, controlplane.Options{})
	kube, _ := optest.Direct(t, plane)
	ctx := context.Background()
	n := &provisioning.Nominator{Client: kube, Clock: clocktesting.NewFakeClock(time.Now()), TTL: time.Hour, MaxPods: 2}
	if !n.Hints(2) || n.Hints(3) || !(&provisioning.Nominator{}).Hints(10_000) || (*provisioning.Nominator)(nil).Hints(1) {
		t.Fatal("Hints: want a hint up to MaxPods, always without a limit, never without a Nominator")
	}
	made := func(names ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, name := range names {
			p := pod(name, nil)
			if err := kube.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		return out
	}
	nominatedTo := func(name string) string {
		p := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		return p.Status.NominatedNodeName
	}

	small, large := made("small-0", "small-1"), made("large-0", "large-1", "large-2")
	n.Plan("claim-small", small, n.Hints(len(small)))
	n.Plan("claim-large", large, n.Hints(len(large)))
	// A pod added quietly to a plan does not make the plan's other pods
	// quiet.
	n.Plan("claim-small", made("small-2"), false)
	if got := len(n.Planned()); got != 6 {
		t.Fatalf("%d pods planned, want all 6 remembered", got)
	}
	for claim, node := range map[string]string{"claim-small": "node-small", "claim-large": "node-large"} {
		if err := n.NominateTo(ctx, claim, node); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range small {
		if got := nominatedTo(p.Name); got != "node-small" {
			t.Errorf("pod %s of the small decision nominated to %q, want node-small", p.Name, got)
		}
	}
	for _, p := range append(large, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "small-2"}}) {
		if got := nominatedTo(p.Name); got != "" {
			t.Errorf("pod %s of the large decision nominated to %q, want no nomination", p.Name, got)
		}
	}

	// large-0 is bound: it leaves the plan; the others stay planned.
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: large[0].Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-large"}}
	if err := kube.SubResource("binding").Create(ctx, large[0], binding); err != nil {
		t.Fatal(err)
	}
	if err := n.NominateTo(ctx, "claim-large", "node-large"); err != nil {
		t.Fatal(err)
	}
	planned := n.Planned()
	if _, ok := planned[client.ObjectKeyFromObject(large[0])]; ok || planned[client.ObjectKeyFromObject(large[1])] != "claim-large" {
		t.Errorf("after large-0 was bound: planned %v, want large-1 and large-2 still on claim-large, large-0 gone", planned)
	}

	// The small pods are bound: two planned pods wait, no more than
	// MaxPods, and the large decision's quiet pods are nominated when its
	// node comes.
	for _, p := range append(small, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "small-2"}}) {
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-small"}}
		if err := kube.SubResource("binding").Create(ctx, p, binding); err != nil {
			t.Fatal(err)
		}
	}
	for _, claim := range []string{"claim-small", "claim-large"} {
		if err := n.NominateTo(ctx, claim, strings.Replace(claim, "claim", "node", 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range large[1:] {
		if got := nominatedTo(p.Name); got != "node-large" {
			t.Errorf("pod %s planned quietly, with two planned pods waiting: nominated to %q, want node-large", p.Name, got)
		}
	}
}
