package provider_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

// An EBS volume made from a snapshot is launched with the initialization
// rate the EC2NodeClass asks for.
func TestVolumeInitializationRateIsLaunched(t *testing.T) {
	f := setup(t)
	f.class.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{
		DeviceName: ptr.To("/dev/xvdb"),
		EBS:        &awsv1.BlockDevice{SnapshotID: ptr.To("snap-0123456789abcdef0"), VolumeInitializationRate: ptr.To[int32](200)},
	}}
	if _, err := f.provider.Create(context.Background(), claim("rate", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err != nil {
		t.Fatal(err)
	}
	insts := f.account.Instances()
	if len(insts) != 1 || len(insts[0].Launched.BlockDeviceMappings) != 1 {
		t.Fatalf("instances %d; want one with the volume", len(insts))
	}
	ebs := insts[0].Launched.BlockDeviceMappings[0].Ebs
	if ebs == nil || ptr.Deref(ebs.VolumeInitializationRate, 0) != 200 || ptr.Deref(ebs.SnapshotId, "") != "snap-0123456789abcdef0" {
		t.Errorf("launched volume %+v; want the snapshot filled at 200 MiB/s", ebs)
	}
}

// classTypes are the instance types the EC2NodeClass launches, through the
// cloud provider (which keeps only the types that meet its needs).
func (f *fixture) classTypes(t *testing.T) []*scheduling.InstanceType {
	t.Helper()
	resolve(t, f.resolver, f.class)
	cloud := &provider.CloudProvider{Launcher: f.provider, Types: &instancetypes.Cache{
		Provider: &instancetypes.Provider{EC2: f.account.EC2(), Pricing: f.account.Pricing(), Region: account.Region},
		Clock:    clock.RealClock{}, TTL: time.Hour,
	}}
	types, err := cloud.InstanceTypes(context.Background(), f.class)
	if err != nil {
		t.Fatal(err)
	}
	return types
}

func typeNames(types []*scheduling.InstanceType) map[string]bool {
	out := map[string]bool{}
	for _, it := range types {
		out[it.Name] = true
	}
	return out
}

// Nested virtualization enabled keeps only the types that support it on
// virtual instances (c8i, m8i, r8i and their flex variants) and launches
// with it enabled; EC2 refuses it on any other type.
func TestNestedVirtualizationIsLaunched(t *testing.T) {
	f := setup(t)
	f.class.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr.To("enabled")}
	types := f.classTypes(t)
	names := typeNames(types)
	if len(types) == 0 || names["m5.large"] || names["m8i.metal-48xl"] || !names["m8i.large"] || !names["c8i-flex.large"] {
		t.Fatalf("%d types with nested virtualization (m5.large %v, m8i.metal-48xl %v, m8i.large %v); want only virtual 8th generation Intel types",
			len(types), names["m5.large"], names["m8i.metal-48xl"], names["m8i.large"])
	}
	inst, err := f.provider.Create(context.Background(), claim("nested"), f.class, types)
	if err != nil {
		t.Fatal(err)
	}
	family, _, _ := strings.Cut(inst.InstanceType, ".")
	launched := f.account.Instances()[0].Launched
	if !strings.HasSuffix(strings.TrimSuffix(family, "-flex"), "8i") || launched.CpuOptions == nil || launched.CpuOptions.NestedVirtualization != ec2types.NestedVirtualizationSpecificationEnabled {
		t.Errorf("launched %s with CPU options %+v; want an 8th generation Intel type with nested virtualization enabled", inst.InstanceType, launched.CpuOptions)
	}
	// Asked of the whole catalog (stale types), EC2 refuses m5.large.
	if _, err := f.provider.Create(context.Background(), claim("m5", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err == nil ||
		!strings.Contains(err.Error(), "does not support nested virtualization") {
		t.Errorf("nested virtualization on m5.large: got %v; want EC2's refusal", err)
	}
}

// Nitro Enclaves enabled keeps only the types that run them (virtual
// Nitro types of 4 vCPUs or more, 2 on Graviton, no burstable or flex
// types) and launches with enclaves enabled; EC2 refuses them elsewhere.
func TestNitroEnclavesAreLaunched(t *testing.T) {
	f := setup(t)
	f.class.Spec.EnclaveOptions = &awsv1.EnclaveOptions{Enabled: true}
	types := f.classTypes(t)
	names := typeNames(types)
	if len(types) == 0 || names["m5.large"] || names["t3.xlarge"] || names["m5.metal"] || !names["m5.xlarge"] || !names["c7g.large"] {
		t.Fatalf("%d types with Nitro Enclaves (m5.large %v, t3.xlarge %v, m5.metal %v, m5.xlarge %v, c7g.large %v)",
			len(types), names["m5.large"], names["t3.xlarge"], names["m5.metal"], names["m5.xlarge"], names["c7g.large"])
	}
	if _, err := f.provider.Create(context.Background(), claim("enclave", in(scheduling.LabelInstanceType, "m5.xlarge")), f.class, types); err != nil {
		t.Fatal(err)
	}
	launched := f.account.Instances()[0].Launched
	if launched.EnclaveOptions == nil || !aws.ToBool(launched.EnclaveOptions.Enabled) {
		t.Errorf("launched with enclave options %+v; want enabled", launched.EnclaveOptions)
	}
	if _, err := f.provider.Create(context.Background(), claim("m5", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err == nil ||
		!strings.Contains(err.Error(), "does not support Nitro Enclaves") {
		t.Errorf("Nitro Enclaves on m5.large (2 vCPUs): got %v; want EC2's refusal", err)
	}
}

// Network interfaces with an EFA-only interface on a second network card
// keep only types with two cards and EFA, and are launched as given: the
// security groups on each, IP prefixes, the public IP setting and
// connection tracking on the ENA interface only.
func TestNetworkInterfacesAreLaunched(t *testing.T) {
	f := setup(t)
	f.class.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	f.class.Spec.IPPrefixCount = ptr.To[int32](2)
	f.class.Spec.AssociatePublicIPAddress = ptr.To(false)
	f.class.Spec.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](600), UDPTimeout: ptr.To[int32](45)}
	types := f.classTypes(t)
	names := typeNames(types)
	if len(types) == 0 || names["m5.large"] || names["c5n.18xlarge"] || !names["p5.48xlarge"] {
		t.Fatalf("%d types (m5.large %v, c5n.18xlarge %v with one card, p5.48xlarge %v); want only types with two network cards and EFA",
			len(types), names["m5.large"], names["c5n.18xlarge"], names["p5.48xlarge"])
	}
	if _, err := f.provider.Create(context.Background(), claim("efa"), f.class, types); err != nil {
		t.Fatal(err)
	}
	launched := f.account.Instances()[0].Launched
	if len(launched.NetworkInterfaces) != 2 || len(launched.SecurityGroupIds) != 0 {
		t.Fatalf("launched interfaces %+v and instance security groups %v; want the two interfaces carrying the groups", launched.NetworkInterfaces, launched.SecurityGroupIds)
	}
	primary, efa := launched.NetworkInterfaces[0], launched.NetworkInterfaces[1]
	ct := primary.ConnectionTrackingSpecification
	if aws.ToString(primary.InterfaceType) != "interface" || aws.ToInt32(primary.Ipv4PrefixCount) != 2 || aws.ToBool(primary.AssociatePublicIpAddress) ||
		primary.AssociatePublicIpAddress == nil || ct == nil || aws.ToInt32(ct.TcpEstablishedTimeout) != 600 || aws.ToInt32(ct.UdpTimeout) != 45 || ct.UdpStreamTimeout != nil ||
		len(primary.Groups) == 0 {
		t.Errorf("primary interface %+v (tracking %+v); want type interface, 2 prefixes, no public IP, TCP 600 s / UDP 45 s, the security groups", primary, ct)
	}
	if aws.ToString(efa.InterfaceType) != "efa-only" || aws.ToInt32(efa.NetworkCardIndex) != 1 || efa.Ipv4PrefixCount != nil ||
		efa.ConnectionTrackingSpecification != nil || efa.AssociatePublicIpAddress != nil || len(efa.Groups) == 0 {
		t.Errorf("EFA interface %+v; want efa-only on card 1 with the groups and nothing else", efa)
	}
	if got := f.account.Instances()[0].SecurityGroups; len(got) == 0 {
		t.Error("the instance has no security groups; the primary interface's groups are the instance's")
	}
}

// Without network interfaces the primary one is launched with the
// EC2NodeClass's public IP setting and prefixes; connection tracking
// keeps to Nitro types, and EC2 refuses it on Xen.
func TestPrimaryInterfaceAndConnectionTracking(t *testing.T) {
	f := setup(t)
	f.class.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPStreamTimeout: ptr.To[int32](90)}
	f.class.Spec.AssociatePublicIPAddress = ptr.To(true)
	types := f.classTypes(t)
	names := typeNames(types)
	if names["m4.large"] || !names["m5.large"] {
		t.Fatalf("connection tracking: m4.large (Xen) %v, m5.large (Nitro) %v; want Nitro types only", names["m4.large"], names["m5.large"])
	}
	if _, err := f.provider.Create(context.Background(), claim("ct", in(scheduling.LabelInstanceType, "m5.large")), f.class, types); err != nil {
		t.Fatal(err)
	}
	nics := f.account.Instances()[0].Launched.NetworkInterfaces
	if len(nics) != 1 || !aws.ToBool(nics[0].AssociatePublicIpAddress) || aws.ToInt32(nics[0].ConnectionTrackingSpecification.UdpStreamTimeout) != 90 {
		t.Errorf("launched interfaces %+v; want the primary with a public IP and UDP stream timeout 90 s", nics)
	}
	if _, err := f.provider.Create(context.Background(), claim("xen", in(scheduling.LabelInstanceType, "m4.large")), f.class, f.types); err == nil ||
		!strings.Contains(err.Error(), "only on Nitro") {
		t.Errorf("connection tracking on m4.large: got %v; want EC2's refusal", err)
	}
}

// A partition placement group: nodes launch in it, labelled with its id
// and the partition EC2 put them in; a NodeClaim requiring partition 2
// gets partition 2. Types the strategy does not take are left out.
func TestPartitionPlacementGroup(t *testing.T) {
	f := setup(t)
	f.class.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To(simaws.PartitionPlacementGroup)}
	types := f.classTypes(t)
	pg := f.class.Status.PlacementGroup
	if pg == nil || pg.Strategy != "partition" || pg.PartitionCount != 3 {
		t.Fatalf("resolved placement group %+v; want the partition group with 3 partitions", pg)
	}
	ctx := context.Background()
	first, err := f.provider.Create(ctx, claim("p-any", in(scheduling.LabelInstanceType, "m5.large")), f.class, types)
	if err != nil {
		t.Fatal(err)
	}
	if first.Labels[awsv1.LabelPlacementGroupID] != pg.ID || first.Labels[awsv1.LabelPlacementGroupPartition] == "" {
		t.Errorf("labels %v; want placement-group-id %s and a partition", first.Labels, pg.ID)
	}
	second, err := f.provider.Create(ctx, claim("p-2", in(scheduling.LabelInstanceType, "m5.large"), in(awsv1.LabelPlacementGroupPartition, "2")), f.class, types)
	if err != nil {
		t.Fatal(err)
	}
	if second.Labels[awsv1.LabelPlacementGroupPartition] != "2" {
		t.Errorf("a NodeClaim requiring partition 2 landed in partition %q", second.Labels[awsv1.LabelPlacementGroupPartition])
	}
	for _, it := range types {
		if !it.Requirements[awsv1.LabelPlacementGroupID].Has(pg.ID) || it.Requirements[awsv1.LabelPlacementGroupPartition].Len() != 3 {
			t.Fatalf("instance type %s requirements %v; want the group id and its 3 partitions", it.Name, it.Requirements)
		}
	}
}

