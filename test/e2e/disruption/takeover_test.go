package disruption

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	awsv1 "github.com/nodewright/nodewright/api/aws/v1"
	v1 "github.com/nodewright/nodewright/api/v1"
	"github.com/nodewright/nodewright/internal/aws/nodeclass"
	"github.com/nodewright/nodewright/internal/aws/userdata"
	"github.com/nodewright/nodewright/internal/sim/cloud/account"
	simaws "github.com/nodewright/nodewright/internal/sim/cloud/aws"
	"github.com/nodewright/nodewright/internal/sim/harness/runner"
	"github.com/nodewright/nodewright/internal/state"
	"github.com/nodewright/nodewright/test/e2e/harness"
)

const takeoverManifest = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  role: KarpenterNodeRole-nodewright-sim
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: nodewright-sim
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: nodewright-sim
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["m5.xlarge"]
  disruption:
    consolidateAfter: 0s
    consolidationPolicy: WhenEmpty
    budgets:
      - nodes: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: aws-auth
  namespace: kube-system
data:
  mapRoles: |
    - rolearn: arn:aws:iam::111122223333:role/KarpenterNodeRole-nodewright-sim
      username: system:node:{{EC2PrivateDNSName}}
      groups:
        - system:bootstrappers
        - system:nodes
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 4
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels: {app: web}
      containers:
        - name: web
          image: nginx
          resources:
            requests: {cpu: "1", memory: 1Gi}
