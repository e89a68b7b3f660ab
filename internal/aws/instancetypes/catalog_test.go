package instancetypes

import (
	"os"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/scheduling"
)

func byName(t *testing.T, opts Options) map[string]*scheduling.InstanceType {
	t.Helper()
	specs, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) < 1000 {
		t.Fatalf("catalog has %d instance types", len(specs))
	}
	out := map[string]*scheduling.InstanceType{}
	for _, it := range InstanceTypes(specs, opts) {
		out[it.Name] = it
	}
	return out
}

// Allocatable follows the kubelet's arithmetic: m5.large has 2 vCPU, 8GiB,
// 3 ENIs of 10 addresses → 29 pods; kube-reserved 70m CPU and
// 11*29+255 = 574Mi; eviction 100Mi; VM overhead 7.5% of 8192Mi = 615Mi; 20Gi root
// volume less 1Gi reserved and 10% eviction; security groups for pods
// can give it 9 branch interfaces. A Graviton keeps 64Mi before the VM
// overhead is taken.
func TestAllocatable(t *testing.T) {
	types := byName(t, Options{Zones: []string{"us-east-1a"}})
	m5 := types["m5.large"]
	want := scheduling.MustParseResources("cpu=1930m,memory=6903Mi,pods=29,ephemeral-storage=17Gi,vpc.amazonaws.com/pod-eni=9")
	if m5.Allocatable != want {
		t.Errorf("m5.large allocatable %s, want %s", m5.Allocatable, want)
	}
	if got := types["t4g.medium"].Capacity.Memory() >> 20; got != 4032-303 {
		t.Errorf("t4g.medium memory capacity %dMi, want %dMi (arm64 loses 64Mi, then 7.5%%)", got, 4032-303)
	}
	maxPods := int32(20)
	limited := byName(t, Options{Zones: []string{"us-east-1a"}, Kubelet: &kubeletconfig.Config{MaxPods: &maxPods}})
	if got := limited["m5.large"].Capacity.Pods(); got != 20 {
		t.Errorf("maxPods 20 gives %d pods", got)
	}
}

func TestLabelsAndOfferings(t *testing.T) {
	types := byName(t, Options{Zones: []string{"us-east-1a", "us-east-1b"}})
	for name, want := range map[string][2]string{"m7i-flex.large": {"m", "7"}, "u-6tb1.56xlarge": {"u", "1"}, "c6gn.medium": {"c", "6"}} {
		it, ok := types[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		cat, _ := it.Requirements["karpenter.k8s.aws/instance-category"].Single()
		gen, _ := it.Requirements["karpenter.k8s.aws/instance-generation"].Single()
		if cat != want[0] || gen != want[1] {
			t.Errorf("%s: category %q generation %q, want %v", name, cat, gen, want)
		}
	}
	m5 := types["m5.large"]
	if len(m5.Offerings) != 4 {
		t.Fatalf("m5.large has %d offerings, want on-demand and spot in 2 zones", len(m5.Offerings))
	}
	for _, o := range m5.Offerings {
		if o.CapacityType == "spot" && (o.Price < 0.096*0.3 || o.Price > 0.096*0.7) {
			t.Errorf("spot price %.5f outside 30-70%% of on-demand", o.Price)
		}
	}
	if SpotPrice("m5.large", "us-east-1a", 0.096) != SpotPrice("m5.large", "us-east-1a", 0.096) ||
		SpotPrice("m5.large", "us-east-1a", 0.096) == SpotPrice("m5.large", "us-east-1b", 0.096) {
		t.Error("spot prices must be fixed per type and zone, and differ between zones")
	}
}

// Windows nodes (the reference's Windows families): amd64 types only,
// labelled with the OS and build, 110 pods whatever the ENIs, a 50Gi
// root volume, and the primary interface's addresses but one for pods.
func TestWindowsInstanceTypes(t *testing.T) {
	types := byName(t, Options{Zones: []string{"us-east-1a"}, Needs: Needs{Windows: true, WindowsBuild: "10.0.20348"}})
	if _, ok := types["m6g.large"]; ok {
		t.Error("arm64 types are offered for Windows")
	}
	m5 := types["m5.large"]
	if m5 == nil {
		t.Fatal("m5.large is not offered for Windows")
	}
	for key, want := range map[string]string{"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"} {
		if v, _ := m5.Requirements[key].Single(); v != want {
			t.Errorf("%s = %q, want %q", key, v, want)
		}
	}
	// 110 pods: kube-reserved 11*110+255 = 1465Mi, so 7577Mi-1465Mi-100Mi; m5.large's primary
	// interface takes 10 addresses, 9 for pods.
	want := scheduling.MustParseResources("cpu=1930m,memory=6012Mi,pods=110,ephemeral-storage=44Gi,vpc.amazonaws.com/pod-eni=9,vpc.amazonaws.com/PrivateIPv4Address=9")
	if m5.Allocatable != want {
		t.Errorf("m5.large allocatable %s, want %s", m5.Allocatable, want)
	}
	linux := byName(t, Options{Zones: []string{"us-east-1a"}})["m5.large"]
	if _, ok := linux.Requirements["node.kubernetes.io/windows-build"]; ok || hasAddresses(linux) {
		t.Errorf("a Linux type has Windows labels or addresses: %v", linux.Requirements)
	}
}

func hasAddresses(it *scheduling.InstanceType) bool {
	q, ok := it.Capacity.List()[PrivateIPv4Address]
	return ok && !q.IsZero()
}

// The EFA device plugin's resource is each type's EFA interfaces, as
// DescribeInstanceTypes reports them; a type without EFA has none.
func TestEFACapacity(t *testing.T) {
	types := byName(t, Options{Zones: []string{"us-east-1a"}})
	for name, want := range map[string]string{"c5n.18xlarge": "1", "p4d.24xlarge": "4", "p5.48xlarge": "32", "m5.large": "0"} {
		list := types[name].Capacity.List()
		got := list[EFAResource]
		if got.String() != want {
			t.Errorf("%s: %s %s, want %s", name, EFAResource, got.String(), want)
		}
	}
}

// The Scheduling labels page lists every label the catalog's types carry.
func TestSchedulingPageListsEveryLabel(t *testing.T) {
	page, err := os.ReadFile("../../../docs/concepts/scheduling.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, needs := range []Needs{{}, {Windows: true, WindowsBuild: "10.0.20348"}} {
		for _, it := range InstanceTypes(mustCatalog(t), Options{Zones: []string{"eu-west-1a"}, ZoneIDs: map[string]string{"eu-west-1a": "euw1-az3"}, Needs: needs}) {
			for key := range it.Requirements {
				seen[key] = true
			}
		}
	}
	for key := range seen {
		if !strings.Contains(string(page), "`"+key+"`") {
			t.Errorf("docs/concepts/scheduling.md does not list %s", key)
		}
	}
}

func mustCatalog(t *testing.T) []Spec {
	t.Helper()
	specs, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	return specs
}