// In a partition placement group a NodeClaim that requires one
// partition (karpenter.k8s.aws/placement-group-partition In [2], from its
// NodePool's or its pods' requirements) launches into it; the types offer
// every partition of the group, and the node carries its own.
func TestPlacementGroupPartition(t *testing.T) {
	f := setup(t)
	f.class.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To(simaws.PartitionPlacementGroup)}
	types := f.classTypes(t)
	for _, it := range types {
		if p := it.Requirements[awsv1.LabelPlacementGroupPartition]; p.Len() != 3 {
			t.Fatalf("instance type %s offers partitions %v; want the group's 3", it.Name, p)
		}
	}
	inst, err := f.provider.Create(context.Background(), claim("p", in(scheduling.LabelInstanceType, "m5.large"), in(awsv1.LabelPlacementGroupPartition, "2")), f.class, types)
	if err != nil || inst.Labels[awsv1.LabelPlacementGroupPartition] != "2" {
		t.Fatalf("launched %v (%v); want partition 2", inst, err)
	}
}

// A cluster placement group leaves out the types it cannot hold (t3); a
// spread group takes seven instances per zone, then EC2 refuses.
func TestClusterAndSpreadPlacementGroups(t *testing.T) {
	f := setup(t)
	f.class.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To(simaws.ClusterPlacementGroup)}
	if names := typeNames(f.classTypes(t)); names["t3.large"] || !names["m5.large"] {
		t.Errorf("cluster group: t3.large %v, m5.large %v; want burstable types left out", names["t3.large"], names["m5.large"])
	}
	f.class.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To(simaws.SpreadPlacementGroup)}
	types := f.classTypes(t)
	ctx := context.Background()
	for i := range 7 {
		if _, err := f.provider.Create(ctx, claim("s"+string(rune('a'+i)), in(scheduling.LabelInstanceType, "m5.large"), in(scheduling.LabelZone, "us-east-1a")), f.class, types); err != nil {
			t.Fatalf("spread instance %d: %v", i+1, err)
		}
	}
	if _, err := f.provider.Create(ctx, claim("s-eighth", in(scheduling.LabelInstanceType, "m5.large"), in(scheduling.LabelZone, "us-east-1a")), f.class, types); err == nil ||
		!strings.Contains(err.Error(), "spread placement group") {
		t.Errorf("an eighth instance in one zone of a spread group: got %v; want EC2's refusal", err)
	}
}