`

// The names the reference gives what it makes (its launch templates are
// karpenter.k8s.aws/<hash of the options>, its instance profiles
// <cluster>_<hash> under /karpenter/<region>/<cluster>/<EC2NodeClass UID>/),
// and the hash versions it stamps on NodeClaims.
const (
	karpenterTemplate      = "karpenter.k8s.aws/15949964056086283498"
	karpenterProfile       = account.ClusterName + "_9412563027485522541"
	karpenterPoolHashV     = "v3"
	karpenterClassHashV    = "v6"
	karpenterInstanceType  = "m5.xlarge"
	karpenterNodeClaimBase = "default-"
)

// A cluster Karpenter runs today, its controller scaled to zero:
// nodewright adopts the NodeClaims, nodes and instances Karpenter launched
// (relaunching nothing, collecting nothing), rolls them when the NodePool
// drifts (their finalizers work), and leaks nothing when the NodePool and
// EC2NodeClass go, Karpenter's launch template and instance profile
// included.
func TestTakeOverFromKarpenter(t *testing.T) {
	sim := harness.Start(t, func(o *runner.Options) { o.DeferControllers = true })
	ctx := context.Background()
	if err := sim.Apply(ctx, "takeover", []byte(takeoverManifest)); err != nil {
		t.Fatal(err)
	}
	old := seedAsKarpenter(t, sim)

	// Karpenter's nodes run the pods.
	harness.WaitFor(t, "the pods to run on Karpenter's nodes", 3*time.Minute, func() bool { return podsRunning(t, sim) == 4 })
	launchesBefore := len(sim.Account.Instances())

	if err := sim.StartControllers(); err != nil {
		t.Fatal(err)
	}
	snap, err := sim.Watch(ctx, 2*time.Minute, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Settled; and some more, so that garbage collection (every minute
	// in the sim) has looked at the instances at least once.
	time.Sleep(70 * time.Second)
	if n := len(sim.Account.Instances()); n != launchesBefore {
		t.Errorf("nodewright launched %d instances for a cluster that needs none", n-launchesBefore)
	}
	for _, inst := range sim.Account.Instances() {
		if stateOf(inst) != ec2types.InstanceStateNameRunning {
			t.Errorf("instance %s is %s: nodewright must not collect Karpenter's instances", aws.ToString(inst.InstanceId), stateOf(inst))
		}
	}
	claims := &v1.NodeClaimList{}
	if err := sim.Kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != len(old) {
		t.Fatalf("%d NodeClaims after taking over, want Karpenter's %d", len(claims.Items), len(old))
	}
	for _, nc := range claims.Items {
		if _, ok := old[nc.Name]; !ok || !nc.DeletionTimestamp.IsZero() {
			t.Errorf("NodeClaim %s is new or being deleted", nc.Name)
		}
		if nc.Annotations[state.AnnotationNodePoolHashVersion] != state.HashVersion || nc.Annotations[nodeclass.AnnotationHashVersion] != nodeclass.HashVersion {
			t.Errorf("NodeClaim %s kept Karpenter's hash versions: %v", nc.Name, nc.Annotations)
		}
		if meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionDrifted) {
			t.Errorf("NodeClaim %s is drifted only for being Karpenter's", nc.Name)
		}
	}
	if got := harness.NodeClass(t, sim, "default").Status.InstanceProfile; got != karpenterProfile {
		t.Errorf("EC2NodeClass status.instanceProfile %q, want Karpenter's %s kept", got, karpenterProfile)
	}
	if snap.RunningPods != 4 {
		t.Errorf("%d pods Running after taking over, want 4", snap.RunningPods)
	}

	// A change to the NodePool's template drifts Karpenter's nodes; each is
	// replaced by one of nodewright's and goes through its finalizers.
	np := &v1.NodePool{}
	if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		t.Fatal(err)
	}
	before := np.DeepCopy()
	np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "platform"}
	if err := sim.Kube.Patch(ctx, np, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "Karpenter's NodeClaims and nodes to be replaced", 6*time.Minute, func() bool {
		claims := &v1.NodeClaimList{}
		nodes := &corev1.NodeList{}
		if sim.Kube.List(ctx, claims) != nil || sim.Kube.List(ctx, nodes) != nil {
			return false
		}
		for _, nc := range claims.Items {
			if _, ok := old[nc.Name]; ok {
				return false
			}
		}
		for _, n := range nodes.Items {
			for _, o := range old {
				if n.Name == o.node {
					return false
				}
			}
		}
		return podsRunning(t, sim) == 4
	})
	for name, o := range old {
		if inst := instance(sim, o.instance); inst == nil || (stateOf(*inst) != ec2types.InstanceStateNameTerminated && stateOf(*inst) != ec2types.InstanceStateNameShuttingDown) {
			t.Errorf("Karpenter's instance %s (NodeClaim %s) is not terminated", o.instance, name)
		}
	}

	// Removing the NodePool and EC2NodeClass leaves nothing of either.
	if err := sim.Kube.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the NodePool's instances to terminate", 3*time.Minute, func() bool {
		for _, inst := range sim.Account.Instances() {
			if s := stateOf(inst); s == ec2types.InstanceStateNameRunning || s == ec2types.InstanceStateNamePending {
				return false
			}
		}
		claims := &v1.NodeClaimList{}
		return sim.Kube.List(ctx, claims) == nil && len(claims.Items) == 0
	})
	if err := sim.Kube.Delete(ctx, harness.NodeClass(t, sim, "default")); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "the EC2NodeClass to be deleted", 2*time.Minute, func() bool {
		err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, &awsv1.EC2NodeClass{})
		return apierrors.IsNotFound(err)
	})
	if _, err := sim.Account.IAM().GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(karpenterProfile)}); err == nil {
		t.Errorf("Karpenter's instance profile %s is left behind", karpenterProfile)
	}
	templates, err := sim.Account.EC2().DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range templates.LaunchTemplates {
		t.Errorf("launch template %s is left behind", aws.ToString(lt.LaunchTemplateName))
	}
}

// seedAsKarpenter makes, through the simulated account's APIs and the API
// server, what Karpenter would have left: its instance profile for the
// EC2NodeClass, a launch template, two instances launched with its tags,
// their NodeClaims (labels, hash annotations of its versions, finalizer,
// status) and their nodes (registered, initialized, with its finalizer).
// It returns them by NodeClaim name.
func seedAsKarpenter(t *testing.T, sim *runner.Sim) map[string]seeded {
	t.Helper()
	ctx := context.Background()
	class := harness.NodeClass(t, sim, "default")
	owned := func(extra ...string) map[string]string {
		tags := map[string]string{"kubernetes.io/cluster/" + account.ClusterName: "owned", "eks:eks-cluster-name": account.ClusterName, awsv1.LabelEC2NodeClass: "default"}
		for i := 0; i+1 < len(extra); i += 2 {
			tags[extra[i]] = extra[i+1]
		}
		return tags
	}
	iamc := sim.Account.IAM()
	if _, err := iamc.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String(karpenterProfile), Path: aws.String(fmt.Sprintf("/karpenter/%s/%s/%s/", account.Region, account.ClusterName, class.UID)),
		Tags: iamTags(owned("topology.kubernetes.io/region", account.Region)),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := iamc.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(karpenterProfile), RoleName: aws.String(account.NodeRole)}); err != nil {
		t.Fatal(err)
	}
	// Karpenter's stamp of the NodePool as stored: its hash's value,
	// which nodewright's is (TestStaticDriftAsTheReference).
	pool := &v1.NodePool{}
	if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, pool); err != nil {
		t.Fatal(err)
	}
	poolHash := state.NodePoolHash(pool)
	before := class.DeepCopy()
	class.Status.InstanceProfile = karpenterProfile
	if err := sim.Kube.Status().Patch(ctx, class, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	param, err := sim.Account.SSM().GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(
		fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", simaws.KubernetesVersion))})
	if err != nil {
		t.Fatal(err)
	}
	ami := aws.ToString(param.Parameter.Value)
	nodeLabels := map[string]string{v1.LabelNodePool: "default", awsv1.LabelEC2NodeClass: "default"}
	data, err := userdata.Generate("AL2023", userdata.Cluster{Name: account.ClusterName, Endpoint: account.Endpoint, CABundle: account.CABundle,
		CIDR: account.ServiceCIDR, DNS: account.KubeDNSIP}, userdata.Node{Labels: nodeLabels, MaxPods: 58}, "")
	if err != nil {
		t.Fatal(err)
	}
	ec2c := sim.Account.EC2()
	if _, err := ec2c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(karpenterTemplate),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String(ami), UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(data))),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(karpenterProfile)},
			SecurityGroupIds:   []string{"sg-0123456789abcdef0"},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(owned(v1.LabelNodePool, "default"))}},
	}); err != nil {
		t.Fatal(err)
	}
	subnets, err := ec2c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]seeded{}
	for i, subnet := range subnets.Subnets[:2] {
		name := fmt.Sprintf("%sk%04d", karpenterNodeClaimBase, i)
		fleet, err := ec2c.CreateFleet(ctx, &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(karpenterTemplate), Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(karpenterInstanceType), SubnetId: subnet.SubnetId}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
			TagSpecifications: tagSpecs(owned(v1.LabelNodePool, "default", "karpenter.sh/nodeclaim", name, "Name", name),
				ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(fleet.Instances) == 0 || len(fleet.Instances[0].InstanceIds) == 0 {
			t.Fatalf("Karpenter's launch of %s: %+v", name, fleet.Errors)
		}
		id := fleet.Instances[0].InstanceIds[0]
		zone := aws.ToString(subnet.AvailabilityZone)
		labels := map[string]string{
			v1.LabelNodePool: "default", awsv1.LabelEC2NodeClass: "default", corev1.LabelInstanceTypeStable: karpenterInstanceType,
			corev1.LabelTopologyZone: zone, v1.LabelCapacityType: "on-demand", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		}
		nc := &v1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Labels: labels, Finalizers: []string{v1.TerminationFinalizer},
				Annotations: map[string]string{
					state.AnnotationNodePoolHash: poolHash, state.AnnotationNodePoolHashVersion: karpenterPoolHashV,
					nodeclass.AnnotationHash: "1462845960911839409", nodeclass.AnnotationHashVersion: karpenterClassHashV,
					"karpenter.k8s.aws/instance-profile-name": karpenterProfile, "karpenter.k8s.aws/tagged": "true",
				},
			},
			Spec: v1.NodeClaimSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
					{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{karpenterInstanceType}},
					{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
				},
				Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("1")}},
			},
		}
		np := &v1.NodePool{}
		if err := sim.Kube.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
			t.Fatal(err)
		}
		if err := controllerutil.SetOwnerReference(np, nc, sim.Kube.Scheme()); err != nil {
			t.Fatal(err)
		}
		if err := sim.Kube.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		providerID := fmt.Sprintf("aws:///%s/%s", zone, id)
		var node *corev1.Node
		harness.WaitFor(t, "the kubelet of "+id+" to register", 2*time.Minute, func() bool {
			node = nodeOf(t, sim, providerID)
			return node != nil
		})
		// Karpenter registered and initialized it.
		beforeNode := node.DeepCopy()
		node.Labels[v1.LabelNodePool] = "default"
		node.Labels["karpenter.sh/registered"] = "true"
		node.Labels["karpenter.sh/initialized"] = "true"
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "karpenter.sh/unregistered" })
		controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
		if err := sim.Kube.Patch(ctx, node, client.MergeFrom(beforeNode)); err != nil {
			t.Fatal(err)
		}
		beforeClaim := nc.DeepCopy()
		now := metav1.Now()
		nc.Status = v1.NodeClaimStatus{
			ProviderID: providerID, NodeName: node.Name, ImageID: ami,
			Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable,
		}
		for _, c := range []string{v1.ConditionLaunched, v1.ConditionRegistered, v1.ConditionInitialized, v1.ConditionReady} {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: now})
		}
		if err := sim.Kube.Status().Patch(ctx, nc, client.MergeFrom(beforeClaim)); err != nil {
			t.Fatal(err)
		}
		out[name] = seeded{instance: id, node: node.Name}
	}
	return out
}

func iamTags(tags map[string]string) []iamtypes.Tag {
	var out []iamtypes.Tag
	for k, v := range tags {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for k, v := range tags {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out
}

func tagSpecs(tags map[string]string, types ...ec2types.ResourceType) []ec2types.TagSpecification {
	var out []ec2types.TagSpecification
	for _, rt := range types {
		out = append(out, ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags(tags)})
	}
	return out
}

func nodeOf(t *testing.T, sim *runner.Sim, providerID string) *corev1.Node {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := sim.Kube.List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		if nodes.Items[i].Spec.ProviderID == providerID {
			return &nodes.Items[i]
		}
	}
	return nil
}

func instance(sim *runner.Sim, id string) *simaws.Instance {
	for _, inst := range sim.Account.Instances() {
		if aws.ToString(inst.InstanceId) == id {
			return &inst
		}
	}
	return nil
}

func stateOf(inst simaws.Instance) ec2types.InstanceStateName {
	if inst.State == nil {
		return ""
	}
	return inst.State.Name
}

// seeded is what Karpenter left of one node.
type seeded struct{ instance, node string }

func podsRunning(t *testing.T, sim *runner.Sim) int {
	t.Helper()
	pods := &corev1.PodList{}
	if err := sim.Kube.List(context.Background(), pods, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
			n++
		}
	}
	return n
}
