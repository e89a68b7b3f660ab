// Package workload generates the scheduling benchmark inputs: workload A,
// the reference implementation's benchmark (synthetic instance types and
// five classes of pods), and workload B, generic pods against the real
// instance type catalog.
package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/scheduling"
)

var (
	cpuChoices    = []string{"100m", "250m", "500m", "1000m", "1500m"}
	memoryChoices = []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	labelValues   = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// SyntheticInstanceTypes are workload A's 400 instance types: type i has i
// vCPU, 2i GiB and 10i pods, no overhead, spot in zone-1 and zone-2 and
// on-demand in zone-1..3, priced 0.1/vCPU + 0.1/GB.
func SyntheticInstanceTypes() []*scheduling.InstanceType {
	out := make([]*scheduling.InstanceType, 0, 400)
	for i := int64(1); i <= 400; i++ {
		capacity := scheduling.MustParseResources(fmt.Sprintf("cpu=%d,memory=%dGi,pods=%d", i, 2*i, 10*i))
		price := 0.1*float64(i) + 0.1*float64(capacity.Memory())/1e9
		name := fmt.Sprintf("fake-it-%d", i)
		reqs := scheduling.LabelRequirements(map[string]string{
			scheduling.LabelInstanceType: name, scheduling.LabelArch: "amd64", scheduling.LabelOS: "linux",
		})
		reqs.Add(scheduling.NewRequirement(scheduling.LabelZone, corev1.NodeSelectorOpIn, "zone-1", "zone-2", "zone-3"))
		reqs.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand))
		it := &scheduling.InstanceType{Name: name, Requirements: reqs, Capacity: capacity, Allocatable: capacity}
		for _, o := range []struct{ zone, ct string }{
			{"zone-1", v1.CapacityTypeSpot}, {"zone-2", v1.CapacityTypeSpot},
			{"zone-1", v1.CapacityTypeOnDemand}, {"zone-2", v1.CapacityTypeOnDemand}, {"zone-3", v1.CapacityTypeOnDemand},
		} {
			it.Offerings = append(it.Offerings, scheduling.Offering{Zone: o.zone, CapacityType: o.ct, Price: price, Available: true})
		}
		out = append(out, it)
	}
	return out
}

func amis() []scheduling.AMI {
	return []scheduling.AMI{{ID: "ami-amd64", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{
		Key: scheduling.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
	})}, {ID: "ami-arm64", Requirements: scheduling.NewRequirements(corev1.NodeSelectorRequirement{
		Key: scheduling.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"},
	})}}
}

func nodePool(types []*scheduling.InstanceType) *scheduling.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	return scheduling.NodePoolFromObject(np, types, amis(), nil)
}

// A returns workload A with n pods.
func A(n int, seed uint64) scheduling.Input {
	rng := rand.New(rand.NewPCG(seed, seed)) // a seeded generator makes the workload reproducible
	pods := make([]*corev1.Pod, 0, n)
	per := n / 5
	for i := 0; i < n; i++ {
		class := 0
		if i < 5*per {
			class = i / per
		}
		pod := pod(rng, fmt.Sprintf("pod-%d", i))
		switch class {
		case 0:
			pod.Labels["my-label"] = pick(rng, labelValues)
		case 1, 2:
			key := scheduling.LabelZone
			if class == 2 {
				key = scheduling.LabelHostname
			}
			pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": pick(rng, labelValues)}},
			}}
			pod.Labels["my-label"] = pick(rng, labelValues)
		case 3:
			v := pick(rng, labelValues)
			pod.Labels["my-affinity"] = v
			pod.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey:   scheduling.LabelZone,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-affinity": v}},
				}},
			}}
		case 4:
			pod.Labels["app"] = "nginx"
			pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					TopologyKey:   scheduling.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
				}},
			}}
		}
		pods = append(pods, pod)
	}
	return scheduling.Input{NodePools: []*scheduling.NodePool{nodePool(SyntheticInstanceTypes())}, Pods: pods}
}

