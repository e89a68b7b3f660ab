package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	decide "github.com/nodewright/nodewright/internal/decide/disruption"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state/nodepoolhealth"
)

// The reference's repair_terminatefirst_test.go and terminatefirst_test.go:
// terminate-first disruption of a NodePool that cannot launch a
// replacement while the node is there (a static NodePool at its node
// limit, a node in a full capacity reservation).
//
// nodewright has no TerminateFirstRepair or TerminateFirstDrift gate. A
// static NodePool's node is replaced by the NodePool's own controller:
// the command taints it (it stops counting as a replica) and deletes it
// once the NodePool has its replicas again, or at once when its node
// limit leaves no room for the replacement (controller.go staticRoom) —
// terminate-first, always. A dynamic NodePool's repair never plans a
// replacement the NodePool's limits or reservations refuse: the node goes
// without one and its pods wait for the room it leaves. Drift of a
// dynamic NodePool's node whose pods would have no place stays
// (PodsDoNotFit), as the reference does with its gate off. A static
// NodePool that launches only into capacity reservations that are full
// deletes a node holding one of their slots first (Command.TerminateFirst)
// and keeps the others, saying so, as the reference does with its gates
// on; a reservation without room is still offered, one marked unavailable
// is not.

const (
	rrTF         = "Repair/TerminateFirst > "
	rrTFReserved = rrTF + "Static Capacity Reservations > "
	rrTFNoLimit  = rrTF + "replaces-first for a static NodePool with no node limit > "
	rrSD         = "TerminateFirstDrift > StaticDrift > "
	rrSDReserved = rrSD + "Capacity Reservations > "
	rrDR         = "TerminateFirstDrift > Drift/Reserved > "
	rrResID      = "cr-rr"
)

// rrTFPolicy is the reference's terminate-first repair policy: BadNode
// False for 30 minutes replaces the node, its drain bounded at 10
// minutes.
func rrTFPolicy() nodepoolhealth.Policy {
	return rrPolicy(rrBadNode, 30*time.Minute, nodepoolhealth.Replace, rrDur(10*time.Minute))
}

// rrStaticEnv starts the controller with a static NodePool "static" of
// the replicas (a node limit unless limit is ""), one empty node "sick"
// in it, unhealthy past its toleration (reason Unhealthy) or drifted
// (Drifted), and more of its nodes and NodeClaims by extra; it decides
// and starts the command.
func rrStaticEnv(t *testing.T, replicas int64, limit string, reason v1.DisruptionReason, extra func(*env)) (*env, *prometheus.Registry) {
	t.Helper()
	e, reg := rrStart(t, rrTFPolicy())
	e.ctrl.Config.Methods = []v1.DisruptionReason{reason}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "static"}}
	np.Spec.Replicas = &replicas
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	np.Spec.Disruption = v1.Disruption{Budgets: []v1.Budget{{Nodes: "100%"}}}
	if limit != "" {
		np.Spec.Limits = corev1.ResourceList{"nodes": resource.MustParse(limit)}
	}
	e.create(t, np)
	rrEnvNodeIn(t, e, "static", "sick", "m5.large", true, func(nc *v1.NodeClaim) {
		if reason == v1.DisruptionReasonDrifted {
			nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(e.clock.Now())}}
		}
	})
	if reason == v1.DisruptionReasonUnhealthy {
		rrBreak(t, e, "sick", rrBadNode, 31*time.Minute)
	}
	if extra != nil {
		extra(e)
	}
	rrDecideAndStart(t, e)
	return e, reg
}

// rrNotReadyPool marks the NodePool invalid, and so not ready, as its
// status controller would.
func rrNotReadyPool(np *v1.NodePool) {
	np.Status.Conditions = []metav1.Condition{
		{Type: v1.ConditionValidationSucceeded, Status: metav1.ConditionFalse, Reason: "NotReady", Message: "NotReady", LastTransitionTime: metav1.NewTime(now)},
		{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: "NotReady", Message: "NotReady", LastTransitionTime: metav1.NewTime(now)},
	}
}

// rrExpectStaticBlocked checks that the static NodePool's node stays, and
// says its NodePool cannot launch the replacement.
func rrExpectStaticBlocked(t *testing.T, d *decide.Decision, reason v1.DisruptionReason) {
	t.Helper()
	if len(d.Commands) != 0 {
		t.Errorf("commands %q, want the node kept: its NodePool cannot launch the replacement", commands(d))
	}
	want := "it is not replaced (" + string(reason) + "): its static NodePool cannot launch a replacement now (NodePool default is not ready (NotReady: NotReady))"
	if got := blocked(d, "sick"); !strings.Contains(got, want) {
		t.Errorf("blocked %q, want %q", got, want)
	}
}

