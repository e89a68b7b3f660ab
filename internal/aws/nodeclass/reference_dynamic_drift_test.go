package nodeclass_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/referencetest"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/state"
)

// dynamicDriftOracle builds the reference's NodeClaim drift (core's
// nodeclaim disruption controller over the AWS provider's CloudProvider)
// under testdata/dynamicdriftoracle.
func dynamicDriftOracle(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	main, err := os.ReadFile(filepath.Join(filepath.Dir(here), "testdata", "dynamicdriftoracle", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	goMod := awsOracleGoMod("dynamic-drift-oracle")
	return referencetest.Oracle{Name: "dynamic-drift-" + referencetest.AWSProviderNew, GoMod: goMod, Files: map[string]string{"main.go": string(main)},
		Toolchain: referencetest.Toolchain, TestDepsMissing: true}.Build(t)
}

// A generated account: instance types, their offerings, AMIs, subnets,
// security groups and reservations, in a region and account of a user.
const (
	ddRegion = "ap-southeast-2"
	ddGPU    = "karpenter.k8s.aws/instance-gpu-count"
	ddAccel  = "karpenter.k8s.aws/instance-accelerator-count"
)

var (
	ddZones = []string{ddRegion + "a", ddRegion + "b", ddRegion + "c"}
	ddTypes = []struct {
		name   string
		labels map[string]string
	}{
		{"m5.large", map[string]string{"kubernetes.io/arch": "amd64", "karpenter.k8s.aws/instance-category": "m", "karpenter.k8s.aws/instance-family": "m5", "karpenter.k8s.aws/instance-cpu": "2"}},
		{"m7g.large", map[string]string{"kubernetes.io/arch": "arm64", "karpenter.k8s.aws/instance-category": "m", "karpenter.k8s.aws/instance-family": "m7g", "karpenter.k8s.aws/instance-cpu": "2"}},
		{"c6i.2xlarge", map[string]string{"kubernetes.io/arch": "amd64", "karpenter.k8s.aws/instance-category": "c", "karpenter.k8s.aws/instance-family": "c6i", "karpenter.k8s.aws/instance-cpu": "8"}},
		{"g5.xlarge", map[string]string{"kubernetes.io/arch": "amd64", "karpenter.k8s.aws/instance-category": "g", "karpenter.k8s.aws/instance-family": "g5", "karpenter.k8s.aws/instance-cpu": "4",
			ddGPU: "1", "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}},
		{"inf2.xlarge", map[string]string{"kubernetes.io/arch": "amd64", "karpenter.k8s.aws/instance-category": "inf", "karpenter.k8s.aws/instance-family": "inf2", "karpenter.k8s.aws/instance-cpu": "4",
			ddAccel: "1"}},
	}
	// ddAbsent are the labels an instance type without them does not
	// exist for (the reference requires DoesNotExist of them).
	ddAbsent = []string{ddGPU, "karpenter.k8s.aws/instance-gpu-manufacturer", ddAccel}
	ddAMIs   = []awsv1.AMI{
		{ID: "ami-0a1b2c3d4e5f60001", Name: "amazon-eks-node-al2023-x86_64-standard-1.34-v20251110", Requirements: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}, {Key: ddGPU, Operator: corev1.NodeSelectorOpDoesNotExist}, {Key: ddAccel, Operator: corev1.NodeSelectorOpDoesNotExist}}},
		{ID: "ami-0a1b2c3d4e5f60002", Name: "amazon-eks-node-al2023-arm64-standard-1.34-v20251110", Requirements: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}, {Key: ddGPU, Operator: corev1.NodeSelectorOpDoesNotExist}, {Key: ddAccel, Operator: corev1.NodeSelectorOpDoesNotExist}}},
		{ID: "ami-0a1b2c3d4e5f60003", Name: "amazon-eks-node-al2023-x86_64-nvidia-1.34-v20251110", Requirements: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}, {Key: ddGPU, Operator: corev1.NodeSelectorOpExists}}},
		{ID: "ami-0a1b2c3d4e5f60004", Name: "amazon-eks-node-al2023-x86_64-neuron-1.34-v20251110", Requirements: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}, {Key: ddAccel, Operator: corev1.NodeSelectorOpExists}}},
		{ID: "ami-0f9e8d7c6b5a40005", Name: "golden-al2023-x86_64-2025-10", Requirements: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
		{ID: "ami-0a1b2c3d4e5f60006", Name: "amazon-eks-node-al2023-x86_64-standard-1.34-v20251021", Requirements: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}, {Key: ddGPU, Operator: corev1.NodeSelectorOpDoesNotExist}, {Key: ddAccel, Operator: corev1.NodeSelectorOpDoesNotExist}}},
	}
	ddSubnets = []awsv1.Subnet{{ID: "subnet-07aa11", Zone: ddZones[0]}, {ID: "subnet-07bb22", Zone: ddZones[1]}, {ID: "subnet-07cc33", Zone: ddZones[2]}, {ID: "subnet-07aa44", Zone: ddZones[0]}}
	ddGroups  = []string{"sg-0c0ffee01", "sg-0c0ffee02", "sg-0c0ffee03"}
	ddCRs     = []string{"cr-0aa1bb2cc3dd4ee01", "cr-0aa1bb2cc3dd4ee02"}
	ddPGs     = []string{"pg-0123abcd0001", "pg-0123abcd0002"}
)