// Terms with instanceMatchCriteria select reservations by it; an
// interruptible reservation shows in the status and is launched into as
// interruptible reserved capacity, labelled so.
func TestInterruptibleReservationAndMatchCriteria(t *testing.T) {
	f := setup(t)
	f.account.AddCapacityReservation(ec2types.CapacityReservation{
		CapacityReservationId: aws.String("cr-0aaaaaaaaaaaaaaa1"), InstanceType: aws.String("c5.large"), AvailabilityZone: aws.String("us-east-1b"),
		TotalInstanceCount: aws.Int32(1), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaOpen, Interruptible: aws.Bool(true), OwnerId: aws.String("210987654321"),
	})
	f.class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{InstanceMatchCriteria: "open"}}
	found, err := f.resolver.CapacityReservations(context.Background(), f.class, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].ID != "cr-0aaaaaaaaaaaaaaa1" || !found[0].Interruptible {
		t.Fatalf("open reservations %+v; want only the open, interruptible one (the seeded one is targeted)", found)
	}
	types := f.classTypes(t)
	inst, err := f.provider.Create(context.Background(), claim("lent", in(v1.LabelCapacityType, v1.CapacityTypeReserved)), f.class, types)
	if err != nil {
		t.Fatal(err)
	}
	if inst.CapacityType != v1.CapacityTypeReserved || inst.Labels[awsv1.LabelCapacityReservationID] != "cr-0aaaaaaaaaaaaaaa1" ||
		inst.Labels[awsv1.LabelCapacityReservationInterruptible] != "true" {
		t.Errorf("launched %s with labels %v; want reserved in the interruptible reservation", inst.CapacityType, inst.Labels)
	}
	if lc := f.account.Instances()[0].InstanceLifecycle; lc != ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation {
		t.Errorf("instance lifecycle %q; want interruptible-capacity-reservation", lc)
	}
}

