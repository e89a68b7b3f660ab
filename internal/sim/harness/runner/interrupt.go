package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/nodewright/nodewright/api/v1"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// InterruptionQueue is the simulated account's interruption queue: the
// SQS queue its EventBridge rules send EC2 and AWS Health events to.
const InterruptionQueue = "nodewright-sim-interruptions"

// interruptionKind is the simulation's document that interrupts
// instances (see Interruption).
var interruptionKind = schema.GroupVersionKind{Group: "sim.nodewright.dev", Version: "v1", Kind: "Interruption"}

// Interruption makes AWS announce an interruption of Instances instances
// (1 when 0) nodewright launched, chosen by NodePool, zone or instance ID
// (any when empty) among those the kind applies to:
//
//	apiVersion: sim.nodewright.dev/v1
//	kind: Interruption
//	spec: {kind: spot-interruption, nodePool: general, zone: us-east-1a, instances: 1}
//
// Kinds: spot-interruption and rebalance-recommendation (spot instances),
// scheduled-change (any), capacity-reservation-interruption (reserved).
type Interruption struct {
	Spec struct {
		Kind      simaws.Interruption `json:"kind"`
		NodePool  string              `json:"nodePool"`
		Zone      string              `json:"zone"`
		Instance  string              `json:"instance"`
		Instances int                 `json:"instances"`
	} `json:"spec"`
}

// interrupt carries out an Interruption document, on the eligible
// instances in launch order.
func (s *Sim) interrupt(js []byte) error {
	in := &Interruption{}
	if err := json.Unmarshal(js, in); err != nil {
		return fmt.Errorf("Interruption: %w", err)
	}
	if !slices.Contains(simaws.Interruptions(), in.Spec.Kind) {
		return fmt.Errorf("Interruption: spec.kind %q: want one of %v", in.Spec.Kind, simaws.Interruptions())
	}
	want := max(in.Spec.Instances, 1)
	ids := s.interruptible(in.Spec.Kind, func(inst simaws.Instance) bool {
		return (in.Spec.NodePool == "" || tag(inst, v1.LabelNodePool) == in.Spec.NodePool) &&
			(in.Spec.Zone == "" || aws.ToString(inst.Placement.AvailabilityZone) == in.Spec.Zone) &&
			(in.Spec.Instance == "" || aws.ToString(inst.InstanceId) == in.Spec.Instance)
	})
	if len(ids) < want {
		census := map[string]int{}
		for _, inst := range s.Account.Instances() {
			census[fmt.Sprintf("%s %s %s", tag(inst, v1.LabelNodePool), inst.InstanceLifecycle, inst.State.Name)]++
		}
		return fmt.Errorf("Interruption: %d instance(s) match spec %+v, fewer than %d (instances by NodePool, lifecycle and state: %v)", len(ids), in.Spec, want, census)
	}
	for _, id := range ids[:want] {
		if err := s.Account.Interrupt(id, in.Spec.Kind); err != nil {
			return fmt.Errorf("Interruption: %w", err)
		}
	}
	return nil
}

// interruptible are the running instances of nodewright's NodePools the
// kind applies to and match keeps, that are not interrupted already.
func (s *Sim) interruptible(kind simaws.Interruption, keep func(simaws.Instance) bool) []string {
	var out []string
	for _, inst := range s.Account.Instances() {
		spot := inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot
		switch {
		case inst.State.Name != ec2types.InstanceStateNameRunning || tag(inst, v1.LabelNodePool) == "" || !inst.ReclaimAt().IsZero():
		case (kind == simaws.SpotInterruption || kind == simaws.RebalanceRecommendation) && !spot:
		case kind == simaws.CapacityReservationInterruption && inst.CapacityReservationId == nil:
		case keep(inst):
			out = append(out, aws.ToString(inst.InstanceId))
		}
	}
	return out
}