// ddCase is one NodeClaim of a NodePool, its EC2NodeClass as its status
// resolved it, its instance and the class's instance types now.
type ddCase struct {
	Now              time.Time           `json:"now"`
	NodePool         *v1.NodePool        `json:"nodePool"`
	NodeClass        *awsv1.EC2NodeClass `json:"nodeClass"`
	NodeClaim        *v1.NodeClaim       `json:"nodeClaim"`
	Instance         *ddInstance         `json:"instance"`
	InstanceTypes    []ddInstanceType    `json:"instanceTypes"`
	PlacementGroupID string              `json:"placementGroupID"`
	types            []*scheduling.InstanceType
}

type ddInstance struct {
	ID                    string   `json:"id"`
	SubnetID              string   `json:"subnetID"`
	SecurityGroupIDs      []string `json:"securityGroupIDs"`
	CapacityReservationID string   `json:"capacityReservationID"`
}

type ddOffering struct {
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Available    bool                             `json:"available"`
}

type ddInstanceType struct {
	Name         string                           `json:"name"`
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	Offerings    []ddOffering                     `json:"offerings"`
}

func pick[T any](r *rand.Rand, l []T) T { return l[r.IntN(len(l))] }

func subset[T any](r *rand.Rand, l []T, p float64) []T {
	var out []T
	for _, v := range l {
		if r.Float64() < p {
			out = append(out, v)
		}
	}
	return out
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// ddRequirements are NodePool requirements users write.
var ddRequirements = [][]v1.NodeSelectorRequirementWithMinValues{
	{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}}},
	{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
	{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"reserved", "on-demand"}}},
	{{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "g"}}},
	{{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}, MinValues: ptrTo(1)}},
	{{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"g", "inf"}}},
	{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
	{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64", "amd64"}}},
	{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: ddZones[:2]}},
	{{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}}},
	{{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpLt, Values: []string{"5"}}},
	{{Key: ddGPU, Operator: corev1.NodeSelectorOpExists}},
	{{Key: ddGPU, Operator: corev1.NodeSelectorOpDoesNotExist}},
	{{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"payments"}}},
	{{Key: "example.com/workload", Operator: corev1.NodeSelectorOpExists}},
	{{Key: "example.com/workload", Operator: corev1.NodeSelectorOpDoesNotExist}},
	{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"m5"}}},
	{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large", "c6i.2xlarge", "g5.xlarge"}}},
}

func ptrTo[T any](v T) *T { return &v }