// A NodeClaim whose pods claim DRANET devices (EFA interfaces, as the
// catalog describes them) or request the EFA device plugin's resource is
// launched with every EFA interface its type has, one per network card,
// as EC2 attaches them only when asked; one whose pods want none, with
// the primary interface alone.
func TestEFAInterfacesForDRAClaims(t *testing.T) {
	f := setup(t)
	types := f.classTypes(t)
	rdma := claim("rdma", in(scheduling.LabelInstanceType, "p4d.24xlarge"))
	rdma.Annotations = map[string]string{v1.AnnotationRequestedDRADrivers: "dra.net,gpu.nvidia.com"}
	if _, err := f.provider.Create(context.Background(), rdma, f.class, types); err != nil {
		t.Fatal(err)
	}
	plain := claim("gpus-only", in(scheduling.LabelInstanceType, "p4d.24xlarge"))
	plain.Annotations = map[string]string{v1.AnnotationRequestedDRADrivers: "gpu.nvidia.com"}
	if _, err := f.provider.Create(context.Background(), plain, f.class, types); err != nil {
		t.Fatal(err)
	}
	plugin := claim("efa-plugin", in(scheduling.LabelInstanceType, "p4d.24xlarge"))
	plugin.Spec.Resources.Requests = corev1.ResourceList{instancetypes.EFAResource: resource.MustParse("1")}
	if _, err := f.provider.Create(context.Background(), plugin, f.class, types); err != nil {
		t.Fatal(err)
	}
	insts := f.account.Instances()
	if len(insts) != 3 {
		t.Fatalf("%d instances", len(insts))
	}
	for _, inst := range insts {
		nics := inst.Launched.NetworkInterfaces
		if tagged(inst, "gpus-only") {
			if len(nics) != 1 || aws.ToString(nics[0].InterfaceType) == "efa" {
				t.Errorf("without DRANET claims: interfaces %+v; want the primary alone", nics)
			}
			continue
		}
		if len(nics) != 4 {
			t.Fatalf("with DRANET claims or the EFA resource requested: %d interfaces; want p4d.24xlarge's 4 EFA interfaces", len(nics))
		}
		for i, ni := range nics {
			wantDevice := int32(1)
			if i == 0 {
				wantDevice = 0
			}
			if aws.ToString(ni.InterfaceType) != "efa" || aws.ToInt32(ni.NetworkCardIndex) != int32(i) || aws.ToInt32(ni.DeviceIndex) != wantDevice || len(ni.Groups) == 0 {
				t.Errorf("interface %d: %+v; want an EFA interface on card %d, device %d, with the security groups", i, ni, i, wantDevice)
			}
		}
	}
}

