package provider_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/instancetypes"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/provider"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/cloudprovider"
	"github.com/nodewright/nodewright/internal/scheduling"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
)

type fixture struct {
	account  *simaws.Account
	provider *provider.Launcher
	class    *awsv1.EC2NodeClass
	types    []*scheduling.InstanceType
	resolver *nodeclass.Resolver
	cluster  userdata.Cluster
}

func setup(t *testing.T) *fixture {
	t.Helper()
	a := simaws.NewAccount()
	a.Seed()
	r := &nodeclass.Resolver{EC2: a.EC2(), SSM: a.SSM(), IAM: a.IAM(), ClusterName: account.ClusterName, Region: account.Region, KubernetesVersion: simaws.KubernetesVersion}
	cluster := userdata.Cluster{Name: account.ClusterName, Endpoint: account.Endpoint, CABundle: account.CABundle, CIDR: account.ServiceCIDR, DNS: account.KubeDNSIP}
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1}, Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       account.NodeRole,
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": account.ClusterName}}},
	}}
	resolve(t, r, class)
	types, err := (&instancetypes.Provider{EC2: a.EC2(), Pricing: a.Pricing(), Region: account.Region}).InstanceTypes(context.Background(), instancetypes.Options{Zones: account.Zones()})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{account: a, provider: provider.New(a.EC2(), r, cluster, clock.RealClock{}), class: class, types: types, resolver: r, cluster: cluster}
}

// resolve fills the EC2NodeClass status as its controller would.
func resolve(t *testing.T, r *nodeclass.Resolver, class *awsv1.EC2NodeClass) {
	t.Helper()
	ctx := context.Background()
	var res nodeclass.Resolution
	res.Subnets, res.SubnetsErr = r.Subnets(ctx, class)
	res.SecurityGroups, res.SecurityGrpErr = r.SecurityGroups(ctx, class)
	res.AMIs, res.AMIsErr = r.AMIs(ctx, class)
	res.InstanceProfile, res.ProfileErr = r.InstanceProfile(ctx, class)
	res.PlacementGroup, res.PlacementErr = r.PlacementGroup(ctx, class)
	class.Status.Subnets, class.Status.Conditions, class.Status.PlacementGroup = nil, nil, res.PlacementGroup
	for _, s := range res.Subnets {
		class.Status.Subnets = append(class.Status.Subnets, s.Subnet)
	}
	class.Status.SecurityGroups, class.Status.AMIs, class.Status.InstanceProfile = res.SecurityGroups, res.AMIs, res.InstanceProfile
	for _, c := range nodeclass.Conditions(class, res) {
		c.ObservedGeneration = class.Generation
		class.Status.Conditions = append(class.Status.Conditions, c)
	}
}

func claim(name string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{v1.LabelNodePool: "default"}},
		Spec: v1.NodeClaimSpec{
			Requirements:  reqs,
			StartupTaints: []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}},
			NodeClassRef:  &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
}

