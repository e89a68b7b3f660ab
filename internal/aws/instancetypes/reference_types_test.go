package instancetypes_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/instancetypes/instancetypestest"
	"github.com/nodewright/nodewright/internal/aws/kubeletconfig"
	"github.com/nodewright/nodewright/internal/scheduling"
)

// variant is an EC2NodeClass and controller settings the comparison runs
// under.
type variant struct {
	name         string
	class        awsv1.EC2NodeClass
	overhead     float64
	reservedENIs int
	every        int // compare every n-th type (1: all)
}

func classOf(family string, kubelet map[string]any, mod func(*awsv1.EC2NodeClass)) awsv1.EC2NodeClass {
	c := awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMIFamily: ptr.To(family), Kubelet: awsv1.KubeletConfiguration{}}}
	for k, v := range kubelet {
		raw, _ := json.Marshal(v)
		c.Spec.Kubelet[k] = apiextensionsv1.JSON{Raw: raw}
	}
	if mod != nil {
		mod(&c)
	}
	return c
}

func variants() []variant {
	root := func(size string) func(*awsv1.EC2NodeClass) {
		return func(c *awsv1.EC2NodeClass) {
			c.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(size)}}}
		}
	}
	return []variant{
		{name: "AL2023 defaults", class: classOf(awsv1.AMIFamilyAL2023, nil, nil), overhead: 0.075, every: 1},
		{name: "AL2 maxPods 20, podsPerCore 4", class: classOf(awsv1.AMIFamilyAL2, map[string]any{"maxPods": 20, "podsPerCore": 4}, nil), overhead: 0.075, every: 5},
		{name: "Bottlerocket podsPerCore 2 and reservations", class: classOf(awsv1.AMIFamilyBottlerocket,
			map[string]any{"podsPerCore": 2, "kubeReserved": map[string]string{"cpu": "250m", "memory": "1Gi"}, "systemReserved": map[string]string{"memory": "300Mi"},
				"evictionHard": map[string]string{"memory.available": "5%", "nodefs.available": "15%"}}, nil), overhead: 0.075, every: 5},
		{name: "Windows2022", class: classOf(awsv1.AMIFamilyWindows2022, nil, nil), overhead: 0.075, every: 5},
		{name: "AL2023 100Gi root volume", class: classOf(awsv1.AMIFamilyAL2023, nil, root("100Gi")), overhead: 0.075, every: 5},
		{name: "AL2023 RAID0", class: classOf(awsv1.AMIFamilyAL2023, nil, func(c *awsv1.EC2NodeClass) { c.Spec.InstanceStorePolicy = ptr.To("RAID0") }), overhead: 0.075, every: 3},
		{name: "AL2023 reservedENIs 1, 5% VM overhead", class: classOf(awsv1.AMIFamilyAL2023, nil, nil), overhead: 0.05, reservedENIs: 1, every: 5},
		{name: "Custom with two volumes", class: classOf(awsv1.AMIFamilyCustom, map[string]any{"maxPods": 110}, func(c *awsv1.EC2NodeClass) {
			c.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("30Gi")}},
				{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("200Gi")}}}
		}), overhead: 0.075, every: 5},
	}
}

// Differences kept on purpose, by label: nodes launch with the default
// tenancy only (the reference also offers dedicated, which nodewright
// does not launch), so a NodePool asking for dedicated gets no node
// rather than a shared one.
var keptLabelDifferences = map[string]string{
	instancetypes.LabelTenancy: "nodewright launches default tenancy only",
}

