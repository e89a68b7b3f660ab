package metrics_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/internal/metrics"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// The reference's per-node gauges and pod state are read from the
// cluster at each scrape: what a node offers and reserves, what its pods
// and its DaemonSet pods request apart, how old it is; one series per
// pod; nothing of a node that is gone.
func TestClusterSeries(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		Labels: map[string]string{"karpenter.sh/nodepool": "default", corev1.LabelTopologyZone: "us-east-1a", corev1.LabelInstanceTypeStable: "m5.large"}}}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")}
	pod := func(name, cpu string, daemon bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		p.Status.Phase = corev1.PodRunning
		if daemon {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
		}
		return p
	}
	pending := pod("p", "1", false)
	pending.Spec.NodeName, pending.Status.Phase, pending.CreationTimestamp = "", corev1.PodPending, metav1.NewTime(now.Add(-90*time.Second))
	pending.UID = "uid-p"
	undecided := pod("q", "1", false)
	undecided.Spec.NodeName, undecided.Status.Phase, undecided.CreationTimestamp = "", corev1.PodPending, metav1.NewTime(now.Add(-30*time.Second))
	nodes, pods := []*corev1.Node{node}, []*corev1.Pod{pod("a", "500m", false), pod("b", "250m", false), pod("ds-1", "100m", true), pending, undecided}
	reg := scraped(t, metrics.NewClusterSeries(func() ([]*corev1.Node, []*corev1.Pod, func(*corev1.Node) bool, bool) {
		return nodes, pods, func(n *corev1.Node) bool { return n.Labels["karpenter.sh/nodepool"] != "" }, true
	}, func() time.Time { return now }, func(uid types.UID) bool { return uid == "uid-p" }))
	labels := `arch="",capacity_type="",instance_category="",instance_family="",instance_generation="",instance_size="",instance_type="m5.large",managed="true",node_name="n1",nodepool="default",os="",phase="",region="",zone="us-east-1a"`
	cpu := strings.Replace(labels, `,zone=`, `,resource_type="cpu",zone=`, 1)
	memory := strings.Replace(labels, `,zone=`, `,resource_type="memory",zone=`, 1)
	// The pods ask for no memory: a zero, so that sums over a NodePool
	// keep the node.
	want := `
# HELP karpenter_nodes_allocatable What a node offers pods, by resource.
# TYPE karpenter_nodes_allocatable gauge
karpenter_nodes_allocatable{` + cpu + `} 1.93
# HELP karpenter_nodes_total_pod_requests What the pods on a node (not DaemonSet pods) request, by resource.
# TYPE karpenter_nodes_total_pod_requests gauge
karpenter_nodes_total_pod_requests{` + cpu + `} 0.75
karpenter_nodes_total_pod_requests{` + memory + `} 0
# HELP karpenter_nodes_total_daemon_requests What the DaemonSet pods on a node request, by resource.
# TYPE karpenter_nodes_total_daemon_requests gauge
karpenter_nodes_total_daemon_requests{` + cpu + `} 0.1
karpenter_nodes_total_daemon_requests{` + memory + `} 0
# HELP karpenter_nodes_system_overhead What a node reserves for the system (capacity less allocatable), by resource.
# TYPE karpenter_nodes_system_overhead gauge
karpenter_nodes_system_overhead{` + cpu + `} 0.07
# HELP karpenter_nodes_current_lifetime_seconds How long a node has existed.
# TYPE karpenter_nodes_current_lifetime_seconds gauge
karpenter_nodes_current_lifetime_seconds{` + labels + `} 3600
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_nodes_allocatable", "karpenter_nodes_total_pod_requests",
		"karpenter_nodes_total_daemon_requests", "karpenter_nodes_system_overhead", "karpenter_nodes_current_lifetime_seconds"); err != nil {
		t.Error(err)
	}
	unbound := `