// ddGenerate is the i-th case of seed.
func ddGenerate(seed uint64, i int) *ddCase {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	now := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	c := &ddCase{Now: now}
	// The instance types the class offers now, and their offerings.
	for _, t := range ddTypes {
		var reqs []corev1.NodeSelectorRequirement
		for _, k := range sortedKeys(t.labels) {
			reqs = append(reqs, in(k, t.labels[k]))
		}
		for _, k := range ddAbsent {
			if _, ok := t.labels[k]; !ok {
				reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpDoesNotExist})
			}
		}
		reqs = append(reqs, in(corev1.LabelInstanceTypeStable, t.name))
		it := &scheduling.InstanceType{Name: t.name, Requirements: scheduling.NewRequirements(reqs...)}
		dt := ddInstanceType{Name: t.name, Requirements: reqs}
		for _, z := range ddZones {
			for _, ct := range []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand} {
				if r.Float64() < 0.15 {
					continue // not offered there
				}
				avail := r.Float64() < 0.8
				it.Offerings = append(it.Offerings, scheduling.Offering{Zone: z, CapacityType: ct, Available: avail, Price: 0.1})
				dt.Offerings = append(dt.Offerings, ddOffering{Available: avail, Requirements: []corev1.NodeSelectorRequirement{in(v1.LabelCapacityType, ct), in(corev1.LabelTopologyZone, z)}})
			}
		}
		if t.name == "m5.large" && r.Float64() < 0.7 {
			cr := pick(r, ddCRs)
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: ddZones[0], CapacityType: v1.CapacityTypeReserved, Available: true, Price: 0.01, ReservationID: cr, ReservationCapacity: 1})
			dt.Offerings = append(dt.Offerings, ddOffering{Available: true, Requirements: []corev1.NodeSelectorRequirement{in(v1.LabelCapacityType, v1.CapacityTypeReserved),
				in(corev1.LabelTopologyZone, ddZones[0]), in(awsv1.LabelCapacityReservationID, cr)}})
		}
		if r.Float64() < 0.9 {
			c.types = append(c.types, it)
			c.InstanceTypes = append(c.InstanceTypes, dt)
		}
	}

	// The NodePool now.
	np := &v1.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "general", ResourceVersion: "1"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "workers"}
	keys := map[string]bool{}
	for _, reqs := range subset(r, ddRequirements, 0.1) {
		if !keys[reqs[0].Key] { // one requirement a key, as users write them
			keys[reqs[0].Key] = true
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, reqs...)
		}
	}
	c.NodePool = np

	// The NodeClaim, as the reference's controller wrote it at launch.
	// Mostly a type the NodePool admits, as it was launched; else one it
	// admitted before a change.
	t := pick(r, ddTypes)
	if r.Float64() < 0.8 {
		var admitted []int
		reqs := scheduling.NewRequirements(nodeSelector(np.Spec.Template.Spec.Requirements)...)
		for i, t := range ddTypes {
			if scheduling.LabelRequirements(t.labels).Compatible(reqs, func(k string) bool {
				return k == corev1.LabelTopologyZone || k == v1.LabelCapacityType || k == corev1.LabelInstanceTypeStable
			}) == nil {
				admitted = append(admitted, i)
			}
		}
		if len(admitted) > 0 {
			t = ddTypes[pick(r, admitted)]
		}
	}
	zone := pick(r, ddZones)
	if zones := np.Spec.Template.Spec.Requirements; len(zones) > 0 && r.Float64() < 0.8 {
		for _, req := range zones {
			if req.Key == corev1.LabelTopologyZone && req.Operator == corev1.NodeSelectorOpIn {
				zone = pick(r, req.Values)
			}
		}
	}
	ct := pick(r, []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand, v1.CapacityTypeOnDemand})
	id := fmt.Sprintf("i-0%015x", r.Uint64()>>4)
	labels := map[string]string{v1.LabelNodePool: "general", corev1.LabelInstanceTypeStable: t.name, corev1.LabelTopologyZone: zone, v1.LabelCapacityType: ct,
		corev1.LabelOSStable: "linux"}
	for k, v := range t.labels {
		labels[k] = v
	}
	inst := &ddInstance{ID: id}
	if t.name == "m5.large" && r.Float64() < 0.6 {
		labels[v1.LabelCapacityType] = v1.CapacityTypeReserved
		labels[corev1.LabelTopologyZone] = ddZones[0]
		zone = ddZones[0]
		inst.CapacityReservationID = pick(r, ddCRs)
		labels[awsv1.LabelCapacityReservationID] = inst.CapacityReservationID
	}
	if r.Float64() < 0.4 {
		labels["team"] = pick(r, []string{"payments", "search"})
	}
	if r.Float64() < 0.2 {
		labels["example.com/workload"] = "batch"
	}
	if r.Float64() < 0.25 {
		labels[awsv1.LabelPlacementGroupID] = pick(r, ddPGs)
	}
	if r.Float64() < 0.1 {
		// A label the NodeClaim lacks (written by an older version, or
		// removed by hand).
		keys := sortedKeys(labels)
		delete(labels, pick(r, keys))
	}
	age := pick(r, []time.Duration{10 * time.Minute, 50 * time.Minute, 3 * time.Hour, 200 * time.Hour})
	image := pick(r, ddAMIs).ID
	c.Instance = inst
	c.NodeClaim = &v1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "general-" + strconv.Itoa(i), Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-age)), ResourceVersion: "1",
			UID: k8stypes.UID(fmt.Sprintf("8f0c6a2e-%012d", i))},
		Spec: v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "workers"}},
		Status: v1.NodeClaimStatus{ProviderID: "aws:///" + zone + "/" + id, ImageID: image, NodeName: "ip-10-4-" + strconv.Itoa(i%250) + "-7.ap-southeast-2.compute.internal",
			Conditions: []metav1.Condition{{Type: v1.ConditionLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.NewTime(now.Add(-age))}}},
	}

	// The EC2NodeClass, as its status resolved it now.
	class := &awsv1.EC2NodeClass{TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.k8s.aws/v1", Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "workers", ResourceVersion: "1"}}
	class.Spec.Role = "KarpenterNodeRole-payments-syd"
	class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	class.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "payments-syd"}}}
	class.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "payments-syd"}}}
	// The AMIs the alias resolves to, newest first; at times an older
	// release too, or in another order (selected by id), or none yet.
	amis := []awsv1.AMI{ddAMIs[0], ddAMIs[1], ddAMIs[2], ddAMIs[3]}
	if r.Float64() < 0.3 {
		amis = append(amis, ddAMIs[4], ddAMIs[5])
	}
	if r.Float64() < 0.3 {
		r.Shuffle(len(amis), func(a, b int) { amis[a], amis[b] = amis[b], amis[a] })
	}
	if r.Float64() < 0.3 {
		amis = subset(r, amis, 0.6)
	}
	class.Status.AMIs = amis
	// The image launched: the AMI the class launched the type with,
	// mostly the one it launches with now.
	if r.Float64() < 0.7 {
		it := &scheduling.InstanceType{Name: t.name, Requirements: scheduling.LabelRequirements(t.labels)}
		for _, a := range amis {
			if it.Requirements.Compatible(scheduling.NewRequirements(a.Requirements...), nil) == nil {
				image = a.ID
				break
			}
		}
	}
	if r.Float64() < 0.03 {
		image = ""
	}
	c.NodeClaim.Status.ImageID = image
	class.Status.Subnets = ddSubnets
	if r.Float64() < 0.3 {
		class.Status.Subnets = subset(r, ddSubnets, 0.6)
	}
	groups := ddGroups[:2]
	if r.Float64() < 0.3 {
		groups = subset(r, ddGroups, 0.6)
	}
	for _, g := range groups {
		class.Status.SecurityGroups = append(class.Status.SecurityGroups, awsv1.SecurityGroup{ID: g, Name: "payments-" + g[len(g)-2:]})
	}
	// The instance: in a subnet of its zone, with the groups it was
	// launched with (mostly the class's now).
	var inZone []string
	for _, sn := range ddSubnets {
		if sn.Zone == zone {
			inZone = append(inZone, sn.ID)
		}
	}
	inst.SubnetID = pick(r, inZone)
	inst.SecurityGroupIDs = ddGroups[:2]
	if r.Float64() < 0.25 {
		inst.SecurityGroupIDs = subset(r, ddGroups, 0.6)
	}
	for _, cr := range subset(r, ddCRs, 0.7) {
		class.Status.CapacityReservations = append(class.Status.CapacityReservations, awsv1.CapacityReservation{ID: cr, InstanceType: "m5.large",
			AvailabilityZone: ddZones[0], OwnerID: "210987654321", InstanceMatchCriteria: "targeted"})
	}
	if _, in := labels[awsv1.LabelPlacementGroupID]; (in && r.Float64() < 0.8) || r.Float64() < 0.1 {
		pg := pick(r, ddPGs)
		if in && r.Float64() < 0.7 {
			pg = labels[awsv1.LabelPlacementGroupID]
		}
		class.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{ID: ptrTo(pg)}
		class.Status.PlacementGroup = &awsv1.PlacementGroup{ID: pg, Name: "payments-cluster"}
		c.PlacementGroupID = pg
	}
	class.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(now)}}
	c.NodeClass = class
	return c
}