// TestInstanceTypesAsTheReferenceComputesThem: every type of the catalog,
// under the default EC2NodeClass, and a sample under block-device, RAID0,
// maxPods, podsPerCore, reservation, Windows, reservedENIs and VM overhead
// variants, gets the labels, capacity and allocatable the reference's own
// code gives it from the same DescribeInstanceTypes record.
func TestInstanceTypesAsTheReferenceComputesThem(t *testing.T) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	zoneIDs := map[string]string{"eu-west-1a": "euw1-az3", "eu-west-1b": "euw1-az1", "eu-west-1c": "euw1-az2"}
	type pending struct {
		v    variant
		spec instancetypes.Spec
	}
	var cases []pending
	var inputs []instancetypestest.Input
	for _, v := range variants() {
		kc, err := kubeletconfig.Parse(v.class.Spec.Kubelet)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if kc == nil {
			kc = &kubeletconfig.Config{}
		}
		for i, s := range specs {
			if i%v.every != 0 || s.OnDemand == 0 {
				continue
			}
			if awsv1.IsWindows(*v.class.Spec.AMIFamily) && s.Arch != "amd64" {
				continue // nodewright leaves arm64 out of Windows classes (Needs.Unmet)
			}
			info, err := json.Marshal(s.Info)
			if err != nil {
				t.Fatal(err)
			}
			c := instancetypestest.Input{Info: info, Region: "eu-west-1", Zones: zones, AMIFamily: *v.class.Spec.AMIFamily,
				BlockDeviceMappings: v.class.Spec.BlockDeviceMappings, InstanceStorePolicy: v.class.Spec.InstanceStorePolicy,
				MaxPods: kc.MaxPods, PodsPerCore: kc.PodsPerCore, KubeReserved: kc.KubeReserved, SystemReserved: kc.SystemReserved, EvictionHard: kc.EvictionHard,
				VMMemoryOverheadPercent: v.overhead, ReservedENIs: v.reservedENIs}
			for _, z := range zones {
				c.ZoneInfo = append(c.ZoneInfo, map[string]string{"zone": z, "zoneID": zoneIDs[z]})
			}
			inputs = append(inputs, c)
			cases = append(cases, pending{v: v, spec: s})
		}
	}
	agree, differ := map[string]int{}, map[string]int{}
	kinds, example := map[string]int{}, map[string]string{}
	for i, ref := range instancetypestest.Run(t, inputs) {
		c := cases[i]
		kc, _ := kubeletconfig.Parse(c.v.class.Spec.Kubelet)
		if kc == nil {
			kc = &kubeletconfig.Config{}
		}
		overhead := c.v.overhead
		needs := instancetypes.NeedsOf(&c.v.class)
		ours := instancetypes.InstanceTypes([]instancetypes.Spec{c.spec}, instancetypes.Options{Zones: zones, ZoneIDs: zoneIDs, Kubelet: kc, Needs: needs,
			VMMemoryOverheadPercent: &overhead, ReservedENIs: c.v.reservedENIs})[0]
		diffs := compareType(ref, ours)
		if len(diffs) == 0 {
			agree[c.v.name]++
			continue
		}
		differ[c.v.name]++
		for _, d := range diffs {
			kind := c.v.name + " — " + strings.SplitN(d, ":", 2)[0]
			if kinds[kind]++; kinds[kind] == 1 {
				example[kind] = ref.Name + ": " + d
			}
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		t.Errorf("%s: %d types differ, as %s", kind, kinds[kind], example[kind])
	}
	names := make([]string, 0, len(agree)+len(differ))
	for _, v := range variants() {
		names = append(names, v.name)
	}
	for _, n := range names {
		t.Logf("%s: %d of %d types agree with the reference", n, agree[n], agree[n]+differ[n])
	}
}

// compareType lists where an instance type differs from the reference's.
func compareType(ref instancetypestest.Output, ours *scheduling.InstanceType) []string {
	var diffs []string
	keys := make([]string, 0, len(ref.Requirements))
	for k := range ref.Requirements {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		r := ref.Requirements[key]
		if _, kept := keptLabelDifferences[key]; kept {
			continue
		}
		got, has := ours.Requirements[key]
		switch r.Operator {
		case "DoesNotExist":
			if has {
				diffs = append(diffs, fmt.Sprintf("%s: the reference sets no label, nodewright %s", key, got))
			}
		case "In":
			want := slices.Clone(r.Values)
			sort.Strings(want)
			var values []string
			if has {
				values = got.Values()
				sort.Strings(values)
			}
			if !slices.Equal(values, want) {
				diffs = append(diffs, fmt.Sprintf("%s: the reference %v, nodewright %v", key, want, values))
			}
		default:
			diffs = append(diffs, fmt.Sprintf("%s: the reference's operator %s", key, r.Operator))
		}
	}
	for key := range ours.Requirements {
		if _, ok := ref.Requirements[key]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: nodewright sets %s, the reference knows no such label", key, ours.Requirements[key]))
		}
	}
	for _, side := range []struct {
		what string
		ref  corev1.ResourceList
		ours scheduling.Resources
	}{{"capacity", ref.Capacity, ours.Capacity}, {"allocatable", ref.Allocatable, ours.Allocatable}} {
		want, unknown := scheduling.ParseResources(nonZero(side.ref))
		if len(unknown) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s: resources nodewright does not know: %v", side.what, unknown))
		}
		if got := withoutDevices(side.ours); want.String() != got {
			diffs = append(diffs, fmt.Sprintf("%s: the reference %s, nodewright %s", side.what, want, got))
		}
	}
	return diffs
}

// withoutDevices is a node's resources without the devices nodewright
// counts for dynamic resource allocation (devices/DRIVER), which are not
// resources the node reports.
func withoutDevices(r scheduling.Resources) string {
	parts := strings.Fields(r.String())
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return strings.HasPrefix(p, "devices/") }), " ")
}