// Zones are workload B's: three of us-east-1, whose prices the catalog
// has.
var Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// B returns workload B: n generic pods against the real catalog in three
// zones, spot and on-demand.
func B(n int, seed uint64) (scheduling.Input, error) {
	types, err := instancetypes.Load(instancetypes.Options{Zones: Zones})
	if err != nil {
		return scheduling.Input{}, err
	}
	rng := rand.New(rand.NewPCG(seed, seed)) // a seeded generator makes the workload reproducible
	pods := make([]*corev1.Pod, 0, n)
	for i := 0; i < n; i++ {
		pods = append(pods, pod(rng, fmt.Sprintf("pod-%d", i)))
	}
	return scheduling.Input{NodePools: []*scheduling.NodePool{nodePool(types)}, Pods: pods}, nil
}

func pod(rng *rand.Rand, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(pick(rng, cpuChoices)),
				corev1.ResourceMemory: resource.MustParse(pick(rng, memoryChoices)),
			}},
		}}},
	}
}

func pick(rng *rand.Rand, from []string) string { return from[rng.IntN(len(from))] }

// LowerBound is the price of the cheapest fractional cover of the pods'
// total CPU and memory by the instance types' allocatable: a bound no plan
// can beat. It is loose: it may buy CPU from a type whose memory no pod can
// use (t3a.nano: 2 vCPU, 74Mi allocatable).
func LowerBound(in scheduling.Input) float64 { return cover(in, false) }

// PodAwareLowerBound is the same cover with each type's capacity cut to
// what pods can use: at most as many pods as fit its pod slots, CPU and
// memory at the smallest pod requests, each using at most the largest pod
// requests. Still a bound no plan can beat, and a tighter one.
func PodAwareLowerBound(in scheduling.Input) float64 { return cover(in, true) }

func cover(in scheduling.Input, podAware bool) float64 {
	var cpu, mem float64
	minReq, maxReq := scheduling.Resources{}, scheduling.Resources{}
	for i, p := range in.Pods {
		r, _ := scheduling.PodRequests(p)
		cpu += float64(r.CPU())
		mem += float64(r.Memory())
		maxReq = maxReq.Max(r)
		if i == 0 {
			minReq = r
		}
		for d := range minReq {
			minReq[d] = min(minReq[d], r[d])
		}
	}
	type option struct{ price, cpu, mem float64 }
	var opts []option
	for _, np := range in.NodePools {
		for _, it := range np.InstanceTypes {
			o, ok := it.CheapestOffering(np.Requirements)
			a := it.Allocatable
			if !ok || a.CPU() <= 0 || a.Memory() <= 0 {
				continue
			}
			c, m := float64(a.CPU()), float64(a.Memory())
			if podAware {
				n := float64(a.Pods())
				if minReq.CPU() > 0 {
					n = min(n, math.Floor(c/float64(minReq.CPU())))
				}
				if minReq.Memory() > 0 {
					n = min(n, math.Floor(m/float64(minReq.Memory())))
				}
				c, m = min(c, n*float64(maxReq.CPU())), min(m, n*float64(maxReq.Memory()))
				if c <= 0 || m <= 0 {
					continue
				}
			}
			opts = append(opts, option{o.Price, c, m})
		}
	}
	best := math.Inf(1)
	for _, a := range opts {
		best = min(best, a.price*max(cpu/a.cpu, mem/a.mem))
	}
	for i, a := range opts {
		for _, b := range opts[i+1:] {
			det := a.cpu*b.mem - b.cpu*a.mem
			if det == 0 {
				continue
			}
			xa := (cpu*b.mem - b.cpu*mem) / det
			xb := (a.cpu*mem - cpu*a.mem) / det
			if xa >= 0 && xb >= 0 {
				best = min(best, xa*a.price+xb*b.price)
			}
		}
	}
	return best
}