// tagged reports whether an instance carries the NodeClaim's name tag.
func tagged(inst simaws.Instance, name string) bool {
	for _, tag := range inst.Tags {
		if aws.ToString(tag.Key) == "karpenter.sh/nodeclaim" && aws.ToString(tag.Value) == name {
			return true
		}
	}
	return false
}

// An EC2NodeClass without blockDeviceMappings launches with its family's
// volumes, encrypted whatever the account's default: AL2023 and AL2 a
// 20Gi gp3 root volume, Bottlerocket a 6Gi root and a 20Gi data volume,
// Windows a 50Gi root; a Custom AMI keeps its own. The node's ephemeral
// storage is the kubelet's volume: the class's if it sizes it (100G is 94
// GiB, as EC2 makes it), else the default's.
func TestDefaultVolumesAreEncrypted(t *testing.T) {
	type volume struct {
		device    string
		gib       int32
		encrypted bool
	}
	for _, tc := range []struct {
		alias, family string
		mappings      []*awsv1.BlockDeviceMapping
		want          []volume
		ephemeral     string
	}{
		{alias: "al2023@latest", want: []volume{{"/dev/xvda", 20, true}}, ephemeral: "20Gi"},
		{alias: "al2@latest", want: []volume{{"/dev/xvda", 20, true}}, ephemeral: "20Gi"},
		{alias: "bottlerocket@latest", want: []volume{{"/dev/xvda", 6, true}, {"/dev/xvdb", 20, true}}, ephemeral: "20Gi"},
		{alias: "windows2022@latest", want: []volume{{"/dev/sda1", 50, true}}, ephemeral: "50Gi"},
		{alias: "al2023@latest", family: awsv1.AMIFamilyCustom, ephemeral: "20Gi"},
		{alias: "al2023@latest", mappings: []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("100G"), VolumeType: ptr.To("gp3")}}},
			want: []volume{{"/dev/xvda", 94, false}}, ephemeral: "94Gi"},
		{alias: "bottlerocket@latest", mappings: []*awsv1.BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("4Gi")}},
			{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("200Gi"), Encrypted: ptr.To(true)}},
		}, want: []volume{{"/dev/xvda", 4, false}, {"/dev/xvdb", 200, true}}, ephemeral: "200Gi"},
		{alias: "al2023@latest", mappings: []*awsv1.BlockDeviceMapping{
			{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("30Gi")}},
			{DeviceName: ptr.To("/dev/xvdc"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To("1Ti")}, RootVolume: true},
		}, want: []volume{{"/dev/xvda", 30, false}, {"/dev/xvdc", 1024, false}}, ephemeral: "1Ti"},
	} {
		name := tc.alias + "/" + tc.family
		if len(tc.mappings) > 0 {
			name += "/mapped"
		}
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			f.class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
			if tc.family != "" {
				f.class.Spec.AMIFamily = ptr.To(tc.family)
				f.class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-x86_64-*"}}
				f.class.Spec.UserData = ptr.To("#!/bin/bash\n/usr/bin/nodeadm init\n")
			}
			f.class.Spec.BlockDeviceMappings = tc.mappings
			types := f.classTypes(t)
			it := types[0]
			if got, want := it.Capacity.List()[corev1.ResourceEphemeralStorage], resource.MustParse(tc.ephemeral); got.Cmp(want) != 0 {
				t.Errorf("%s reports ephemeral-storage %s, want %s", it.Name, got.String(), want.String())
			}
			typeName := "m5.large"
			if _, err := f.provider.Create(context.Background(), claim("vol", in(scheduling.LabelInstanceType, typeName)), f.class, types); err != nil {
				t.Fatal(err)
			}
			var got []volume
			for _, m := range f.account.Instances()[0].Launched.BlockDeviceMappings {
				got = append(got, volume{aws.ToString(m.DeviceName), aws.ToInt32(m.Ebs.VolumeSize), aws.ToBool(m.Ebs.Encrypted)})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("launched volumes %v, want %v", got, tc.want)
			}
		})
	}
}