// rrStaticNotReady: a static NodePool that is not ready, at its node
// limit, keeps its node (unhealthy or drifted): deleting it first would
// leave the NodePool short, its controller launching nothing meanwhile.
func rrStaticNotReady(t *testing.T, limit string, reason v1.DisruptionReason) {
	t.Helper()
	c, decide := rrStaticDecision(t, 1, limit, reason)
	rrNotReadyPool(c.pool)
	rrExpectStaticBlocked(t, decide(), reason)
}

// rrDeletedFirst checks whether the static NodePool's node was deleted at
// once (terminate-first) or is kept, tainted, until the NodePool's
// controller has launched its replacement (replace-first); the
// disruption controller itself launches no NodeClaim either way.
func rrDeletedFirst(t *testing.T, e *env, want bool) {
	t.Helper()
	if !tainted(t, e.kube, "sick") && !rrGone(t, e, "nc-sick") {
		t.Fatal("the node was neither tainted nor deleted: no command started")
	}
	if got := rrGone(t, e, "nc-sick"); got != want {
		t.Errorf("the node deleted at once: %v, want %v", got, want)
	}
	if made := rrMade(t, e); len(made) != 0 {
		t.Errorf("the disruption controller launched %d NodeClaims; the static NodePool's controller launches its replacement", len(made))
	}
}

// rrStaticDecision is a static NodePool of the replicas and limit whose
// node "sick" is unhealthy past its toleration or drifted (reason), with
// more nodes (healthy, current) from extra.
func rrStaticDecision(t *testing.T, replicas int64, limit string, reason v1.DisruptionReason, mutate ...func(*corev1.Node, *v1.NodeClaim)) (*cluster, func() *decide.Decision) {
	c := newCluster(t)
	rrStatic(c, replicas, limit)
	switch reason {
	case v1.DisruptionReasonUnhealthy:
		mutate = append(mutate, rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
	case v1.DisruptionReasonDrifted:
		mutate = append(mutate, rrDrifted)
	}
	c.node("sick", "m5.large", mutate...)
	return c, func() *decide.Decision {
		return c.decide(rrOnly(rrTFPolicy()), func(o *decide.Options) { o.Methods = []v1.DisruptionReason{reason} })
	}
}

// rrStaticCommand checks that the decision takes the node in a static
// NodePool's command (no planned replacement: the NodePool's controller
// launches it).
func rrStaticCommand(t *testing.T, d *decide.Decision, reason v1.DisruptionReason) *decide.Command {
	t.Helper()
	if len(d.Commands) != 1 || d.Commands[0].Reason != reason || !d.Commands[0].Static || d.Commands[0].NodeNames()[0] != "sick" || len(d.Commands[0].Replacements) != 0 {
		t.Fatalf("commands %q, want a static NodePool's %s command on sick", commands(d), reason)
	}
	return d.Commands[0]
}

func rrDrifted(_ *corev1.Node, nc *v1.NodeClaim) {
	nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: v1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))})
}

// rrReservedTypes loads the catalog with one capacity reservation of
// m5.large in us-east-1a that takes available more instances.
func rrReservedTypes(t *testing.T, c *cluster, available int) {
	t.Helper()
	types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"},
		Reservations: []instancetypes.Reservation{{ID: rrResID, InstanceType: "m5.large", Zone: "us-east-1a", Available: available}}})
	if err != nil {
		t.Fatal(err)
	}
	c.all, c.types = types, map[string]*scheduling.InstanceType{}
	for _, it := range types {
		c.types[it.Name] = it
	}
}

// rrOnlyM5 keeps a NodePool to m5.large of the capacity types.
func rrOnlyM5(np *v1.NodePool, capacityTypes ...string) {
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
	}
}

// rrInReservation puts the node in the capacity reservation.
func rrInReservation(id string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) {
		n.Labels[v1.LabelCapacityType] = v1.CapacityTypeReserved
		n.Labels[awsv1.LabelCapacityReservationID] = id
	}
}

// rrReservedPool is the default NodePool kept to m5.large of the
// capacity types, with the reservation taking available more instances,
// and a node "sick" in the reservation with a pod (mutated further).
func rrReservedPool(t *testing.T, available int, capacityTypes []string, mutate ...func(*corev1.Node, *v1.NodeClaim)) *cluster {
	c := newCluster(t)
	rrReservedTypes(t, c, available)
	rrOnlyM5(c.pool, capacityTypes...)
	c.node("sick", "m5.large", append([]func(*corev1.Node, *v1.NodeClaim){rrInReservation(rrResID)}, mutate...)...)
	c.pods("sick", 1, "500m", "512Mi")
	return c
}