# HELP karpenter_pods_unbound_time_seconds How long a pod not bound to a node yet has existed.
# TYPE karpenter_pods_unbound_time_seconds gauge
karpenter_pods_unbound_time_seconds{name="p",namespace="default"} 90
karpenter_pods_unbound_time_seconds{name="q",namespace="default"} 30
# HELP karpenter_pods_unstarted_time_seconds How long a pod not running yet has existed.
# TYPE karpenter_pods_unstarted_time_seconds gauge
karpenter_pods_unstarted_time_seconds{name="p",namespace="default"} 90
karpenter_pods_unstarted_time_seconds{name="q",namespace="default"} 30
# HELP karpenter_pods_provisioning_unbound_time_seconds How long a pod nodewright planned room for, not bound yet, has existed.
# TYPE karpenter_pods_provisioning_unbound_time_seconds gauge
karpenter_pods_provisioning_unbound_time_seconds{name="p",namespace="default"} 90
# HELP karpenter_pods_provisioning_scheduling_undecided_time_seconds How long a pending pod no provisioning decision has planned room for yet has existed.
# TYPE karpenter_pods_provisioning_scheduling_undecided_time_seconds gauge
karpenter_pods_provisioning_scheduling_undecided_time_seconds{name="q",namespace="default"} 30
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(unbound), "karpenter_pods_unbound_time_seconds", "karpenter_pods_unstarted_time_seconds",
		"karpenter_pods_provisioning_unbound_time_seconds", "karpenter_pods_provisioning_scheduling_undecided_time_seconds"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "karpenter_pods_state"); err != nil || n != 5 {
		t.Errorf("karpenter_pods_state: %d series, %v", n, err)
	}
	nodes, pods = nil, nil
	if n, err := testutil.GatherAndCount(reg, "karpenter_nodes_allocatable", "karpenter_pods_state"); err != nil || n != 0 {
		t.Errorf("after the node and pods went: %d series, %v", n, err)
	}
}

// scraped gathers what the series write, parsed as a scraper parses it:
// the text must be valid exposition format, each family's series together.
func scraped(t *testing.T, series *metrics.ClusterSeries) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		var text bytes.Buffer
		if _, err := series.WriteTo(&text); err != nil {
			return nil, err
		}
		var parser expfmt.TextParser
		families, err := parser.TextToMetricFamilies(&text)
		if err != nil {
			t.Errorf("the series are not valid exposition format: %v", err)
			return nil, err
		}
		// In the order a registry gathers them: families by name, series
		// by labels (the text's order is the cache's).
		out := slices.SortedFunc(maps.Values(families), func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
		for _, f := range out {
			slices.SortFunc(f.Metric, func(a, b *dto.Metric) int { return strings.Compare(a.String(), b.String()) })
		}
		return out, nil
	})
}

// Reboots and eviction requests are counted under the reference's names.
func TestRebootAndEvictionSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Reboot(metrics.RebootSucceeded, 90*time.Second, 30*time.Second)
	m.Reboot(metrics.RebootRecoveryTimeout, 25*time.Minute, 0)
	m.EvictionRequest(201)
	m.EvictionRequest(429)
	m.EligibleByReason(map[string]int{"Drifted": 2})
	want := `
# HELP karpenter_nodes_reboots_total Reboots node repair asked for, by result (succeeded, provider_error, recovery_timeout, invalid_request).
# TYPE karpenter_nodes_reboots_total counter
karpenter_nodes_reboots_total{result="invalid_request"} 0
karpenter_nodes_reboots_total{result="provider_error"} 0
karpenter_nodes_reboots_total{result="recovery_timeout"} 1
karpenter_nodes_reboots_total{result="succeeded"} 1
# HELP karpenter_pods_eviction_requests_total Eviction requests a drain made, by the HTTP status code of the answer.
# TYPE karpenter_pods_eviction_requests_total counter
karpenter_pods_eviction_requests_total{code="201"} 1
karpenter_pods_eviction_requests_total{code="429"} 1
# HELP karpenter_voluntary_disruption_eligible_nodes Nodes a disruption method could act on at the last decision, by reason.
# TYPE karpenter_voluntary_disruption_eligible_nodes gauge
karpenter_voluntary_disruption_eligible_nodes{reason="drifted"} 2
karpenter_voluntary_disruption_eligible_nodes{reason="empty"} 0
karpenter_voluntary_disruption_eligible_nodes{reason="expired"} 0
karpenter_voluntary_disruption_eligible_nodes{reason="underutilized"} 0
karpenter_voluntary_disruption_eligible_nodes{reason="unhealthy"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_nodes_reboots_total", "karpenter_pods_eviction_requests_total",
		"karpenter_voluntary_disruption_eligible_nodes"); err != nil {
		t.Error(err)
	}
	if n := observations(t, reg)["karpenter_nodes_reboot_recovery_duration_seconds"]; n != 1 {
		t.Errorf("recovery durations: %d observations, want the succeeded reboot's", n)
	}
}

// Cloud provider calls are timed by method, failures counted by error
// kind, and instance types shown with their offerings.
func TestCloudProviderSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.CloudProviderCall("Create", time.Second, "")
	m.CloudProviderCall("Create", time.Second, "InsufficientCapacityError")
	capacity, _ := scheduling.ParseResources(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")})
	it := &scheduling.InstanceType{Name: "m5.large", Capacity: capacity,
		Offerings: []scheduling.Offering{{CapacityType: "spot", Zone: "us-east-1a", Price: 0.04, Available: true}, {CapacityType: "on-demand", Zone: "us-east-1a", Price: 0.096}}}
	m.InstanceTypes([]*scheduling.InstanceType{it})
	want := `