// The controller's instance type settings (--reserved-enis,
// --vm-memory-overhead-percent) reach the types the EC2NodeClass plans
// with, and its subnets' zone IDs label them: m5.large has 3 interfaces
// of 10 addresses, so with one reserved the VPC CNI gives pods 2×9+2.
func TestControllerSettingsShapeInstanceTypes(t *testing.T) {
	f := setup(t)
	resolve(t, f.resolver, f.class)
	share := 0.05
	cloud := &provider.CloudProvider{Launcher: f.provider, ReservedENIs: 1, VMMemoryOverheadPercent: &share, Types: &instancetypes.Cache{
		Provider: &instancetypes.Provider{EC2: f.account.EC2(), Pricing: f.account.Pricing(), Region: account.Region},
		Clock:    clock.RealClock{}, TTL: time.Hour,
	}}
	types, err := cloud.InstanceTypes(context.Background(), f.class)
	if err != nil {
		t.Fatal(err)
	}
	var m5 *scheduling.InstanceType
	for _, it := range types {
		if it.Name == "m5.large" {
			m5 = it
		}
	}
	if m5 == nil {
		t.Fatal("no m5.large")
	}
	if got := m5.Capacity.Pods(); got != 20 {
		t.Errorf("m5.large pods %d with one reserved interface; want 20", got)
	}
	if got := m5.Capacity.Memory() >> 20; got != 8192-410 {
		t.Errorf("m5.large memory %dMi with a 5%% VM overhead; want %dMi", got, 8192-410)
	}
	ids := map[string]bool{}
	for _, s := range f.class.Status.Subnets {
		if s.ZoneID != "" {
			ids[s.ZoneID] = true
		}
	}
	r, ok := m5.Requirements[instancetypes.LabelZoneID]
	if len(ids) == 0 || !ok || r.Len() != len(ids) {
		t.Errorf("zone IDs of the subnets %v; m5.large's %s requirement %v", ids, instancetypes.LabelZoneID, r)
	}
}