// rrDriftDecision decides drift alone.
func rrDriftDecision(c *cluster) *decide.Decision {
	return c.decide(func(o *decide.Options) { o.Methods = []v1.DisruptionReason{v1.DisruptionReasonDrifted} })
}

// rrDriftBlocked checks that drift leaves the node because its pods would
// have no place.
func rrDriftBlocked(t *testing.T, d *decide.Decision) {
	t.Helper()
	if len(d.Commands) != 0 {
		t.Fatalf("commands %q, want the drifted node left", commands(d))
	}
	for _, b := range d.Blocked {
		if b.Node == "sick" && b.Method == v1.DisruptionReasonDrifted && b.Reason == decide.BlockedPodsDoNotFit {
			return
		}
	}
	t.Errorf("blocked %q, want drift held because a pod would have no place", blocked(d, "sick"))
}

// rrReplacedBy checks a command of the reason on sick with one
// replacement of the capacity type (from the NodePool).
func rrReplacedBy(t *testing.T, d *decide.Decision, reason v1.DisruptionReason, capacityType, pool string) {
	t.Helper()
	if len(d.Commands) != 1 || d.Commands[0].Reason != reason || d.Commands[0].NodeNames()[0] != "sick" || len(d.Commands[0].Replacements) != 1 {
		t.Fatalf("commands %q, want sick replaced first", commands(d))
	}
	r := d.Commands[0].Replacements[0]
	if r.Offering.CapacityType != capacityType || r.NodePool != pool {
		t.Errorf("replacement %s %s of NodePool %s, want %s of %s", r.InstanceType.Name, r.Offering.CapacityType, r.NodePool, capacityType, pool)
	}
}

// rrODPool adds a lower-weight on-demand NodePool "od" beside the
// default one (weight 100).
func rrODPool(c *cluster) {
	high, low := int32(100), int32(1)
	c.pool.Spec.Weight = &high
	od := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "od"}}
	od.Spec.Weight = &low
	od.Spec.Template.Spec.NodeClassRef = c.pool.Spec.Template.Spec.NodeClassRef
	od.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
	}
	od.Spec.Disruption = v1.Disruption{ConsolidateAfter: "1h", Budgets: []v1.Budget{{Nodes: "100%"}}}
	c.objs.NodePools = append(c.objs.NodePools, od)
}

// rrStaticReserved is a static NodePool (one replica, limit 2) kept to
// m5.large of the capacity types, with the reservation taking available
// more instances, and "sick" unhealthy or drifted (reason), mutated.
func rrStaticReserved(t *testing.T, available int, capacityTypes []string, reason v1.DisruptionReason, mutate ...func(*corev1.Node, *v1.NodeClaim)) (*cluster, func() *decide.Decision) {
	c, decide := rrStaticDecision(t, 1, "2", reason, mutate...)
	rrReservedTypes(t, c, available)
	rrOnlyM5(c.pool, capacityTypes...)
	return c, decide
}

// rrZone puts the node in the zone.
func rrZone(zone string) func(*corev1.Node, *v1.NodeClaim) {
	return func(n *corev1.Node, _ *v1.NodeClaim) { n.Labels[corev1.LabelTopologyZone] = zone }
}

// rrUnavailableReservations marks every reserved offering unavailable
// (room or not).
func rrUnavailableReservations(c *cluster) {
	for _, it := range c.all {
		for i := range it.Offerings {
			if it.Offerings[i].CapacityType == v1.CapacityTypeReserved {
				it.Offerings[i].Available = false
			}
		}
	}
}

// rrExpectReservationsFull checks that the static NodePool's node "sick"
// stays: its NodePool launches only into full reservations, and it holds
// none of their slots.
func rrExpectReservationsFull(t *testing.T, d *decide.Decision) {
	t.Helper()
	if len(d.Commands) != 0 {
		t.Fatalf("commands %q, want sick kept", commands(d))
	}
	if got := blocked(d, "sick"); !strings.Contains(got, "its nodes launch only into capacity reservations, which are full, and this node holds none of their slots") {
		t.Errorf("blocked %q, want it to say the reservations are full", got)
	}
}