func nodeSelector(reqs []v1.NodeSelectorRequirementWithMinValues) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.NodeSelectorRequirement())
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nodewrightDrift is the Drifted reason nodewright's NodeClaim lifecycle
// writes for the case: state.Drift over the class as the cloud resolves
// it, with the instance as the cloud describes it.
func nodewrightDrift(c *ddCase) string {
	inst := &cloudprovider.Instance{ProviderID: c.NodeClaim.Status.ProviderID, InstanceID: c.Instance.ID, SubnetID: c.Instance.SubnetID,
		SecurityGroupIDs: c.Instance.SecurityGroupIDs, CapacityReservationID: c.Instance.CapacityReservationID}
	np := c.NodePool // the NodeClaim's, by its label, as the lifecycle reads it
	if c.NodeClaim.Labels[v1.LabelNodePool] != np.Name {
		np = nil
	}
	return state.Drift(c.NodeClaim, c.NodeClaim.Labels, np, nodeclass.Resolved(c.NodeClass, c.types), inst, c.Now).Reason
}

// Generated NodeClaims of a NodePool and EC2NodeClass, each with its
// instance and the class's instance types and status now: the Drifted
// condition nodewright writes is the reference's, as its own NodeClaim
// disruption controller and AWS cloud provider decide (built from their
// modules, over a fake client and the case's account).
func TestDynamicDriftAsTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the reference's drift")
	}
	bin := dynamicDriftOracle(t)
	n := 400
	if v, err := strconv.Atoi(os.Getenv("DYNAMIC_DRIFT_CASES")); err == nil {
		n = v
	}
	seed := uint64(20261204)
	cases := make([]*ddCase, n)
	var input bytes.Buffer
	for i := range cases {
		cases[i] = ddGenerate(seed, i)
		line, err := json.Marshal(cases[i])
		if err != nil {
			t.Fatal(err)
		}
		input.Write(append(line, '\n'))
	}
	lines := referencetest.RunLines(t, bin, input.Bytes())
	if len(lines) != n {
		t.Fatalf("the oracle answered %d of %d", len(lines), n)
	}
	reasons, differ := map[string]int{}, 0
	for i, line := range lines {
		var want struct{ Reason, Error string }
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		reasons[want.Reason]++
		if got := nodewrightDrift(cases[i]); got != want.Reason {
			differ++
			if differ <= 15 {
				b, _ := json.Marshal(cases[i])
				t.Errorf("case %d: nodewright drifts %q, the reference %q (its error: %q)\n%s", i, got, want.Reason, want.Error, b)
			}
		}
	}
	t.Logf("%d NodeClaims: %d differ; the reference's reasons: %v", n, differ, reasons)
	if differ > 0 {
		t.Errorf("%d of %d differ", differ, n)
	}
}