# HELP karpenter_cloudprovider_errors_total Cloud provider calls that failed, by method and error kind.
# TYPE karpenter_cloudprovider_errors_total counter
karpenter_cloudprovider_errors_total{controller="",error="InsufficientCapacityError",method="Create",provider="aws"} 1
# HELP karpenter_cloudprovider_instance_type_cpu_cores vCPUs of an instance type.
# TYPE karpenter_cloudprovider_instance_type_cpu_cores gauge
karpenter_cloudprovider_instance_type_cpu_cores{instance_type="m5.large"} 2
# HELP karpenter_cloudprovider_instance_type_offering_available 1 when an offering can be launched now, 0 when not (no capacity, not offered).
# TYPE karpenter_cloudprovider_instance_type_offering_available gauge
karpenter_cloudprovider_instance_type_offering_available{capacity_type="on-demand",instance_type="m5.large",zone="us-east-1a"} 0
karpenter_cloudprovider_instance_type_offering_available{capacity_type="spot",instance_type="m5.large",zone="us-east-1a"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_cloudprovider_errors_total", "karpenter_cloudprovider_instance_type_cpu_cores",
		"karpenter_cloudprovider_instance_type_offering_available"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "karpenter_cloudprovider_duration_seconds"); err != nil || n != 1 {
		t.Errorf("durations: %d series, %v", n, err)
	}
}

// A pod's binding and its first Ready are timed from its creation, once
// each: a pod Ready again after a restart does not start again.
func TestPodStartSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "uid-a", CreationTimestamp: metav1.NewTime(created)}}
	with := func(conds ...corev1.PodCondition) *corev1.Pod {
		p := pod.DeepCopy()
		p.Status.Conditions = conds
		return p
	}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(2 * time.Second))}
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(9 * time.Second))}
	unready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}
	m.PodsPlanned([]*corev1.Pod{pod}, created.Add(time.Second))
	m.PodsPlanned([]*corev1.Pod{pod}, created.Add(3*time.Second)) // planned again: decided once
	m.PodChanged(with(), with(scheduled))
	m.PodChanged(with(scheduled), with(scheduled, ready))
	m.PodChanged(with(scheduled, ready), with(scheduled, unready))
	m.PodChanged(with(scheduled, unready), with(scheduled, ready))
	want := `
# HELP karpenter_pods_startup_duration_seconds Time from a pod's creation to its being Ready.
# TYPE karpenter_pods_startup_duration_seconds summary
karpenter_pods_startup_duration_seconds{quantile="0"} 9
karpenter_pods_startup_duration_seconds{quantile="0.5"} 9
karpenter_pods_startup_duration_seconds{quantile="0.9"} 9
karpenter_pods_startup_duration_seconds{quantile="0.99"} 9
karpenter_pods_startup_duration_seconds{quantile="1"} 9
karpenter_pods_startup_duration_seconds_sum 9
karpenter_pods_startup_duration_seconds_count 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_pods_startup_duration_seconds"); err != nil {
		t.Error(err)
	}
	decided := `
# HELP karpenter_pods_scheduling_decision_duration_seconds Time from a pending pod's creation to the first decision that planned room for it.
# TYPE karpenter_pods_scheduling_decision_duration_seconds histogram
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="0.25"} 0
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="0.5"} 0
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="1"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="2"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="4"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="8"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="16"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="32"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="64"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="128"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="256"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="512"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="1024"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="2048"} 1
karpenter_pods_scheduling_decision_duration_seconds_bucket{le="+Inf"} 1
karpenter_pods_scheduling_decision_duration_seconds_sum 1
karpenter_pods_scheduling_decision_duration_seconds_count 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(decided), "karpenter_pods_scheduling_decision_duration_seconds"); err != nil {
		t.Error(err)
	}
	observed := observations(t, reg)
	for _, name := range []string{"karpenter_pods_bound_duration_seconds", "karpenter_pods_provisioning_bound_duration_seconds", "karpenter_pods_provisioning_startup_duration_seconds"} {
		if observed[name] != 1 {
			t.Errorf("%s: %d observations, want 1", name, observed[name])
		}
	}
}

// observations counts what each histogram observed.
func observations(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				out[f.GetName()] += h.GetSampleCount()
			}
		}
	}
	return out
}