var _ = restate("repair_terminatefirst_test.go",
	refCase{ref: rrTF + "should issue a delete-only command for a static NodePool at its node limit",
		run: func(t *testing.T) {
			e, reg := rrStaticEnv(t, 1, "1", v1.DisruptionReasonUnhealthy, nil)
			rrDeletedFirst(t, e, true)
			nc := rrClaim(t, e, "nc-sick")
			if nc != nil {
				if got, want := nc.Annotations[v1.AnnotationTerminationTimestamp], e.clock.Now().Add(10*time.Minute).UTC().Format(time.RFC3339); got != want {
					t.Errorf("drain deadline %q, want the policy's bound (%s)", got, want)
				}
			}
			if got := rrCount(t, reg, "nodewright_node_repairs_total", map[string]string{"nodepool": "static", "condition": string(rrBadNode)}); got != 1 {
				t.Errorf("node_repairs_total{condition=BadNode} %v, want 1", got)
			}
		}},
	refCase{ref: rrTF + "should replace-first for a static NodePool below its node limit",
		run: func(t *testing.T) {
			e, _ := rrStaticEnv(t, 1, "2", v1.DisruptionReasonUnhealthy, nil)
			rrDeletedFirst(t, e, false)
		}},
	refCase{ref: rrTF + "does not stage a replacement past limits.nodes when a slot is already reserved",
		run: func(t *testing.T) {
			// Another command's replacement, still launching, takes the
			// NodePool's one spare node.
			e, _ := rrStaticEnv(t, 1, "2", v1.DisruptionReasonUnhealthy, func(e *env) {
				nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-launching", Labels: map[string]string{v1.LabelNodePool: "static"}}}
				nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
				nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}}
				e.create(t, nc)
			})
			rrDeletedFirst(t, e, true)
		}},
	refCase{ref: rrTF + "does not terminate-first a static NodePool at its limit when TerminateFirstRepair is disabled",
		better: "no TerminateFirstRepair gate: at its node limit a static NodePool's unhealthy node is always deleted first (its controller launches the replacement into the room it leaves) rather than kept broken for want of room",
		run: func(t *testing.T) {
			_, decide := rrStaticDecision(t, 1, "1", v1.DisruptionReasonUnhealthy)
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy); cmd.Repair == nil || cmd.Repair.DrainBound == nil || *cmd.Repair.DrainBound != 10*time.Minute {
				t.Errorf("repair %+v, want the policy's 10m drain bound", cmd.Repair)
			}
		}},
	refCase{ref: rrTF + "does not terminate-first a static NodePool at its limit when the NodePool is NotReady",
		run: func(t *testing.T) { rrStaticNotReady(t, "1", v1.DisruptionReasonUnhealthy) }},
	refCase{ref: rrTF + "does not disrupt a static NodePool that is scaling down",
		better: "a static NodePool with more nodes than replicas has its unhealthy node repaired: once tainted it no longer counts as a replica, the NodePool already has its one replica, so the command deletes it without any launch — the unhealthy node is the one the scale-down removes, rather than one chosen without regard to its health",
		run: func(t *testing.T) {
			c, decide := rrStaticDecision(t, 1, "3", v1.DisruptionReasonUnhealthy)
			c.node("ok", "m5.large")
			rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy)
		}},
	refCase{ref: rrTF + "does not terminate-first when TerminateFirstRepair is disabled",
		better: "no TerminateFirstRepair gate: a node in a full reservation its NodePool is kept to is repaired without a replacement (its pod waits for the slot it frees) rather than kept broken",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrTFPolicy())), "sick")
			if len(cmd.Replacements) != 0 || len(cmd.Unplaced) != 1 {
				t.Errorf("replacements %d, unplaced %d; want the node deleted without one, its pod waiting", len(cmd.Replacements), len(cmd.Unplaced))
			}
		}},
	refCase{ref: rrTF + "should still replace-first for a headroom (dynamic) NodePool",
		run: func(t *testing.T) {
			c := rrCluster(t, 0)
			c.node("sick", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.pods("sick", 1, "500m", "512Mi")
			cmd := rrRepaired(t, c.decide(rrOnly(rrTFPolicy())), "sick")
			if len(cmd.Replacements) != 1 || len(cmd.Unplaced) != 0 {
				t.Errorf("replacements %d, unplaced %d; want one replacement first", len(cmd.Replacements), len(cmd.Unplaced))
			}
		}},
	refCase{ref: rrTF + "should still pace terminate-first (one command, one candidate, per pass)",
		run: func(t *testing.T) {
			c, decide := rrStaticDecision(t, 10, "10", v1.DisruptionReasonUnhealthy)
			c.node("sick2", "m5.large", rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			for i := range 8 {
				c.node(fmt.Sprintf("ok%d", i), "m5.large")
			}
			rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy)
		}},
	refCase{ref: rrTF + "should issue a delete-only command for a reserved NodePool whose reservation is full with no fallback",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			cmd := rrRepaired(t, c.decide(rrOnly(rrTFPolicy())), "sick")
			if len(cmd.Replacements) != 0 {
				t.Errorf("replacements %q, want none (the reservation is full)", commands(&decide.Decision{Commands: []*decide.Command{cmd}}))
			}
			if cmd.Repair.DrainBound == nil || *cmd.Repair.DrainBound != 10*time.Minute || cmd.Repair.Condition.Type != rrBadNode {
				t.Errorf("repair %+v, want BadNode's with the 10m drain bound", cmd.Repair)
			}
		}},
	refCase{ref: rrTF + "should carry a blocking pod in the terminate-first plan for a reserved NodePool whose reservation is full",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrBad(rrBadNode, "", now.Add(-31*time.Minute)))
			c.objs.Pods[0].Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
			cmd := rrRepaired(t, c.decide(rrOnly(rrTFPolicy())), "sick")
			if len(cmd.Replacements) != 0 || cmd.Pods != 1 || len(cmd.Unplaced) != 1 || cmd.Unplaced[0].Pod.Name != c.objs.Pods[0].Name {
				t.Errorf("replacements %d, pods %d, unplaced %d; want the do-not-disrupt pod carried by the delete-first repair", len(cmd.Replacements), cmd.Pods, len(cmd.Unplaced))
			}
		}},
	refCase{ref: rrTFNoLimit + "gate on",
		run: func(t *testing.T) {
			e, _ := rrStaticEnv(t, 1, "", v1.DisruptionReasonUnhealthy, nil)
			rrDeletedFirst(t, e, false)
		}},
	refCase{ref: rrTFNoLimit + "gate off",
		run: func(t *testing.T) {
			// nodewright has no gate: the same NodePool, the same outcome.
			_, decide := rrStaticDecision(t, 1, "", v1.DisruptionReasonUnhealthy)
			rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy)
			e, _ := rrStaticEnv(t, 1, "", v1.DisruptionReasonUnhealthy, nil)
			rrDeletedFirst(t, e, false)
		}},
	refCase{ref: rrTF + "replaces-first for a static NodePool below its limit even when TerminateFirstRepair is disabled",
		run: func(t *testing.T) {
			e, _ := rrStaticEnv(t, 1, "3", v1.DisruptionReasonUnhealthy, nil)
			rrDeletedFirst(t, e, false)
		}},
	refCase{ref: rrTF + "does not terminate-first when only the drift gate is on",
		better: "no gates: at its node limit a static NodePool's unhealthy node is deleted first, whatever drift's setting",
		run: func(t *testing.T) {
			_, decide := rrStaticDecision(t, 1, "1", v1.DisruptionReasonUnhealthy)
			rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy)
		}},
	refCase{ref: rrTF + "does not terminate-first a static NodePool at its limit when the NodePool is deleting",
		run: func(t *testing.T) {
			c, decide := rrStaticDecision(t, 1, "1", v1.DisruptionReasonUnhealthy)
			c.pool.DeletionTimestamp, c.pool.Finalizers = &metav1.Time{Time: now}, []string{v1.TerminationFinalizer}
			d := decide()
			if len(d.Commands) != 0 {
				t.Fatalf("commands %q, want the node kept: its NodePool is being deleted", commands(d))
			}
			if got := blocked(d, "sick"); !strings.Contains(got, "NodePool default is being deleted") {
				t.Errorf("blocked %q, want it to say the NodePool is being deleted", got)
			}
		}},
	refCase{ref: rrTFReserved + "should terminate-first when the reservation is full, even below limits.nodes",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy); !cmd.TerminateFirst {
				t.Error("the node holding a slot of the full reservation is not deleted first")
			}
		}},
	refCase{ref: rrTFReserved + "should not terminate-first when the template's on-demand offerings are unavailable",
		run: func(t *testing.T) {
			c, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			for _, it := range c.all {
				for i := range it.Offerings {
					if it.Offerings[i].CapacityType == v1.CapacityTypeOnDemand {
						it.Offerings[i].Available = false
					}
				}
			}
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy); cmd.TerminateFirst {
				t.Error("the node is deleted before its replacement launches, though a replacement can launch")
			}
		}},
	refCase{ref: rrTFReserved + "should still repair other candidates when a static NodePool's instance types can't be resolved",
		moot: "an error of the reference's per-NodePool instance type lookup inside repair; nodewright's decision reads every NodeClass's instance types from the snapshot, and a static NodePool's command needs none (its controller launches from the template)"},
	refCase{ref: rrTFReserved + "should block with the full-reservations reason when the static NodePool is NotReady",
		better: "the node stays because the static NodePool is not ready, and says so (at or below its node limit: its controller cannot launch the replacement either way); nodewright does not look at the NodePool's reservations, so the reason named is the readiness, not the full reservation",
		run: func(t *testing.T) {
			c, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			rrNotReadyPool(c.pool)
			rrExpectStaticBlocked(t, decide(), v1.DisruptionReasonUnhealthy)
		}},
	refCase{ref: rrTFReserved + "should block when the reservation is full and the node's reservation is no longer offered",
		run: func(t *testing.T) {
			// The node's reservation (in us-east-1b) is not the one offered.
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation("cr-gone"), rrZone("us-east-1b"))
			rrExpectReservationsFull(t, decide())
		}},
	refCase{ref: rrTFReserved + "should block when the node's full reservation is unavailable",
		run: func(t *testing.T) {
			c, decide := rrStaticReserved(t, 1, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			rrUnavailableReservations(c)
			rrExpectReservationsFull(t, decide())
		}},
	refCase{ref: rrTFReserved + "should block a non-reserved node carrying a stale reservation label when the reservations are full",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID), onDemand)
			rrExpectReservationsFull(t, decide())
		}},
	refCase{ref: rrTFReserved + "should replace-first when the reservation has capacity",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 1, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy); cmd.TerminateFirst {
				t.Error("the node is deleted before its replacement launches, though a replacement can launch")
			}
		}},
	refCase{ref: rrTFReserved + "should replace-first when the template allows a non-reserved fallback",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy); cmd.TerminateFirst {
				t.Error("the node is deleted before its replacement launches, though a replacement can launch")
			}
		}},
	refCase{ref: rrTFReserved + "should replace-first regardless of the reservation when TerminateFirstRepair is disabled",
		better: "nodewright has no TerminateFirst gates: a static NodePool that launches only into full reservations always deletes the node that holds a slot first, its replacement launching into the slot it frees, rather than tainting it and waiting for a replacement that cannot launch",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonUnhealthy, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonUnhealthy); !cmd.TerminateFirst {
				t.Error("the node is not deleted first")
			}
		}},
)