func tag(inst simaws.Instance, key string) string {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// capacityKind is the simulation's document that takes capacity away or
// gives it back (see InsufficientCapacity).
var capacityKind = schema.GroupVersionKind{Group: "sim.nodewright.dev", Version: "v1", Kind: "InsufficientCapacity"}

// InsufficientCapacity makes offerings (CAPACITY-TYPE:INSTANCE-TYPE:ZONE,
// "*" for any type or zone) fail with InsufficientInstanceCapacity, or
// with available: true succeed again:
//
//	apiVersion: sim.nodewright.dev/v1
//	kind: InsufficientCapacity
//	spec: {offerings: ["spot:*:*"], available: true}
type InsufficientCapacity struct {
	Spec struct {
		Offerings []string `json:"offerings"`
		Available bool     `json:"available"`
	} `json:"spec"`
}

// setCapacity carries out an InsufficientCapacity document.
func (s *Sim) setCapacity(js []byte) error {
	c := &InsufficientCapacity{}
	if err := json.Unmarshal(js, c); err != nil {
		return fmt.Errorf("InsufficientCapacity: %w", err)
	}
	offerings, err := parseOfferings(c.Spec.Offerings)
	if err != nil || len(offerings) == 0 {
		return fmt.Errorf("InsufficientCapacity: spec.offerings %v: %w", c.Spec.Offerings, errors.Join(err, errors.New("want CAPACITY-TYPE:INSTANCE-TYPE:ZONE values, such as spot:*:*")))
	}
	for _, o := range offerings {
		s.Account.SetUnavailable(o[0], o[1], o[2], !c.Spec.Available)
	}
	return nil
}

// parseOfferings reads CAPACITY-TYPE:INSTANCE-TYPE:ZONE values.
func parseOfferings(values []string) ([][]string, error) {
	var out [][]string
	for _, o := range values {
		parts := strings.Split(o, ":")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("offering %q without capacity: write CAPACITY-TYPE:INSTANCE-TYPE:ZONE, such as spot:m5.large:us-east-1a or spot:*:*", o)
		}
		out = append(out, parts)
	}
	return out, nil
}

// SpotInterruptions is a rate of spot interruptions: Count instances
// every Every.
type SpotInterruptions struct {
	Count int
	Every time.Duration
}

// ParseSpotInterruptions reads N/DURATION, such as 1/2m.
func ParseSpotInterruptions(value string) (SpotInterruptions, error) {
	bad := fmt.Errorf("--spot-interruptions %q: use N/DURATION, such as 1/2m (one running spot instance interrupted every two minutes)", value)
	n, every, ok := strings.Cut(value, "/")
	if !ok {
		return SpotInterruptions{}, bad
	}
	var out SpotInterruptions
	if _, err := fmt.Sscanf(n, "%d", &out.Count); err != nil || out.Count < 1 || fmt.Sprint(out.Count) != n {
		return SpotInterruptions{}, bad
	}
	d, err := time.ParseDuration(every)
	if err != nil || d <= 0 {
		return SpotInterruptions{}, bad
	}
	out.Every = d
	return out, nil
}

// interruptSpot interrupts Count running spot instances, chosen at
// random, every Every until ctx ends: as AWS reclaims spot capacity.
func (s *Sim) interruptSpot(ctx context.Context, rate SpotInterruptions) error {
	_ = wait.PollUntilContextCancel(ctx, rate.Every, false, func(context.Context) (bool, error) {
		ids := s.interruptible(simaws.SpotInterruption, func(simaws.Instance) bool { return true })
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for _, id := range ids[:min(rate.Count, len(ids))] {
			if err := s.Account.Interrupt(id, simaws.RebalanceRecommendation); err != nil {
				s.log.Error(err, "recommending a rebalance", "instance", id)
			}
			if err := s.Account.Interrupt(id, simaws.SpotInterruption); err != nil {
				s.log.Error(err, "interrupting a spot instance", "instance", id)
			}
		}
		return false, nil // until ctx ends
	})
	return nil
}