func nonZero(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// wellKnownProbes are NodePool requirements on each well-known label of
// instance types, with each operator, as users write them.
var wellKnownProbes = func() [][]corev1.NodeSelectorRequirement {
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}
	}
	g := awsv1.Group + "/"
	var out [][]corev1.NodeSelectorRequirement
	for key, value := range map[string]string{
		g + "instance-gpu-name": "t4", g + "instance-gpu-manufacturer": "nvidia", g + "instance-cpu-manufacturer": "amd",
		g + "instance-accelerator-name": "inferentia2", g + "instance-accelerator-manufacturer": "aws", g + "instance-encryption-in-transit-supported": "true",
		g + "instance-capability-flex": "true", g + "instance-hypervisor": "nitro", g + "instance-category": "c", g + "instance-family": "g5",
		g + "instance-size": "metal", g + "instance-tenancy": "default", "kubernetes.io/arch": "arm64",
	} {
		out = append(out, req(key, corev1.NodeSelectorOpIn, value), req(key, corev1.NodeSelectorOpNotIn, value),
			req(key, corev1.NodeSelectorOpExists), req(key, corev1.NodeSelectorOpDoesNotExist))
	}
	for key, bounds := range map[string][2]string{
		g + "instance-local-nvme": {"100", "1000"}, g + "instance-network-bandwidth": {"10000", "5000"}, g + "instance-ebs-bandwidth": {"10000", "5000"},
		g + "instance-cpu-sustained-clock-speed-mhz": {"3000", "2600"}, g + "instance-gpu-memory": {"16000", "30000"}, g + "instance-gpu-count": {"1", "4"},
		g + "instance-accelerator-count": {"1", "4"}, g + "instance-generation": {"6", "4"}, g + "instance-cpu": {"8", "4"}, g + "instance-memory": {"16384", "4096"},
	} {
		out = append(out, req(key, corev1.NodeSelectorOpGt, bounds[0]), req(key, corev1.NodeSelectorOpLt, bounds[1]),
			req(key, corev1.NodeSelectorOpExists), req(key, corev1.NodeSelectorOpDoesNotExist), req(key, corev1.NodeSelectorOpIn, bounds[0]))
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}()

// TestWellKnownLabelsAdmitTheReferencesTypes: a NodePool requirement on
// any well-known instance type label, with any operator, admits exactly
// the catalog's types the reference's own instance type filter admits
// (its requirements' Intersects, on the types its code computes).
func TestWellKnownLabelsAdmitTheReferencesTypes(t *testing.T) {
	specs, err := instancetypes.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	zones := []string{"ap-south-2a", "ap-south-2b"}
	var inputs []instancetypestest.Input
	var priced []instancetypes.Spec
	for _, s := range specs {
		if s.OnDemand == 0 {
			continue
		}
		info, err := json.Marshal(s.Info)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, instancetypestest.Input{Info: info, Region: "ap-south-2", Zones: zones, ZoneInfo: []map[string]string{{"zone": zones[0]}, {"zone": zones[1]}},
			AMIFamily: awsv1.AMIFamilyBottlerocket, VMMemoryOverheadPercent: 0.075, Probes: wellKnownProbes})
		priced = append(priced, s)
	}
	ours := instancetypes.InstanceTypes(priced, instancetypes.Options{Zones: zones, Needs: instancetypes.Needs{Family: awsv1.AMIFamilyBottlerocket}})
	admittedBoth := make([]int, len(wellKnownProbes))
	for i, ref := range instancetypestest.Run(t, inputs) {
		for p, probe := range wellKnownProbes {
			got := ours[i].Compatible(scheduling.NewRequirements(probe...))
			if _, kept := keptLabelDifferences[probe[0].Key]; kept {
				continue
			}
			switch {
			case got != ref.Admitted[p]:
				t.Errorf("%s %s %v: the reference admits %s %v, nodewright %v", probe[0].Key, probe[0].Operator, probe[0].Values, ref.Name, ref.Admitted[p], got)
			case got:
				admittedBoth[p]++
			}
		}
	}
	for p, probe := range wellKnownProbes {
		t.Logf("%s %s %v: %d types", probe[0].Key, probe[0].Operator, probe[0].Values, admittedBoth[p])
	}
}

// TestReferenceTestRecordsAsTheReferenceComputesThem: the
// DescribeInstanceTypes records the reference's own tests use (its
// pkg/fake), read as nodewright reads a live answer, give the labels,
// capacity and allocatable its code gives them.
func TestReferenceTestRecordsAsTheReferenceComputesThem(t *testing.T) {
	records := instancetypestest.FakeRecords(t)
	zones := []string{"us-west-2a", "us-west-2b"}
	var inputs []instancetypestest.Input
	var specs []instancetypes.Spec
	for _, raw := range records {
		var info ec2types.InstanceTypeInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		s := instancetypes.FromRecord(info)
		s.OnDemand = 1 // priced, so offered as the reference offers it
		specs = append(specs, s)
		inputs = append(inputs, instancetypestest.Input{Info: raw, Region: "us-west-2", Zones: zones,
			ZoneInfo: []map[string]string{{"zone": zones[0], "zoneID": "usw2-az1"}, {"zone": zones[1], "zoneID": "usw2-az2"}}, AMIFamily: awsv1.AMIFamilyAL2023, VMMemoryOverheadPercent: 0.075})
	}
	ours := instancetypes.InstanceTypes(specs, instancetypes.Options{Zones: zones, ZoneIDs: map[string]string{zones[0]: "usw2-az1", zones[1]: "usw2-az2"}})
	agree := 0
	for i, ref := range instancetypestest.Run(t, inputs) {
		if diffs := compareType(ref, ours[i]); len(diffs) > 0 {
			t.Errorf("%s:\n  %s", ref.Name, strings.Join(diffs, "\n  "))
			continue
		}
		agree++
	}
	t.Logf("%d of %d of the reference's test records agree", agree, len(records))
}