func in(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
	return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

// cheapest returns the cheapest available offering of the named types.
func (f *fixture) cheapest(capacityType string, names ...string) (string, scheduling.Offering) {
	best, bestType := scheduling.Offering{Price: 1e9}, ""
	for _, it := range f.types {
		for _, n := range names {
			if it.Name != n {
				continue
			}
			for _, o := range it.Offerings {
				if o.CapacityType == capacityType && o.Price < best.Price {
					best, bestType = o, it.Name
				}
			}
		}
	}
	return bestType, best
}

func TestCreateLaunchesTheCheapestOffering(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	nc := claim("general-abcde", in(scheduling.LabelInstanceType, "m5.large", "m5.xlarge", "c5.large"))
	inst, err := f.provider.Create(ctx, nc, f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	wantType, wantOffering := f.cheapest(v1.CapacityTypeSpot, "m5.large", "m5.xlarge", "c5.large")
	if inst.InstanceType != wantType || inst.Zone != wantOffering.Zone || inst.CapacityType != v1.CapacityTypeSpot {
		t.Errorf("launched %s %s in %s, want spot %s in %s", inst.CapacityType, inst.InstanceType, inst.Zone, wantType, wantOffering.Zone)
	}
	if inst.ProviderID != "aws:///"+inst.Zone+"/"+inst.InstanceID || inst.ImageID != "ami-al2023x8664" || inst.Allocatable == nil {
		t.Errorf("instance %+v", inst)
	}
	launched := f.account.Instances()
	if len(launched) != 1 {
		t.Fatalf("%d instances launched", len(launched))
	}
	tags := map[string]string{}
	for _, tg := range launched[0].Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	for k, v := range map[string]string{"kubernetes.io/cluster/nodewright-sim": "owned", "karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "general-abcde", "karpenter.k8s.aws/ec2nodeclass": "default", "eks:eks-cluster-name": "nodewright-sim"} {
		if tags[k] != v {
			t.Errorf("tag %s=%q, want %q", k, tags[k], v)
		}
	}
	ud, err := base64.StdEncoding.DecodeString(launched[0].UserData)
	if err != nil || !strings.Contains(string(ud), "key: karpenter.sh/unregistered") || !strings.Contains(string(ud), "node.cilium.io/agent-not-ready") {
		t.Errorf("launched user data does not register the required taints:\n%s", ud)
	}
	if launched[0].Role != account.NodeRole {
		t.Errorf("instance runs with role %q, want the node role", launched[0].Role)
	}

	// The same NodeClaim again: the same instance, nothing new launched.
	again, err := f.provider.Create(ctx, nc, f.class, f.types)
	if err != nil || again.InstanceID != inst.InstanceID || len(f.account.Instances()) != 1 {
		t.Errorf("a retried launch must not create a second instance: %v %v, %d instances", again, err, len(f.account.Instances()))
	}
	// One launch template per pod limit (29 for m5.large and c5.large, 58
	// for m5.xlarge); another NodeClaim with the same labels and taints
	// reuses them.
	countTemplates := func() int {
		lts, err := f.account.EC2().DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return len(lts.LaunchTemplates)
	}
	if n := countTemplates(); n != 2 {
		t.Errorf("%d launch templates, want 2", n)
	}
	if _, err := f.provider.Create(ctx, claim("general-fghij", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err != nil {
		t.Fatal(err)
	}
	if n := countTemplates(); n != 2 {
		t.Errorf("%d launch templates after a second launch with equal content, want still 2", n)
	}
	if err := f.provider.DeleteLaunchTemplates(ctx, "other"); err != nil || countTemplates() != 2 {
		t.Errorf("another EC2NodeClass's cleanup must keep these: %v", err)
	}
	if err := f.provider.DeleteLaunchTemplates(ctx, "default"); err != nil || countTemplates() != 0 {
		t.Errorf("cleanup of EC2NodeClass default: %d left, %v", countTemplates(), err)
	}
}

func TestArchitectureSelectsTheAMI(t *testing.T) {
	f := setup(t)
	inst, err := f.provider.Create(context.Background(), claim("arm", in(scheduling.LabelInstanceType, "t4g.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	if inst.ImageID != "ami-al2023arm64" {
		t.Errorf("a t4g instance launched from %s, want the arm64 AMI", inst.ImageID)
	}
}

func TestInsufficientCapacity(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	typ, cheapest := f.cheapest(v1.CapacityTypeSpot, "m5.large")
	f.account.SetUnavailable("spot", typ, cheapest.Zone, true)
	inst, err := f.provider.Create(ctx, claim("a", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Zone == cheapest.Zone || inst.CapacityType != v1.CapacityTypeSpot {
		t.Errorf("launched %s in %s; the cheapest zone %s had no capacity", inst.CapacityType, inst.Zone, cheapest.Zone)
	}
	for _, zone := range account.Zones() {
		f.account.SetUnavailable("spot", "m5.large", zone, true)
	}
	// No spot capacity anywhere: the same launch goes on-demand, which
	// the NodeClaim allows, rather than give the NodeClaim up.
	calls := f.account.Stats().CallsBy["CreateFleet"]
	inst, err = f.provider.Create(ctx, claim("b", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil || inst.CapacityType != v1.CapacityTypeOnDemand {
		t.Fatalf("no spot capacity anywhere: %+v %v; want on-demand at once", inst, err)
	}
	if got := f.account.Stats().CallsBy["CreateFleet"] - calls; got != 2 {
		t.Errorf("%d CreateFleet calls, want 2: spot, then on-demand", got)
	}
	// The failed offerings are remembered: the next launch goes on-demand
	// without trying spot again.
	calls = f.account.Stats().CallsBy["CreateFleet"]
	inst, err = f.provider.Create(ctx, claim("c", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil || inst.CapacityType != v1.CapacityTypeOnDemand || f.account.Stats().CallsBy["CreateFleet"]-calls != 1 {
		t.Errorf("after spot ran out: %+v %v, %d CreateFleet calls", inst, err, f.account.Stats().CallsBy["CreateFleet"]-calls)
	}
	// Spot-only NodeClaims get the typed error.
	_, err = f.provider.Create(ctx, claim("d", in(scheduling.LabelInstanceType, "m5.large"), in(v1.LabelCapacityType, "spot")), f.class, f.types)
	if !cloudprovider.IsInsufficientCapacity(err) {
		t.Errorf("spot-only with no spot: %v", err)
	}
	// Neither spot nor on-demand: the error says what each said.
	for _, zone := range account.Zones() {
		f.account.SetUnavailable("on-demand", "m5.large", zone, true)
	}
	_, err = f.provider.Create(ctx, claim("e", in(scheduling.LabelInstanceType, "m5.large"), in(scheduling.LabelZone, "us-east-1b")), f.class, f.types)
	if !cloudprovider.IsInsufficientCapacity(err) || !strings.Contains(err.Error(), "on-demand: InsufficientInstanceCapacity") {
		t.Errorf("no capacity of either type: %v", err)
	}
}

func TestNodeClassNotReady(t *testing.T) {
	f := setup(t)
	f.class.Generation = 2 // changed since it was resolved
	_, err := f.provider.Create(context.Background(), claim("a", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if !cloudprovider.IsNodeClassNotReady(err) || len(f.account.Instances()) != 0 {
		t.Errorf("want NodeClassNotReady and no instance, got %v", err)
	}
}

func TestGetListDelete(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	inst, err := f.provider.Create(ctx, claim("a", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := f.provider.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].NodeClaim != "a" || listed[0].NodePool != "default" {
		t.Fatalf("list: %+v %v", listed, err)
	}
	if err := f.provider.Delete(ctx, inst.ProviderID, cloudprovider.Holder{}); err != nil {
		t.Fatalf("first delete: %v", err)
	}
	if _, err := f.provider.Get(ctx, inst.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("get after termination: %v", err)
	}
	if err := f.provider.Delete(ctx, inst.ProviderID, cloudprovider.Holder{}); !cloudprovider.IsNotFound(err) {
		t.Errorf("delete after termination must report NotFound: %v", err)
	}
	if listed, _ := f.provider.List(ctx); len(listed) != 0 {
		t.Errorf("terminated instances are not listed: %+v", listed)
	}
	if _, err := f.provider.Get(ctx, "aws:///us-east-1a/i-00000000000000999"); !cloudprovider.IsNotFound(err) {
		t.Errorf("unknown instance: %v", err)
	}
	if _, err := f.provider.Get(ctx, "gce://project/zone/name"); err == nil {
		t.Error("a foreign provider ID must be refused")
	}
}

// Launches share a launch template without describing it each time; one
// deleted behind nodewright's back is made again by the launch that
// finds it gone, and that launch succeeds.
func TestLaunchTemplatesAreRemembered(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	for _, name := range []string{"general-aaaaa", "general-bbbbb", "general-ccccc"} {
		if _, err := f.provider.Create(ctx, claim(name, in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.account.Stats().CallsBy["DescribeLaunchTemplates"]; n != 1 {
		t.Errorf("three launches with one launch template described it %d times, want once", n)
	}
	lts, err := f.account.EC2().DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(lts.LaunchTemplates) != 1 {
		t.Fatalf("launch templates: %v %v", lts, err)
	}
	if _, err := f.account.EC2().DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: lts.LaunchTemplates[0].LaunchTemplateName}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.provider.Create(ctx, claim("general-ddddd", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types); err != nil {
		t.Fatalf("a launch after its launch template was deleted: %v", err)
	}
	if n := len(f.account.Instances()); n != 4 {
		t.Errorf("%d instances, want 4", n)
	}
}

// Only what nodewright launched is listed, rebooted and terminated:
// instances of the cluster without nodewright's tags (a managed node
// group's), another cluster's, and untagged ones are neither listed,
// rebooted nor terminated, even by a NodeClaim that points at one.
func TestForeignInstancesAreNeverTouched(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	ours, err := f.provider.Create(ctx, claim("a", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	cluster := "kubernetes.io/cluster/" + account.ClusterName
	foreign := map[string]map[string]string{
		"managed node group": {cluster: "owned", "eks:nodegroup-name": "system", "eks:cluster-name": account.ClusterName},
		"another cluster":    {"kubernetes.io/cluster/other": "owned", v1.LabelNodePool: "default", provider.TagNodeClaim: "x", awsv1.LabelEC2NodeClass: "default"},
		"shared, not owned":  {cluster: "shared", v1.LabelNodePool: "default", provider.TagNodeClaim: "y", awsv1.LabelEC2NodeClass: "default"},
		"no NodeClaim tag":   {cluster: "owned", v1.LabelNodePool: "default", awsv1.LabelEC2NodeClass: "default"},
		"untagged":           nil,
	}
	ids := map[string]string{}
	for what, tags := range foreign {
		ids[what] = f.account.AddInstance("m5.large", "us-east-1a", "", tags)
	}
	listed, err := f.provider.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].ProviderID != ours.ProviderID {
		t.Fatalf("List = %+v, %v; want only the instance nodewright launched", listed, err)
	}
	for what, id := range ids {
		err := f.provider.Delete(ctx, "aws:///us-east-1a/"+id, cloudprovider.Holder{})
		if !cloudprovider.IsNotOwned(err) {
			t.Errorf("Delete of the %s instance: %v, want NotOwned", what, err)
		}
		if err := f.provider.Reboot(ctx, "aws:///us-east-1a/"+id); !cloudprovider.IsNotOwned(err) {
			t.Errorf("Reboot of the %s instance: %v, want NotOwned", what, err)
		}
	}
	for _, inst := range f.account.Instances() {
		if *inst.InstanceId != ours.InstanceID && (inst.State.Name != "running" || inst.Reboots != 0) {
			t.Errorf("instance %s was touched: %s, %d reboots", *inst.InstanceId, inst.State.Name, inst.Reboots)
		}
	}
	if err := f.provider.Reboot(ctx, ours.ProviderID); err != nil {
		t.Errorf("Reboot of nodewright's own instance: %v", err)
	}
	if err := f.provider.Delete(ctx, ours.ProviderID, cloudprovider.Holder{}); err != nil {
		t.Errorf("Delete of nodewright's own instance: %v", err)
	}
}

// Prices NodeOverlays gave a NodeClaim's offerings when it was decided
// order its launch, though no overlay is read at launch: here m5.large at
// $0.001/h is launched over the cheaper c5.large, on-demand by priority.
// A NodeClaim whose prices cannot be read is refused, naming the fix.
func TestDecidedPricesOrderTheLaunch(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	nc := claim("decided", in(scheduling.LabelInstanceType, "m5.large", "c5.large"), in(v1.LabelCapacityType, v1.CapacityTypeOnDemand))
	if want, _ := f.cheapest(v1.CapacityTypeOnDemand, "m5.large", "c5.large"); want != "c5.large" {
		t.Fatalf("the test needs c5.large cheaper than m5.large; the cheapest is %s", want)
	}
	prices := cloudprovider.DecidedPrices{"m5.large": {v1.CapacityTypeOnDemand: {}}}
	for _, z := range account.Zones() {
		prices["m5.large"][v1.CapacityTypeOnDemand][z] = 0.001
	}
	nc.Annotations = map[string]string{cloudprovider.AnnotationDecidedPrices: prices.Encode()}
	inst, err := f.provider.Create(ctx, nc, f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	if inst.InstanceType != "m5.large" {
		t.Errorf("launched %s; the NodeClaim was decided with m5.large at $0.001/h", inst.InstanceType)
	}

	bad := claim("garbled", in(scheduling.LabelInstanceType, "m5.large"))
	bad.Annotations = map[string]string{cloudprovider.AnnotationDecidedPrices: "{m5.large"}
	_, err = f.provider.Create(ctx, bad, f.class, f.types)
	if err == nil || !strings.Contains(err.Error(), "NodeClaim garbled") || !strings.Contains(err.Error(), cloudprovider.AnnotationDecidedPrices) {
		t.Errorf("a garbled annotation: %v; want an error naming the NodeClaim and the annotation", err)
	}
	if n := len(f.account.Instances()); n != 1 {
		t.Errorf("%d instances; the garbled NodeClaim must launch nothing", n)
	}
}

// A standalone NodeClaim (no karpenter.sh/nodepool label) is launched,
// listed, found and terminated like any other: its instance carries the
// NodePool tag with an empty value, as the reference launches it, and
// that is nodewright's. Before, the empty tag read as missing: the
// instance was not listed, and deleting the NodeClaim left it running.
func TestStandaloneNodeClaimsAreOwned(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	nc := claim("standalone", in(scheduling.LabelInstanceType, "m5.large"))
	delete(nc.Labels, v1.LabelNodePool)
	inst, err := f.provider.Create(ctx, nc, f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Foreign {
		t.Errorf("the standalone NodeClaim's instance reads as foreign")
	}
	listed, err := f.provider.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].NodeClaim != "standalone" || listed[0].NodePool != "" {
		t.Fatalf("List = %+v, %v; want the standalone NodeClaim's instance, of no NodePool", listed, err)
	}
	if got, err := f.provider.Get(ctx, inst.ProviderID); err != nil || got.Foreign {
		t.Errorf("Get = %+v, %v; want nodewright's instance", got, err)
	}
	if err := f.provider.Delete(ctx, inst.ProviderID, cloudprovider.HolderOf(nc.Name, nc.Annotations)); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, i := range f.account.Instances() {
		if i.State.Name != "shutting-down" && i.State.Name != "terminated" {
			t.Errorf("instance %s is %s after its NodeClaim's termination", aws.ToString(i.InstanceId), i.State.Name)
		}
	}
}

// A NodeClaim terminates only its own instance: one whose
// status.providerID was edited to point at another of nodewright's
// instances gets NotOwned for it, and that instance runs on. A launch
// batch's instance not tagged with its NodeClaim yet is terminated for a
// member of its batch, and only for one.
func TestDeleteChecksTheInstancesNodeClaim(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	a, err := f.provider.Create(ctx, claim("a", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.provider.Create(ctx, claim("b", in(scheduling.LabelInstanceType, "m5.large")), f.class, f.types)
	if err != nil {
		t.Fatal(err)
	}
	err = f.provider.Delete(ctx, b.ProviderID, cloudprovider.Holder{NodeClaim: "a"})
	if !cloudprovider.IsNotOwned(err) || !strings.Contains(err.Error(), `NodeClaim "b"`) {
		t.Errorf("NodeClaim a deleting b's instance: %v; want NotOwned naming the instance's NodeClaim", err)
	}
	err = f.provider.Delete(ctx, b.ProviderID, cloudprovider.Holder{NodeClaim: "a", LaunchBatch: "batch1"})
	if !cloudprovider.IsNotOwned(err) {
		t.Errorf("NodeClaim a of a launch batch deleting b's instance: %v; want NotOwned", err)
	}
	untaken := f.account.AddInstance("m5.large", "us-east-1a", "", map[string]string{
		"kubernetes.io/cluster/" + account.ClusterName: "owned", v1.LabelNodePool: "default", awsv1.LabelEC2NodeClass: "default",
		provider.TagNodeClaim: provider.Untaken("batch1"), provider.TagLaunchBatch: "batch1",
	})
	if err := f.provider.Delete(ctx, "aws:///us-east-1a/"+untaken, cloudprovider.Holder{NodeClaim: "c", LaunchBatch: "batch2"}); !cloudprovider.IsNotOwned(err) {
		t.Errorf("a member of another batch deleting batch1's untaken instance: %v; want NotOwned", err)
	}
	if err := f.provider.Delete(ctx, "aws:///us-east-1a/"+untaken, cloudprovider.Holder{NodeClaim: "c", LaunchBatch: "batch1"}); err != nil {
		t.Errorf("a member of batch1 deleting its untaken instance: %v", err)
	}
	state := map[string]string{}
	for _, i := range f.account.Instances() {
		state[aws.ToString(i.InstanceId)] = string(i.State.Name)
	}
	if state[b.InstanceID] != "running" || state[a.InstanceID] != "running" {
		t.Errorf("instances %v: a and b must run on", state)
	}
	if err := f.provider.Delete(ctx, a.ProviderID, cloudprovider.Holder{NodeClaim: "a"}); err != nil {
		t.Errorf("NodeClaim a deleting its own instance: %v", err)
	}
}