var _ = restate("terminatefirst_test.go",
	refCase{ref: rrSD + "issues a delete-only command for a static NodePool at its node limit when TerminateFirstDrift is enabled",
		run: func(t *testing.T) {
			e, _ := rrStaticEnv(t, 1, "1", v1.DisruptionReasonDrifted, nil)
			rrDeletedFirst(t, e, true)
		}},
	refCase{ref: rrSD + "blocks instead of terminating first when the static NodePool at its node limit is NotReady",
		run: func(t *testing.T) { rrStaticNotReady(t, "1", v1.DisruptionReasonDrifted) }},
	refCase{ref: rrSD + "replaces-first for a static NodePool below its node limit even when TerminateFirstDrift is enabled",
		run: func(t *testing.T) {
			e, _ := rrStaticEnv(t, 1, "2", v1.DisruptionReasonDrifted, nil)
			rrDeletedFirst(t, e, false)
		}},
	refCase{ref: rrSD + "replaces-first for a static NodePool when TerminateFirstDrift is disabled",
		run: func(t *testing.T) {
			e, _ := rrStaticEnv(t, 1, "", v1.DisruptionReasonDrifted, nil)
			rrDeletedFirst(t, e, false)
		}},
	refCase{ref: rrSDReserved + "issues a delete-only command when the reservation is full",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonDrifted); !cmd.TerminateFirst {
				t.Error("the drifted node holding a slot of the full reservation is not deleted first")
			}
			// Through the controller, without a node limit: the node is
			// deleted at once, not tainted to wait for a replacement.
			e, _ := rrStaticEnv(t, 1, "", v1.DisruptionReasonDrifted, func(e *env) {
				ctx := context.Background()
				types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"},
					Reservations: []instancetypes.Reservation{{ID: rrResID, InstanceType: "m5.large", Zone: "us-east-1a", Available: 0}}})
				if err != nil {
					t.Fatal(err)
				}
				e.ctrl.NodeClasses = classes{kube: e.kube, types: types}
				np := &v1.NodePool{}
				if err := e.kube.Get(ctx, client.ObjectKey{Name: "static"}, np); err != nil {
					t.Fatal(err)
				}
				rrOnlyM5(np, v1.CapacityTypeReserved)
				if err := e.kube.Update(ctx, np); err != nil {
					t.Fatal(err)
				}
				n := &corev1.Node{}
				if err := e.kube.Get(ctx, client.ObjectKey{Name: "sick"}, n); err != nil {
					t.Fatal(err)
				}
				n.Labels[v1.LabelCapacityType], n.Labels[awsv1.LabelCapacityReservationID] = v1.CapacityTypeReserved, rrResID
				if err := e.kube.Update(ctx, n); err != nil {
					t.Fatal(err)
				}
			})
			rrDeletedFirst(t, e, true)
		}},
	refCase{ref: rrSDReserved + "still drifts other static NodePools when one NodePool's instance types can't be resolved",
		moot: "an error of the reference's per-NodePool instance type lookup inside static drift; nodewright's static drift command needs no instance types (the NodePool's controller launches from the template) and the decision reads them from the snapshot"},
	refCase{ref: rrSDReserved + "replaces-first when the template's on-demand offerings are unavailable",
		run: func(t *testing.T) {
			c, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			for _, it := range c.all {
				for i := range it.Offerings {
					if it.Offerings[i].CapacityType == v1.CapacityTypeOnDemand {
						it.Offerings[i].Available = false
					}
				}
			}
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonDrifted); cmd.TerminateFirst {
				t.Error("the node is deleted before its replacement launches, though a replacement can launch")
			}
		}},
	refCase{ref: rrSDReserved + "treats the reservations as full when only an instance type outside the template has capacity",
		run: func(t *testing.T) {
			// An m5.xlarge reservation has room, but the NodePool launches
			// only m5.large.
			c, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			types, err := instancetypes.Load(instancetypes.Options{Zones: []string{"us-east-1a", "us-east-1b"}, Reservations: []instancetypes.Reservation{
				{ID: rrResID, InstanceType: "m5.large", Zone: "us-east-1a", Available: 0}, {ID: "cr-xl", InstanceType: "m5.xlarge", Zone: "us-east-1a", Available: 3}}})
			if err != nil {
				t.Fatal(err)
			}
			c.all = types
			for _, it := range types {
				c.types[it.Name] = it
			}
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonDrifted); !cmd.TerminateFirst {
				t.Error("the reservations the NodePool may use are full, yet the node is not deleted first")
			}
		}},
	refCase{ref: rrSDReserved + "terminates first the candidate holding an offered reservation slot ahead of those that don't",
		run: func(t *testing.T) {
			// An older drifted node out of the reservation, and sick in it:
			// sick goes first, the other stays.
			c, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			c.node("outside", "m5.large", rrDrifted, rrInReservation("cr-gone"), rrZone("us-east-1b"), func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.CreationTimestamp = metav1.NewTime(now.Add(-48 * time.Hour))
			})
			d := decide()
			if cmd := rrStaticCommand(t, d, v1.DisruptionReasonDrifted); !cmd.TerminateFirst {
				t.Error("sick is not deleted first")
			}
			if got := blocked(d, "outside"); !strings.Contains(got, "reservations, which are full") {
				t.Errorf("outside: %q, want it kept: it holds no slot of the full reservations", got)
			}
		}},
	refCase{ref: rrSDReserved + "blocks a non-reserved node carrying a stale reservation label when the reservations are full",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID), onDemand)
			rrExpectReservationsFull(t, decide())
		}},
	refCase{ref: rrSDReserved + "blocks a node whose reservation is no longer offered when the reservations are full",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation("cr-gone"), rrZone("us-east-1b"))
			rrExpectReservationsFull(t, decide())
		}},
	refCase{ref: rrSDReserved + "replaces-first when the reservation has capacity",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 1, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonDrifted); cmd.TerminateFirst {
				t.Error("the node is deleted before its replacement launches, though a replacement can launch")
			}
		}},
	refCase{ref: rrSDReserved + "replaces-first regardless of the reservation when TerminateFirstDrift is disabled",
		better: "nodewright has no TerminateFirst gates: a static NodePool that launches only into full reservations always deletes the node that holds a slot first, its replacement launching into the slot it frees, rather than tainting it and waiting for a replacement that cannot launch",
		run: func(t *testing.T) {
			_, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			if cmd := rrStaticCommand(t, decide(), v1.DisruptionReasonDrifted); !cmd.TerminateFirst {
				t.Error("the node is not deleted first")
			}
		}},
	refCase{ref: rrSDReserved + "only terminates reserved candidates first when the reservation is full",
		run: func(t *testing.T) {
			c, decide := rrStaticReserved(t, 0, []string{v1.CapacityTypeReserved}, v1.DisruptionReasonDrifted, rrInReservation(rrResID))
			c.node("od", "m5.large", rrDrifted, onDemand, func(_ *corev1.Node, nc *v1.NodeClaim) {
				nc.CreationTimestamp = metav1.NewTime(now.Add(-48 * time.Hour))
			})
			d := decide()
			if cmd := rrStaticCommand(t, d, v1.DisruptionReasonDrifted); !cmd.TerminateFirst {
				t.Error("the reserved node is not deleted first")
			}
			if got := blocked(d, "od"); !strings.Contains(got, "reservations, which are full") {
				t.Errorf("od: %q, want it kept", got)
			}
		}},
	refCase{ref: rrDR + "issues a delete-only command when the reservation is full and there is no fallback",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			d := rrDriftDecision(c)
			if len(d.Commands) != 1 || d.Commands[0].NodeNames()[0] != "sick" || len(d.Commands[0].Replacements) != 0 || !d.Commands[0].TerminateFirst {
				t.Fatalf("commands %q, want sick deleted first, its pod to the slot it frees", commands(d))
			}
		}},
	refCase{ref: rrDR + "does NOT terminate-first when more reschedulable pods need the reservation than the freed slot can hold",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			c.pods("sick", 1, "500m", "512Mi", func(p *corev1.Pod) {
				p.Name = "sick-spread"
			})
			for _, p := range c.objs.Pods {
				p.Labels = map[string]string{"spread": "x"}
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"spread": "x"}}}}}}
			}
			rrDriftBlocked(t, rrDriftDecision(c))
		}},
	refCase{ref: rrDR + "does NOT terminate-first when the reservation is full AND otherwise unavailable (something else wrong)",
		run: func(t *testing.T) {
			// nodewright's catalog says a reservation without room by its
			// count (0); an offering marked unavailable while its count has
			// room is unavailable for another reason, and not offered.
			c := rrReservedPool(t, 1, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			for _, it := range c.all {
				for i := range it.Offerings {
					if it.Offerings[i].ReservationID == rrResID {
						it.Offerings[i].Available = false
					}
				}
			}
			rrDriftBlocked(t, rrDriftDecision(c))
		}},
	refCase{ref: rrDR + "does NOT drift when TerminateFirstDrift is disabled and the reservation is full with no fallback (Blocked)",
		better: "nodewright has no TerminateFirstDrift gate: a drifted node in a full reservation its NodePool is kept to, whose pods fit in the slot it frees, is deleted first (its pods go to a node launched into that slot) rather than kept drifted for ever",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			if d := rrDriftDecision(c); len(d.Commands) != 1 || !d.Commands[0].TerminateFirst {
				t.Errorf("commands %q, want sick deleted first", commands(d))
			}
		}},
	refCase{ref: rrDR + "replaces-first when the reservation is full but an on-demand fallback exists",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved, v1.CapacityTypeOnDemand}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			rrReplacedBy(t, rrDriftDecision(c), v1.DisruptionReasonDrifted, v1.CapacityTypeOnDemand, "default")
		}},
	refCase{ref: rrDR + "replaces-first when the reservation still has a spare slot",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 5, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			rrReplacedBy(t, rrDriftDecision(c), v1.DisruptionReasonDrifted, v1.CapacityTypeReserved, "default")
		}},
	refCase{ref: rrDR + "weighted: a full-but-healthy reserved NodePool replaces-first onto a lower-weight on-demand NodePool (does NOT terminate-first)",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			rrODPool(c)
			rrReplacedBy(t, rrDriftDecision(c), v1.DisruptionReasonDrifted, v1.CapacityTypeOnDemand, "od")
		}},
	refCase{ref: rrDR + "weighted: an unavailable reserved NodePool replaces-first onto a lower-weight on-demand NodePool",
		run: func(t *testing.T) {
			c := rrReservedPool(t, 0, []string{v1.CapacityTypeReserved}, rrDrifted)
			c.pool.Spec.Disruption.ConsolidateAfter = "1h"
			for _, it := range c.all {
				for i := range it.Offerings {
					if it.Offerings[i].ReservationID == rrResID {
						it.Offerings[i].Available = false
					}
				}
			}
			rrODPool(c)
			rrReplacedBy(t, rrDriftDecision(c), v1.DisruptionReasonDrifted, v1.CapacityTypeOnDemand, "od")
		}},
)
